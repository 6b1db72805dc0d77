package templates

import (
	"math"
	"testing"
)

// FuzzTemplates builds a small CSR from the fuzzer's bytes (often an
// invalid one): Validate must either reject it or every op must run on it
// without panicking and agree with the float64 reference.
func FuzzTemplates(f *testing.F) {
	f.Add([]byte{3, 4, 2, 1, 0, 1, 2, 2, 0}, uint8(5), uint8(0), uint8(2))
	f.Add([]byte{2, 2, 0, 0, 1, 1}, uint8(17), uint8(3), uint8(3))
	f.Add([]byte{1, 1, 0}, uint8(1), uint8(5), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, fw, op, red uint8) {
		if len(b) < 2 {
			return
		}
		rows, nsrc := int(b[0]%8), int(b[1]%8)
		b = b[2:]
		if len(b) < rows {
			return
		}
		// One degree byte per row, then one source byte per edge.
		indptr := make([]int32, rows+1)
		for v := 0; v < rows; v++ {
			indptr[v+1] = indptr[v] + int32(b[v]%5)
		}
		b = b[rows:]
		nnz := int(indptr[rows])
		if len(b) < nnz {
			return
		}
		idx := make([]int32, nnz)
		for p := range idx {
			idx[p] = int32(b[p]) - 1 // may be out of range: Validate's job
		}
		g := CSR{Indptr: indptr, Indices: idx}
		if g.Validate(nsrc) != nil {
			return
		}
		fdim := int(fw%20) + 1
		x := make([]float32, nsrc*fdim)
		y := make([]float32, rows*fdim)
		e := make([]float32, nnz*fdim)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)))
		}
		for i := range y {
			y[i] = float32(math.Cos(float64(i)))
		}
		for i := range e {
			e[i] = float32(i%7) - 3
		}
		msg := Msg(op % 6)
		rd := Reduce(red % 4)
		out := make([]float32, rows*fdim)
		arg := make([]int32, rows*fdim)
		if err := SpMM(out, g, msg, rd, x, e, y, fdim, arg, &Schedule{FeatTile: 4, Partitions: 2, Workers: 2, Grain: 2}); err != nil {
			t.Fatal(err)
		}
		want, mag := tplRefSpMM(g, msg, rd, tplTo64(x), tplTo64(e), tplTo64(y), fdim, fdim)
		for i := range want {
			if d := math.Abs(float64(out[i]) - want[i]); d > 1e-5*(mag[i]+1) {
				t.Fatalf("%v/%v out[%d] = %v, want %v", msg, rd, i, out[i], want[i])
			}
		}
		sop := SDDMMOp(op % uint8(numSDDMM))
		width := fdim
		if sop == UDotV {
			width = 1
		}
		eo := make([]float32, nnz*width)
		if err := SDDMM(eo, g, sop, x, y, fdim, 1, nil); err != nil {
			t.Fatal(err)
		}
		gx := make([]float32, len(x))
		if err := SpMMBackward(gx, nil, nil, g, CSR{}, CopyU, Sum, x, nil, nil, out, fdim, nil, nil); err != nil {
			t.Fatal(err)
		}
	})
}
