package layers

import (
	"runtime"

	"github.com/qgtc/qgtc/internal/par"
	"github.com/qgtc/qgtc/subgraph"
)

// quantRows is the number of feature rows one goroutine quantizes at a
// time: fixed, so the sample the range is calibrated on, and so the codes,
// do not depend on the number of cores.
const quantRows = 1 << 13

// quantizeSparse is quantizeRows for sparse features on all cores: the
// same Input, made in two passes over row chunks (count and sample, then
// fill at each chunk's offset). A 100M-node graph has over a billion
// entries, a minute and more on one core.
func quantizeSparse(f *subgraph.Features, bits int) *Input {
	n := f.Rows
	chunks := (n + quantRows - 1) / quantRows
	workers := runtime.GOMAXPROCS(0)
	stride := 1
	if nnz := len(f.Indices); nnz > 1<<20 {
		stride = nnz >> 20
	}
	base := int(f.Indptr[0])
	type scan struct {
		binary            bool
		negative, nonZero int
		sample            []float32
	}
	scans := make([]scan, chunks)
	value := func(p int32) float32 {
		if f.Values == nil {
			return 1
		}
		return f.Values[p]
	}
	par.For(chunks, workers, func(c int) {
		s := scan{binary: true}
		lo, hi := f.Indptr[c*quantRows], f.Indptr[min(n, (c+1)*quantRows)]
		for p := lo; p < hi; p++ {
			v := value(p)
			if v != 0 && v != 1 {
				s.binary = false
			}
			if v < 0 {
				s.negative++
			}
			if v != 0 {
				s.nonZero++
				if (int(p)-base)%stride == 0 {
					s.sample = append(s.sample, v)
				}
			}
		}
		scans[c] = s
	})
	binary, negative, nonZero := true, 0, 0
	var sample []float32
	offs := make([]int, chunks+1)
	for c, s := range scans {
		binary = binary && s.binary
		negative += s.negative
		nonZero += s.nonZero
		sample = append(sample, s.sample...)
		offs[c+1] = offs[c] + s.nonZero
	}
	in := &Input{Rows: n, Cols: f.Cols, Indptr: make([]int32, n+1)}
	in.Params = inputParams(binary, negative, nonZero, sample, bits, false)
	inv, off := in.Params.Requant()
	if qQuant(0, inv, off, in.Params.Bits) != 0 {
		// A signed range stores every column: the row-by-row path.
		return quantizeRows(f, bits)
	}
	// Only the non-zero values are stored: qQuant(0) is 0.
	in.Indices, in.Vals, in.Codes = make([]int32, nonZero), make([]float32, nonZero), make([]uint32, nonZero)
	sums := make([]float32, n)
	ones := make([]bool, chunks)
	par.For(chunks, workers, func(c int) {
		at, allOnes := offs[c], true
		for r := c * quantRows; r < min(n, (c+1)*quantRows); r++ {
			var sum int64
			for p := f.Indptr[r]; p < f.Indptr[r+1]; p++ {
				v := value(p)
				if v == 0 {
					continue
				}
				q := qQuant(v, inv, off, in.Params.Bits)
				in.Indices[at], in.Vals[at], in.Codes[at] = f.Indices[p], v, q
				at++
				sum += int64(q)
				allOnes = allOnes && q == 1
			}
			in.Indptr[r+1] = int32(at)
			sums[r] = float32(sum)
		}
		ones[c] = allOnes
	})
	allOnes := true
	for _, o := range ones {
		allOnes = allOnes && o
	}
	in.prepOnce.Do(func() { in.rowSums, in.allOnes = sums, allOnes })
	return in
}
