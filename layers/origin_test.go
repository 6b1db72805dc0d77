package layers

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/qgtc/qgtc/internal/safetensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQModelOrigin round-trips what a model was trained on.
func TestQModelOrigin(t *testing.T) {
	m, _, _ := qPrepared(t, GCN, 4, 4, 1, false)
	o := &Origin{Dataset: "cora", Data: "0123abcd", Kind: GCN, ABits: 4, WBits: 4, Norm: NormNone, FeatureScale: ScaleSqrt, Key: "k1"}
	var buf bytes.Buffer
	_, err := WriteModel(&buf, m, o)
	require.NoError(t, err)
	got, gotO, err := ReadModelOrigin(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, m, got)
	assert.Equal(t, o, gotO)

	buf.Reset()
	_, err = m.WriteTo(&buf)
	require.NoError(t, err)
	_, gotO, err = ReadModelOrigin(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Nil(t, gotO, "WriteTo records no origin")
}

// flipWeight flips the high byte of the first float32 of tensor name in a
// safetensors file (a bit flip on disk, the file still parses).
func flipWeight(t *testing.T, file []byte, name string) []byte {
	t.Helper()
	ts, _, err := safetensors.Read(bytes.NewReader(file))
	require.NoError(t, err)
	tn := ts[name]
	require.NotNil(t, tn, "tensor %s", name)
	hlen := binary.LittleEndian.Uint64(file)
	// Find the tensor's bytes by content: its first 8 bytes are unique
	// among trained float weights.
	i := bytes.Index(file[8+hlen:], tn.Data[:8])
	require.GreaterOrEqual(t, i, 0)
	out := bytes.Clone(file)
	out[8+int(hlen)+i+3] ^= 0x40
	return out
}

// TestQModelChecksum: a weight flipped on disk is an error that says
// "checksum" (the old reader loaded it and predicted garbage).
func TestQModelChecksum(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			m, _, _ := preparedCase(t, c, 4, 4, 1, false)
			var buf bytes.Buffer
			_, err := m.WriteTo(&buf)
			require.NoError(t, err)
			bad := flipWeight(t, buf.Bytes(), "layers.0.lin1.weight")
			_, err = ReadModel(bytes.NewReader(bad))
			require.ErrorIs(t, err, ErrModel)
			assert.Contains(t, err.Error(), "checksum")

			// The quantization parameters are covered too.
			old := bytes.Replace(buf.Bytes(), []byte(`\"abits\":4`), []byte(`\"abits\":8`), 1)
			require.False(t, bytes.Equal(buf.Bytes(), old), "abits field not found")
			_, err = ReadModel(bytes.NewReader(old))
			require.ErrorIs(t, err, ErrModel)
			assert.Contains(t, err.Error(), "checksum")
		})
	}
}

// TestQModelOldFile: a file as the code before checksums and origins wrote
// it (same tensors, qgtc.qmodel, layers and saved metadata only) still
// loads, has no origin, and predicts exactly as the model it was saved from.
func TestQModelOldFile(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			m, d, in := preparedCase(t, c, 4, 4, 1, false)
			var buf bytes.Buffer
			_, err := WriteModel(&buf, m, &Origin{Dataset: "x"})
			require.NoError(t, err)
			ts, meta, err := safetensors.Read(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			require.Contains(t, meta, metaSum)
			delete(meta, metaSum)
			delete(meta, metaOrigin)
			var old bytes.Buffer
			require.NoError(t, safetensors.Write(&old, ts, meta))

			got, o, err := ReadModelOrigin(bytes.NewReader(old.Bytes()))
			require.NoError(t, err)
			assert.Nil(t, o)
			require.Equal(t, m, got)
			want, err := m.Predict(d, in, true)
			require.NoError(t, err)
			pred, err := got.Predict(d, in, true)
			require.NoError(t, err)
			assert.Equal(t, want, pred)
			assert.False(t, math.IsNaN(float64(Accuracy(pred, d.Labels, d.Test))))
		})
	}
}
