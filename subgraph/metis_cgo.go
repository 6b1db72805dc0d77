//go:build metis && cgo

package subgraph

/*
#cgo LDFLAGS: -lmetis
#include <stdlib.h>
#include <metis.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// HaveMETIS reports whether this build links the METIS library (build tag
// `metis`, Debian package libmetis-dev).
const HaveMETIS = true

// PartitionMETIS partitions g with the real METIS library
// (METIS_PartGraphKway, default options but the seed and ufactor), for
// comparisons with Partition on the same graph in the same process. It
// works on the same symmetric, self-loop-free graph as Partition.
func PartitionMETIS(g *Graph, k int, opt PartitionOptions) (*Partitioning, error) {
	n := g.N()
	if n < 1 || k < 1 || k > n {
		return nil, fmt.Errorf("%w: %d parts for %d nodes", ErrPartition, k, n)
	}
	ub := opt.Imbalance
	if ub == 0 {
		ub = DefaultImbalance
	}
	p := &Partitioning{K: k, Parts: make([]int32, n), Seed: opt.Seed}
	if k == 1 {
		return p, nil
	}
	w := fromGraph(g, runtime.GOMAXPROCS(0))
	var options [C.METIS_NOPTIONS]C.idx_t
	C.METIS_SetDefaultOptions(&options[0])
	options[C.METIS_OPTION_SEED] = C.idx_t(opt.Seed & 0x7fffffff)
	options[C.METIS_OPTION_UFACTOR] = C.idx_t((ub - 1) * 1000)
	nv, ncon, nparts := C.idx_t(n), C.idx_t(1), C.idx_t(k)
	var objval C.idx_t
	// idx_t is 32-bit (IDXTYPEWIDTH 32 in Debian's build), the layout of
	// our int32 CSR; C copies are made so no Go pointer is kept by C.
	xadj := C.malloc(C.size_t(4 * len(w.xadj)))
	adj := C.malloc(C.size_t(4 * max(1, len(w.adjncy))))
	part := C.malloc(C.size_t(4 * n))
	defer C.free(xadj)
	defer C.free(adj)
	defer C.free(part)
	copy(unsafe.Slice((*int32)(xadj), len(w.xadj)), w.xadj)
	copy(unsafe.Slice((*int32)(adj), len(w.adjncy)), w.adjncy)
	rc := C.METIS_PartGraphKway(&nv, &ncon, (*C.idx_t)(xadj), (*C.idx_t)(adj), nil, nil, nil,
		&nparts, nil, nil, &options[0], &objval, (*C.idx_t)(part))
	if rc != C.METIS_OK {
		return nil, fmt.Errorf("%w: METIS_PartGraphKway returned %d", ErrPartition, int(rc))
	}
	copy(p.Parts, unsafe.Slice((*int32)(part), n))
	return p, nil
}
