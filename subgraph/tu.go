package subgraph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// GraphSet is a graph-classification dataset: many small graphs stored as
// one disjoint union, for batched GIN-style training.
//
// Graph i owns the nodes Offsets[i] .. Offsets[i+1]-1 of Graph (edges never
// cross graphs). Node tags are remapped to 0..NumTags-1 in ascending order
// of the file's tag values and one-hot encoded in Features; graph labels
// likewise to 0..NumClasses-1.
type GraphSet struct {
	Name       string
	Graph      *Graph    // disjoint union, undirected, no self-loops
	Offsets    []int32   // len NumGraphs()+1
	Labels     []int32   // class per graph
	NumClasses int       // graph classes
	Tags       []int32   // tag per node
	NumTags    int       //
	Features   *Features // one-hot tags, N×NumTags binary CSR
	Folds      []Fold    // cross-validation folds shipped with the data (10fold_idx), or nil
}

// Fold is one cross-validation fold: graph indices, sorted as in the file.
type Fold struct{ Train, Test []int32 }

// NumGraphs is the number of graphs in the set.
func (s *GraphSet) NumGraphs() int { return len(s.Offsets) - 1 }

// Dataset views the set as one node-level Dataset (the disjoint union with
// one-hot tag features). Labels is nil: the labels are per graph, and
// NumClasses counts graph classes.
func (s *GraphSet) Dataset() *Dataset {
	return &Dataset{Name: s.Name, Graph: s.Graph, Features: s.Features, NumClasses: s.NumClasses}
}

// parseTU parses the GIN/DGCNN text format (see testdata/README.md,
// proteins/): a graph count, then per graph a line "n label" and n lines
// "tag deg nbr_1 .. nbr_deg [attributes...]" with graph-local indices.
func parseTU(name string, b []byte) (*GraphSet, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	next := func() ([]string, error) {
		for sc.Scan() {
			line++
			if f := strings.Fields(sc.Text()); len(f) > 0 {
				return f, nil
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: line %d: %v", ErrFormat, name, line+1, err)
		}
		return nil, fmt.Errorf("%w: %s: truncated after line %d", ErrFormat, name, line)
	}
	num := func(s, field string) (int, error) {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%w: %s: line %d: %s %s is not a non-negative integer", ErrFormat, name, line, field, excerpt(s))
		}
		return int(v), nil
	}
	f, err := next()
	if err != nil {
		return nil, err
	}
	ng, err := num(f[0], "graph count")
	if err != nil {
		return nil, err
	}
	s := &GraphSet{Offsets: []int32{0}}
	var src, dst, rawTags, rawLabels []int32
	for gi := 0; gi < ng; gi++ {
		f, err := next()
		if err != nil {
			return nil, err
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: %s: line %d: graph %d header %s, want \"nodes label\"", ErrFormat, name, line, gi, excerpt(strings.Join(f, " ")))
		}
		n, err := num(f[0], "node count")
		if err != nil {
			return nil, err
		}
		lab, err := strconv.ParseInt(f[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: line %d: graph %d label %s is not an integer", ErrFormat, name, line, gi, excerpt(f[1]))
		}
		rawLabels = append(rawLabels, int32(lab))
		base := int(s.Offsets[gi])
		if base+n > math.MaxInt32-1 {
			return nil, fmt.Errorf("%w: %s: line %d: too many nodes", ErrFormat, name, line)
		}
		for v := 0; v < n; v++ {
			f, err := next()
			if err != nil {
				return nil, err
			}
			if len(f) < 2 {
				return nil, fmt.Errorf("%w: %s: line %d: node %d of graph %d: want \"tag degree neighbours...\"", ErrFormat, name, line, v, gi)
			}
			tag, err := num(f[0], "tag")
			if err != nil {
				return nil, err
			}
			deg, err := num(f[1], "degree")
			if err != nil {
				return nil, err
			}
			if len(f) < 2+deg {
				return nil, fmt.Errorf("%w: %s: line %d: node %d of graph %d has degree %d but lists %d neighbours", ErrFormat, name, line, v, gi, deg, len(f)-2)
			}
			rawTags = append(rawTags, int32(tag))
			for _, w := range f[2 : 2+deg] {
				u, err := num(w, "neighbour")
				if err != nil {
					return nil, err
				}
				if u >= n {
					return nil, fmt.Errorf("%w: %s: line %d: node %d of graph %d has neighbour %d outside [0, %d)", ErrInconsistent, name, line, v, gi, u, n)
				}
				src = append(src, int32(base+v))
				dst = append(dst, int32(base+u))
			}
		}
		s.Offsets = append(s.Offsets, int32(base+n))
	}
	n := int(s.Offsets[ng])
	if s.Graph, err = FromEdges(n, src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops}); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var tagVals, labVals []int32
	s.Tags, tagVals = remapSorted(rawTags)
	s.Labels, labVals = remapSorted(rawLabels)
	s.NumTags, s.NumClasses = len(tagVals), len(labVals)
	ip := make([]int32, n+1)
	for v := range n {
		ip[v+1] = int32(v + 1)
	}
	s.Features = &Features{Rows: n, Cols: s.NumTags, Indptr: ip, Indices: slices.Clone(s.Tags)}
	return s, nil
}

// remapSorted maps each value to its rank among the distinct values.
func remapSorted(v []int32) (ranks, distinct []int32) {
	distinct = slices.Clone(v)
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	ranks = make([]int32, len(v))
	for i, x := range v {
		r, _ := slices.BinarySearch(distinct, x)
		ranks[i] = int32(r)
	}
	return ranks, distinct
}

// readTU loads the TU text file at path and, when the folder has them,
// the 10fold_idx/{train,test}_idx-<k>.txt folds.
func readTU(path string) (*GraphSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	s, err := parseTU(path, b)
	if err != nil {
		return nil, err
	}
	s.Name = strings.ToLower(datasetName(path))
	dir := filepath.Join(filepath.Dir(path), "10fold_idx")
	for k := 1; ; k++ {
		var fold Fold
		for _, part := range []struct {
			file string
			dst  *[]int32
		}{{fmt.Sprintf("train_idx-%d.txt", k), &fold.Train}, {fmt.Sprintf("test_idx-%d.txt", k), &fold.Test}} {
			p := filepath.Join(dir, part.file)
			fb, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) && part.dst == &fold.Train {
				return s, nil // no more folds
			}
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrFormat, err)
			}
			if *part.dst, err = parseIndexLines(p, fb); err != nil {
				return nil, err
			}
			for _, g := range *part.dst {
				if int(g) >= s.NumGraphs() {
					return nil, fmt.Errorf("%w: %s: graph index %d outside [0, %d)", ErrInconsistent, p, g, s.NumGraphs())
				}
			}
		}
		s.Folds = append(s.Folds, fold)
	}
}
