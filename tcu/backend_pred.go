package tcu

import (
	"fmt"

	"github.com/qgtc/qgtc/bmm"
)

// devInts is int32 values in device memory: a graph's predictions.
type devInts struct {
	devMem
	n int
}

func (v *devInts) Len() int { return v.n }

// devIndex is distinct int32 values below bound in device memory: a
// batch's nodes.
type devIndex struct {
	devMem
	n, bound int
}

func (v *devIndex) Len() int   { return v.n }
func (v *devIndex) Bound() int { return v.bound }

// UploadIndex implements bmm.Backend: idx is checked on the host (the
// kernel trusts it: a repeated value would be a race) and copied once.
func (be *Backend) UploadIndex(idx []int32, bound int) (bmm.Index, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	if err := bmm.CheckIndex(idx, bound); err != nil {
		return nil, err
	}
	var r region
	r.add(asBytes(idx), 4*len(idx))
	out := &devIndex{n: len(idx), bound: bound}
	if err := be.uploadTo(&r, func(buf *Buffer) { be.track(&out.devMem, buf) }); err != nil {
		return nil, err
	}
	return out, nil
}

// NewInts implements bmm.Backend: the fill is a memset, not a launch.
func (be *Backend) NewInts(n int, fill int32) (bmm.Ints, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("%w: %d ints", bmm.ErrShape, n)
	}
	v := &devInts{n: n}
	err := be.d.run(func() error {
		if err := be.newMem(&v.devMem, 4*n); err != nil || fill == 0 {
			return err
		}
		return be.d.memset32(v.buf.ptr, uint32(fill), max(n, 1))
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// ArgmaxTo implements bmm.Backend: Argmax's kernel, each row written at
// its index in dst on the device; nothing comes back.
func (be *Backend) ArgmaxTo(dst bmm.Ints, at bmm.Index, logits bmm.Vector, cols int) error {
	d, err := be.ints(dst, "argmax destination")
	if err != nil {
		return err
	}
	ix, ok := at.(*devIndex)
	if !ok || be.mine(&ix.devMem) != nil {
		return fmt.Errorf("%w: argmax index", bmm.ErrForeign)
	}
	lv, err := be.vector(logits)
	if err != nil {
		return err
	}
	if err := bmm.CheckArgmaxTo(d.n, ix.n, ix.bound, lv.n, cols); err != nil {
		return err
	}
	be.setOp("ArgmaxTo")
	return be.d.runKeepingHeld(func() error {
		if folded, err := be.foldArgmax(lv, ix.n, cols, d.ptr(), ix.ptr(), 0); folded || err != nil {
			return err
		}
		return be.launch("argmax", (ix.n+255)/256, 256, lv.ptr(), ix.ptr(), d.ptr(), uint64(ix.n), uint64(cols))
	})
}

// ArgmaxAt implements bmm.ArgmaxAter: Argmax's kernel writing from
// dst's value off on the device; nothing comes back, nothing waits.
func (be *Backend) ArgmaxAt(dst bmm.Ints, off int, logits bmm.Vector, cols int) error {
	d, err := be.ints(dst, "argmax destination")
	if err != nil {
		return err
	}
	lv, err := be.vector(logits)
	if err != nil {
		return err
	}
	if err := bmm.CheckArgmaxAt(d.n, off, lv.n, cols); err != nil {
		return err
	}
	be.setOp("ArgmaxAt")
	rows := lv.n / cols
	return be.d.runKeepingHeld(func() error {
		if folded, err := be.foldArgmax(lv, rows, cols, d.ptr(), 0, off); folded || err != nil {
			return err
		}
		return be.launch("argmax", (rows+255)/256, 256, lv.ptr(), 0, d.ptr()+uint64(4*off), uint64(rows), uint64(cols))
	})
}

// foldArgmax queues the held launch, into which it folds the argmax of
// logits (rows×cols) when that launch writes them: row r's column goes to
// out[idx[r]], or out[off+r] where idx is 0. Device work only.
func (be *Backend) foldArgmax(logits *devVector, rows, cols int, out, idx uint64, off int) (bool, error) {
	return be.d.foldHeld(heldAggFloat, logits.ptr(), rows, cols, func(f *aggFold) {
		f.argOut, f.argIdx, f.argOff = out, idx, off
	})
}

var _ bmm.ArgmaxAter = (*Backend)(nil)

// ints is v as a live operand of this backend, or ErrForeign naming what
// (ErrClosed after Close).
func (be *Backend) ints(v bmm.Ints, what string) (*devInts, error) {
	if err := be.open(); err != nil {
		return nil, err
	}
	d, ok := v.(*devInts)
	if !ok || be.mine(&d.devMem) != nil {
		return nil, fmt.Errorf("%w: %s", bmm.ErrForeign, what)
	}
	return d, nil
}

// ReadInts implements bmm.Backend. While a pass is recorded the copy is
// recorded too, into a pinned buffer of the recording, and dst is filled
// at each replay.
func (be *Backend) ReadInts(dst []int32, v bmm.Ints) error {
	d, err := be.ints(v, "ints")
	if err != nil {
		return err
	}
	if len(dst) != d.n {
		return fmt.Errorf("%w: reading %d ints into %d", bmm.ErrShape, d.n, len(dst))
	}
	return be.d.run(func() error {
		if be.rec != nil {
			if len(dst) == 0 {
				return nil
			}
			return be.copyRecorded(dst, d.buf.ptr, true)
		}
		return be.download(asBytes(dst), d.buf.ptr)
	})
}
