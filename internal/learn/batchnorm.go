package learn

import "math"

// The batch norm of GIN's MLP, as PyTorch's BatchNorm1d defaults: running
// statistics move by BNMomentum per training batch, ε is BNEps.
const (
	BNMomentum = 0.1
	BNEps      = 1e-5
)

// FoldBN returns the per-channel scale γ/√(σ² + ε) and shift β − μ·scale
// of a batch norm's running statistics (μ mean, σ² variance), in float32:
// evaluation's affine map, the one definition both the simulation and the
// bit kernels' epilogue use.
func FoldBN(gamma, beta, mean, variance []float32) (scale, shift []float32) {
	scale, shift = make([]float32, len(gamma)), make([]float32, len(gamma))
	for j := range scale {
		scale[j] = float32(float64(gamma[j]) / math.Sqrt(float64(variance[j])+BNEps))
		shift[j] = float32(float64(beta[j]) - float64(mean[j])*float64(scale[j]))
	}
	return scale, shift
}
