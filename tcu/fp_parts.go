package tcu

// The device SpMM on a graph uploaded with a node partition visits its
// light rows part by part, in node order within a part, instead of 0, 1,
// ...: the rows in flight then share more of their sources, so more of the
// gathers hit the L2. Results equal the row-order kernel's bit for bit:
// each row still reduces its edges in order.

import (
	"fmt"

	"github.com/qgtc/qgtc/templates"
)

// fpParts is a graph's visiting order on the device.
type fpParts struct {
	order *Buffer // the nodes, part by part, each part in node order
	k     int
}

// partOrder lists n nodes part by part (stable in node id) and returns the
// parts' first positions (with a last entry, n).
func partOrder(n int, parts []int32, k int) (order, starts []int32, err error) {
	if len(parts) != n {
		return nil, nil, fmt.Errorf("%w: partition of %d nodes for a graph of %d rows", ErrShape, len(parts), n)
	}
	if k < 1 || k > max(n, 1) {
		return nil, nil, fmt.Errorf("%w: %d parts for %d nodes", ErrShape, k, n)
	}
	starts = make([]int32, k+1)
	for v, p := range parts {
		if p < 0 || int(p) >= k {
			return nil, nil, fmt.Errorf("%w: node %d is in part %d, want 0..%d", ErrShape, v, p, k-1)
		}
		starts[p+1]++
	}
	for p := range k {
		starts[p+1] += starts[p]
	}
	order = make([]int32, n)
	fill := append([]int32(nil), starts[:k]...)
	for v, p := range parts {
		order[fill[p]] = int32(v)
		fill[p]++
	}
	return order, starts, nil
}

// UploadCSRParts is UploadCSR for a square graph (its sources are its rows)
// with a partition of its nodes into k parts (parts[v] in 0..k-1, e.g. a
// subgraph.Partitioning's Parts): its SpMMs visit the rows part by part
// (see the top of this file). A partition with few edges between parts
// makes it faster; the partition's quality is the caller's.
func (d *Device) UploadCSRParts(g templates.CSR, parts []int32, k int) (*FPGraph, error) {
	if err := g.Validate(g.Rows()); err != nil {
		return nil, err
	}
	order, _, err := partOrder(g.Rows(), parts, k)
	if err != nil {
		return nil, err
	}
	fg, err := d.uploadChecked(g, g.Rows(), g.NNZ(), nil, fpHeavy, fpChunk)
	if err != nil {
		return nil, err
	}
	fg.parts = &fpParts{k: k}
	if err := d.run(func() error {
		var err error
		fg.parts.order, err = d.upload(asBytes(order))
		return err
	}); err != nil {
		fg.Close()
		return nil, err
	}
	return fg, nil
}

// Parts is the number of parts of the partition the graph was uploaded
// with (UploadCSRParts), else 0.
func (g *FPGraph) Parts() int {
	if g.parts == nil {
		return 0
	}
	return g.parts.k
}

// order is the light rows' visiting order, nil for 0, 1, ...
func (g *FPGraph) order() *Buffer {
	if g.parts == nil {
		return nil
	}
	return g.parts.order
}

// close frees the order's device memory.
func (p *fpParts) close() error {
	if p == nil {
		return nil
	}
	err := p.order.Free()
	p.order = nil
	return err
}
