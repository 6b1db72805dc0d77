package cpu

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

// scale is the factor applied to kept elements.
func (dr Dropout) scale() float32 {
	if dr.P >= 1 {
		return 0
	}
	return 1 / (1 - dr.P)
}

// factor is element i's multiplier: 1/(1−P) when kept, 0 when dropped.
func (dr Dropout) factor(i int, scale float32) float32 {
	if DropKeep(dr.Seed, i, dr.P) {
		return scale
	}
	return 0
}
