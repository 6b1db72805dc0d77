//go:build !purego

package cpu

// vertAsm is the signature of the generated vertical kernels.
type vertAsm func(out *int32, ldo int, a *uint64, lda int, pairs *int64, npairs int, bt *uint64, wstride, kw, ngroups, nrows, set int)

// vertTile is one register tile of a vertical kernel: main takes rows in
// multiples of rows and groups of vc columns in multiples of groups, one
// the single rows left over.
type vertTile struct {
	rows, groups int
	main, one    vertAsm
}

func init() {
	for _, im := range bitImpls {
		switch im.name {
		case "avx512":
			im.vc = 8
			im.vert = asmVert(8, 0, []vertTile{
				{4, 4, vertAVX512R4G4, vertAVX512R1G4},
				{8, 2, vertAVX512R8G2, vertAVX512R1G2},
				{8, 1, vertAVX512R8G1, vertAVX512R1G1},
			})
		case "avx2":
			im.vc = 4
			im.vert = asmVert(4, 31, []vertTile{{4, 1, vertAVX2R4G1, vertAVX2R1G1}})
		}
	}
}

// asmVert wraps a family of vertical kernels into a vertFunc: it checks
// the bounds the assembly relies on, covers the groups with the widest
// tiles that fit, the rows with the main tile and then one row at a time,
// and splits K into runs of at most maxKW words (0: no limit; the AVX2
// byte counters hold 31 words).
func asmVert(vc, maxKW int, tiles []vertTile) vertFunc {
	return func(out []int32, ldo int, a []uint64, lda int, pairs []int64, bt []uint64, wstride, kw, ngroups, nrows int, set bool) {
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
		_ = bt[int(bmax/8)+(kw-1)*wstride+ngroups*vc-1]
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
					t.main(&out[g0*vc], ldo, &a[w0], lda, &pairs[0], np, &bt[w0*wstride+g0*vc], wstride, n, ng, nr, s)
				}
				if nr < nrows {
					t.one(&out[nr*ldo+g0*vc], ldo, &a[nr*lda+w0], lda, &pairs[0], np, &bt[w0*wstride+g0*vc], wstride, n, ng, nrows-nr, s)
				}
				g0 += ng
			}
		}
	}
}
