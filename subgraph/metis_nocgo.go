//go:build !metis || !cgo

package subgraph

import "fmt"

// HaveMETIS reports whether this build links the METIS library (build tag
// `metis`, Debian package libmetis-dev).
const HaveMETIS = false

// PartitionMETIS needs a build with `-tags metis` (and cgo, libmetis-dev).
func PartitionMETIS(g *Graph, k int, opt PartitionOptions) (*Partitioning, error) {
	return nil, fmt.Errorf("%w: built without METIS (rebuild with -tags metis and libmetis-dev installed)", ErrPartition)
}
