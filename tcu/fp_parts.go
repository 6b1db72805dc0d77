package tcu

// The device SpMM on a graph uploaded with a visiting order (e.g. a node
// partition's, part by part: subgraph.Partitioning.Members) runs its light
// rows in that order instead of 0, 1, ...: the rows in flight then share
// more of their sources, so more of the gathers hit the L2. Results equal
// the row-order kernel's bit for bit: each row still reduces its edges in
// order.

import (
	"fmt"

	"github.com/qgtc/qgtc/templates"
)

// checkOrder reports whether order is a permutation of 0..n-1.
func checkOrder(n int, order []int32) error {
	if len(order) != n {
		return fmt.Errorf("%w: a visiting order of %d rows for a graph of %d", ErrShape, len(order), n)
	}
	seen := make([]bool, n)
	for i, v := range order {
		if v < 0 || int(v) >= n || seen[v] {
			return fmt.Errorf("%w: visiting order entry %d is row %d: not a permutation of 0..%d", ErrShape, i, v, n-1)
		}
		seen[v] = true
	}
	return nil
}

// UploadCSROrder is UploadCSR for a square graph (its sources are its rows)
// whose SpMMs visit the light rows in order, a permutation of the rows
// (see the top of this file). An order that puts rows sharing sources
// together makes it faster; its quality is the caller's.
func (d *Device) UploadCSROrder(g templates.CSR, order []int32) (*FPGraph, error) {
	if err := g.Validate(g.Rows()); err != nil {
		return nil, err
	}
	if err := checkOrder(g.Rows(), order); err != nil {
		return nil, err
	}
	fg, err := d.uploadChecked(g, g.Rows(), g.NNZ(), nil, fpHeavy, fpChunk)
	if err != nil {
		return nil, err
	}
	if err := d.run(func() error {
		var err error
		fg.order, err = d.upload(asBytes(order))
		return err
	}); err != nil {
		fg.Close()
		return nil, err
	}
	return fg, nil
}

// Ordered reports whether the graph was uploaded with a visiting order
// (UploadCSROrder).
func (g *FPGraph) Ordered() bool { return g.order != nil }
