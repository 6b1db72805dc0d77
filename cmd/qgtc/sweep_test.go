package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/layers"
)

// TestSweepNorm runs a short GIN sweep with batch norm and checks the
// report and that the cached models carry the norm; then the same without.
func TestSweepNorm(t *testing.T) {
	for _, norm := range []string{layers.QNormBatch, layers.QNormNone} {
		t.Run(norm, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("QGTC_CACHE", dir)
			var out, errb bytes.Buffer
			args := []string{"sweep", "--dataset", "cora", "--model", "gin", "--norm", norm, "--bits", "4", "--epochs", "3",
				"--qat-epochs", "1", "--out", filepath.Join(dir, "sw"), "--json", "--quiet"}
			require.Equal(t, 0, run(args, &out, &errb), errb.String())
			var rep sweepReport
			require.NoError(t, json.Unmarshal(out.Bytes(), &rep))
			require.Len(t, rep.Rows, 2)
			assert.Equal(t, 0, rep.Rows[0].Bits)
			assert.Equal(t, 4, rep.Rows[1].Bits)
			for _, name := range []string{"fp32", "a4w4"} {
				files, err := filepath.Glob(filepath.Join(dir, "models", "cora-gin-n"+norm+"-*-"+name+".safetensors"))
				require.NoError(t, err)
				require.Len(t, files, 1, name)
				f, err := os.Open(files[0])
				require.NoError(t, err)
				m, err := layers.ReadQModel(f)
				f.Close()
				require.NoError(t, err)
				assert.Equal(t, norm, m.Norm(), name)
			}
		})
	}
}

func TestSweepNormErrors(t *testing.T) {
	t.Setenv("QGTC_CACHE", t.TempDir())
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"unknown norm", []string{"sweep", "--dataset", "cora", "--model", "gin", "--norm", "layer"}},
		{"gcn batch norm", []string{"sweep", "--dataset", "cora", "--model", "gcn", "--norm", "batch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, 2, run(tc.args, &out, &errb))
			assert.Contains(t, errb.String(), "--norm")
		})
	}
}
