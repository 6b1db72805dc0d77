package cpu

import "math/bits"

// The vertical (short-K) kernel. The row kernels reduce each output's
// partial sums horizontally once per call; when K is short (a GNN layer's
// update product, K = 256 bits; a 1024-node adjacency, 16 words) that
// reduction and the per-column setup cost as much as the AND+popcount
// work. The vertical kernel instead transposes B once per product into
// words × columns,
//
//	bt[(j*lw + w)*wstride + c] = word w of column c of plane j,
//
// so a vector holds one word of vc consecutive columns. A word of A is
// broadcast against it and each popcount lands in its column's lane:
// a tile of rows × columns accumulates over every plane pair and word in
// registers and is stored with one narrowing per vc outputs.
//
// The plane weights 2^(i+j) follow Horner's rule over the diagonals
// d = i+j: pairs holds, per plane pair, three int64s (byte offset i·aps·8
// into a row of A, byte offset j·lw·wstride·8 into bt, shift), sorted by
// d descending, with shift = 1 on the first pair of every diagonal but
// the first, where the sums double. One shift per output per diagonal
// instead of one per plane pair.

// lane is the width of a vertical kernel's lanes: 64-bit words, or their
// 32-bit halves (twice the columns per vector, 32-bit sums that store
// without narrowing).
type lane interface{ uint64 | uint32 }

// lanesPerWord is how many lanes of type T a 64-bit word of K fills.
func lanesPerWord[T lane]() int {
	var x T
	if ^x == T(^uint32(0)) {
		return 2
	}
	return 1
}

// vertFunc adds, for r < nrows and c < ngroups·vc,
//
//	out[r*ldo+c] += Σ_pairs popcount(a[r*lda+aoff/8:][:kw] & column c of bt[boff/sizeof(T):]) << (i+j)
//
// where column c of bt[o:] is bt[o+c], bt[o+wstride+c], ... (kw words,
// each one or two lanes T, low half first); with set, = instead of += (the
// first write to a tile never cleared).
type vertFunc[T lane] func(out []int32, ldo int, a []uint64, lda int, pairs []int64, bt []T, wstride, kw, ngroups, nrows int, set bool)

// appendVertPairs appends the plane pairs of an abits × bbits product in
// the order and form the vertical kernels take (see above); bplane is
// the stride of B's planes in bt.
func appendVertPairs(pairs []int64, abits, bbits, aps, bplane int) []int64 {
	for d := abits + bbits - 2; d >= 0; d-- {
		shift := int64(0)
		if d < abits+bbits-2 {
			shift = 1
		}
		for i := max(0, d-bbits+1); i <= min(d, abits-1); i++ {
			j := d - i
			pairs = append(pairs, int64(8*i*aps), int64(8*j*bplane), shift)
			shift = 0
		}
	}
	return pairs
}

// transposeB writes the first ncols columns of b (bbits planes of plane
// stride bps, column stride ldb, lw words each) into bt in the vertical
// layout with wstride columns per lane step (a word, or a half-word with
// the low half first). Each lane row is written contiguously, word w of
// every column in turn.
func transposeB[T lane](bt []T, b []uint64, bbits, bps, ldb, lw, ncols, wstride int) {
	switch bt := any(bt).(type) {
	case []uint32:
		transposeB32(bt, b, bbits, bps, ldb, lw, ncols, wstride)
	case []uint64:
		transposeB64(bt, b, bbits, bps, ldb, lw, ncols, wstride)
	}
}

func transposeB64(bt []uint64, b []uint64, bbits, bps, ldb, lw, ncols, wstride int) {
	for j := 0; j < bbits; j++ {
		for w := 0; w < lw; w++ {
			dst := bt[(j*lw+w)*wstride:][:ncols]
			src := b[j*bps+w:]
			for c := range dst {
				dst[c] = src[c*ldb]
			}
		}
	}
}

func transposeB32(bt []uint32, b []uint64, bbits, bps, ldb, lw, ncols, wstride int) {
	for j := 0; j < bbits; j++ {
		for w := 0; w < lw; w++ {
			lo := bt[(2*(j*lw+w))*wstride:][:ncols]
			hi := bt[(2*(j*lw+w)+1)*wstride:][:ncols]
			src := b[j*bps+w:]
			for c := range lo {
				x := src[c*ldb]
				lo[c] = uint32(x)
				hi[c] = uint32(x >> 32)
			}
		}
	}
}

// vertGeneric is the reference vertical kernel for vc-column groups: the
// definition of vertFunc, in Go, one output at a time.
func vertGeneric[T lane](vc int) vertFunc[T] {
	per := lanesPerWord[T]()
	return func(out []int32, ldo int, a []uint64, lda int, pairs []int64, bt []T, wstride, kw, ngroups, nrows int, set bool) {
		for r := 0; r < nrows; r++ {
			for c := 0; c < ngroups*vc; c++ {
				var s int64
				for q := 0; q+2 < len(pairs) && kw > 0; q += 3 {
					s <<= pairs[q+2]
					ar := a[r*lda+int(pairs[q]/8):][:kw]
					bc := bt[int(pairs[q+1])*per/8+c:]
					for w, x := range ar {
						for h := 0; h < per; h++ {
							s += int64(bits.OnesCount64(x >> (32 * h) & uint64(^T(0)) & uint64(bc[(per*w+h)*wstride])))
						}
					}
				}
				if set {
					out[r*ldo+c] = 0
				}
				out[r*ldo+c] += int32(s)
			}
		}
	}
}
