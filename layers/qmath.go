package layers

import (
	"math"
	"math/bits"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
)

// planeGroups returns plane-group sizes ga, gb such that every product of a
// ga-plane slice of A and a gb-plane slice of B fits int32 for reduction
// length k. When the whole product fits, they are the full widths.
func planeGroups(k, abits, bbits int) (ga, gb int) {
	ga, gb = abits, bbits
	for bmm.MaxSum(k, ga, gb) > math.MaxInt32 {
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

// qPlanes returns planes [p0, p1) of t as a tensor of p1−p0 bits with t's
// shape, packing and padding: the value (t >> p0) mod 2^(p1−p0).
func qPlanes(t *bittensor.Tensor, p0, p1 int) (*bittensor.Tensor, error) {
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

// wideProduct computes C = A·B for operands whose product may overflow
// int32, from int32 products of plane groups: C = Σ 2^(i0+j0) C_(i0,j0).
// The sum is exact in int64 when K·(2^a−1)·(2^b−1) < 2^62; beyond that (a
// and b both near 32 bits) it is accumulated in float64 and rounds.
// The result is returned as float64 (exact integers whenever below 2^53).
func wideProduct(k bmm.Kernel, a, b *bittensor.Tensor) ([]float64, error) {
	if a.Packing() != bittensor.ByRows || b.Packing() != bittensor.ByCols || a.Cols() != b.Rows() {
		_, _, err := bmm.Check(a, b)
		return nil, err
	}
	m, n, kk := a.Rows(), b.Cols(), a.Cols()
	ga, gb := planeGroups(kk, a.Bits(), b.Bits())
	exactInt := bmm.MaxSum(kk, a.Bits(), b.Bits()) < math.Exp2(62)
	acc := make([]int64, 0)
	if exactInt {
		acc = make([]int64, m*n)
	}
	out := make([]float64, m*n)
	part := make([]int32, m*n)
	for i0 := 0; i0 < a.Bits(); i0 += ga {
		as, err := qPlanes(a, i0, min(a.Bits(), i0+ga))
		if err != nil {
			return nil, err
		}
		for j0 := 0; j0 < b.Bits(); j0 += gb {
			bs, err := qPlanes(b, j0, min(b.Bits(), j0+gb))
			if err != nil {
				return nil, err
			}
			if _, _, err := bmm.Check(as, bs); err != nil {
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

// qFits reports whether A·B fits the int32 kernels directly.
func qFits(a, b *bittensor.Tensor) bool {
	return bmm.MaxSum(a.Cols(), a.Bits(), b.Bits()) <= math.MaxInt32
}

// mulBit computes ep(A·B), re-quantizes it with rq to outBits and packs it
// with the given packing: the fused inter-layer step. When the product fits
// int32 the kernel's MulBit does it in one pass, or with tiles
// mulBitTiles does it a row tile at a time around MulInt (either way no
// whole int32 or float32 matrix is materialized); otherwise the plane-split
// product is used.
func mulBit(k bmm.Kernel, a, b *bittensor.Tensor, ep *bmm.Epilogue, rq bmm.Requant, outBits int, packing bittensor.Packing, tiles bool, ob *opBufs) (*bittensor.Tensor, error) {
	if qFits(a, b) {
		if tiles {
			return mulBitTiles(k, a, b, ep, rq, outBits, packing, ob)
		}
		dst, err := ob.newTensor(a.Rows(), b.Cols(), outBits, packing)
		if err != nil {
			return nil, err
		}
		if err := bmm.MM2BitInto(k, dst, a, b, ep, rq); err != nil {
			return nil, err
		}
		return dst, nil
	}
	c, err := wideProduct(k, a, b)
	if err != nil {
		return nil, err
	}
	m, n := a.Rows(), b.Cols()
	if err := ep.Validate(m, n); err != nil {
		return nil, err
	}
	codes := make([]int32, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			codes[i*n+j] = int32(rq.Quantize(ep.ApplyFloat(float32(c[i*n+j]), i, j), outBits))
		}
	}
	return bittensor.Pack(codes, m, n, outBits, packing, bittensor.DefaultPadding)
}

// mulFloat computes ep(A·B) as float32, row-major.
func mulFloat(k bmm.Kernel, a, b *bittensor.Tensor, ep *bmm.Epilogue, ob *opBufs) ([]float32, error) {
	if qFits(a, b) {
		dst := ob.floats(a.Rows() * b.Cols())
		if err := bmm.MM2FloatInto(k, dst, a, b, ep); err != nil {
			return nil, err
		}
		return dst, nil
	}
	c, err := wideProduct(k, a, b)
	if err != nil {
		return nil, err
	}
	m, n := a.Rows(), b.Cols()
	if err := ep.Validate(m, n); err != nil {
		return nil, err
	}
	out := ob.floats(m * n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			out[i*n+j] = ep.ApplyFloat(float32(c[i*n+j]), i, j)
		}
	}
	return out, nil
}

// bitRowSums returns the row sums of the codes of a ByRows tensor, as float32
// (the RowTerm of a zero-point correction): Σ_p 2^p popcount(line p),
// plane by plane over the packed words, rows in parallel.
func bitRowSums(t *bittensor.Tensor) []float32 {
	rows, lw := t.Rows(), t.LineWords()
	used := (t.K() + 63) / 64 // the words past K are padding, always zero
	sums := make([]int64, rows)
	parFor(rows, func(lo, hi int) {
		for p := 0; p < t.Bits(); p++ {
			plane := t.Plane(p)
			for l := lo; l < hi; l++ {
				var pop int
				for _, w := range plane[l*lw : l*lw+used] {
					pop += bits.OnesCount64(w)
				}
				sums[l] += int64(pop) << p
			}
		}
	})
	out := make([]float32, rows)
	for l, s := range sums {
		out[l] = float32(s)
	}
	return out
}

// tileRows is the row tile of mulBitTiles: a multiple of 64, so that a
// tile of a column-packed destination is whole words.
const tileRows = 512

// mulBitTiles is mulBit fused by row tiles around the kernel's MulInt:
// each tile of at most tileRows rows of A·B goes through the epilogue and
// the quantizer into its place in the packed destination, so only one
// tile's int32 products exist at a time (never the whole matrix). Same
// codes as the kernel's MulBit; it exists because a kernel's MulInt may be
// better tuned than its MulBit.
func mulBitTiles(k bmm.Kernel, a, b *bittensor.Tensor, ep *bmm.Epilogue, rq bmm.Requant, outBits int, packing bittensor.Packing, ob *opBufs) (*bittensor.Tensor, error) {
	m, n, err := bmm.Check(a, b)
	if err != nil {
		return nil, err
	}
	if err := ep.Validate(m, n); err != nil {
		return nil, err
	}
	dst, err := ob.newTensor(m, n, outBits, packing)
	if err != nil {
		return nil, err
	}
	buf := make([]int32, min(m, tileRows)*n)
	codes := make([]uint32, len(buf))
	for r0 := 0; r0 < m; r0 += tileRows {
		r1 := min(m, r0+tileRows)
		as, err := a.SliceRows(r0, r1)
		if err != nil {
			return nil, err
		}
		rows := r1 - r0
		if err := k.MulInt(buf[:rows*n], as, b); err != nil {
			return nil, err
		}
		parFor(rows, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				for j := 0; j < n; j++ {
					codes[r*n+j] = rq.Quantize(ep.Apply(buf[r*n+j], r0+r, j), outBits)
				}
			}
		})
		packTile(dst, codes[:rows*n], r0, rows, n)
	}
	return dst, nil
}

// packTile writes rows [r0, r0+rows) of an m×n code matrix (row-major
// codes of those rows) into dst's planes; r0 is a multiple of 64.
func packTile(dst *bittensor.Tensor, codes []uint32, r0, rows, n int) {
	nb := dst.Bits()
	if dst.Packing() == bittensor.ByRows {
		parFor(rows, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				vals := codes[r*n : (r+1)*n]
				for w := 0; w*64 < n; w++ {
					chunk := vals[w*64 : min(n, w*64+64)]
					for p := 0; p < nb; p++ {
						var word uint64
						for j, v := range chunk {
							word |= uint64(v>>p&1) << j
						}
						dst.Line(p, r0+r)[w] = word
					}
				}
			}
		})
		return
	}
	parFor(n, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			for w := 0; w*64 < rows; w++ {
				cnt := min(64, rows-w*64)
				for p := 0; p < nb; p++ {
					var word uint64
					for r := 0; r < cnt; r++ {
						word |= uint64(codes[(w*64+r)*n+c]>>p&1) << r
					}
					dst.Line(p, c)[r0/64+w] = word
				}
			}
		}
	})
}

// mulCodes computes ep(A·B) re-quantized with rq to outBits (<= 8) as byte
// codes: the input of a sparse aggregation. The CPU kernel fuses it
// (MulCodes); other kernels go through mulBit's row-packed codes.
func mulCodes(k bmm.Kernel, a, b *bittensor.Tensor, ep *bmm.Epilogue, rq bmm.Requant, outBits int, ob *opBufs) (cpu.Codes, error) {
	if ck, ok := k.(*cpu.Kernel); ok && qFits(a, b) {
		dst, err := ob.newCodes(a.Rows(), b.Cols(), outBits)
		if err != nil {
			return dst, err
		}
		return dst, ck.MulCodes(dst, a, b, ep, rq)
	}
	t, err := mulBit(k, a, b, ep, rq, outBits, bittensor.ByRows, false, nil)
	if err != nil {
		return cpu.Codes{}, err
	}
	return cpu.CodesFromInts(t.Ints(), t.Rows(), t.Cols(), outBits)
}
