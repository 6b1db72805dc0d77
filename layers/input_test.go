package layers

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/subgraph"
)

// sparseOnes is a rows×cols binary CSR with every step-th entry set, all
// values explicit so that single entries can be changed.
func sparseOnes(rows, cols, step int) *subgraph.Features {
	f := &subgraph.Features{Rows: rows, Cols: cols, Indptr: make([]int32, rows+1)}
	for r := 0; r < rows; r++ {
		for c := r % step; c < cols; c += step {
			f.Indices = append(f.Indices, int32(c))
			f.Values = append(f.Values, 1)
		}
		f.Indptr[r+1] = int32(len(f.Indices))
	}
	return f
}

// TestQuantizeInputNegatives: one negative value in sparse binary features
// used to switch to a signed range, where 0 has a non-zero code and every
// absent entry had to be stored (rows×cols codes: 80x the memory and 170x
// the time on Cora). Rare negatives now keep the codes sparse; features
// that are really signed still get a signed range.
func TestQuantizeInputNegatives(t *testing.T) {
	const rows, cols, step = 300, 200, 50
	tests := []struct {
		name      string
		negatives int // entries set to -1, spread over the rows
		maxStored int
		signed    bool
	}{
		{"one negative", 1, rows * cols / step, false},
		{"rare negatives", 10, rows * cols / step, false},
		{"signed features", 300, rows * cols, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := sparseOnes(rows, cols, step)
			for i := 0; i < tt.negatives; i++ {
				f.Values[i*len(f.Values)/tt.negatives] = -1
			}
			in, err := QuantizeInput(f, 4)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(in.Codes), tt.maxStored, "stored codes")
			assert.Equal(t, tt.signed, in.Params.Lower < -0.5, "range %+v", in.Params)
			// The float values are kept exactly, negatives included.
			neg := 0
			for _, v := range in.Vals {
				if v < 0 {
					neg++
				}
			}
			assert.Equal(t, tt.negatives, neg)
		})
	}
}

// BenchmarkQuantizeInput quantizes Cora's features and prepares the
// sparse first product, with and without one value set to -1 (which used
// to cost 170x the time; see TestQuantizeInputNegatives).
func BenchmarkQuantizeInput(b *testing.B) {
	d, err := subgraph.Load("cora")
	require.NoError(b, err)
	for _, neg := range []int{0, 1} {
		f := *d.Features
		f.Values = make([]float32, len(f.Indices))
		for i := range f.Values {
			f.Values[i] = 1
		}
		if neg > 0 {
			f.Values[100] = -1
		}
		b.Run("negatives="+strconv.Itoa(neg), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				in, err := QuantizeInput(&f, 4)
				require.NoError(b, err)
				in.prepare()
			}
			b.ReportMetric(float64(f.Rows)*float64(b.N)/b.Elapsed().Seconds(), "nodes/s")
		})
	}
}
