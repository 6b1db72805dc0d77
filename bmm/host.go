package bmm

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/qgtc/qgtc/bittensor"
)

// Host is the bookkeeping of a Backend whose operands are host memory (the
// generic and cpu backends embed it): bits and vectors wrap the caller's
// tensors and slices without copying, operands know their Host, Free and
// Close make them foreign, and ops are counted. It implements the Backend
// methods that do not compute: uploads and allocations of bits, vectors,
// ints and indices, their reads, Traffic and Close.
//
// A Host may have forks (ForkInto): hosts of a backend's forks (Forker),
// which share its operands and count their ops apart.
type Host struct {
	ops    atomic.Int64 // this host's own ops; a root's Traffic adds its forks'
	closed bool
	root   *Host // a fork's: the host that owns the operands
	mu     sync.Mutex
	forks  []*Host // a root's open forks
	gone   int64   // ops of the root's closed forks
}

// top is the host whose operands h runs on: its root, or h.
func (h *Host) top() *Host {
	if h.root != nil {
		return h.root
	}
	return h
}

// Closed reports whether h (or its root) was closed.
func (h *Host) Closed() bool { return h.closed || h.top().closed }

// ForkInto makes f a fork of h (or of h's root): operands made by either
// are live on both, f's ops are counted into h's Traffic as well as f's
// own, and closing the root makes every operand foreign on its forks too.
// f must be a new, unused Host; Close releases it.
func (h *Host) ForkInto(f *Host) {
	r := h.top()
	f.root = r
	r.mu.Lock()
	r.forks = append(r.forks, f)
	r.mu.Unlock()
}

// HostOperand is what a host operand embeds: its Host and whether it was
// freed.
type HostOperand struct {
	owner *Host
	freed bool
}

// Operand returns a live operand of h, for a backend's own operand types.
func (h *Host) Operand() HostOperand { return HostOperand{owner: h.top()} }

// Free implements Operand.
func (o *HostOperand) Free() { o.freed = true }

// Alive reports whether o is a live operand of h (or of h's root, for a
// fork).
func (o *HostOperand) Alive(h *Host) bool {
	return o.owner == h.top() && !o.freed && !h.closed && !o.owner.closed
}

// HostBits is a host bit tensor operand.
type HostBits struct {
	HostOperand
	T *bittensor.Tensor
}

func (b *HostBits) Rows() int                  { return b.T.Rows() }
func (b *HostBits) Cols() int                  { return b.T.Cols() }
func (b *HostBits) Bits() int                  { return b.T.Bits() }
func (b *HostBits) Packing() bittensor.Packing { return b.T.Packing() }

// HostVector is a host float32 operand.
type HostVector struct {
	HostOperand
	V []float32
}

func (v *HostVector) Len() int { return len(v.V) }

// HostInts is a host int32 operand.
type HostInts struct {
	HostOperand
	V []int32
}

func (v *HostInts) Len() int { return len(v.V) }

// HostIndex is a host index operand: distinct values below Max.
type HostIndex struct {
	HostOperand
	V   []int32
	Max int
}

func (v *HostIndex) Len() int   { return len(v.V) }
func (v *HostIndex) Bound() int { return v.Max }

// Foreign is ErrForeign for the operand named what.
func Foreign(what string) error { return fmt.Errorf("%w: %s", ErrForeign, what) }

// CountOp counts one op in Traffic. Forks count into their own Host, so
// several goroutines counting never share a cache line.
func (h *Host) CountOp() { h.ops.Add(1) }

// UploadBits implements Backend: the operand is t itself.
func (h *Host) UploadBits(t *bittensor.Tensor) (Bits, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: nil tensor", ErrShape)
	}
	return &HostBits{h.Operand(), t}, nil
}

// UploadVector implements Backend: the operand is v itself.
func (h *Host) UploadVector(v []float32) (Vector, error) {
	if v == nil {
		v = []float32{} // an epilogue's nil vector skips its step; an empty one does not
	}
	return &HostVector{h.Operand(), v}, nil
}

// NewBits implements Backend.
func (h *Host) NewBits(rows, cols, bits int, packing bittensor.Packing) (Bits, error) {
	if bits < 1 || bits > bittensor.MaxBits {
		return nil, fmt.Errorf("%w: %d bits", ErrBits, bits)
	}
	t, err := bittensor.New(rows, cols, bits, packing, bittensor.DefaultPadding)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrShape, err)
	}
	return &HostBits{h.Operand(), t}, nil
}

// NewVector implements Backend.
func (h *Host) NewVector(n int) (Vector, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: vector of %d values", ErrShape, n)
	}
	return &HostVector{h.Operand(), make([]float32, n)}, nil
}

// UploadIndex implements Backend: the operand is idx itself, checked.
func (h *Host) UploadIndex(idx []int32, bound int) (Index, error) {
	if err := CheckIndex(idx, bound); err != nil {
		return nil, err
	}
	return &HostIndex{h.Operand(), idx, bound}, nil
}

// NewInts implements Backend.
func (h *Host) NewInts(n int, fill int32) (Ints, error) {
	if n < 0 {
		return nil, fmt.Errorf("%w: %d ints", ErrShape, n)
	}
	v := make([]int32, n)
	for i := range v {
		v[i] = fill
	}
	return &HostInts{h.Operand(), v}, nil
}

// ArgmaxOperands resolves and checks ArgmaxTo's operands: the
// destination's values, the index's and the logits'.
func (h *Host) ArgmaxOperands(dst Ints, at Index, logits Vector, cols int) (d, idx []int32, l []float32, err error) {
	if d, err = h.Ints(dst, "argmax destination"); err != nil {
		return nil, nil, nil, err
	}
	ix, ok := at.(*HostIndex)
	if !ok || !ix.Alive(h) {
		return nil, nil, nil, Foreign("argmax index")
	}
	if l, err = h.Floats(logits, "logits"); err != nil {
		return nil, nil, nil, err
	}
	return d, ix.V, l, CheckArgmaxTo(len(d), len(ix.V), ix.Max, len(l), cols)
}

// Ints returns the values of h's live operand v, or ErrForeign naming
// what.
func (h *Host) Ints(v Ints, what string) ([]int32, error) {
	if s, ok := v.(*HostInts); ok && s.Alive(h) {
		return s.V, nil
	}
	return nil, Foreign(what)
}

// ReadInts implements Backend.
func (h *Host) ReadInts(dst []int32, v Ints) error {
	s, err := h.Ints(v, "ints")
	if err != nil {
		return err
	}
	if len(dst) != len(s) {
		return fmt.Errorf("%w: reading %d ints into %d", ErrShape, len(s), len(dst))
	}
	copy(dst, s)
	return nil
}

// Tensor returns the tensor of h's live operand o, or ErrForeign naming
// what.
func (h *Host) Tensor(o Bits, what string) (*bittensor.Tensor, error) {
	if b, ok := o.(*HostBits); ok && b.Alive(h) {
		return b.T, nil
	}
	return nil, Foreign(what)
}

// Floats returns the values of h's live operand o, or ErrForeign.
func (h *Host) Floats(o Vector, what string) ([]float32, error) {
	if v, ok := o.(*HostVector); ok && v.Alive(h) {
		return v.V, nil
	}
	return nil, Foreign(what)
}

// Epilogue resolves ep's vectors and checks them against an m×n output.
func (h *Host) Epilogue(ep *Epi, m, n int) (*Epilogue, error) {
	if ep == nil {
		return nil, nil
	}
	out := &Epilogue{ReLU: ep.ReLU}
	for _, f := range []struct {
		name string
		v    Vector
		dst  *[]float32
	}{
		{"ColScale", ep.ColScale, &out.ColScale}, {"RowTerm", ep.RowTerm, &out.RowTerm},
		{"ColTerm", ep.ColTerm, &out.ColTerm}, {"ColConst", ep.ColConst, &out.ColConst},
		{"RowScale", ep.RowScale, &out.RowScale}, {"ColBias", ep.ColBias, &out.ColBias},
	} {
		if f.v == nil {
			continue
		}
		s, err := h.Floats(f.v, "epilogue "+f.name)
		if err != nil {
			return nil, err
		}
		*f.dst = s
	}
	return out, out.Validate(m, n)
}

// Product resolves and checks a product's operands and epilogue.
func (h *Host) Product(a, b Bits, ep *Epi) (at, bt *bittensor.Tensor, e *Epilogue, err error) {
	if at, err = h.Tensor(a, "A"); err != nil {
		return
	}
	if bt, err = h.Tensor(b, "B"); err != nil {
		return
	}
	if err = CheckProduct(at, bt); err != nil {
		return
	}
	e, err = h.Epilogue(ep, at.Rows(), bt.Cols())
	return
}

// ReadVector implements Backend.
func (h *Host) ReadVector(dst []float32, v Vector) error {
	s, err := h.Floats(v, "vector")
	if err != nil {
		return err
	}
	if len(dst) != len(s) {
		return fmt.Errorf("%w: reading %d values into %d", ErrShape, len(s), len(dst))
	}
	copy(dst, s)
	return nil
}

// ReadBits implements Backend: a copy of the operand's tensor.
func (h *Host) ReadBits(b Bits) (*bittensor.Tensor, error) {
	t, err := h.Tensor(b, "bits")
	if err != nil {
		return nil, err
	}
	return CopyBits(t)
}

// Traffic implements Backend: host operands move no bytes. A root's ops
// include its forks'.
func (h *Host) Traffic() Traffic {
	ops := h.ops.Load()
	if h.root == nil {
		h.mu.Lock()
		ops += h.gone
		for _, f := range h.forks {
			ops += f.ops.Load()
		}
		h.mu.Unlock()
	}
	return Traffic{Ops: ops}
}

// Close implements Backend: every operand becomes foreign; their memory is
// the caller's or the garbage collector's. Closing a fork leaves its root
// and the operands open; its ops stay counted in the root's Traffic.
func (h *Host) Close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	if r := h.root; r != nil {
		r.mu.Lock()
		for i, f := range r.forks {
			if f == h {
				r.forks = append(r.forks[:i], r.forks[i+1:]...)
				r.gone += h.ops.Load()
				break
			}
		}
		r.mu.Unlock()
	}
	return nil
}
