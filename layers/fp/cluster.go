package fp

import (
	"fmt"
	"math/rand/v2"

	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/subgraph"
)

// Induced returns the input restricted to nodes (node nodes[i] becomes
// node i): the edges between them and their feature rows.
func (in *Input) Induced(nodes []int32) (*Input, error) {
	g, err := in.pull.InducedSubgraph(nodes)
	if err != nil {
		return nil, err
	}
	return in.withGraph(nodes, g), nil
}

// withGraph returns the input restricted to nodes whose graph among them
// is g (node nodes[i] is g's node i): g with their feature rows.
func (in *Input) withGraph(nodes []int32, g *subgraph.Graph) *Input {
	x := in.X
	var sx *nn.Tensor
	if x.Sparse != nil {
		ip := make([]int32, len(nodes)+1)
		var idx []int32
		var val []float32
		for i, v := range nodes {
			lo, hi := x.Sparse.Indptr[v], x.Sparse.Indptr[v+1]
			idx = append(idx, x.Sparse.Indices[lo:hi]...)
			val = append(val, x.Data[lo:hi]...)
			ip[i+1] = int32(len(idx))
		}
		if val == nil {
			val = []float32{}
		}
		sx = nn.NewSparse(len(nodes), x.Cols, ip, idx, val)
	} else {
		sx = nn.New(len(nodes), x.Cols)
		for i, v := range nodes {
			copy(sx.Data[i*x.Cols:(i+1)*x.Cols], x.Data[int(v)*x.Cols:(int(v)+1)*x.Cols])
		}
	}
	return &Input{Graph: nn.NewGraph(g.Indptr, g.Indices), X: sx, pull: g}
}

// clusterBatches partitions the graph into parts clusters once; epoch
// then draws, every epoch, a random grouping of perBatch clusters each
// (Chiang et al.'s stochastic multiple partitions) from subgraph's
// batcher, returning each batch's induced input and its training nodes in
// local ids.
type clusterBatches struct {
	d       *Data
	plan    *subgraph.BatchPlan // nodes ascending, CSR only (the pull graph has no self-loops)
	isTrain []bool
}

func newClusterBatches(d *Data, parts, perBatch int, seed uint64) (*clusterBatches, error) {
	if parts < 1 || perBatch < 1 {
		return nil, fmt.Errorf("%w: %d clusters, %d per batch", ErrConfig, parts, perBatch)
	}
	p, err := subgraph.Partition(d.Input.pull, parts, subgraph.PartitionOptions{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("cluster-gcn partition of %q: %w", d.Name, err)
	}
	plan, err := subgraph.Batches(d.Input.pull, p, subgraph.BatchOptions{PartsPerBatch: min(perBatch, parts), Rows: subgraph.SortedRows, CSROnly: true})
	if err != nil {
		return nil, fmt.Errorf("cluster-gcn batches of %q: %w", d.Name, err)
	}
	cb := &clusterBatches{d: d, plan: plan, isTrain: make([]bool, len(d.Labels))}
	for _, v := range d.Train {
		cb.isTrain[v] = true
	}
	return cb, nil
}

type clusterBatch struct {
	in    *Input
	train []int32
	lab   []int32
}

// epoch returns this epoch's batches, the clusters grouped in the order r
// shuffles them; batches without a training node are left out.
func (cb *clusterBatches) epoch(r *rand.Rand) ([]clusterBatch, error) {
	var out []clusterBatch
	for b, err := range cb.plan.Shuffle(r).All() {
		if err != nil {
			return nil, err
		}
		var train []int32
		lab := make([]int32, len(b.Nodes))
		for j, v := range b.Nodes {
			lab[j] = cb.d.Labels[v]
			if cb.isTrain[v] {
				train = append(train, int32(j))
			}
		}
		if len(train) == 0 {
			continue
		}
		out = append(out, clusterBatch{in: cb.d.Input.withGraph(b.Nodes, b.CSR()), train: train, lab: lab})
	}
	return out, nil
}
