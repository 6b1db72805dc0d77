package fp

import (
	"fmt"
	"math/rand/v2"
	"slices"

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
	return &Input{Graph: nn.NewGraph(g.Indptr, g.Indices), X: sx, pull: g}, nil
}

// clusterBatches partitions the graph into parts clusters once; batches
// then draws, every epoch, a random grouping of perBatch clusters each
// (Chiang et al.'s stochastic multiple partitions), returning each
// batch's induced input and its training nodes in local ids.
type clusterBatches struct {
	d        *Data
	parts    [][]int32 // nodes of each cluster, ascending
	perBatch int
	isTrain  []bool
}

func newClusterBatches(d *Data, parts, perBatch int, seed uint64) (*clusterBatches, error) {
	if parts < 1 || perBatch < 1 {
		return nil, fmt.Errorf("%w: %d clusters, %d per batch", ErrConfig, parts, perBatch)
	}
	p, err := subgraph.Partition(d.Input.pull, parts, subgraph.PartitionOptions{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("cluster-gcn partition of %q: %w", d.Name, err)
	}
	cb := &clusterBatches{d: d, parts: make([][]int32, parts), perBatch: perBatch, isTrain: make([]bool, len(d.Labels))}
	for v, c := range p.Parts {
		cb.parts[c] = append(cb.parts[c], int32(v))
	}
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

// epoch returns this epoch's batches in a random order.
func (cb *clusterBatches) epoch(r *rand.Rand) ([]clusterBatch, error) {
	order := r.Perm(len(cb.parts))
	var out []clusterBatch
	for i := 0; i < len(order); i += cb.perBatch {
		var nodes []int32
		for _, c := range order[i:min(i+cb.perBatch, len(order))] {
			nodes = append(nodes, cb.parts[c]...)
		}
		slices.Sort(nodes)
		var train []int32
		lab := make([]int32, len(nodes))
		for j, v := range nodes {
			lab[j] = cb.d.Labels[v]
			if cb.isTrain[v] {
				train = append(train, int32(j))
			}
		}
		if len(train) == 0 {
			continue
		}
		in, err := cb.d.Input.Induced(nodes)
		if err != nil {
			return nil, err
		}
		out = append(out, clusterBatch{in: in, train: train, lab: lab})
	}
	return out, nil
}
