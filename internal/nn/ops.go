package nn

import (
	"math"

	"github.com/qgtc/qgtc/templates"
)

// MatMulT returns x·wᵀ for x N×K (dense or sparse) and w M×K, the layout of
// a PyTorch Linear weight [out, in]. A sparse x gets no gradient.
func (tp *Tape) MatMulT(x, w *Tensor) *Tensor {
	dense("MatMulT(w)", w)
	if x.Cols != w.Cols {
		shapePanic("MatMulT", "x is %d×%d but w is %d×%d", x.Rows, x.Cols, w.Rows, w.Cols)
	}
	n, k, m := x.Rows, x.Cols, w.Rows
	out := New(n, m)
	if x.Sparse != nil {
		spmmT(out.Data, x, w)
	} else if n > 0 && m > 0 {
		templates.Sgemm(false, true, n, m, k, 1, x.Data, k, w.Data, k, 0, out.Data, m)
	}
	tp.record(out, func() {
		dy := out.Grad
		if w.requires {
			// dw (M×K) += dyᵀ·x
			if x.Sparse != nil {
				spmmTGradW(w.grad(), x, dy, m)
			} else {
				templates.Sgemm(true, false, m, k, n, 1, dy, m, x.Data, k, 1, w.grad(), k)
			}
		}
		if x.requires && x.Sparse == nil {
			templates.Sgemm(false, false, n, k, m, 1, dy, m, w.Data, k, 1, x.grad(), k)
		}
	}, x, w)
	return out
}

// spmmT writes out = x·wᵀ for a sparse x: an SpMM that treats x's rows as
// nodes, its columns as sources and its values as edge weights, gathering
// rows of wᵀ.
func spmmT(out []float32, x, w *Tensor) {
	m, k := w.Rows, w.Cols
	wt := make([]float32, k*m)
	for o := range m {
		for j := range k {
			wt[j*m+o] = w.Data[o*k+j]
		}
	}
	c := templates.CSR{Indptr: x.Sparse.Indptr, Indices: x.Sparse.Indices}
	if m > 0 {
		must("MatMulT", templates.SpMM(out, c, templates.UMulE, templates.Sum, wt, x.Data, nil, m, nil, nil))
	}
}

// spmmTGradW accumulates dyᵀ·x into dw (M×K) for a sparse x: xᵀ·dy as an
// SpMM over the transposed structure (edge ids point at x's values).
func spmmTGradW(dw []float32, x *Tensor, dy []float32, m int) {
	k := x.Cols
	t := x.Sparse.transpose(k)
	if m == 0 || len(t.indices) == 0 {
		return
	}
	dwt := make([]float32, k*m)
	c := templates.CSR{Indptr: t.indptr, Indices: t.indices, EdgeIDs: t.perm}
	must("MatMulT", templates.SpMM(dwt, c, templates.UMulE, templates.Sum, dy, x.Data, nil, m, nil, nil))
	for j := range k {
		for o, v := range dwt[j*m : (j+1)*m] {
			dw[o*k+j] += v
		}
	}
}

// AddBias returns x + b broadcast over rows (b has x.Cols values).
func (tp *Tape) AddBias(x, b *Tensor) *Tensor {
	dense("AddBias", x)
	if len(b.Data) != x.Cols {
		shapePanic("AddBias", "%d bias values for %d columns", len(b.Data), x.Cols)
	}
	out := like(x)
	parallelFor(x.Rows, x.Cols, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			r := x.Data[i*x.Cols:][:x.Cols]
			o := out.Data[i*x.Cols:][:x.Cols]
			for j := range r {
				o[j] = r[j] + b.Data[j]
			}
		}
	})
	tp.record(out, func() {
		if x.requires {
			addTo(x.grad(), out.Grad)
		}
		if b.requires {
			g := b.grad()
			for i := range x.Rows {
				for j, d := range out.Grad[i*x.Cols:][:x.Cols] {
					g[j] += d
				}
			}
		}
	}, x, b)
	return out
}

func addTo(dst, src []float32) {
	for i, s := range src {
		dst[i] += s
	}
}

// Add returns a + b.
func (tp *Tape) Add(a, b *Tensor) *Tensor {
	dense("Add", a)
	dense("Add", b)
	sameShape("Add", a, b)
	out := like(a)
	for i := range out.Data {
		out.Data[i] = a.Data[i] + b.Data[i]
	}
	tp.record(out, func() {
		if a.requires {
			addTo(a.grad(), out.Grad)
		}
		if b.requires {
			addTo(b.grad(), out.Grad)
		}
	}, a, b)
	return out
}

// AddScaled returns agg + (1+eps)·x, the GIN update, with eps a 1×1 tensor.
func (tp *Tape) AddScaled(agg, x, eps *Tensor) *Tensor {
	dense("AddScaled", agg)
	dense("AddScaled", x)
	sameShape("AddScaled", agg, x)
	if len(eps.Data) != 1 {
		shapePanic("AddScaled", "eps has %d values", len(eps.Data))
	}
	s := 1 + eps.Data[0]
	out := like(x)
	for i := range out.Data {
		out.Data[i] = agg.Data[i] + s*x.Data[i]
	}
	tp.record(out, func() {
		if agg.requires {
			addTo(agg.grad(), out.Grad)
		}
		if x.requires {
			g := x.grad()
			for i, d := range out.Grad {
				g[i] += s * d
			}
		}
		if eps.requires {
			var sum float64
			for i, d := range out.Grad {
				sum += float64(d * x.Data[i])
			}
			eps.grad()[0] += float32(sum)
		}
	}, agg, x, eps)
	return out
}

// unary applies f element-wise; df gets the input and output values and
// returns the derivative.
func (tp *Tape) unary(op string, x *Tensor, f func(float32) float32, df func(x, y float32) float32) *Tensor {
	dense(op, x)
	out := like(x)
	parallelFor(len(x.Data), 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out.Data[i] = f(x.Data[i])
		}
	})
	tp.record(out, func() {
		g := x.grad()
		parallelFor(len(g), 4, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				g[i] += out.Grad[i] * df(x.Data[i], out.Data[i])
			}
		})
	}, x)
	return out
}

// ReLU returns max(x, 0).
func (tp *Tape) ReLU(x *Tensor) *Tensor {
	return tp.unary("ReLU", x, func(v float32) float32 { return max(v, 0) },
		func(v, _ float32) float32 {
			if v > 0 {
				return 1
			}
			return 0
		})
}

// LeakyReLU returns x for x > 0 and slope·x otherwise.
func (tp *Tape) LeakyReLU(x *Tensor, slope float32) *Tensor {
	return tp.unary("LeakyReLU", x, func(v float32) float32 { return leaky(v, slope) },
		func(v, _ float32) float32 {
			if v > 0 {
				return 1
			}
			return slope
		})
}

func leaky(v, slope float32) float32 {
	if v > 0 {
		return v
	}
	return slope * v
}

// ELU returns x for x > 0 and alpha·(exp(x)−1) otherwise.
func (tp *Tape) ELU(x *Tensor, alpha float32) *Tensor {
	return tp.unary("ELU", x, func(v float32) float32 {
		if v > 0 {
			return v
		}
		return alpha * float32(math.Expm1(float64(v)))
	}, func(v, y float32) float32 {
		if v > 0 {
			return 1
		}
		return y + alpha
	})
}

// Dropout zeroes each element with probability p and scales the rest by
// 1/(1−p) when training; otherwise it returns x. Sparse inputs drop stored
// entries (the zeros stay zeros either way). The mask is regenerated from a
// seed in the backward pass instead of being stored.
func (tp *Tape) Dropout(x *Tensor, p float32) *Tensor {
	if !tp.Train || p <= 0 {
		return x
	}
	seed := tp.Seed()
	scale := 1 / (1 - p)
	out := &Tensor{Rows: x.Rows, Cols: x.Cols, Data: make([]float32, len(x.Data)), Sparse: x.Sparse}
	if p >= 1 {
		scale = 0
	}
	parallelFor(len(x.Data), 8, func(lo, hi int) {
		for i, v := range x.Data[lo:hi] {
			if v != 0 && keep(seed, lo+i, p) { // zeros stay zeros: skip the hash
				out.Data[lo+i] = v * scale
			}
		}
	})
	tp.record(out, func() {
		if x.Sparse != nil {
			return
		}
		g := x.grad()
		parallelFor(len(g), 8, func(lo, hi int) {
			for i, d := range out.Grad[lo:hi] {
				if keep(seed, lo+i, p) {
					g[lo+i] += d * scale
				}
			}
		})
	}, x)
	return out
}

// LogSoftmax returns the row-wise log-softmax.
func (tp *Tape) LogSoftmax(x *Tensor) *Tensor {
	dense("LogSoftmax", x)
	out := like(x)
	c := x.Cols
	for i := range x.Rows {
		r, o := x.Data[i*c:][:c], out.Data[i*c:][:c]
		m := float32(math.Inf(-1))
		for _, v := range r {
			m = max(m, v)
		}
		var s float64
		for _, v := range r {
			s += math.Exp(float64(v - m))
		}
		lse := m + float32(math.Log(s))
		for j, v := range r {
			o[j] = v - lse
		}
	}
	tp.record(out, func() {
		g := x.grad()
		for i := range x.Rows {
			d, o := out.Grad[i*c:][:c], out.Data[i*c:][:c]
			var s float32
			for _, v := range d {
				s += v
			}
			for j := range d {
				g[i*c+j] += d[j] - expf(o[j])*s
			}
		}
	}, x)
	return out
}

// NLL returns the mean over rows idx of −logp[i, labels[i]], a 1×1 tensor
// (the cross-entropy when logp is a log-softmax).
func (tp *Tape) NLL(logp *Tensor, labels []int32, idx []int32) *Tensor {
	dense("NLL", logp)
	if len(labels) != logp.Rows {
		shapePanic("NLL", "%d labels for %d rows", len(labels), logp.Rows)
	}
	out := New(1, 1)
	if len(idx) == 0 {
		return out
	}
	var s float64
	for _, i := range idx {
		s -= float64(logp.Data[int(i)*logp.Cols+int(labels[i])])
	}
	out.Data[0] = float32(s / float64(len(idx)))
	tp.record(out, func() {
		g := logp.grad()
		d := out.Grad[0] / float32(len(idx))
		for _, i := range idx {
			g[int(i)*logp.Cols+int(labels[i])] -= d
		}
	}, logp)
	return out
}

// CrossEntropy is NLL(LogSoftmax(logits)).
func (tp *Tape) CrossEntropy(logits *Tensor, labels []int32, idx []int32) *Tensor {
	return tp.NLL(tp.LogSoftmax(logits), labels, idx)
}

// MeanHeads averages a N×(H·F) tensor over its H heads into N×F.
func (tp *Tape) MeanHeads(x *Tensor, heads int) *Tensor {
	dense("MeanHeads", x)
	if heads < 1 || x.Cols%heads != 0 {
		shapePanic("MeanHeads", "%d columns for %d heads", x.Cols, heads)
	}
	f := x.Cols / heads
	out := New(x.Rows, f)
	inv := 1 / float32(heads)
	for i := range x.Rows {
		for h := range heads {
			for j := range f {
				out.Data[i*f+j] += x.Data[i*x.Cols+h*f+j] * inv
			}
		}
	}
	tp.record(out, func() {
		g := x.grad()
		for i := range x.Rows {
			for h := range heads {
				for j := range f {
					g[i*x.Cols+h*f+j] += out.Grad[i*f+j] * inv
				}
			}
		}
	}, x)
	return out
}

// BatchNorm normalizes each column over the rows. Training uses the batch
// statistics and updates the running ones (PyTorch's momentum and unbiased
// running variance); evaluation uses the running statistics.
func (tp *Tape) BatchNorm(x, gamma, beta, runMean, runVar *Tensor, momentum, eps float32) *Tensor {
	dense("BatchNorm", x)
	n, c := x.Rows, x.Cols
	for _, t := range []*Tensor{gamma, beta, runMean, runVar} {
		if len(t.Data) != c {
			shapePanic("BatchNorm", "parameter of %d values for %d columns", len(t.Data), c)
		}
	}
	out := like(x)
	mean := make([]float32, c)
	istd := make([]float32, c)
	if tp.Train && n > 1 {
		for j := range c {
			var s float64
			for i := range n {
				s += float64(x.Data[i*c+j])
			}
			mu := s / float64(n)
			var v float64
			for i := range n {
				d := float64(x.Data[i*c+j]) - mu
				v += d * d
			}
			mean[j] = float32(mu)
			istd[j] = float32(1 / math.Sqrt(v/float64(n)+float64(eps)))
			runMean.Data[j] = (1-momentum)*runMean.Data[j] + momentum*float32(mu)
			runVar.Data[j] = (1-momentum)*runVar.Data[j] + momentum*float32(v/float64(n-1))
		}
	} else {
		for j := range c {
			mean[j] = runMean.Data[j]
			istd[j] = float32(1 / math.Sqrt(float64(runVar.Data[j]+eps)))
		}
	}
	xhat := make([]float32, n*c)
	for i := range n {
		for j := range c {
			h := (x.Data[i*c+j] - mean[j]) * istd[j]
			xhat[i*c+j] = h
			out.Data[i*c+j] = h*gamma.Data[j] + beta.Data[j]
		}
	}
	batch := tp.Train && n > 1
	tp.record(out, func() {
		dy := out.Grad
		for j := range c {
			var sd, sdx float64
			for i := range n {
				d := float64(dy[i*c+j])
				sd += d
				sdx += d * float64(xhat[i*c+j])
			}
			if gamma.requires {
				gamma.grad()[j] += float32(sdx)
			}
			if beta.requires {
				beta.grad()[j] += float32(sd)
			}
			if !x.requires {
				continue
			}
			g, gm := x.grad(), gamma.Data[j]
			for i := range n {
				if batch {
					g[i*c+j] += gm * istd[j] * float32(float64(dy[i*c+j])-sd/float64(n)-float64(xhat[i*c+j])*sdx/float64(n))
				} else {
					g[i*c+j] += gm * istd[j] * dy[i*c+j]
				}
			}
		}
	}, x, gamma, beta)
	return out
}
