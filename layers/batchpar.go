package layers

import (
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/internal/par"
)

// A merged batch and its feature lists are made once, right before a
// one-shot process's first pass: on one core, the other cores would wait
// for them with nothing to do. Below these sizes a parallel region costs
// more than it saves.
const (
	// mergeParEntries is the rows plus edges from which mergeBatches uses
	// the cores, mergeParRows the rows of one piece of its work.
	mergeParEntries = 1 << 16
	mergeParRows    = 2048
	// listParRows is the batch rows from which featRows uses the cores,
	// listChunkRows the rows of one chunk of its work.
	listParRows   = 4096
	listChunkRows = 1024
)

// mergeBatchesPar is mergeBatchesSerial on up to workers cores: each batch
// cut into pieces of up to rows rows, every piece written at its batch's
// node and edge offsets.
func mergeBatchesPar(bs []*Batch, workers, rows int) *Batch {
	type piece struct{ b, lo, hi int }
	nodeOff, edgeOff := make([]int32, len(bs)+1), make([]int32, len(bs)+1)
	var pieces []piece
	feat := true
	for i, b := range bs {
		nodeOff[i+1] = nodeOff[i] + int32(b.N())
		edgeOff[i+1] = edgeOff[i] + int32(len(b.Indices))
		feat = feat && b.FeatScale != nil
		for lo := 0; lo < b.N(); lo += rows {
			pieces = append(pieces, piece{i, lo, min(b.N(), lo+rows)})
		}
	}
	n, e := nodeOff[len(bs)], edgeOff[len(bs)]
	m := &Batch{Nodes: make([]int32, n), Indptr: make([]int32, n+1), Indices: make([]int32, e),
		Deg: make([]float32, n), DInv: make([]float32, n), edgesOnly: true}
	if feat {
		m.FeatScale = make([]float32, n)
	}
	par.For(len(pieces), workers, func(k int) {
		pc := pieces[k]
		b, lo, hi := bs[pc.b], pc.lo, pc.hi
		off, base := nodeOff[pc.b], edgeOff[pc.b]
		r := int(off) + lo // the piece's first row in m
		copy(m.Nodes[r:], b.Nodes[lo:hi])
		ptr := m.Indptr[r+1 : r+1+hi-lo]
		for i, q := range b.Indptr[lo+1 : hi+1] {
			ptr[i] = base + q
		}
		s, t := b.Indptr[lo], b.Indptr[hi]
		idx := m.Indices[base+s : base+t]
		for j, u := range b.Indices[s:t] {
			idx[j] = u + off
		}
		copy(m.Deg[r:], b.Deg[lo:hi])
		copy(m.DInv[r:], b.DInv[lo:hi])
		if feat {
			copy(m.FeatScale[r:], b.FeatScale[lo:hi])
		}
	})
	m.Edges = bmm.Graph{Indptr: m.Indptr, Indices: m.Indices}
	return m
}

// featListsPar is featLists on up to workers cores, over chunks of rows
// nodes: each chunk's entries counted, the chunks' offsets summed, then
// each chunk filled at its offset.
func featListsPar(in *Input, nodes []int32, workers, rows int) (*bmm.Graph, int64) {
	n := len(nodes)
	chunks := (n + rows - 1) / rows
	type part struct {
		at     int // the chunk's first entry; its entry count until summed
		maxDeg int64
		wmax   uint32
	}
	parts := make([]part, chunks+1)
	par.For(chunks, workers, func(c int) {
		nnz := 0
		for _, v := range nodes[c*rows : min(n, (c+1)*rows)] {
			nnz += int(in.Indptr[v+1] - in.Indptr[v])
		}
		parts[c+1].at = nnz
	})
	for c := range chunks {
		parts[c+1].at += parts[c].at
	}
	nnz := parts[chunks].at
	g := &bmm.Graph{Indptr: make([]int32, n+1), Indices: make([]int32, nnz)}
	if !in.allOnes {
		g.Weights, g.WeightBits = make([]uint8, nnz), in.Params.Bits
	}
	par.For(chunks, workers, func(c int) {
		lo, hi := c*rows, min(n, (c+1)*rows)
		var maxDeg int64
		wmax, at := uint32(1), parts[c].at
		for i, v := range nodes[lo:hi] {
			q0, q1 := in.Indptr[v], in.Indptr[v+1]
			copy(g.Indices[at:], in.Indices[q0:q1])
			if g.Weights != nil {
				w := g.Weights[at : at+int(q1-q0)]
				for j, code := range in.Codes[q0:q1] {
					w[j] = uint8(code)
					wmax = max(wmax, code)
				}
			}
			at += int(q1 - q0)
			g.Indptr[lo+i+1] = int32(at)
			maxDeg = max(maxDeg, int64(q1-q0))
		}
		// No other chunk reads parts[c] in this loop.
		parts[c].maxDeg, parts[c].wmax = maxDeg, wmax
	})
	var maxDeg int64
	wmax := uint32(1)
	for _, pt := range parts[:chunks] {
		maxDeg, wmax = max(maxDeg, pt.maxDeg), max(wmax, pt.wmax)
	}
	return g, maxDeg * int64(wmax)
}

// withoutLoopsPar is withoutLoops on up to workers cores, over chunks of
// rows rows: each chunk's entries off the diagonal counted, the chunks'
// offsets summed, then each chunk filled at its offset.
func withoutLoopsPar(n int, indptr, indices []int32, workers, rows int) *Neighbours {
	chunks := (n + rows - 1) / rows
	at := make([]int, chunks+1) // each chunk's first entry; its entry count until summed
	par.For(chunks, workers, func(c int) {
		k := 0
		for v := c * rows; v < min(n, (c+1)*rows); v++ {
			for _, u := range indices[indptr[v]:indptr[v+1]] {
				if int(u) != v {
					k++
				}
			}
		}
		at[c+1] = k
	})
	for c := range chunks {
		at[c+1] += at[c]
	}
	nb := &Neighbours{Indptr: make([]int32, n+1), Indices: make([]int32, at[chunks]),
		Deg: make([]float32, n), Inv: make([]float32, n)}
	par.For(chunks, workers, func(c int) {
		k := at[c]
		for v := c * rows; v < min(n, (c+1)*rows); v++ {
			// The row's start is k: nb.Indptr[v] of a chunk's first row
			// is the chunk before's to write.
			start := k
			for _, u := range indices[indptr[v]:indptr[v+1]] {
				if int(u) != v {
					nb.Indices[k] = u
					k++
				}
			}
			nb.Indptr[v+1] = int32(k)
			d := int32(k - start)
			nb.Deg[v] = float32(d)
			nb.Inv[v] = 1 / float32(max(d, 1))
		}
	})
	return nb
}
