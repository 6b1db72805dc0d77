package templates

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/qgtc/qgtc/internal/par"
)

//go:generate sh -c "cd _asm && go run ./sgemm -out ../sgemm_gen_amd64.s -stubs ../sgemm_gen_amd64.go -pkg templates"

// ErrSgemmArg is the value Sgemm panics with (wrapped) when its arguments do
// not describe valid matrices: a programmer error, as in BLAS.
var ErrSgemmArg = errors.New("templates: bad Sgemm argument")

// Blocking of the float32 GEMM (BLIS style). The microkernel computes a
// sgMR×sgNR tile of C from a packed sgMR-row panel of A and a packed
// sgNR-column panel of B; a kc×sgNR panel of B (16 KiB) stays in L1 while
// an sgMC×kc block of A (96 KiB) stays in L2.
const (
	sgMR = 6
	sgNR = 16
	sgKC = 256
	sgMC = 96   // multiple of sgMR
	sgNC = 4096 // multiple of sgNR
	// sgTaskN is the width of one parallel task's slice of a B block.
	sgTaskN = 256 // multiple of sgNR
	// sgDirectN is the widest C for which A is read without packing, and
	// sgKCDirect the K block then: long, so each row of A streams far per
	// visit (B's 16-column panel, up to 256 KiB, comes from L2).
	sgDirectN  = 128
	sgKCDirect = 4096
)

// Sgemm computes C = alpha·op(A)·op(B) + beta·C for row-major float32
// matrices, where op(X) is X or its transpose. op(A) is m×k, op(B) is k×n and
// C is m×n. A is stored m×k with row stride lda (k×m if transA), B is stored
// k×n with row stride ldb (n×k if transB), C with row stride ldc. As in BLAS,
// beta == 0 means C is not read (NaNs there are overwritten).
//
// It is blocked for the caches, packs panels, runs an AVX2+FMA 6×16
// microkernel where the CPU has one (a Go one elsewhere) and splits the work
// over GOMAXPROCS goroutines. Results may differ from a naive loop in the
// last bits (summation order, fused multiply-add).
//
// Sgemm panics with an error wrapping ErrSgemmArg if a size or stride is
// negative or too small, or a slice is too short: those are programmer errors.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Errorf("%w: negative size m=%d n=%d k=%d", ErrSgemmArg, m, n, k))
	}
	sgemmCheckMat("A", a, ar, ac, lda)
	sgemmCheckMat("B", b, br, bc, ldb)
	sgemmCheckMat("C", c, m, n, ldc)
	if m == 0 || n == 0 {
		return
	}
	if beta != 1 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			if beta == 0 {
				clear(row)
				continue
			}
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if k == 0 || alpha == 0 {
		return
	}
	sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, c, ldc)
}

func sgemmCheckMat(name string, x []float32, rows, cols, ld int) {
	if ld < max(1, cols) {
		panic(fmt.Errorf("%w: %s is %d×%d but its stride is %d", ErrSgemmArg, name, rows, cols, ld))
	}
	if rows > 0 && cols > 0 && len(x) < (rows-1)*ld+cols {
		panic(fmt.Errorf("%w: %s is %d×%d with stride %d, needs %d values, has %d",
			ErrSgemmArg, name, rows, cols, ld, (rows-1)*ld+cols, len(x)))
	}
}

// sgemmBufs are per-goroutine packing buffers, reused across calls.
var sgemmBufs = sync.Pool{New: func() any {
	// Packed A is an sgMC×sgKC block, or in direct mode one partial
	// sgMR-row panel of up to sgKCDirect.
	return &sgemmBuf{a: make([]float32, max(sgMC*sgKC, sgMR*sgKCDirect)), tile: make([]float32, sgMR*sgNR)}
}}

type sgemmBuf struct{ a, tile []float32 }

var packedBPool sync.Pool

func sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	workers := runtime.GOMAXPROCS(0)
	if 2*m*n*k < 1<<21 {
		workers = 1
	}
	// A skinny product (few columns) reuses each element of A only n
	// times, too few to pay for packing it: read it in place then, in
	// longer K blocks so each row of A streams further per visit.
	direct := !transA && n <= sgDirectN && sgemmDirect != nil
	kcMax := sgKC
	if direct {
		kcMax = sgKCDirect
	}
	bpSize := kcMax * sgRoundUp(min(n, sgNC), sgNR)
	var bp []float32
	if p, ok := packedBPool.Get().(*[]float32); ok && cap(*p) >= bpSize {
		bp = (*p)[:bpSize]
	} else {
		bp = make([]float32, bpSize)
	}
	defer packedBPool.Put(&bp)

	mBlocks := (m + sgMC - 1) / sgMC
	for jc := 0; jc < n; jc += sgNC {
		nc := min(sgNC, n-jc)
		nPanels := (nc + sgNR - 1) / sgNR
		nTasks := (nc + sgTaskN - 1) / sgTaskN
		for pc := 0; pc < k; pc += kcMax {
			kc := min(kcMax, k-pc)
			par.For(nPanels, workers, func(jp int) {
				sgemmPackB(bp[jp*kc*sgNR:(jp+1)*kc*sgNR], transB, b, ldb, pc, jc+jp*sgNR, kc, min(sgNR, nc-jp*sgNR))
			})
			par.For(mBlocks*nTasks, workers, func(t int) {
				ib, jt := t/nTasks, t%nTasks
				ic := ib * sgMC
				mc := min(sgMC, m-ic)
				j0 := jt * sgTaskN
				j1 := min(nc, j0+sgTaskN)
				buf := sgemmBufs.Get().(*sgemmBuf)
				var ad []float32
				if direct {
					// Full panels read A in place; only a last partial one is packed.
					ad = a[ic*lda+pc:]
					if full := mc / sgMR * sgMR; full < mc {
						sgemmPackA(buf.a, false, a, lda, ic+full, pc, mc-full, kc)
					}
				} else {
					sgemmPackA(buf.a, transA, a, lda, ic, pc, mc, kc)
				}
				sgemmMacro(buf, mc, kc, j0, j1, bp, c[ic*ldc+jc:], ldc, alpha, ad, lda)
				sgemmBufs.Put(buf)
			})
		}
	}
}

// sgemmMacro multiplies the packed mc×kc block of A by columns [j0, j1) of
// the packed kc×nc block of B into c (already offset to the block's
// corner). When ad is not nil, full 6-row panels of A are read from ad
// (row stride lda) in place and buf.a holds only the last partial panel.
func sgemmMacro(buf *sgemmBuf, mc, kc, j0, j1 int, bp, c []float32, ldc int, alpha float32, ad []float32, lda int) {
	for jr := j0; jr < j1; jr += sgNR {
		nr := min(sgNR, j1-jr)
		bpan := bp[(jr/sgNR)*kc*sgNR : (jr/sgNR+1)*kc*sgNR]
		for ir := 0; ir < mc; ir += sgMR {
			mr := min(sgMR, mc-ir)
			if ad != nil && mr == sgMR {
				if nr == sgNR {
					sgemmDirect(kc, ad[ir*lda:], lda, bpan, c[ir*ldc+jr:], ldc, alpha)
					continue
				}
				t := buf.tile
				clear(t)
				sgemmDirect(kc, ad[ir*lda:], lda, bpan, t, sgNR, alpha)
				sgemmAddTile(c[ir*ldc+jr:], ldc, t, mr, nr)
				continue
			}
			var apan []float32
			if ad != nil {
				apan = buf.a[:kc*sgMR]
			} else {
				apan = buf.a[(ir/sgMR)*kc*sgMR : (ir/sgMR+1)*kc*sgMR]
			}
			if mr == sgMR && nr == sgNR {
				sgemmKernel(kc, apan, bpan, c[ir*ldc+jr:], ldc, alpha)
				continue
			}
			t := buf.tile
			clear(t)
			sgemmKernel(kc, apan, bpan, t, sgNR, alpha)
			sgemmAddTile(c[ir*ldc+jr:], ldc, t, mr, nr)
		}
	}
}

// sgemmAddTile adds the top-left mr×nr of a sgMR×sgNR tile to c.
func sgemmAddTile(c []float32, ldc int, t []float32, mr, nr int) {
	for i := 0; i < mr; i++ {
		row := c[i*ldc : i*ldc+nr]
		for j := range row {
			row[j] += t[i*sgNR+j]
		}
	}
}

// sgemmPackA copies op(A)[ic:ic+mc, pc:pc+kc] into sgMR-row micro-panels:
// dst[ip*kc*sgMR + p*sgMR + i] = op(A)[ic+ip*sgMR+i][pc+p], zero padded.
func sgemmPackA(dst []float32, trans bool, a []float32, lda, ic, pc, mc, kc int) {
	for ip := 0; ip*sgMR < mc; ip++ {
		pan := dst[ip*kc*sgMR : (ip+1)*kc*sgMR]
		rows := min(sgMR, mc-ip*sgMR)
		r0 := ic + ip*sgMR
		if trans {
			for p := 0; p < kc; p++ {
				src := a[(pc+p)*lda+r0 : (pc+p)*lda+r0+rows]
				d := pan[p*sgMR : p*sgMR+sgMR]
				copy(d, src)
				clear(d[rows:])
			}
			continue
		}
		if rows == sgMR {
			s0 := a[r0*lda+pc : r0*lda+pc+kc]
			s1 := a[(r0+1)*lda+pc : (r0+1)*lda+pc+kc]
			s2 := a[(r0+2)*lda+pc : (r0+2)*lda+pc+kc]
			s3 := a[(r0+3)*lda+pc : (r0+3)*lda+pc+kc]
			s4 := a[(r0+4)*lda+pc : (r0+4)*lda+pc+kc]
			s5 := a[(r0+5)*lda+pc : (r0+5)*lda+pc+kc]
			for p := range s0 {
				d := (*[sgMR]float32)(pan[p*sgMR:])
				d[0], d[1], d[2], d[3], d[4], d[5] = s0[p], s1[p], s2[p], s3[p], s4[p], s5[p]
			}
			continue
		}
		for i := 0; i < rows; i++ {
			src := a[(r0+i)*lda+pc : (r0+i)*lda+pc+kc]
			for p, v := range src {
				pan[p*sgMR+i] = v
			}
		}
		for i := rows; i < sgMR; i++ {
			for p := 0; p < kc; p++ {
				pan[p*sgMR+i] = 0
			}
		}
	}
}

// sgemmPackB copies op(B)[pc:pc+kc, j0:j0+cols] (cols <= sgNR) into one micro-panel:
// dst[p*sgNR + j] = op(B)[pc+p][j0+j], zero padded.
func sgemmPackB(dst []float32, trans bool, b []float32, ldb, pc, j0, kc, cols int) {
	if !trans {
		for p := 0; p < kc; p++ {
			d := dst[p*sgNR : p*sgNR+sgNR]
			copy(d, b[(pc+p)*ldb+j0:(pc+p)*ldb+j0+cols])
			clear(d[cols:])
		}
		return
	}
	for j := 0; j < cols; j++ {
		src := b[(j0+j)*ldb+pc : (j0+j)*ldb+pc+kc]
		for p, v := range src {
			dst[p*sgNR+j] = v
		}
	}
	for j := cols; j < sgNR; j++ {
		for p := 0; p < kc; p++ {
			dst[p*sgNR+j] = 0
		}
	}
}

func sgRoundUp(x, m int) int { return (x + m - 1) / m * m }

// sgemmKernel is the microkernel in use; sgemmImpl names it.
var sgemmKernel, sgemmDirect, sgemmImpl = pickSgemmKernel()

func pickSgemmKernel() (func(k int, a, b, c []float32, ldc int, alpha float32),
	func(k int, a []float32, lda int, b, c []float32, ldc int, alpha float32), string) {
	if f, d, name := asmSgemmKernel(); f != nil {
		return f, d, name
	}
	return sgemmKernelGeneric, sgemmKernelGenericDirect, "generic"
}

// SgemmImpl names the float32 GEMM microkernel in use ("avx2+fma" or "generic").
func SgemmImpl() string { return sgemmImpl }
