package layers

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/internal/safetensors"
)

// TestLastBits: a 1-bit model whose last layer is 8 bits wide quantizes
// that layer's weights and activations at 8 bits and the others at 1;
// inference gives the simulation's codes and logits bit for bit on the
// generic and cpu backends, with either first product; the model file (format 5) loads back the same,
// and last_bits in an older format is refused.
func TestLastBits(t *testing.T) {
	for _, c := range qCases {
		t.Run(c.name, func(t *testing.T) {
			m, d, in := preparedCase(t, c, 1, 1, 3, true)
			m.LastBits = 8
			require.NoError(t, m.Calibrate(d, in, 0))
			last := &m.Layers[len(m.Layers)-1]
			assert.Equal(t, 8, last.Z.Bits, "the last layer's Z")
			assert.Equal(t, 1, m.Layers[0].Z.Bits, "the first layer's Z")
			assert.Equal(t, 8, m.linBits(&last.Lin1))
			assert.Equal(t, 1, m.linBits(&m.Layers[0].Lin1))
			if c.kind == GIN {
				assert.Equal(t, 8, last.U.Bits)
				assert.Equal(t, 8, m.linBits(last.Lin2))
			}
			for _, be := range []bmm.Backend{bmm.NewGenericBackend(), cpu.NewBackend(nil)} {
				plan, err := m.Compile(be)
				require.NoError(t, err)
				requireSimExact(t, m, plan, d, in)
				require.NoError(t, plan.Close())
			}
			narrow := m.Clone()
			narrow.LastBits = 0
			require.NoError(t, narrow.Calibrate(d, in, 0))
			a, err := m.Predict(d, in, true)
			require.NoError(t, err)
			b, err := narrow.Predict(d, in, true)
			require.NoError(t, err)
			logitsDiffer := fmt.Sprint(a) != fmt.Sprint(b)
			_, wl, err := m.simForward(d.Eval[0], in, true, -1, 0, nil)
			require.NoError(t, err)
			_, nl, err := narrow.simForward(d.Eval[0], in, true, -1, 0, nil)
			require.NoError(t, err)
			assert.True(t, logitsDiffer || fmt.Sprint(wl) != fmt.Sprint(nl), "the wider last layer changes the logits")

			var buf bytes.Buffer
			_, err = m.WriteTo(&buf)
			require.NoError(t, err)
			back, err := ReadModel(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			assert.Equal(t, 8, back.LastBits)
			got, err := back.Predict(d, in, true)
			require.NoError(t, err)
			assert.Equal(t, a, got)
			ts, meta, err := safetensors.Read(bytes.NewReader(buf.Bytes()))
			require.NoError(t, err)
			format := `"format":5`
			if c.aggr == AggrMean {
				format = `"format":6`
			}
			assert.Contains(t, meta["qgtc.qmodel"], format)
			for _, older := range []string{`"format":4`, `"format":5`} {
				if older != format {
					_, err = modelFrom(ts, strings.Replace(meta["qgtc.qmodel"], format, older, 1))
					assert.ErrorIs(t, err, ErrModel, older)
				}
			}
		})
	}
}
