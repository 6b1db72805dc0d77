package templates

import "math"

// Splitmix64 hashes a counter into 64 random bits (Steele, Lea and Flood's
// SplitMix64 finalizer). Dropout masks are drawn from it so that a backward
// pass can regenerate a mask from its seed instead of storing it; the
// tape's Dropout (internal/nn) and the fused GAT attention dropout share it,
// so both draw the same mask for the same seed and element.
func Splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// DropKeep reports whether element i survives dropout with rate p under
// seed: it keeps with probability 1−p, from the top 24 bits of
// Splitmix64 of the seeded counter.
func DropKeep(seed uint64, i int, p float32) bool {
	return float32(Splitmix64(seed^uint64(i)*0xd1342543de82ef95)>>40)*(1.0/(1<<24)) >= p
}

// Dropout is a counter-based dropout mask: element i is kept when
// DropKeep(Seed, i, P) and then scaled by 1/(1−P). The zero value (P = 0)
// keeps everything unscaled.
type Dropout struct {
	Seed uint64
	P    float32
}

// dropMask is a Dropout ready for the kernels: DropKeep's test
// float32(k)·2⁻²⁴ ≥ P on the hash's top 24 bits k is exactly k ≥ ⌈P·2²⁴⌉
// (k and P·2²⁴ are exact in float32), an integer compare the compiler
// turns into a conditional move: a keep/drop branch would mispredict on
// about every other edge.
type dropMask struct {
	seed, thr uint64
	scale     float32
}

func (dr Dropout) mask() dropMask {
	m := dropMask{seed: dr.Seed, scale: 1 / (1 - dr.P)}
	switch {
	case dr.P <= 0:
		m.scale = 1
	case dr.P >= 1 || dr.P != dr.P: // DropKeep keeps nothing for NaN either
		m.thr, m.scale = 1<<24, 0
	default:
		m.thr = uint64(math.Ceil(float64(dr.P) * (1 << 24)))
	}
	return m
}

// factor is element i's multiplier: 1/(1−P) when kept, 0 when dropped.
func (m dropMask) factor(i int) float32 {
	f := m.scale
	if Splitmix64(m.seed^uint64(i)*0xd1342543de82ef95)>>40 < m.thr {
		f = 0
	}
	return f
}
