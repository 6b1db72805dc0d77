package subgraph

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// RandomSplit replaces the split with Shchur et al.'s gnn-benchmark
// protocol: per class, trainPerClass random labelled nodes for training,
// valPerClass for validation, the rest of the labelled nodes for testing
// (a class too small for both gives training its nodes first). Nodes with
// label -1 are left out. The same seed gives the same split.
//
// For multi-label datasets (Labels nil) the per-class counts are taken
// over all nodes at once: NumClasses*trainPerClass random nodes train,
// NumClasses*valPerClass validate, the rest test.
func (d *Dataset) RandomSplit(trainPerClass, valPerClass int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	trainPerClass, valPerClass = max(trainPerClass, 0), max(valPerClass, 0)
	d.Train, d.Val, d.Test = nil, nil, nil
	pooled := 0
	take := func(pool []int32, nTrain, nVal int) {
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		nTrain = min(nTrain, len(pool))
		nVal = min(nVal, len(pool)-nTrain)
		d.Train = append(d.Train, pool[:nTrain]...)
		d.Val = append(d.Val, pool[nTrain:nTrain+nVal]...)
		pooled += len(pool)
	}
	// The pools cover ids 0..span-1: every node, or the labelled ones.
	span := d.Graph.N()
	inPool := func(int) bool { return true }
	if d.Labels == nil {
		k := max(d.NumClasses, 1)
		take(iota32(0, span), k*trainPerClass, k*valPerClass)
	} else {
		byClass := make([][]int32, d.NumClasses)
		for v, c := range d.Labels {
			if c >= 0 && int(c) < d.NumClasses {
				byClass[c] = append(byClass[c], int32(v))
			}
		}
		for _, pool := range byClass {
			take(pool, trainPerClass, valPerClass)
		}
		span = len(d.Labels)
		inPool = func(v int) bool { c := d.Labels[v]; return c >= 0 && int(c) < d.NumClasses }
	}
	slices.Sort(d.Train)
	slices.Sort(d.Val)
	// Test is the rest of the pools in node order: made by a scan, not a
	// sort, which was most of the split's time (bench/scale/RESULTS.md).
	picked := make([]bool, span)
	for _, v := range d.Train {
		picked[v] = true
	}
	for _, v := range d.Val {
		picked[v] = true
	}
	d.Test = make([]int32, 0, pooled-len(d.Train)-len(d.Val))
	for v := range span {
		if !picked[v] && inPool(v) {
			d.Test = append(d.Test, int32(v))
		}
	}
}

// Induced returns the dataset restricted to nodes (renumbered so that
// nodes[i] becomes node i): the induced graph, those rows of the features
// and labels, and the split lists filtered to the kept nodes.
func (d *Dataset) Induced(nodes []int32) (*Dataset, error) {
	g, err := d.Graph.InducedSubgraph(nodes)
	if err != nil {
		return nil, err
	}
	out := &Dataset{Name: d.Name, Graph: g, NumClasses: d.NumClasses, Warnings: slices.Clone(d.Warnings)}
	if d.Features != nil {
		out.Features = d.Features.SelectRows(nodes)
	}
	if d.Multi != nil {
		out.Multi = d.Multi.SelectRows(nodes)
	}
	if d.Labels != nil {
		out.Labels = make([]int32, len(nodes))
		for i, v := range nodes {
			out.Labels[i] = d.Labels[v]
		}
	}
	local := make(map[int32]int32, len(nodes))
	for i, v := range nodes {
		local[v] = int32(i)
	}
	remap := func(ids []int32) []int32 {
		var r []int32
		for _, v := range ids {
			if w, ok := local[v]; ok {
				r = append(r, w)
			}
		}
		slices.Sort(r)
		return r
	}
	out.Train, out.Val, out.Test = remap(d.Train), remap(d.Val), remap(d.Test)
	return out, nil
}

// LargestComponent returns the dataset restricted to the largest connected
// component of its graph, the standardization Shchur et al. apply to the
// gnn-benchmark graphs before splitting, and the component's nodes
// (ascending, in d's numbering); a connected d comes back as itself, with
// nil nodes.
func (d *Dataset) LargestComponent() (*Dataset, []int32) {
	nodes := d.Graph.LargestComponent()
	if len(nodes) == d.Graph.N() {
		return d, nil
	}
	out, err := d.Induced(nodes)
	if err != nil { // the component's nodes are distinct and in range
		panic(fmt.Sprintf("subgraph: LargestComponent: %v", err))
	}
	return out, nodes
}

// SelectRows returns the rows of f at the given indices, in that order.
func (f *Features) SelectRows(rows []int32) *Features {
	out := &Features{Rows: len(rows), Cols: f.Cols}
	if f.Dense != nil {
		out.Dense = make([]float32, 0, len(rows)*f.Cols)
		for _, r := range rows {
			out.Dense = append(out.Dense, f.Dense[int(r)*f.Cols:(int(r)+1)*f.Cols]...)
		}
		return out
	}
	out.Indptr = make([]int32, len(rows)+1)
	for i, r := range rows {
		a, b := f.Indptr[r], f.Indptr[r+1]
		out.Indices = append(out.Indices, f.Indices[a:b]...)
		if f.Values != nil {
			out.Values = append(out.Values, f.Values[a:b]...)
		}
		out.Indptr[i+1] = int32(len(out.Indices))
	}
	return out
}

// NNZ is the number of stored (sparse) or non-zero (dense) entries.
func (f *Features) NNZ() int {
	if f.Dense == nil {
		return len(f.Indices)
	}
	c := 0
	for _, x := range f.Dense {
		if x != 0 {
			c++
		}
	}
	return c
}

// Binary reports whether every stored value is 0 or 1.
func (f *Features) Binary() bool {
	vals := f.Values
	if f.Dense != nil {
		vals = f.Dense
	}
	for _, x := range vals {
		if x != 0 && x != 1 {
			return false
		}
	}
	return true
}

// ToDense returns the features as a row-major Rows×Cols slice (f.Dense
// itself when f is dense).
func (f *Features) ToDense() []float32 {
	if f.Dense != nil {
		return f.Dense
	}
	out := make([]float32, f.Rows*f.Cols)
	for r := 0; r < f.Rows; r++ {
		for i := f.Indptr[r]; i < f.Indptr[r+1]; i++ {
			v := float32(1)
			if f.Values != nil {
				v = f.Values[i]
			}
			out[r*f.Cols+int(f.Indices[i])] = v
		}
	}
	return out
}

// Masks returns the split as boolean node masks (PyG's train_mask etc.).
func (d *Dataset) Masks() (train, val, test []bool) {
	mask := func(ids []int32) []bool {
		m := make([]bool, d.Graph.N())
		for _, v := range ids {
			m[v] = true
		}
		return m
	}
	return mask(d.Train), mask(d.Val), mask(d.Test)
}
