package nn

import (
	"sync"

	"github.com/qgtc/qgtc/templates"
)

// Graph is a pull-style CSR (templates.CSR): row v lists the sources u of the
// edges u→v; an edge's id is its position in Indices. Edge-valued tensors
// (weights, attention) have one row per edge id. The reverse graph the
// backward passes pull over is built once, on first use.
type Graph struct {
	CSR templates.CSR

	once sync.Once
	t    templates.CSR
}

// NewGraph wraps a pull-style CSR without copying.
func NewGraph(indptr, indices []int32) *Graph {
	if len(indptr) == 0 || int(indptr[len(indptr)-1]) != len(indices) {
		shapePanic("NewGraph", "indptr of length %d for %d indices", len(indptr), len(indices))
	}
	return &Graph{CSR: templates.CSR{Indptr: indptr, Indices: indices}}
}

// N is the number of nodes.
func (g *Graph) N() int { return g.CSR.Rows() }

// NumEdges is the number of stored edges.
func (g *Graph) NumEdges() int { return g.CSR.NNZ() }

// T is the reverse graph (row u lists the targets of u's edges, with
// their edge ids).
func (g *Graph) T() templates.CSR {
	g.once.Do(func() { g.t = g.CSR.Transpose(g.N()) })
	return g.t
}

// InDegrees returns the number of edges into each node.
func (g *Graph) InDegrees() []int32 {
	d := make([]int32, g.N())
	for v := range d {
		d[v] = g.CSR.Indptr[v+1] - g.CSR.Indptr[v]
	}
	return d
}

func checkNodes(op string, g *Graph, x *Tensor) {
	dense(op, x)
	if x.Rows != g.N() {
		shapePanic(op, "%d rows for %d nodes", x.Rows, g.N())
	}
}

func checkEdges(op string, g *Graph, e *Tensor) {
	dense(op, e)
	if e.Rows != g.NumEdges() {
		shapePanic(op, "%d edge rows for %d edges", e.Rows, g.NumEdges())
	}
}

// must turns a template's shape error into the package's panic: the
// caller built mismatched tensors.
func must(op string, err error) {
	if err != nil {
		panic(ShapeError{op, err.Error()})
	}
}

// accumulate runs f on a scratch buffer the size of t and adds it to t's
// gradient (the templates' backward passes overwrite, the tape accumulates).
func accumulate(t *Tensor, f func(g []float32)) {
	if !t.requires {
		return
	}
	tmp := make([]float32, len(t.Data))
	f(tmp)
	addTo(t.grad(), tmp)
}

// Propagate returns out[v] = Σ_{u→v} w[e]·x[u] (w nil: all ones), an SpMM.
// w gets no gradient: it is a property of the graph (GCN normalization).
func (tp *Tape) Propagate(g *Graph, w []float32, x *Tensor) *Tensor {
	checkNodes("Propagate", g, x)
	if w != nil && len(w) != g.NumEdges() {
		shapePanic("Propagate", "%d weights for %d edges", len(w), g.NumEdges())
	}
	msg := templates.CopyU
	if w != nil {
		msg = templates.UMulE
	}
	out := New(g.N(), x.Cols)
	if x.Cols == 0 {
		return out
	}
	must("Propagate", templates.SpMM(out.Data, g.CSR, msg, templates.Sum, x.Data, w, nil, x.Cols, nil, nil))
	tp.record(out, func() {
		accumulate(x, func(gx []float32) {
			must("Propagate", templates.SpMMBackward(gx, nil, nil, g.CSR, g.T(), msg, templates.Sum, x.Data, w, nil, out.Grad, x.Cols, nil, nil))
		})
	}, x)
	return out
}

// Aggregate returns the Sum, Mean, Max or Min over each node's in-edges
// of the sources' rows (0 for a node without in-edges). Max and Min send
// the gradient to the winning edge.
func (tp *Tape) Aggregate(g *Graph, x *Tensor, red templates.Reduce) *Tensor {
	checkNodes("Aggregate", g, x)
	out := New(g.N(), x.Cols)
	if x.Cols == 0 {
		return out
	}
	var arg []int32
	if red == templates.Max || red == templates.Min {
		arg = make([]int32, len(out.Data))
	}
	must("Aggregate", templates.SpMM(out.Data, g.CSR, templates.CopyU, red, x.Data, nil, nil, x.Cols, arg, nil))
	tp.record(out, func() {
		accumulate(x, func(gx []float32) {
			must("Aggregate", templates.SpMMBackward(gx, nil, nil, g.CSR, g.T(), templates.CopyU, red, x.Data, nil, nil, out.Grad, x.Cols, arg, nil))
		})
	}, x)
	return out
}

// EdgeAdd returns the nnz×H edge tensor src[u] + dst[v] for every edge
// u→v, for src and dst N×H (an SDDMM).
func (tp *Tape) EdgeAdd(g *Graph, src, dst *Tensor) *Tensor {
	checkNodes("EdgeAdd", g, src)
	checkNodes("EdgeAdd", g, dst)
	sameShape("EdgeAdd", src, dst)
	h := src.Cols
	out := New(g.NumEdges(), h)
	must("EdgeAdd", templates.SDDMM(out.Data, g.CSR, templates.UAddVOp, src.Data, dst.Data, h, 1, nil))
	tp.record(out, func() {
		var gs, gd []float32
		if src.requires {
			gs = make([]float32, len(src.Data))
		}
		if dst.requires {
			gd = make([]float32, len(dst.Data))
		}
		must("EdgeAdd", templates.SDDMMBackward(gs, gd, g.CSR, g.T(), templates.UAddVOp, src.Data, dst.Data, out.Grad, h, 1, nil))
		if gs != nil {
			addTo(src.grad(), gs)
		}
		if gd != nil {
			addTo(dst.grad(), gd)
		}
	}, src, dst)
	return out
}

// EdgeSoftmax normalizes an nnz×H edge tensor over each node's in-edges,
// per head.
func (tp *Tape) EdgeSoftmax(g *Graph, logits *Tensor) *Tensor {
	checkEdges("EdgeSoftmax", g, logits)
	out := like(logits)
	if logits.Cols == 0 {
		return out
	}
	must("EdgeSoftmax", templates.EdgeSoftmax(out.Data, g.CSR, logits.Data, logits.Cols, nil))
	tp.record(out, func() {
		accumulate(logits, func(gl []float32) {
			must("EdgeSoftmax", templates.EdgeSoftmaxBackward(gl, g.CSR, out.Data, out.Grad, logits.Cols, nil))
		})
	}, logits)
	return out
}

// WeightedAggregate returns out[v, h] = Σ_{u→v} a[e, h]·x[u, h] for x
// N×(H·F) and edge weights a nnz×H (one per head), an SpMM whose backward
// gives both x and a their gradients.
func (tp *Tape) WeightedAggregate(g *Graph, x, a *Tensor) *Tensor {
	checkNodes("WeightedAggregate", g, x)
	checkEdges("WeightedAggregate", g, a)
	if a.Cols < 1 || x.Cols%a.Cols != 0 {
		shapePanic("WeightedAggregate", "%d feature columns for %d heads", x.Cols, a.Cols)
	}
	out := New(g.N(), x.Cols)
	must("WeightedAggregate", templates.SpMM(out.Data, g.CSR, templates.UMulE, templates.Sum, x.Data, a.Data, nil, x.Cols, nil, nil))
	tp.record(out, func() {
		var gx, ga []float32
		if x.requires {
			gx = make([]float32, len(x.Data))
		}
		if a.requires {
			ga = make([]float32, len(a.Data))
		}
		must("WeightedAggregate", templates.SpMMBackward(gx, ga, nil, g.CSR, g.T(), templates.UMulE, templates.Sum, x.Data, a.Data, nil, out.Grad, x.Cols, nil, nil))
		if gx != nil {
			addTo(x.grad(), gx)
		}
		if ga != nil {
			addTo(a.grad(), ga)
		}
	}, x, a)
	return out
}

// HeadDot returns, for x N×(H·F) and att with H·F values, the N×H
// per-head dot products out[i,h] = Σ_f x[i,h·F+f]·att[h·F+f]: GAT's
// attention projection, done once per vertex instead of once per edge.
func (tp *Tape) HeadDot(x, att *Tensor, heads int) *Tensor {
	dense("HeadDot", x)
	if heads < 1 || x.Cols%heads != 0 || len(att.Data) != x.Cols {
		shapePanic("HeadDot", "x has %d columns, att %d values, %d heads", x.Cols, len(att.Data), heads)
	}
	f := x.Cols / heads
	out := New(x.Rows, heads)
	for i := range x.Rows {
		for h := range heads {
			var s float32
			for j := range f {
				s += x.Data[i*x.Cols+h*f+j] * att.Data[h*f+j]
			}
			out.Data[i*heads+h] = s
		}
	}
	tp.record(out, func() {
		for i := range x.Rows {
			for h := range heads {
				d := out.Grad[i*heads+h]
				if x.requires {
					g := x.grad()[i*x.Cols+h*f:][:f]
					for j := range g {
						g[j] += d * att.Data[h*f+j]
					}
				}
				if att.requires {
					g := att.grad()[h*f:][:f]
					for j := range g {
						g[j] += d * x.Data[i*x.Cols+h*f+j]
					}
				}
			}
		}
	}, x, att)
	return out
}

// GATAggregate is GAT's fused scatter + edge softmax + aggregation
// (templates.GATAggregate). For x N×(H·F) and per-vertex attention terms src,
// dst N×H:
//
//	α_uv = softmax over u→v of LeakyReLU(src[u,h] + dst[v,h], slope)
//	out[v, h] = Σ_{u→v} α_uv·x[u, h]
//
// Only the per-(node, head) softmax max and normalizer are kept; the
// backward pass recomputes every edge's α from them, so memory stays
// O(N·H) instead of O(E·H). GATAggregateDropout adds attention dropout.
func (tp *Tape) GATAggregate(g *Graph, x, src, dst *Tensor, heads int, slope float32) *Tensor {
	return tp.GATAggregateDropout(g, x, src, dst, heads, slope, 0)
}

// GATAggregateDropout is GATAggregate with dropout at rate p on the
// attention coefficients α when training (templates.GATAggregateDropout): the
// mask is hashed from a tape seed and each edge's id and head, the same
// mask Dropout would draw on the nnz×H tensor of α, and the backward pass
// hashes it again instead of storing it, so memory stays O(N·H).
func (tp *Tape) GATAggregateDropout(g *Graph, x, src, dst *Tensor, heads int, slope, p float32) *Tensor {
	checkNodes("GATAggregate", g, x)
	checkNodes("GATAggregate", g, src)
	checkNodes("GATAggregate", g, dst)
	if heads < 1 || x.Cols%heads != 0 || src.Cols != heads || dst.Cols != heads {
		shapePanic("GATAggregate", "x has %d columns, src %d, dst %d, for %d heads", x.Cols, src.Cols, dst.Cols, heads)
	}
	d := x.Cols / heads
	out := New(g.N(), x.Cols)
	stats := make([]float32, g.N()*heads*2)
	var drop templates.Dropout
	if tp.Train && p > 0 {
		drop = templates.Dropout{Seed: tp.Seed(), P: p}
	}
	must("GATAggregate", templates.GATAggregateDropout(out.Data, stats, g.CSR, x.Data, src.Data, dst.Data, heads, d, slope, drop, nil))
	tp.record(out, func() {
		var gx, gs, gd []float32
		if x.requires {
			gx = make([]float32, len(x.Data))
		}
		if src.requires {
			gs = make([]float32, len(src.Data))
		}
		if dst.requires {
			gd = make([]float32, len(dst.Data))
		}
		must("GATAggregate", templates.GATAggregateDropoutBackward(gx, gs, gd, g.CSR, g.T(), x.Data, src.Data, dst.Data, out.Data, stats, out.Grad, heads, d, slope, drop, nil))
		for _, p := range []struct {
			t *Tensor
			g []float32
		}{{x, gx}, {src, gs}, {dst, gd}} {
			if p.g != nil {
				addTo(p.t.grad(), p.g)
			}
		}
	}, x, src, dst)
	return out
}
