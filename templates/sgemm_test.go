package templates

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type sgemmKernels struct {
	packed func(k int, a, b, c []float32, ldc int, alpha float32)
	direct func(k int, a []float32, lda int, b, c []float32, ldc int, alpha float32)
}

// sgemmImpls lists the microkernels this machine can run, for forcing each.
func sgemmImpls() map[string]sgemmKernels {
	impls := map[string]sgemmKernels{"generic": {sgemmKernelGeneric, sgemmKernelGenericDirect}}
	if sgemmImpl != "generic" {
		impls[sgemmImpl] = sgemmKernels{sgemmKernel, sgemmDirect}
	}
	return impls
}

func withSgemmKernel(t testing.TB, f sgemmKernels) {
	oldP, oldD := sgemmKernel, sgemmDirect
	sgemmKernel, sgemmDirect = f.packed, f.direct
	t.Cleanup(func() { sgemmKernel, sgemmDirect = oldP, oldD })
}

// naiveSgemm is the definition in float64, with the bound on the rounding
// error of any float32 summation order: Σ|alpha·a·b| + |beta·c|.
func naiveSgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) (want, bound []float64) {
	want = make([]float64, m*n)
	bound = make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s, abs float64
			for p := 0; p < k; p++ {
				var av, bv float32
				if transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += float64(av) * float64(bv)
				abs += math.Abs(float64(av) * float64(bv))
			}
			cv := float64(c[i*ldc+j])
			if beta == 0 {
				cv = 0
			}
			want[i*n+j] = float64(alpha)*s + float64(beta)*cv
			bound[i*n+j] = math.Abs(float64(alpha))*abs + math.Abs(float64(beta)*cv)
		}
	}
	return want, bound
}

func randF32(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func TestSgemmVsNaive(t *testing.T) {
	sizes := [][3]int{
		{0, 0, 0}, {1, 1, 1}, {0, 5, 3}, {4, 0, 3}, {3, 4, 0}, {5, 15, 7}, {6, 16, 1}, {7, 17, 2},
		{13, 33, 255}, {97, 31, 257}, {7, 20, 4100}, {13, 200, 300}, {1, 300, 9}, {200, 1, 65}, {101, 70, 600}, {50, 530, 40}, {103, 129, 70},
	}
	if testing.Short() {
		sizes = sizes[:len(sizes)-3]
	}
	for name, kern := range sgemmImpls() {
		t.Run("impl="+name, func(t *testing.T) {
			withSgemmKernel(t, kern)
			for _, sz := range sizes {
				for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					m, n, k := sz[0], sz[1], sz[2]
					t.Run(fmt.Sprintf("m=%d/n=%d/k=%d/tA=%v/tB=%v", m, n, k, tr[0], tr[1]), func(t *testing.T) {
						rng := rand.New(rand.NewPCG(uint64(m*1000+n), uint64(k)))
						ar, ac := m, k
						if tr[0] {
							ar, ac = k, m
						}
						br, bc := k, n
						if tr[1] {
							br, bc = n, k
						}
						// Strides larger than the rows, to catch stride mix-ups.
						lda, ldb, ldc := ac+3, bc+1, n+2
						a := randF32(rng, max(0, ar*lda))
						b := randF32(rng, max(0, br*ldb))
						c := randF32(rng, max(0, m*ldc))
						for _, ab := range [][2]float32{{1, 0}, {0.5, 1}, {-2, 0.25}} {
							got := append([]float32(nil), c...)
							want, bound := naiveSgemm(tr[0], tr[1], m, n, k, ab[0], a, lda, b, ldb, ab[1], c, ldc)
							Sgemm(tr[0], tr[1], m, n, k, ab[0], a, lda, b, ldb, ab[1], got, ldc)
							for i := 0; i < m; i++ {
								for j := 0; j < n; j++ {
									tol := 4*float64(k+2)*0x1p-24*bound[i*n+j] + 1e-30
									if !assert.InDelta(t, want[i*n+j], float64(got[i*ldc+j]), tol, "alpha=%v beta=%v C[%d][%d]", ab[0], ab[1], i, j) {
										return
									}
								}
								// The stride gap of C is never written.
								for j := n; j < ldc && i*ldc+j < len(c); j++ {
									require.Equal(t, c[i*ldc+j], got[i*ldc+j], "C gap written at [%d][%d]", i, j)
								}
							}
						}
					})
				}
			}
		})
	}
}

func TestSgemmBetaZeroIgnoresNaN(t *testing.T) {
	a := []float32{1, 2, 3, 4}
	c := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.NaN()), 7}
	Sgemm(false, false, 2, 2, 2, 1, a, 2, a, 2, 0, c, 2)
	assert.Equal(t, []float32{7, 10, 15, 22}, c)
}

func TestSgemmBadArgsPanic(t *testing.T) {
	x := make([]float32, 10)
	cases := map[string]func(){
		"negative m":  func() { Sgemm(false, false, -1, 2, 2, 1, x, 2, x, 2, 0, x, 2) },
		"small lda":   func() { Sgemm(false, false, 2, 2, 3, 1, x, 2, x, 2, 0, x, 2) },
		"short B":     func() { Sgemm(false, true, 2, 4, 3, 1, x, 3, x, 3, 0, x, 4) },
		"short C":     func() { Sgemm(false, false, 3, 4, 1, 1, x, 1, x, 4, 0, x, 4) },
		"trans A lda": func() { Sgemm(true, false, 4, 2, 2, 1, x, 3, x, 2, 0, x, 2) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				err, ok := r.(error)
				require.True(t, ok, "panic value %T is not an error", r)
				assert.ErrorIs(t, err, ErrSgemmArg)
			}()
			f()
		})
	}
}
