package subgraph

import (
	"errors"
	"fmt"
	"math"
)

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
	// ErrValue: a feature value is NaN or infinite.
	ErrValue = errors.New("subgraph: bad feature value")
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
	// Warnings are problems the loader let through but a user should see:
	// extreme feature ranges, a dataset known to be partial. One line each.
	Warnings []string
}

// Validate checks a dataset's invariants: a valid, symmetric, loop-free
// graph; feature and label matrices with one row per node and in-range
// columns and finite values; labels in [-1, NumClasses); at most
// max(nodes, 2) and MaxClasses classes; feature shapes within
// MaxFeatureEntries and MaxFeatureCols; split ids in range.
func (d *Dataset) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: dataset %q: %s", ErrInconsistent, d.Name, fmt.Sprintf(format, args...))
	}
	if d.Graph == nil {
		return bad("no graph")
	}
	if err := d.Graph.Validate(); err != nil {
		return fmt.Errorf("dataset %q: %w", d.Name, err)
	}
	if !d.Graph.IsSymmetric() || d.Graph.SelfLoops() != 0 {
		return bad("graph is not undirected and loop-free")
	}
	n := d.Graph.N()
	perNode := n
	if d.Labels == nil && d.Multi == nil {
		perNode = math.MaxInt // graph-level classes (GraphSet.Dataset)
	}
	if err := checkClasses(d.Name, d.NumClasses, perNode); err != nil {
		return err
	}
	for name, f := range map[string]*Features{"features": d.Features, "multi-labels": d.Multi} {
		if f == nil {
			continue
		}
		if err := f.validate(); err != nil {
			return bad("%s: %v", name, err)
		}
		if f.Rows != n {
			return bad("%s have %d rows for %d nodes", name, f.Rows, n)
		}
		if err := f.checkSize(d.Name, name); err != nil {
			return err
		}
	}
	if d.Features != nil {
		if r, c, v, ok := d.Features.nonFinite(); ok {
			return fmt.Errorf("%w: dataset %q: feature at row %d, column %d is %v", ErrValue, d.Name, r, c, v)
		}
	}
	if d.Labels != nil {
		if len(d.Labels) != n {
			return bad("%d labels for %d nodes", len(d.Labels), n)
		}
		for v, c := range d.Labels {
			if c < -1 || int(c) >= d.NumClasses {
				return bad("node %d has label %d outside [-1, %d)", v, c, d.NumClasses)
			}
		}
	}
	for name, part := range map[string][]int32{"train": d.Train, "val": d.Val, "test": d.Test} {
		for _, v := range part {
			if v < 0 || int(v) >= n {
				return bad("%s node %d outside [0, %d)", name, v, n)
			}
		}
	}
	return nil
}

// validate checks the shape of a dense or CSR feature matrix.
func (f *Features) validate() error {
	if f.Rows < 0 || f.Cols < 0 {
		return fmt.Errorf("negative shape %d×%d", f.Rows, f.Cols)
	}
	if f.Dense != nil {
		if len(f.Dense) != f.Rows*f.Cols {
			return fmt.Errorf("%d dense values for %d×%d", len(f.Dense), f.Rows, f.Cols)
		}
		return nil
	}
	if len(f.Indptr) != f.Rows+1 || f.Indptr[0] != 0 || int(f.Indptr[f.Rows]) != len(f.Indices) {
		return fmt.Errorf("indptr must run from 0 to %d over %d rows", len(f.Indices), f.Rows)
	}
	if f.Values != nil && len(f.Values) != len(f.Indices) {
		return fmt.Errorf("%d values for %d indices", len(f.Values), len(f.Indices))
	}
	for r := 0; r < f.Rows; r++ {
		if f.Indptr[r+1] < f.Indptr[r] {
			return fmt.Errorf("indptr decreases at row %d", r)
		}
		row := f.Indices[f.Indptr[r]:f.Indptr[r+1]]
		for i, c := range row {
			if c < 0 || int(c) >= f.Cols || (i > 0 && row[i-1] >= c) {
				return fmt.Errorf("row %d: columns not sorted, unique and in [0, %d)", r, f.Cols)
			}
		}
	}
	return nil
}
