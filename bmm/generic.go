package bmm

import (
	"math/bits"

	"github.com/qgtc/qgtc/bittensor"
)

// Generic is the reference kernel: the definition of the product written as
// plainly as possible, one output element at a time. Every other kernel is
// checked against it.
type Generic struct{}

// Name implements Kernel.
func (Generic) Name() string { return "generic" }

// dot is C[m][n] from the definition: Σ_i Σ_j 2^(i+j) popcount(A_i[m] & B_j[n]).
func dot(a, b *bittensor.Tensor, m, n int) int32 {
	var c int64
	for i := 0; i < a.Bits(); i++ {
		ar := a.Line(i, m)
		for j := 0; j < b.Bits(); j++ {
			bc := b.Line(j, n)
			var pop int64
			for w := range ar {
				pop += int64(bits.OnesCount64(ar[w] & bc[w]))
			}
			c += pop << (i + j)
		}
	}
	return int32(c)
}

// MulInt implements Kernel.
func (Generic) MulInt(dst []int32, a, b *bittensor.Tensor) error {
	M, N := a.Rows(), b.Cols()
	for m := 0; m < M; m++ {
		for n := 0; n < N; n++ {
			dst[m*N+n] = dot(a, b, m, n)
		}
	}
	return nil
}

// MulFloat implements Kernel.
func (Generic) MulFloat(dst []float32, a, b *bittensor.Tensor, ep *Epilogue) error {
	M, N := a.Rows(), b.Cols()
	for m := 0; m < M; m++ {
		for n := 0; n < N; n++ {
			dst[m*N+n] = ep.Apply(dot(a, b, m, n), m, n)
		}
	}
	return nil
}

// MulBit implements Kernel.
func (Generic) MulBit(dst *bittensor.Tensor, a, b *bittensor.Tensor, ep *Epilogue, rq Requant) error {
	M, N := a.Rows(), b.Cols()
	if dst.Rows() != M || dst.Cols() != N {
		return shapeErr(dst, M, N)
	}
	clear(dst.Words())
	for m := 0; m < M; m++ {
		for n := 0; n < N; n++ {
			dst.Set(m, n, rq.Quantize(ep.Apply(dot(a, b, m, n), m, n), dst.Bits()))
		}
	}
	return nil
}
