package bmm

import (
	"math"

	"github.com/qgtc/qgtc/bittensor"
)

// PlaneGroups returns plane-group sizes ga, gb such that every product of
// a ga-plane slice of A and a gb-plane slice of B fits int32 for reduction
// length k. When the whole product fits, they are the full widths.
func PlaneGroups(k, abits, bbits int) (ga, gb int) {
	ga, gb = abits, bbits
	for MaxSum(k, ga, gb) > math.MaxInt32 {
		switch {
		case ga >= gb && ga > 1:
			ga = (ga + 1) / 2
		case gb > 1:
			gb = (gb + 1) / 2
		default:
			return 1, 1
		}
	}
	return ga, gb
}

// Fits reports whether A·B (k-long, abits by bbits) fits int32, so that a
// Kernel computes it directly; otherwise WideProduct does.
func Fits(k, abits, bbits int) bool { return MaxSum(k, abits, bbits) <= math.MaxInt32 }

// planes returns planes [p0, p1) of t as a tensor of p1−p0 bits with t's
// shape, packing and padding: the value (t >> p0) mod 2^(p1−p0).
func planes(t *bittensor.Tensor, p0, p1 int) (*bittensor.Tensor, error) {
	if p0 == 0 && p1 == t.Bits() {
		return t, nil
	}
	s, err := bittensor.New(t.Rows(), t.Cols(), p1-p0, t.Packing(), t.Padding())
	if err != nil {
		return nil, err
	}
	for p := p0; p < p1; p++ {
		copy(s.Plane(p-p0), t.Plane(p))
	}
	return s, nil
}

// WideProduct computes C = A·B for operands whose product may overflow
// int32, from k's int32 products of plane groups: C = Σ 2^(i0+j0) C_(i0,j0).
// The sum is exact in int64 when K·(2^a−1)·(2^b−1) < 2^62; beyond that (a
// and b both near 32 bits) it is accumulated in float64 and rounds.
// The result is returned as float64 (exact integers whenever below 2^53).
func WideProduct(k Kernel, a, b *bittensor.Tensor) ([]float64, error) {
	if a == nil || b == nil || a.Packing() != bittensor.ByRows || b.Packing() != bittensor.ByCols || a.Cols() != b.Rows() {
		_, _, err := Check(a, b)
		return nil, err
	}
	m, n, kk := a.Rows(), b.Cols(), a.Cols()
	ga, gb := PlaneGroups(kk, a.Bits(), b.Bits())
	exactInt := MaxSum(kk, a.Bits(), b.Bits()) < math.Exp2(62)
	var acc []int64
	if exactInt {
		acc = make([]int64, m*n)
	}
	out := make([]float64, m*n)
	part := make([]int32, m*n)
	for i0 := 0; i0 < a.Bits(); i0 += ga {
		as, err := planes(a, i0, min(a.Bits(), i0+ga))
		if err != nil {
			return nil, err
		}
		for j0 := 0; j0 < b.Bits(); j0 += gb {
			bs, err := planes(b, j0, min(b.Bits(), j0+gb))
			if err != nil {
				return nil, err
			}
			if _, _, err := Check(as, bs); err != nil {
				return nil, err
			}
			if err := k.MulInt(part, as, bs); err != nil {
				return nil, err
			}
			sh := uint(i0 + j0)
			if exactInt {
				for i, c := range part {
					acc[i] += int64(c) << sh
				}
			} else {
				f := math.Ldexp(1, int(sh))
				for i, c := range part {
					out[i] += float64(c) * f
				}
			}
		}
	}
	if exactInt {
		for i, c := range acc {
			out[i] = float64(c)
		}
	}
	return out, nil
}

// WideMulFloat writes ep(A·B) into dst (len M·N, row-major) for a product
// that may pass int32: WideProduct, then Epilogue.ApplyFloat of the float32
// of each sum, as every backend does for wide widths.
func WideMulFloat(k Kernel, dst []float32, a, b *bittensor.Tensor, ep *Epilogue) error {
	c, err := WideProduct(k, a, b)
	if err != nil {
		return err
	}
	m, n := a.Rows(), b.Cols()
	if err := ep.Validate(m, n); err != nil {
		return err
	}
	if len(dst) != m*n {
		return shapeLenErr(len(dst), m, n)
	}
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			dst[i*n+j] = ep.ApplyFloat(float32(c[i*n+j]), i, j)
		}
	}
	return nil
}

// WideMulBit is WideMulFloat re-quantized with rq into dst (M×N, any
// packing; its previous bits are overwritten).
func WideMulBit(k Kernel, dst *bittensor.Tensor, a, b *bittensor.Tensor, ep *Epilogue, rq Requant) error {
	if a == nil || b == nil {
		_, _, err := Check(a, b)
		return err
	}
	m, n := a.Rows(), b.Cols()
	if err := CheckDst(dst, m, n); err != nil {
		return err
	}
	y := make([]float32, m*n)
	if err := WideMulFloat(k, y, a, b, ep); err != nil {
		return err
	}
	clear(dst.Words())
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			dst.Set(i, j, rq.Quantize(y[i*n+j], dst.Bits()))
		}
	}
	return nil
}
