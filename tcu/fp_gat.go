package tcu

// GAT's ops on the device (kernels/fp_gat.cu, in the dense module): the
// per-head attention projection, the fused edge softmax + aggregation and
// its recomputing backward pass, ELU and MeanHeads, planned as the dense
// ops are (fp_dense.go).

import (
	"fmt"
	"math"
)

// warpsPerBlock is the rows a block of the warp-per-row GAT kernels owns
// at a time (WARPS in fp_gat.cu).
const warpsPerBlock = denseBlock / 32

// warpGrid is the grid of a warp-per-row loop over rows.
func (p *planner) warpGrid(rows int) [3]uint32 {
	b := ceilDiv(max(rows, 1), warpsPerBlock)
	return [3]uint32{uint32(max(1, min(b, 32*max(p.sms, 1)))), 1, 1}
}

func (p *planner) headDot(out, x, att *Buffer, rows, heads, d int) error {
	if heads < 1 || d < 1 {
		return fmt.Errorf("%w: %d heads of width %d", ErrShape, heads, d)
	}
	if err := needAll(want{"out", out, rows * heads}, want{"x", x, rows * heads * d}, want{"att", att, heads * d}); err != nil {
		return err
	}
	if rows > 0 {
		p.add("headdot", p.flat(rows*heads), ptrOf(out), ptrOf(x), ptrOf(att), u(rows), u(heads), u(d))
	}
	return nil
}

func (p *planner) headDotBack(dx, datt, dout, x, att *Buffer, rows, heads, d int, acc bool) error {
	if heads < 1 || d < 1 {
		return fmt.Errorf("%w: %d heads of width %d", ErrShape, heads, d)
	}
	f := heads * d
	if err := needAll(want{"dout", dout, rows * heads}, want{"x", x, rows * f}, want{"att", att, f}); err != nil {
		return err
	}
	if dx != nil {
		if err := needAll(want{"dx", dx, rows * f}); err != nil {
			return err
		}
		if rows > 0 {
			p.add("headdot_back_x", p.flat(rows*f), ptrOf(dx), ptrOf(dout), ptrOf(att), u(rows), u(heads), u(d), bit(acc))
		}
	}
	if datt == nil {
		return nil
	}
	if err := needAll(want{"datt", datt, f}); err != nil {
		return err
	}
	chunk := p.colChunk(rows, f)
	chunks := max(1, ceilDiv(rows, chunk))
	part, err := p.scratchBuf(8 * chunks * f)
	if err != nil {
		return err
	}
	p.add("headdot_back_att_part", [3]uint32{uint32(chunks), uint32(ceilDiv(f, denseBlock)), 1}, ptrOf(part), ptrOf(x), ptrOf(dout), u(rows), u(heads), u(d), u(chunk))
	p.add("colsum_final", p.flat(f), ptrOf(datt), ptrOf(part), u(chunks), u(f), bit(acc))
	return nil
}

// GATArgs are the operands of the fused GAT aggregation
// (templates.GATAggregateDropout) on graph g (rows×nsrc): X nsrc×(Heads·D),
// El nsrc×Heads, Er rows×Heads, Out rows×(Heads·D), Stats rows×Heads×2.
// Slope is the leaky ReLU's; Drop, in [0, 1), the attention dropout rate
// (its seed set by SetSeed; 0 is none).
type GATArgs struct {
	X, El, Er, Out, Stats *Buffer
	Heads, D              int
	Slope, Drop           float32
}

// gatDrop is the dropout parameters of the GAT kernels: threshold 0 keeps
// everything unscaled.
func gatDrop(prob float32) (thr uint64, scale float64, err error) {
	switch {
	case prob == 0:
		return 0, 1, nil
	case !(prob > 0 && prob < 1):
		return 0, 0, fmt.Errorf("%w: attention dropout rate %v outside [0, 1)", ErrShape, prob)
	}
	return uint64(math.Ceil(float64(prob) * (1 << 24))), float64(1 / (1 - prob)), nil
}

func (a GATArgs) check(g *FPGraph) error {
	if a.Heads < 1 || a.D < 1 {
		return fmt.Errorf("%w: %d heads of width %d", ErrShape, a.Heads, a.D)
	}
	f := a.Heads * a.D
	return needAll(want{"x", a.X, g.nsrc * f}, want{"el", a.El, g.nsrc * a.Heads}, want{"er", a.Er, g.rows * a.Heads},
		want{"out", a.Out, g.rows * f}, want{"stats", a.Stats, 2 * g.rows * a.Heads})
}

func (p *planner) gatForward(g *FPGraph, a GATArgs) error {
	if err := a.check(g); err != nil {
		return err
	}
	thr, scale, err := gatDrop(a.Drop)
	if err != nil {
		return err
	}
	if g.rows == 0 {
		return nil
	}
	p.add("gat_fwd", p.warpGrid(g.rows), ptrOf(a.Out), ptrOf(a.Stats), ptrOf(g.indptr), ptrOf(g.indices), ptrOf(g.eids),
		ptrOf(a.X), ptrOf(a.El), ptrOf(a.Er), u(g.rows), u(a.Heads), u(a.D), f64(float64(a.Slope)), 0, thr, f64(scale))
	p.mark(dropKnob, 12)
	return nil
}

// gatBackward plans the two passes of the backward: over g's rows for
// dEr (and c = <dOut, Out> per row and head, into cvh), then over gT's for
// dX and dEl; each overwrites its output.
func (p *planner) gatBackward(g, gT *FPGraph, a GATArgs, dOut, dX, dEl, dEr *Buffer) error {
	if err := a.check(g); err != nil {
		return err
	}
	thr, scale, err := gatDrop(a.Drop)
	if err != nil {
		return err
	}
	if gT.rows != g.nsrc || gT.nsrc != g.rows || gT.nnz != g.nnz {
		return fmt.Errorf("%w: transpose is %d×%d with %d edges for a %d×%d graph with %d", ErrShape, gT.rows, gT.nsrc, gT.nnz, g.rows, g.nsrc, g.nnz)
	}
	if thr != 0 && g.nnz > 0 && (gT.eids == nil || g.eids != nil) {
		return fmt.Errorf("%w: attention dropout keys its mask by g's positions: g must have no edge ids, its transpose must", ErrShape)
	}
	f := a.Heads * a.D
	if err := needAll(want{"dout", dOut, g.rows * f}, want{"dx", dX, g.nsrc * f}, want{"del", dEl, g.nsrc * a.Heads}, want{"der", dEr, g.rows * a.Heads}); err != nil {
		return err
	}
	cvh, err := p.scratchBuf(4 * g.rows * a.Heads)
	if err != nil {
		return err
	}
	sl := f64(float64(a.Slope))
	if g.rows > 0 {
		p.add("gat_back_dst", p.warpGrid(g.rows), ptrOf(dEr), ptrOf(cvh), ptrOf(g.indptr), ptrOf(g.indices), ptrOf(g.eids),
			ptrOf(a.X), ptrOf(a.El), ptrOf(a.Er), ptrOf(a.Out), ptrOf(a.Stats), ptrOf(dOut), u(g.rows), u(a.Heads), u(a.D), sl, 0, thr, f64(scale))
		p.mark(dropKnob, 15)
	}
	if g.nsrc > 0 {
		p.add("gat_back_src", p.warpGrid(g.nsrc), ptrOf(dX), ptrOf(dEl), ptrOf(gT.indptr), ptrOf(gT.indices), ptrOf(gT.eids),
			ptrOf(a.X), ptrOf(a.El), ptrOf(a.Er), ptrOf(a.Stats), ptrOf(cvh), ptrOf(dOut), u(g.nsrc), u(a.Heads), u(a.D), sl, 0, thr, f64(scale))
		p.mark(dropKnob, 15)
	}
	return nil
}

func (p *planner) elu(out, x *Buffer, n int, alpha float32) error {
	if err := needAll(want{"out", out, n}, want{"x", x, n}); err != nil {
		return err
	}
	if n > 0 {
		p.add("elu", p.flat(n), ptrOf(out), ptrOf(x), u(n), f64(float64(alpha)))
	}
	return nil
}

func (p *planner) eluBack(dx, dy, x, y *Buffer, n int, alpha float32, acc bool) error {
	if err := needAll(want{"dx", dx, n}, want{"dy", dy, n}, want{"x", x, n}, want{"y", y, n}); err != nil {
		return err
	}
	if n > 0 {
		p.add("elu_back", p.flat(n), ptrOf(dx), ptrOf(dy), ptrOf(x), ptrOf(y), u(n), f64(float64(alpha)), bit(acc))
	}
	return nil
}

func (p *planner) meanHeads(out, x *Buffer, rows, heads, f int) error {
	if heads < 1 {
		return fmt.Errorf("%w: %d heads", ErrShape, heads)
	}
	if err := needAll(want{"out", out, rows * f}, want{"x", x, rows * heads * f}); err != nil {
		return err
	}
	if rows*f > 0 {
		p.add("mean_heads", p.flat(rows*f), ptrOf(out), ptrOf(x), u(rows), u(heads), u(f))
	}
	return nil
}

func (p *planner) meanHeadsBack(dx, dy *Buffer, rows, heads, f int, acc bool) error {
	if heads < 1 {
		return fmt.Errorf("%w: %d heads", ErrShape, heads)
	}
	if err := needAll(want{"dx", dx, rows * heads * f}, want{"dy", dy, rows * f}); err != nil {
		return err
	}
	if rows*f > 0 {
		p.add("mean_heads_back", p.flat(rows*heads*f), ptrOf(dx), ptrOf(dy), u(rows), u(heads), u(f), bit(acc))
	}
	return nil
}

// PrepareHeadDot prepares out[i,h] = Σ_j x[i,h·d+j]·att[h·d+j] for x
// rows×(heads·d) (nn.HeadDot: GAT's attention projection per vertex).
func (d *Device) PrepareHeadDot(out, x, att *Buffer, rows, heads, width int) (*FPCall, error) {
	return d.denseCall("head dot", func(p *planner) error { return p.headDot(out, x, att, rows, heads, width) })
}

// PrepareHeadDotBackward prepares HeadDot's backward from dout (rows×heads):
// dx = dout[i,c/d]·att[c] and datt = Σ_i dout[i,c/d]·x[i,c] (deterministic,
// in double), each added when acc; either may be nil.
func (d *Device) PrepareHeadDotBackward(dx, datt, dout, x, att *Buffer, rows, heads, width int, acc bool) (*FPCall, error) {
	return d.denseCall("head dot backward", func(p *planner) error {
		return p.headDotBack(dx, datt, dout, x, att, rows, heads, width, acc)
	})
}

// PrepareGATAggregate prepares GAT's fused edge softmax and aggregation
// (templates.GATAggregateDropout) over g: a warp per row, the row's
// softmax maximum and 1/Σexp per head kept in a.Stats for the backward
// pass. With a.Drop > 0, SetSeed sets the mask's seed before each run.
func (d *Device) PrepareGATAggregate(g *FPGraph, a GATArgs) (*FPCall, error) {
	if g == nil || g.d != d {
		return nil, fmt.Errorf("%w: a graph of another device (or none)", ErrShape)
	}
	return d.denseCall("gat aggregate", func(p *planner) error { return p.gatForward(g, a) })
}

// PrepareGATAggregateBackward prepares the aggregation's backward
// (templates.GATAggregateDropoutBackward) from dOut: dEr over g's rows,
// then dX and dEl over gT (g's transpose, edge ids the positions in g),
// each overwritten. It stores no per-edge values: every edge's weight and
// mask are recomputed from a.Stats and the seed (SetSeed, the forward's).
func (d *Device) PrepareGATAggregateBackward(g, gT *FPGraph, a GATArgs, dOut, dX, dEl, dEr *Buffer) (*FPCall, error) {
	if g == nil || gT == nil || g.d != d || gT.d != d {
		return nil, fmt.Errorf("%w: a graph of another device (or none)", ErrShape)
	}
	return d.denseCall("gat aggregate backward", func(p *planner) error { return p.gatBackward(g, gT, a, dOut, dX, dEl, dEr) })
}

// PrepareELU prepares out = x for x > 0, else alpha·(eˣ−1) (nn.ELU).
func (d *Device) PrepareELU(out, x *Buffer, n int, alpha float32) (*FPCall, error) {
	return d.denseCall("elu", func(p *planner) error { return p.elu(out, x, n, alpha) })
}

// PrepareELUBackward prepares dx = dy·(1 for x > 0, else y + alpha), y
// the ELU's output, added to dx when acc.
func (d *Device) PrepareELUBackward(dx, dy, x, y *Buffer, n int, alpha float32, acc bool) (*FPCall, error) {
	return d.denseCall("elu backward", func(p *planner) error { return p.eluBack(dx, dy, x, y, n, alpha, acc) })
}

// PrepareMeanHeads prepares out (rows×f) = the mean of x's heads (x
// rows×(heads·f)), nn.MeanHeads.
func (d *Device) PrepareMeanHeads(out, x *Buffer, rows, heads, f int) (*FPCall, error) {
	return d.denseCall("mean heads", func(p *planner) error { return p.meanHeads(out, x, rows, heads, f) })
}

// PrepareMeanHeadsBackward prepares dx[i,h·f+j] = dy[i,j]/heads, added
// to dx when acc.
func (d *Device) PrepareMeanHeadsBackward(dx, dy *Buffer, rows, heads, f int, acc bool) (*FPCall, error) {
	return d.denseCall("mean heads backward", func(p *planner) error { return p.meanHeadsBack(dx, dy, rows, heads, f, acc) })
}
