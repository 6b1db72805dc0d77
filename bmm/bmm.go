package bmm

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/qgtc/qgtc/bittensor"
)

// Errors returned by the products; wrapped with the shapes at fault.
var (
	ErrShape    = errors.New("bmm: shape mismatch")
	ErrPacking  = errors.New("bmm: wrong packing")
	ErrOverflow = errors.New("bmm: product may overflow int32")
	ErrBits     = errors.New("bmm: output bit width out of range 1..32")
)

// Requant re-quantizes a product element-wise:
//
//	q = clamp(floor(float32(c)·Scale + Offset), 0, 2^outBits − 1)
//
// The multiply and the add are each rounded to float32 (no fused
// multiply-add), so every kernel, CPU or GPU, gives the same q.
type Requant struct{ Scale, Offset float32 }

// Kernel computes bit products. Implementations may assume the operands have
// passed Check (the package-level functions call it) and must fill every
// element of dst. dst comes first, as in gonum.
type Kernel interface {
	// Name identifies the kernel, e.g. "generic", "cpu/avx2", "tcu/wgmma".
	Name() string
	// MulInt writes C = A·B into dst (len M·N, row-major).
	MulInt(dst []int32, a, b *bittensor.Tensor) error
	// MulFloat writes ep applied to C = A·B into dst (len M·N, row-major).
	MulFloat(dst []float32, a, b *bittensor.Tensor, ep *Epilogue) error
	// MulBit re-quantizes ep(C) with rq into dst, an M×N tensor of any
	// packing whose padding bits are zero on return. A nil ep is the identity.
	MulBit(dst *bittensor.Tensor, a, b *bittensor.Tensor, ep *Epilogue, rq Requant) error
}

var (
	regMu    sync.RWMutex
	registry = []registered{{Generic{}, 0}}
)

type registered struct {
	k        Kernel
	priority int
}

// Register makes k available to Default; the highest priority wins
// (Generic has 0). Kernels register themselves from init when usable.
func Register(k Kernel, priority int) {
	regMu.Lock()
	defer regMu.Unlock()
	registry = append(registry, registered{k, priority})
	sort.SliceStable(registry, func(i, j int) bool { return registry[i].priority > registry[j].priority })
}

// Default returns the highest-priority registered kernel.
func Default() Kernel {
	regMu.RLock()
	defer regMu.RUnlock()
	return registry[0].k
}

// Kernels lists the registered kernels, best first.
func Kernels() []Kernel {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Kernel, len(registry))
	for i, r := range registry {
		out[i] = r.k
	}
	return out
}

// MaxSum is the largest C any M×K·K×N product of a-bit by b-bit values can
// reach: K·(2^a−1)·(2^b−1).
func MaxSum(k, abits, bbits int) float64 {
	return float64(k) * (math.Exp2(float64(abits)) - 1) * (math.Exp2(float64(bbits)) - 1)
}

// Check validates that a (packed by rows, M×K) and b (packed by columns,
// K×N) can be multiplied without int32 overflow, and returns M, N.
func Check(a, b *bittensor.Tensor) (m, n int, err error) {
	if a == nil || b == nil {
		return 0, 0, fmt.Errorf("%w: nil operand", ErrShape)
	}
	if a.Packing() != bittensor.ByRows {
		return 0, 0, fmt.Errorf("%w: A must be packed by rows (PackRows), got %v", ErrPacking, a.Packing())
	}
	if b.Packing() != bittensor.ByCols {
		return 0, 0, fmt.Errorf("%w: B must be packed by columns (PackCols), got %v", ErrPacking, b.Packing())
	}
	if a.Cols() != b.Rows() {
		return 0, 0, fmt.Errorf("%w: A is %d×%d, B is %d×%d: K differs", ErrShape, a.Rows(), a.Cols(), b.Rows(), b.Cols())
	}
	if a.LineWords() != b.LineWords() {
		return 0, 0, fmt.Errorf("%w: A's K is padded to %d bits, B's to %d", ErrShape, 64*a.LineWords(), 64*b.LineWords())
	}
	if s := MaxSum(a.Cols(), a.Bits(), b.Bits()); s > math.MaxInt32 {
		return 0, 0, fmt.Errorf("%w: K=%d with %d-bit A and %d-bit B reaches %.4g > 2^31−1", ErrOverflow, a.Cols(), a.Bits(), b.Bits(), s)
	}
	return a.Rows(), b.Cols(), nil
}

// MM2Int returns C = A·B as an M×N row-major int32 slice, using Default().
// a comes from PackRows (M×K), b from PackCols (K×N).
func MM2Int(a, b *bittensor.Tensor) ([]int32, error) {
	return MM2IntWith(Default(), a, b)
}

// MM2IntWith is MM2Int with an explicit kernel.
func MM2IntWith(k Kernel, a, b *bittensor.Tensor) ([]int32, error) {
	m, n, err := Check(a, b)
	if err != nil {
		return nil, err
	}
	dst := make([]int32, m*n)
	if err := k.MulInt(dst, a, b); err != nil {
		return nil, err
	}
	return dst, nil
}

// MM2Bit returns A·B re-quantized to outBits with rq, packed by rows: ready
// to be the next product's A.
func MM2Bit(a, b *bittensor.Tensor, outBits int, rq Requant) (*bittensor.Tensor, error) {
	return MM2BitWith(Default(), a, b, outBits, rq, bittensor.ByRows, bittensor.DefaultPadding, nil)
}

// MM2BitCols is MM2Bit with the result packed by columns: ready to be the
// next product's B.
func MM2BitCols(a, b *bittensor.Tensor, outBits int, rq Requant) (*bittensor.Tensor, error) {
	return MM2BitWith(Default(), a, b, outBits, rq, bittensor.ByCols, bittensor.DefaultPadding, nil)
}

// MM2BitWith is MM2Bit with every choice explicit: kernel, output packing and
// padding, and an optional float epilogue applied before rq.
func MM2BitWith(k Kernel, a, b *bittensor.Tensor, outBits int, rq Requant, packing bittensor.Packing, pad bittensor.Padding, ep *Epilogue) (*bittensor.Tensor, error) {
	m, n, err := Check(a, b)
	if err != nil {
		return nil, err
	}
	if outBits < 1 || outBits > bittensor.MaxBits {
		return nil, fmt.Errorf("%w: outBits=%d", ErrBits, outBits)
	}
	if err := ep.Validate(m, n); err != nil {
		return nil, err
	}
	dst, err := bittensor.New(m, n, outBits, packing, pad)
	if err != nil {
		return nil, err
	}
	if err := MM2BitInto(k, dst, a, b, ep, rq); err != nil {
		return nil, err
	}
	return dst, nil
}

// MM2BitInto is MM2BitWith into a destination the caller made (an M×N
// tensor of any packing, padding and width; its previous bits are
// overwritten): for loops that keep one destination's storage from call to
// call.
func MM2BitInto(k Kernel, dst *bittensor.Tensor, a, b *bittensor.Tensor, ep *Epilogue, rq Requant) error {
	m, n, err := Check(a, b)
	if err != nil {
		return err
	}
	if err := CheckDst(dst, m, n); err != nil {
		return err
	}
	if err := ep.Validate(m, n); err != nil {
		return err
	}
	return k.MulBit(dst, a, b, ep, rq)
}

// MM2Float returns ep(A·B) as an M×N row-major float32 slice.
func MM2Float(a, b *bittensor.Tensor, ep *Epilogue) ([]float32, error) {
	return MM2FloatWith(Default(), a, b, ep)
}

// MM2FloatWith is MM2Float with an explicit kernel.
func MM2FloatWith(k Kernel, a, b *bittensor.Tensor, ep *Epilogue) ([]float32, error) {
	m, n, err := Check(a, b)
	if err != nil {
		return nil, err
	}
	if err := ep.Validate(m, n); err != nil {
		return nil, err
	}
	dst := make([]float32, m*n)
	if err := MM2FloatInto(k, dst, a, b, ep); err != nil {
		return nil, err
	}
	return dst, nil
}

// MM2FloatInto is MM2FloatWith into dst (len M·N, row-major, overwritten).
func MM2FloatInto(k Kernel, dst []float32, a, b *bittensor.Tensor, ep *Epilogue) error {
	m, n, err := Check(a, b)
	if err != nil {
		return err
	}
	if len(dst) != m*n {
		return fmt.Errorf("%w: destination has %d values, product is %d×%d", ErrShape, len(dst), m, n)
	}
	if err := ep.Validate(m, n); err != nil {
		return err
	}
	return k.MulFloat(dst, a, b, ep)
}
