//go:build !purego

package cpu

// vertAsm is the signature of the generated vertical kernels, over 64-bit
// or 32-bit lanes.
type vertAsm[T lane] func(out *int32, ldo int, a *uint64, lda int, pairs *int64, npairs int, bt *T, wstride, kw, ngroups, nrows, set int)

// vertTile is one register tile of a vertical kernel: main takes rows in
// multiples of rows and groups of vc columns in multiples of groups, one
// the single rows left over.
type vertTile[T lane] struct {
	rows, groups int
	main, one    vertAsm[T]
}

// implAVX512 is the AVX-512 VPOPCNTDQ path: row kernels, the bit-stream
// zero-chunk mask and the vertical kernels over 64-bit and 32-bit lanes.
func implAVX512() *bitImpl {
	return &bitImpl{
		name: "avx512", row: rowAVX512, mark: markStream,
		vc: 8, vert: asmVert(8, 0, []vertTile[uint64]{
			{4, 4, vertAVX512R4G4, vertAVX512R1G4},
			{8, 2, vertAVX512R8G2, vertAVX512R1G2},
			{8, 1, vertAVX512R8G1, vertAVX512R1G1},
		}),
		vc32: 16, vert32: asmVert(16, 0, []vertTile[uint32]{
			{4, 4, vertAVX512DR4G4, vertAVX512DR1G4},
			{8, 2, vertAVX512DR8G2, vertAVX512DR1G2},
			{8, 1, vertAVX512DR8G1, vertAVX512DR1G1},
		}),
	}
}

// implAVX2 is the AVX2 vpshufb path. Its vertical kernels' byte counters
// hold 31 steps: 31 words of 64-bit lanes, 15 of half-words.
func implAVX2() *bitImpl {
	return &bitImpl{
		name: "avx2", row: rowAVX2, mark: markLoopAVX2,
		vc: 4, vert: asmVert(4, 31, []vertTile[uint64]{{4, 1, vertAVX2R4G1, vertAVX2R1G1}}),
		vc32: 8, vert32: asmVert(8, 15, []vertTile[uint32]{{4, 1, vertAVX2DR4G1, vertAVX2DR1G1}}),
	}
}

// asmVert wraps a family of vertical kernels into a vertFunc: it checks
// the bounds the assembly relies on, covers the groups with the widest
// tiles that fit, the rows with the main tile and then one row at a time,
// and splits K into runs of at most maxKW words (0: no limit; the AVX2
// byte counters hold 31 words).
func asmVert[T lane](vc, maxKW int, tiles []vertTile[T]) vertFunc[T] {
	per := lanesPerWord[T]() // steps per word of K
	return func(out []int32, ldo int, a []uint64, lda int, pairs []int64, bt []T, wstride, kw, ngroups, nrows int, set bool) {
		if ngroups <= 0 || nrows <= 0 {
			return
		}
		if kw <= 0 || len(pairs) < 3 {
			if set {
				for r := 0; r < nrows; r++ {
					clear(out[r*ldo : r*ldo+ngroups*vc])
				}
			}
			return
		}
		var amax, bmax int64
		for q := 0; q+2 < len(pairs); q += 3 {
			if pairs[q] < 0 || pairs[q+1] < 0 || pairs[q]%8 != 0 || pairs[q+1]%8 != 0 {
				panic("cpu: vertical kernel pair offsets must be non-negative multiples of 8")
			}
			amax, bmax = max(amax, pairs[q]), max(bmax, pairs[q+1])
		}
		_ = out[(nrows-1)*ldo+ngroups*vc-1]
		_ = a[(nrows-1)*lda+int(amax/8)+kw-1]
		_ = bt[int(bmax)*per/8+(per*kw-1)*wstride+ngroups*vc-1]
		np := len(pairs) / 3
		step := kw
		if maxKW > 0 {
			step = maxKW
		}
		for w0 := 0; w0 < kw; w0 += step {
			n := min(step, kw-w0)
			s := 0
			if set && w0 == 0 {
				s = 1
			}
			g0 := 0
			for _, t := range tiles {
				ng := (ngroups - g0) / t.groups * t.groups
				if ng == 0 {
					continue
				}
				nr := nrows / t.rows * t.rows
				if nr > 0 {
					t.main(&out[g0*vc], ldo, &a[w0], lda, &pairs[0], np, &bt[per*w0*wstride+g0*vc], wstride, n, ng, nr, s)
				}
				if nr < nrows {
					t.one(&out[nr*ldo+g0*vc], ldo, &a[nr*lda+w0], lda, &pairs[0], np, &bt[per*w0*wstride+g0*vc], wstride, n, ng, nrows-nr, s)
				}
				g0 += ng
			}
		}
	}
}

// markStream is the zero-chunk mask: when the lines are back to back
// (lda = 4·nchunks, as in every bit plane of A), hold at least 4 chunks
// and 64 in all, the chunk bits of up to 4096 chunks at a time come from
// chunkBitsAVX512 as one bit stream, cut into rows after; other lines
// take the per-chunk loop, faster at one chunk a row than the cutting.
// (The stream buffer lives on the stack: chunkBitsAVX512 is called
// directly, so its noescape pragma holds.)
// Best of 300 interleaved runs, 64 rows: 187 against 213 ns at 4 chunks a
// row, 458 against 637 at 16, 1.5 against 2.4 µs at 64 (an AVX2 version,
// VPCMPEQQ+VMOVMSKPD, was no faster than the loop and is not kept).
func markStream(mask []uint64, mw int, a []uint64, lda, nrows, nchunks int) {
	if nrows <= 0 || nchunks <= 0 {
		return
	}
	const bufBits = 4096
	if lda != nchunks*bitChunkWords || nchunks < 4 || nrows*nchunks < 64 || nchunks > bufBits {
		markLoopAVX2(mask, mw, a, lda, nrows, nchunks)
		return
	}
	_ = mask[(nrows-1)*mw+(nchunks-1)/64]
	_ = a[nrows*lda-1]
	var buf [bufBits / 64]uint64
	per := bufBits / nchunks
	for r0 := 0; r0 < nrows; r0 += per {
		nr := min(per, nrows-r0)
		total := nr * nchunks
		n16 := total &^ 15
		if n16 > 0 {
			chunkBitsAVX512(&buf[0], &a[r0*lda], n16)
		}
		if n16 < total {
			// The last < 16 chunks: clear the stream past n16, then set.
			buf[n16/64] &= 1<<(n16%64) - 1
			clear(buf[n16/64+1 : (total+63)/64])
			line := a[r0*lda:]
			for c := n16; c < total; c++ {
				w := line[c*bitChunkWords : c*bitChunkWords+bitChunkWords]
				if w[0]|w[1]|w[2]|w[3] != 0 {
					buf[c/64] |= 1 << (c % 64)
				}
			}
		}
		if mw == 1 { // nchunks <= 64: one window of the stream per row
			low := ^uint64(0) >> (64 - uint(nchunks))
			m := mask[r0 : r0+nr]
			for r := range m {
				i := uint(r * nchunks)
				w := buf[i/64] >> (i % 64)
				if i%64+uint(nchunks) > 64 {
					w |= buf[i/64+1] << (64 - i%64)
				}
				m[r] |= w & low
			}
			continue
		}
		for r := 0; r < nr; r++ {
			m := mask[(r0+r)*mw : (r0+r+1)*mw]
			for k, i := 0, r*nchunks; k*64 < nchunks; k, i = k+1, i+64 {
				nb := min(64, nchunks-k*64)
				w := buf[i/64] >> (i % 64)
				if i%64 != 0 && i%64+nb > 64 {
					w |= buf[i/64+1] << (64 - i%64)
				}
				if nb < 64 {
					w &= 1<<nb - 1
				}
				m[k] |= w
			}
		}
	}
}

// markLoopAVX2 is the per-chunk mask loop: the AVX2 path's mask, and
// markStream's for lines it does not take (BenchmarkMark compares the two).
var markLoopAVX2 = asmMark(markRowsAVX2)
