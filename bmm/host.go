package bmm

import (
	"fmt"

	"github.com/qgtc/qgtc/bittensor"
)

// Host is the bookkeeping of a Backend whose operands are host memory (the
// generic and cpu backends embed it): bits and vectors wrap the caller's
// tensors and slices without copying, operands know their Host, Free and
// Close make them foreign, and ops are counted. It implements the Backend
// methods that do not compute: uploads and allocations of bits and
// vectors, their reads, Traffic and Close.
type Host struct {
	ops    int64
	closed bool
}

// HostOperand is what a host operand embeds: its Host and whether it was
// freed.
type HostOperand struct {
	owner *Host
	freed bool
}

// Operand returns a live operand of h, for a backend's own operand types.
func (h *Host) Operand() HostOperand { return HostOperand{owner: h} }

// Free implements Operand.
func (o *HostOperand) Free() { o.freed = true }

// Alive reports whether o is a live operand of h.
func (o *HostOperand) Alive(h *Host) bool { return o.owner == h && !o.freed && !h.closed }

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

// Foreign is ErrForeign for the operand named what.
func Foreign(what string) error { return fmt.Errorf("%w: %s", ErrForeign, what) }

// CountOp counts one op in Traffic.
func (h *Host) CountOp() { h.ops++ }

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

// Traffic implements Backend: host operands move no bytes.
func (h *Host) Traffic() Traffic { return Traffic{Ops: h.ops} }

// Close implements Backend: every operand becomes foreign; their memory is
// the caller's or the garbage collector's.
func (h *Host) Close() error {
	h.closed = true
	return nil
}
