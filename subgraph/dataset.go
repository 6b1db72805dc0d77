package subgraph

import "errors"

// Errors returned by the dataset loaders. Each is wrapped with %w by a
// message naming the file, field and value at fault, so callers can test
// the kind with errors.Is and still show the user a precise line.
var (
	// ErrNotFound: a dataset name matched no bundled or user folder.
	ErrNotFound = errors.New("subgraph: dataset not found")
	// ErrFormat: a file is malformed, truncated or of an unsupported kind.
	ErrFormat = errors.New("subgraph: bad dataset file")
	// ErrInconsistent: files or fields disagree (sizes, counts, ranges).
	ErrInconsistent = errors.New("subgraph: inconsistent dataset")
)

// Features is an N×F node-feature (or label-indicator) matrix, stored
// either dense or as sparse CSR.
//
// Dense, when non-nil, is row-major Rows×Cols and the CSR fields are nil.
// Otherwise row r's non-zero columns are Indices[Indptr[r]:Indptr[r+1]]
// (sorted ascending, no duplicates) with values Values[same range]; a nil
// Values means every stored entry is 1 (a binary matrix, the common case
// for bag-of-words features and multi-label indicators).
type Features struct {
	Rows, Cols      int
	Dense           []float32 // row-major Rows×Cols, or nil when sparse
	Indptr, Indices []int32   // CSR when sparse
	Values          []float32 // CSR values; nil means all ones (binary)
}

// Dataset is a node-level graph learning dataset as the loaders return it.
//
// Graph is always undirected: symmetric, deduplicated and without
// self-loops (loaders drop the self-loops some files ship; models add
// their own). Node ids index Features rows, Labels and the split lists.
type Dataset struct {
	Name       string
	Graph      *Graph    // undirected: symmetric, deduplicated, no self-loops
	Features   *Features // nil when the dataset has none
	Labels     []int32   // class per node, -1 = none; nil for multi-label
	Multi      *Features // multi-label indicator N×C (binary CSR), or nil
	NumClasses int
	// Train, Val and Test are node ids, sorted ascending; empty when no
	// split is shipped (see RandomSplit).
	Train, Val, Test []int32
}
