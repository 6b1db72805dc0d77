package nn

import (
	"math"
	"sync"
)

// Graph is a pull-style CSR: row v lists the sources u of the edges u→v,
// and the edge id of an entry is its position in Indices. Edge-valued
// inputs (weights) are indexed by edge id.
type Graph struct {
	Indptr  []int32
	Indices []int32

	once sync.Once
	rev  transposed // row u lists the targets v of edges u→v; perm = edge id
}

// NewGraph wraps a pull-style CSR without copying.
func NewGraph(indptr, indices []int32) *Graph {
	if len(indptr) == 0 || int(indptr[len(indptr)-1]) != len(indices) {
		shapePanic("NewGraph", "indptr of length %d for %d indices", len(indptr), len(indices))
	}
	return &Graph{Indptr: indptr, Indices: indices}
}

// N is the number of nodes.
func (g *Graph) N() int { return len(g.Indptr) - 1 }

// NumEdges is the number of stored edges.
func (g *Graph) NumEdges() int { return len(g.Indices) }

// Push returns the push-style (out-edge) CSR: row u lists the targets of
// u's edges and perm gives each entry's edge id.
func (g *Graph) Push() (indptr, indices, perm []int32) {
	g.once.Do(func() {
		c := CSR{Indptr: g.Indptr, Indices: g.Indices}
		g.rev = *c.transpose(g.N())
	})
	return g.rev.indptr, g.rev.indices, g.rev.perm
}

// InDegrees returns the number of edges into each node.
func (g *Graph) InDegrees() []int32 {
	d := make([]int32, g.N())
	for v := range d {
		d[v] = g.Indptr[v+1] - g.Indptr[v]
	}
	return d
}

func checkNodes(op string, g *Graph, x *Tensor) {
	dense(op, x)
	if x.Rows != g.N() {
		shapePanic(op, "%d rows for %d nodes", x.Rows, g.N())
	}
}

// Propagate returns out[v] = Σ_{u→v} w[e]·x[u] (w nil: all ones). w gets
// no gradient: it is a property of the graph (GCN normalization, mean
// weights).
func (tp *Tape) Propagate(g *Graph, w []float32, x *Tensor) *Tensor {
	checkNodes("Propagate", g, x)
	if w != nil && len(w) != g.NumEdges() {
		shapePanic("Propagate", "%d weights for %d edges", len(w), g.NumEdges())
	}
	f := x.Cols
	out := New(g.N(), f)
	pull(out.Data, g.Indptr, g.Indices, nil, w, x.Data, f)
	tp.record(out, func() {
		ip, idx, perm := g.Push()
		pull(x.grad(), ip, idx, perm, w, out.Grad, f)
	}, x)
	return out
}

// pull accumulates dst[v] += Σ_p w[eid(p)]·src[idx[p]] over row v's entries.
func pull(dst []float32, indptr, idx, perm []int32, w, src []float32, f int) {
	parallelFor(len(indptr)-1, f*int(1+len(idx)/max(1, len(indptr)-1)), func(lo, hi int) {
		for v := lo; v < hi; v++ {
			row := dst[v*f:][:f]
			for p := indptr[v]; p < indptr[v+1]; p++ {
				wt := float32(1)
				if w != nil {
					e := p
					if perm != nil {
						e = perm[p]
					}
					wt = w[e]
				}
				s := src[int(idx[p])*f:][:f]
				for j, sv := range s {
					row[j] += wt * sv
				}
			}
		}
	})
}

// MeanWeights returns the edge weights that make Propagate a mean over
// each node's in-edges.
func MeanWeights(g *Graph) []float32 {
	w := make([]float32, g.NumEdges())
	for v := range g.N() {
		d := g.Indptr[v+1] - g.Indptr[v]
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			w[p] = 1 / float32(d)
		}
	}
	return w
}

// MaxAggregate returns out[v] = max_{u→v} x[u] per column (0 for a node
// without in-edges); the gradient goes to the arg max.
func (tp *Tape) MaxAggregate(g *Graph, x *Tensor) *Tensor {
	checkNodes("MaxAggregate", g, x)
	f := x.Cols
	out := New(g.N(), f)
	arg := make([]int32, g.N()*f)
	parallelFor(g.N(), f*4, func(lo, hi int) {
		for v := lo; v < hi; v++ {
			row, a := out.Data[v*f:][:f], arg[v*f:][:f]
			for j := range a {
				a[j] = -1
			}
			for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
				u := g.Indices[p]
				for j, sv := range x.Data[int(u)*f:][:f] {
					if a[j] < 0 || sv > row[j] {
						row[j], a[j] = sv, u
					}
				}
			}
		}
	})
	tp.record(out, func() {
		gx := x.grad()
		for i, u := range arg {
			if u >= 0 {
				gx[int(u)*f+i%f] += out.Grad[i]
			}
		}
	}, x)
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

// GATAggregate is GAT's fused scatter + edge softmax + aggregation. For
// x N×(H·F) and per-vertex attention terms src, dst N×H:
//
//	e_uv = LeakyReLU(src[u,h] + dst[v,h], slope)
//	α_uv = softmax over u→v of e_uv, then dropout with rate p
//	out[v, h] = Σ_{u→v} α_uv·x[u, h]
//
// Only the per-(node, head) softmax max and sum are kept; the backward pass
// recomputes every edge's e and α (and regenerates its dropout mask from a
// seed), so memory stays O(N·H) instead of O(E·H).
func (tp *Tape) GATAggregate(g *Graph, x, src, dst *Tensor, heads int, slope, p float32) *Tensor {
	checkNodes("GATAggregate", g, x)
	checkNodes("GATAggregate", g, src)
	checkNodes("GATAggregate", g, dst)
	if heads < 1 || x.Cols%heads != 0 || src.Cols != heads || dst.Cols != heads {
		shapePanic("GATAggregate", "x has %d columns, src %d, dst %d, for %d heads", x.Cols, src.Cols, dst.Cols, heads)
	}
	n, hf := g.N(), x.Cols
	f := hf / heads
	a := &gatState{g: g, x: x, src: src, dst: dst, heads: heads, f: f, slope: slope, p: p}
	if tp.Train && p > 0 {
		a.seed, a.drop = tp.Seed(), true
	}
	a.mx = make([]float32, n*heads)
	a.sum = make([]float32, n*heads)
	out := New(n, hf)
	parallelFor(n, hf*int(1+g.NumEdges()/max(1, n)), func(lo, hi int) {
		for v := lo; v < hi; v++ {
			a.softmaxStats(v)
			orow := out.Data[v*hf:][:hf]
			for q := g.Indptr[v]; q < g.Indptr[v+1]; q++ {
				u := int(g.Indices[q])
				for h := range heads {
					al := a.alpha(u, v, h, int(q))
					if al == 0 {
						continue
					}
					xs := x.Data[u*hf+h*f:][:f]
					o := orow[h*f:][:f]
					for j, xv := range xs {
						o[j] += al * xv
					}
				}
			}
		}
	})
	tp.record(out, func() { a.backward(out.Grad) }, x, src, dst)
	return out
}

type gatState struct {
	g           *Graph
	x, src, dst *Tensor
	heads, f    int
	slope, p    float32
	seed        uint64
	drop        bool
	mx, sum     []float32 // per (v, h): softmax max and Σ exp(e − max)
}

func (a *gatState) score(u, v, h int) float32 {
	return leaky(a.src.Data[u*a.heads+h]+a.dst.Data[v*a.heads+h], a.slope)
}

func (a *gatState) softmaxStats(v int) {
	g, H := a.g, a.heads
	for h := range H {
		m := float32(math.Inf(-1))
		for q := g.Indptr[v]; q < g.Indptr[v+1]; q++ {
			m = max(m, a.score(int(g.Indices[q]), v, h))
		}
		var s float32
		for q := g.Indptr[v]; q < g.Indptr[v+1]; q++ {
			s += expf(a.score(int(g.Indices[q]), v, h) - m)
		}
		a.mx[v*H+h], a.sum[v*H+h] = m, s
	}
}

// softmax returns α_uv before dropout.
func (a *gatState) softmax(u, v, h int) float32 {
	i := v*a.heads + h
	return expf(a.score(u, v, h)-a.mx[i]) / a.sum[i]
}

// dropScale is the dropout factor of edge e in head h (1 without dropout).
func (a *gatState) dropScale(e, h int) float32 {
	if !a.drop {
		return 1
	}
	if keep(a.seed, e*a.heads+h, a.p) {
		return 1 / (1 - a.p)
	}
	return 0
}

func (a *gatState) alpha(u, v, h, e int) float32 {
	return a.softmax(u, v, h) * a.dropScale(e, h)
}

func (a *gatState) backward(dy []float32) {
	g, H, F := a.g, a.heads, a.f
	hf := H * F
	n := g.N()
	dot := func(u, v, h int) float32 {
		var s float32
		xs, d := a.x.Data[u*hf+h*F:][:F], dy[v*hf+h*F:][:F]
		for j := range xs {
			s += xs[j] * d[j]
		}
		return s
	}
	// Pass 1, by target v: c[v,h] = Σ_u α_uv·∂L/∂α_uv (pre-dropout α), and
	// the dst-side gradient, which is local to v.
	c := make([]float32, n*H)
	var gdst []float32
	if a.dst.requires {
		gdst = a.dst.grad()
	}
	parallelFor(n, hf*int(1+g.NumEdges()/max(1, n)), func(lo, hi int) {
		for v := lo; v < hi; v++ {
			for h := range H {
				var s float32
				for q := g.Indptr[v]; q < g.Indptr[v+1]; q++ {
					u := int(g.Indices[q])
					s += a.softmax(u, v, h) * a.dropScale(int(q), h) * dot(u, v, h)
				}
				c[v*H+h] = s
				if gdst == nil {
					continue
				}
				var ds float32
				for q := g.Indptr[v]; q < g.Indptr[v+1]; q++ {
					u := int(g.Indices[q])
					ds += a.edgeGrad(u, v, h, int(q), dot(u, v, h), s)
				}
				gdst[v*H+h] += ds
			}
		}
	})
	// Pass 2, by source u over the push-style CSR: x and src gradients.
	ip, idx, perm := g.Push()
	var gx, gsrc []float32
	if a.x.requires {
		gx = a.x.grad()
	}
	if a.src.requires {
		gsrc = a.src.grad()
	}
	if gx == nil && gsrc == nil {
		return
	}
	parallelFor(n, hf*int(1+g.NumEdges()/max(1, n)), func(lo, hi int) {
		for u := lo; u < hi; u++ {
			for q := ip[u]; q < ip[u+1]; q++ {
				v, e := int(idx[q]), int(perm[q])
				for h := range H {
					if gx != nil {
						al := a.alpha(u, v, h, e)
						if al != 0 {
							d, o := dy[v*hf+h*F:][:F], gx[u*hf+h*F:][:F]
							for j := range o {
								o[j] += al * d[j]
							}
						}
					}
					if gsrc != nil {
						gsrc[u*H+h] += a.edgeGrad(u, v, h, e, dot(u, v, h), c[v*H+h])
					}
				}
			}
		}
	})
}

// edgeGrad is ∂L/∂(src[u]+dst[v]) for edge e = u→v in head h, given
// dα' = <dy[v,h], x[u,h]> and c = Σ_u α·dα.
func (a *gatState) edgeGrad(u, v, h, e int, dotv, c float32) float32 {
	al := a.softmax(u, v, h)
	dal := dotv * a.dropScale(e, h)
	de := al * (dal - c)
	if a.src.Data[u*a.heads+h]+a.dst.Data[v*a.heads+h] > 0 {
		return de
	}
	return de * a.slope
}
