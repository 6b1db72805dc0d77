package nn

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/qgtc/qgtc/templates"
)

// ShapeError is the panic value of an op given tensors of incompatible
// shapes (a programmer error: the caller built them).
type ShapeError struct{ Op, Msg string }

func (e ShapeError) Error() string { return "nn." + e.Op + ": " + e.Msg }

func shapePanic(op, format string, args ...any) {
	panic(ShapeError{op, fmt.Sprintf(format, args...)})
}

// CSR is the sparsity structure of a sparse tensor. Tensors that differ only
// in their values (a sparse input and its dropout) share one *CSR, so the
// transposed structure used by backward passes is built once.
type CSR struct {
	Indptr  []int32 // len Rows+1
	Indices []int32 // column of each stored entry

	once sync.Once
	tr   transposed
}

// transposed is the CSR of the transpose plus, per entry, the position of
// the same entry in the original value array.
type transposed struct {
	indptr, indices, perm []int32
}

func (c *CSR) transpose(cols int) *transposed {
	c.once.Do(func() {
		rows := len(c.Indptr) - 1
		ip := make([]int32, cols+1)
		for _, j := range c.Indices {
			ip[j+1]++
		}
		for j := range cols {
			ip[j+1] += ip[j]
		}
		fill := make([]int32, cols)
		copy(fill, ip[:cols])
		idx := make([]int32, len(c.Indices))
		perm := make([]int32, len(c.Indices))
		for i := range rows {
			for p := c.Indptr[i]; p < c.Indptr[i+1]; p++ {
				j := c.Indices[p]
				idx[fill[j]] = int32(i)
				perm[fill[j]] = p
				fill[j]++
			}
		}
		c.tr = transposed{ip, idx, perm}
	})
	return &c.tr
}

// Tensor is a Rows×Cols float32 matrix, row-major in Data, or a sparse
// matrix when Sparse is set (Data then holds one value per stored entry).
// Grad has the shape of Data and is allocated when a backward pass first
// writes it.
type Tensor struct {
	Rows, Cols int
	Data       []float32
	Grad       []float32
	Sparse     *CSR

	requires bool
}

// New returns a zero rows×cols tensor.
func New(rows, cols int) *Tensor {
	return &Tensor{Rows: rows, Cols: cols, Data: make([]float32, rows*cols)}
}

// FromData wraps data (len rows·cols, row-major) without copying.
func FromData(rows, cols int, data []float32) *Tensor {
	if len(data) != rows*cols {
		shapePanic("FromData", "%d values for %d×%d", len(data), rows, cols)
	}
	return &Tensor{Rows: rows, Cols: cols, Data: data}
}

// NewSparse wraps a CSR matrix; values nil means every stored entry is 1.
func NewSparse(rows, cols int, indptr, indices []int32, values []float32) *Tensor {
	if len(indptr) != rows+1 || int(indptr[rows]) != len(indices) {
		shapePanic("NewSparse", "indptr of length %d (last %d) for %d rows and %d indices", len(indptr), indptr[len(indptr)-1], rows, len(indices))
	}
	if values == nil {
		values = make([]float32, len(indices))
		for i := range values {
			values[i] = 1
		}
	} else if len(values) != len(indices) {
		shapePanic("NewSparse", "%d values for %d indices", len(values), len(indices))
	}
	return &Tensor{Rows: rows, Cols: cols, Data: values, Sparse: &CSR{Indptr: indptr, Indices: indices}}
}

// SetRequiresGrad marks t as a leaf whose gradient backward passes compute.
func (t *Tensor) SetRequiresGrad(on bool) *Tensor { t.requires = on; return t }

// RequiresGrad reports whether backward passes reach t.
func (t *Tensor) RequiresGrad() bool { return t.requires }

// ZeroGrad clears the gradient (keeping its storage).
func (t *Tensor) ZeroGrad() { clear(t.Grad) }

// At returns element (i, j) of a dense tensor.
func (t *Tensor) At(i, j int) float32 { return t.Data[i*t.Cols+j] }

// Dense returns a dense copy of a sparse tensor, or t itself when dense.
func (t *Tensor) Dense() *Tensor {
	if t.Sparse == nil {
		return t
	}
	d := New(t.Rows, t.Cols)
	for i := range t.Rows {
		for p := t.Sparse.Indptr[i]; p < t.Sparse.Indptr[i+1]; p++ {
			d.Data[i*t.Cols+int(t.Sparse.Indices[p])] += t.Data[p]
		}
	}
	return d
}

func (t *Tensor) grad() []float32 {
	if t.Grad == nil {
		t.Grad = make([]float32, len(t.Data))
	}
	return t.Grad
}

// like returns a dense zero tensor of t's shape.
func like(t *Tensor) *Tensor { return New(t.Rows, t.Cols) }

func sameShape(op string, a, b *Tensor) {
	if a.Rows != b.Rows || a.Cols != b.Cols {
		shapePanic(op, "%d×%d vs %d×%d", a.Rows, a.Cols, b.Rows, b.Cols)
	}
}

func dense(op string, t *Tensor) {
	if t.Sparse != nil {
		shapePanic(op, "sparse %d×%d input not supported", t.Rows, t.Cols)
	}
}

// parallelFor runs f over [0, n) split into contiguous chunks, one
// goroutine per chunk. work estimates the cost of one index so that tiny
// loops stay on the calling goroutine.
func parallelFor(n, work int, f func(lo, hi int)) {
	procs := runtime.GOMAXPROCS(0)
	if procs <= 1 || n < 2 || n*work < 1<<15 {
		f(0, n)
		return
	}
	chunks := min(procs*4, n)
	var wg sync.WaitGroup
	for c := range chunks {
		lo, hi := n*c/chunks, n*(c+1)/chunks
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}

// keep reports whether element i survives dropout with rate p under seed.
// The hash lives in templates (DropKeep) so that fused kernels such as
// templates.GATAggregateDropout regenerate the very same masks.
func keep(seed uint64, i int, p float32) bool { return templates.DropKeep(seed, i, p) }

func expf(x float32) float32 { return float32(math.Exp(float64(x))) }
