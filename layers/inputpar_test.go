package layers

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/qgtc/qgtc/subgraph"
)

// TestQuantizeSparseMatchesRows: the chunked quantizer gives the row-by-row
// one's Input, field for field, at 1 and 4 cores, over several chunks: real
// values with stored zeros, a few negatives (unsigned range) and many
// (signed: every column stored), binary values, and no values at all.
func TestQuantizeSparseMatchesRows(t *testing.T) {
	rows, cols := 3*quantRows+5, 360 // over 2^20 entries: a strided sample
	mk := func(kind string) *subgraph.Features {
		r := rand.New(rand.NewPCG(7, uint64(len(kind))))
		f := &subgraph.Features{Rows: rows, Cols: cols, Indptr: make([]int32, rows+1)}
		for v := range rows {
			for c := range cols {
				if r.IntN(8) != 0 {
					continue
				}
				f.Indices = append(f.Indices, int32(c))
				x := float32(r.IntN(9)) // zeros stored too
				switch kind {
				case "fewneg":
					if r.IntN(500) == 0 {
						x = -x
					}
				case "manyneg":
					if r.IntN(3) == 0 {
						x = -x
					}
				case "binary":
					x = float32(r.IntN(2))
				}
				f.Values = append(f.Values, x)
			}
			f.Indptr[v+1] = int32(len(f.Indices))
		}
		if kind == "novalues" {
			f.Values = nil
		}
		return f
	}
	for _, kind := range []string{"real", "fewneg", "manyneg", "binary", "novalues"} {
		f := mk(kind)
		for _, bits := range []int{2, 4} {
			want := quantizeRows(f, bits)
			for _, procs := range []int{1, 4} {
				t.Run(fmt.Sprintf("%s/bits=%d/procs=%d", kind, bits, procs), func(t *testing.T) {
					withProcs(procs, func() {
						got := quantizeSparse(f, bits)
						assert.Equal(t, want.Params, got.Params)
						assert.Equal(t, want.Indptr, got.Indptr)
						assert.Equal(t, want.Indices, got.Indices)
						assert.Equal(t, want.Vals, got.Vals)
						assert.Equal(t, want.Codes, got.Codes)
						assert.Equal(t, want.rowSums, got.rowSums)
						assert.Equal(t, want.allOnes, got.allOnes)
					})
				})
			}
		}
	}
}
