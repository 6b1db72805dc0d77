package layers

import (
	"fmt"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// opPool keeps a plan's op outputs from one batch to the next, by shape:
// an op's output is dead once its batch's predictions are read, and the
// next pass over the same batches (a benchmark, a sweep, a server) finds
// every output already made instead of allocating (and zeroing, on the
// 1M-node graph about a fifth of the pass) or asking the device for memory
// again. It holds at most one pass's outputs per distinct batch shape;
// Plan.Close frees them.
type opPool struct {
	free map[poolKey][]bmm.Operand
	used map[poolKey]bool // shapes put back since the last trimUnused
}

// poolKey is an output's kind and shape.
type poolKey struct {
	kind             uint8 // 0 bits, 1 codes, 2 vector
	rows, cols, bits int
	packing          bittensor.Packing
}

// pooled is an output lent by the pool.
type pooled struct {
	key poolKey
	o   bmm.Operand
}

func (p *opPool) get(k poolKey) bmm.Operand {
	l := p.free[k]
	if len(l) == 0 {
		return nil
	}
	o := l[len(l)-1]
	p.free[k] = l[:len(l)-1]
	return o
}

func (p *opPool) put(o pooled) {
	if p.free == nil {
		p.free = map[poolKey][]bmm.Operand{}
	}
	p.free[o.key] = append(p.free[o.key], o.o)
	if p.used == nil {
		p.used = map[poolKey]bool{}
	}
	p.used[o.key] = true
}

// trimUnused frees the outputs of every shape not put back since the last
// call: what a pass of batches of one size each (a stream) leaves behind.
func (p *opPool) trimUnused() {
	for k, l := range p.free {
		if p.used[k] {
			continue
		}
		for _, o := range l {
			o.Free()
		}
		delete(p.free, k)
	}
	clear(p.used)
}

func (p *opPool) close() {
	for _, l := range p.free {
		for _, o := range l {
			o.Free()
		}
	}
	p.free, p.used = nil, nil
}

// bits, codes and vector lend a pass an output of the given shape from the
// plan's pool, or allocate it on the backend.
func (ps *pass) bits(rows, cols, nbits int, packing bittensor.Packing) (bmm.Bits, error) {
	k := poolKey{kind: 0, rows: rows, cols: cols, bits: nbits, packing: packing}
	o := ps.p.pool.get(k)
	if o == nil {
		var err error
		if o, err = ps.p.Backend.NewBits(rows, cols, nbits, packing); err != nil {
			return nil, fmt.Errorf("layers: a %d×%d output of %d bits: %w", rows, cols, nbits, err)
		}
	}
	ps.pooled = append(ps.pooled, pooled{k, o})
	return o.(bmm.Bits), nil
}

func (ps *pass) codes(rows, cols, nbits int) (bmm.Codes, error) {
	k := poolKey{kind: 1, rows: rows, cols: cols, bits: nbits}
	o := ps.p.pool.get(k)
	if o == nil {
		var err error
		if o, err = ps.p.Backend.NewCodes(rows, cols, nbits); err != nil {
			return nil, fmt.Errorf("layers: %d×%d output codes of %d bits: %w", rows, cols, nbits, err)
		}
	}
	ps.pooled = append(ps.pooled, pooled{k, o})
	return o.(bmm.Codes), nil
}

func (ps *pass) vector(n int) (bmm.Vector, error) {
	k := poolKey{kind: 2, rows: n}
	o := ps.p.pool.get(k)
	if o == nil {
		var err error
		if o, err = ps.p.Backend.NewVector(n); err != nil {
			return nil, fmt.Errorf("layers: an output of %d values: %w", n, err)
		}
	}
	ps.pooled = append(ps.pooled, pooled{k, o})
	return o.(bmm.Vector), nil
}
