package bmmtest

import (
	"slices"
	"sync/atomic"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// Copying wraps a host backend so that its uploads are copies, as a GPU's
// are, counted as host-to-device traffic: what a caller keeps uploaded
// no longer depends on the host arrays it came from. Predictions at an
// offset (bmm.ArgmaxAter) pass through.
func Copying(be bmm.Backend) bmm.Backend { return &copying{Backend: be} }

type copying struct {
	bmm.Backend
	up atomic.Int64
}

func (c *copying) UploadBits(t *bittensor.Tensor) (bmm.Bits, error) {
	c.up.Add(int64(len(t.Words()) * 8))
	return c.Backend.UploadBits(t.Clone())
}

func (c *copying) UploadVector(v []float32) (bmm.Vector, error) {
	c.up.Add(int64(len(v) * 4))
	return c.Backend.UploadVector(slices.Clone(v))
}

func (c *copying) UploadCodes(vals []uint8, rows, cols, bits int) (bmm.Codes, error) {
	c.up.Add(int64(len(vals)))
	return c.Backend.UploadCodes(slices.Clone(vals), rows, cols, bits)
}

func (c *copying) UploadGraph(g *bmm.Graph, src int) (bmm.GraphOperand, error) {
	c.up.Add(int64(4*len(g.Indptr) + 4*len(g.Indices) + len(g.Weights)))
	cp := bmm.Graph{Indptr: slices.Clone(g.Indptr), Indices: slices.Clone(g.Indices), Weights: slices.Clone(g.Weights), WeightBits: g.WeightBits}
	return c.Backend.UploadGraph(&cp, src)
}

func (c *copying) ArgmaxAt(dst bmm.Ints, off int, logits bmm.Vector, cols int) error {
	return c.Backend.(bmm.ArgmaxAter).ArgmaxAt(dst, off, logits, cols)
}

func (c *copying) Traffic() bmm.Traffic {
	t := c.Backend.Traffic()
	t.HostToDevice += c.up.Load()
	return t
}
