package subgraph

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Planetoid (Yang et al. 2016) ships each dataset as ind.<name>.{x, y, tx,
// ty, allx, ally, graph, test.index}: Python 2 pickles of scipy CSR
// matrices, one-hot numpy arrays and a dict of adjacency lists. We read
// them the way Kipf & Welling's GCN loader does (and PyG after it):
//
//   - nodes 0..len(ally)-1 take their features from allx and labels from
//     ally; row j of tx/ty belongs to node test.index[j];
//   - nodes of the test range min..max(test.index) that test.index omits
//     (15 in CiteSeer) get all-zero features and label -1;
//   - the public split is train = 0..len(y)-1, val = the next 500 nodes,
//     test = test.index;
//   - the graph is symmetrized, deduplicated and loses its self-loops.
//
// When ind.<name>.allx is missing the nodes between the training and test
// blocks have no features. That is refused, since the rest would load as
// all-zero rows and quietly cost accuracy, unless the folder's name ends
// in "_partial" (our pubmed_partial copy): then the loader returns the
// full graph and every label, with feature rows only for the nodes that x
// (the training nodes) and tx (the test nodes) cover, and says so in
// Dataset.Warnings. Such a dataset is fine for structure and kernel work,
// not for accuracy with real features.

// readPlanetoid loads ind.<name>.* from dir.
func readPlanetoid(in files, dir, name string) (*Dataset, error) {
	file := func(ext string) string { return filepath.Join(dir, "ind."+name+"."+ext) }
	load := func(ext string) (any, error) {
		b, err := readFile(in, file(ext))
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrFormat, err)
		}
		return unpickle(file(ext), b)
	}
	obj := map[string]any{}
	partial := strings.HasSuffix(filepath.Base(filepath.Clean(dir)), "_partial")
	for _, ext := range []string{"x", "y", "tx", "ty", "allx", "ally", "graph"} {
		if ext == "allx" {
			if _, err := readFile(in, file(ext)); errors.Is(err, fs.ErrNotExist) {
				if !partial {
					return nil, fmt.Errorf("%w: %s is missing: the nodes between the training and test blocks would have no features (name the folder <name>_partial to load it anyway, without them)", ErrFormat, file(ext))
				}
				continue
			}
		}
		v, err := load(ext)
		if err != nil {
			return nil, err
		}
		obj[ext] = v
	}
	tb, err := readFile(in, file("test.index"))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	testIdx, err := parseIndexLines(file("test.index"), tb)
	if err != nil {
		return nil, err
	}
	mats := map[string]*Features{}
	for _, ext := range []string{"x", "tx", "allx"} {
		v, ok := obj[ext]
		if !ok {
			continue
		}
		f, err := pyCSR(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrFormat, file(ext), err)
		}
		mats[ext] = f
	}
	labels := map[string]*npyArray{}
	for _, ext := range []string{"y", "ty", "ally"} {
		a, err := pyNDArray(obj[ext])
		if err == nil && len(a.shape) != 2 {
			err = fmt.Errorf("shape %v, want (nodes, classes)", a.shape)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrFormat, file(ext), err)
		}
		labels[ext] = a
	}
	d, err := assemblePlanetoid(name, file, mats, labels, testIdx, obj["graph"])
	if err != nil {
		return nil, err
	}
	if mats["allx"] == nil {
		covered := len(d.Train) + len(d.Test) // the rows x and tx give
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s: partial dataset: %s is missing, so %d of %d nodes have all-zero features; use it for structure and kernels, not for accuracy", dir, filepath.Base(file("allx")), d.Graph.N()-covered, d.Graph.N()))
	}
	if err := d.checkValues(dir); err != nil {
		return nil, err
	}
	return d, nil
}

func assemblePlanetoid(name string, file func(string) string, mats map[string]*Features, labels map[string]*npyArray, testIdx []int32, graph any) (*Dataset, error) {
	bad := func(ext, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInconsistent, file(ext), fmt.Sprintf(format, args...))
	}
	nLab := labels["ally"].shape[0]
	classes := labels["ally"].shape[1]
	for _, ext := range []string{"y", "ty"} {
		if labels[ext].shape[1] != classes {
			return nil, bad(ext, "%d classes but ally has %d", labels[ext].shape[1], classes)
		}
	}
	nY := labels["y"].shape[0]
	if nY > nLab {
		return nil, bad("y", "%d rows but ally has only %d", nY, nLab)
	}
	if len(testIdx) == 0 {
		return nil, bad("test.index", "no test nodes")
	}
	if labels["ty"].shape[0] != len(testIdx) {
		return nil, bad("ty", "%d rows but test.index lists %d nodes", labels["ty"].shape[0], len(testIdx))
	}
	lo, hi := slices.Min(testIdx), slices.Max(testIdx)
	if int(lo) < nLab {
		return nil, bad("test.index", "test node %d lies inside the first %d (ally) nodes", lo, nLab)
	}
	// The test block follows the ally nodes; citeseer's has 15 holes. A
	// range far wider than the list is a corrupt file, not a dataset.
	if int(hi)+1-nLab > 2*len(testIdx)+64 {
		return nil, bad("test.index", "ids span %d..%d, far more than its %d entries after the %d ally nodes", lo, hi, len(testIdx), nLab)
	}
	n := int(hi) + 1
	cols := -1
	for _, ext := range []string{"x", "tx", "allx"} {
		if m := mats[ext]; m != nil {
			if cols >= 0 && m.Cols != cols {
				return nil, bad(ext, "%d feature columns, others have %d", m.Cols, cols)
			}
			cols = m.Cols
		}
	}
	if mats["x"].Rows != nY {
		return nil, bad("x", "%d rows but y has %d", mats["x"].Rows, nY)
	}
	if mats["tx"].Rows != len(testIdx) {
		return nil, bad("tx", "%d rows but test.index lists %d nodes", mats["tx"].Rows, len(testIdx))
	}
	if a := mats["allx"]; a != nil && a.Rows != nLab {
		return nil, bad("allx", "%d rows but ally has %d", a.Rows, nLab)
	}

	// Per node: which matrix row gives its features and labels.
	type rowRef struct {
		m   *Features
		row int
	}
	feat := make([]rowRef, n)
	lab := make([]int32, n)
	for i := range lab {
		lab[i] = -1
	}
	base := mats["allx"]
	baseRows := nLab
	if base == nil { // pubmed_partial: only the training rows
		base, baseRows = mats["x"], nY
	}
	for v := 0; v < baseRows; v++ {
		feat[v] = rowRef{base, v}
	}
	seen := make([]bool, n)
	for j, v := range testIdx {
		if seen[v] {
			return nil, bad("test.index", "node %d listed twice", v)
		}
		seen[v] = true
		feat[v] = rowRef{mats["tx"], j}
	}
	for _, p := range []struct {
		a    *npyArray
		node func(int) int
		ext  string
	}{
		{labels["ally"], func(r int) int { return r }, "ally"},
		{labels["ty"], func(r int) int { return int(testIdx[r]) }, "ty"},
	} {
		for r := 0; r < p.a.shape[0]; r++ {
			best, arg := 0.0, -1
			for c := 0; c < classes; c++ {
				if x := p.a.at(r*classes + c); x > best {
					best, arg = x, c
				}
			}
			lab[p.node(r)] = int32(arg)
		}
	}
	ip := make([]int32, n+1)
	var ix []int32
	var vals []float32
	for v := 0; v < n; v++ {
		if s := feat[v]; s.m != nil {
			a, b := s.m.Indptr[s.row], s.m.Indptr[s.row+1]
			ix = append(ix, s.m.Indices[a:b]...)
			if s.m.Values != nil {
				vals = append(vals, s.m.Values[a:b]...)
			} else {
				for range b - a {
					vals = append(vals, 1)
				}
			}
		}
		if len(ix) > math.MaxInt32 {
			return nil, bad("tx", "too many feature entries")
		}
		ip[v+1] = int32(len(ix))
	}
	src, dst, err := pyAdjacency(graph, n)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrFormat, file("graph"), err)
	}
	g, err := FromEdges(n, src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file("graph"), err)
	}
	test := slices.Clone(testIdx)
	slices.Sort(test)
	return &Dataset{
		Name:       name,
		Graph:      g,
		Features:   sparseFeatures(n, cols, ip, ix, vals),
		Labels:     lab,
		NumClasses: classes,
		Train:      iota32(0, nY),
		Val:        iota32(nY, min(nY+500, nLab)),
		Test:       test,
	}, nil
}

func iota32(lo, hi int) []int32 {
	out := make([]int32, 0, max(hi-lo, 0))
	for i := lo; i < hi; i++ {
		out = append(out, int32(i))
	}
	return out
}

// parseIndexLines reads one non-negative node id per line.
func parseIndexLines(name string, b []byte) ([]int32, error) {
	var out []int32
	for i, ln := range strings.Split(string(b), "\n") {
		ln = strings.TrimSpace(ln)
		if ln == "" {
			continue
		}
		v, err := strconv.ParseInt(ln, 10, 32)
		if err != nil || v < 0 || v > math.MaxInt32-1 {
			return nil, fmt.Errorf("%w: %s: line %d: node id %s is not a non-negative int32", ErrFormat, name, i+1, excerpt(ln))
		}
		out = append(out, int32(v))
	}
	return out, nil
}

// pyAdjacency reads a dict (or defaultdict) of node -> list of
// neighbours; every id must lie in [0, n).
func pyAdjacency(v any, n int) (src, dst []int32, err error) {
	var d *pyDict
	switch t := v.(type) {
	case *pyDict:
		d = t
	case *pyObject:
		d = t.items
	}
	if d == nil {
		return nil, nil, fmt.Errorf("graph is a %T, want a dict of lists", v)
	}
	id := func(x any, what string) (int32, error) {
		k, ok := x.(int64)
		if !ok || k < 0 || k >= int64(n) {
			return 0, fmt.Errorf("%s %v is not a node id in [0, %d)", what, x, n)
		}
		return int32(k), nil
	}
	for i, k := range d.keys {
		u, err := id(k, "key")
		if err != nil {
			return nil, nil, err
		}
		var items []any
		switch l := d.vals[i].(type) {
		case *pyList:
			items = l.items
		case pyTuple:
			items = l
		default:
			return nil, nil, fmt.Errorf("neighbours of node %d are a %T, want a list", u, d.vals[i])
		}
		for _, x := range items {
			w, err := id(x, fmt.Sprintf("neighbour of node %d", u))
			if err != nil {
				return nil, nil, err
			}
			src = append(src, u)
			dst = append(dst, w)
		}
	}
	return src, dst, nil
}

// pyNDArray turns a pickled numpy.ndarray (numpy.core.multiarray.
// _reconstruct + BUILD state (version, shape, dtype, fortran, bytes)) into
// an npyArray.
func pyNDArray(v any) (*npyArray, error) {
	o, ok := v.(*pyObject)
	if !ok || !strings.HasSuffix(o.class.name, "_reconstruct") {
		return nil, fmt.Errorf("not a pickled numpy array (%T)", v)
	}
	st, ok := o.state.(pyTuple)
	if !ok || len(st) != 5 {
		return nil, errors.New("numpy array state is not a 5-tuple")
	}
	shapeT, ok := st[1].(pyTuple)
	if !ok {
		return nil, errors.New("numpy array shape is not a tuple")
	}
	if len(shapeT) > maxDims {
		return nil, fmt.Errorf("numpy array has %d dimensions (numpy allows %d)", len(shapeT), maxDims)
	}
	shape := make([]int, len(shapeT))
	count := 1
	for i, x := range shapeT {
		d, ok := x.(int64)
		if !ok || d < 0 || (d > 0 && int64(count) > math.MaxInt32/d) {
			return nil, fmt.Errorf("numpy array shape %v is invalid", shapeT)
		}
		shape[i] = int(d)
		count *= int(d)
	}
	dt, ok := st[2].(*pyObject)
	if !ok || len(dt.args) < 1 {
		return nil, errors.New("numpy array dtype is not a numpy.dtype")
	}
	code, _ := dt.args[0].(string)
	order := "<"
	if ds, ok := dt.state.(pyTuple); ok && len(ds) > 1 {
		if s, ok := ds[1].(string); ok && s != "" {
			order = s
		}
	}
	a := &npyArray{name: "pickled array", shape: shape}
	if fo, ok := st[3].(bool); ok {
		a.fortran = fo
	}
	if err := a.setDescr(order + code); err != nil {
		return nil, fmt.Errorf("numpy dtype %s: %v", excerpt(code), err)
	}
	raw, ok := st[4].(string)
	if !ok {
		return nil, fmt.Errorf("numpy array data is a %T, want bytes", st[4])
	}
	if len(raw) != count*a.size {
		return nil, fmt.Errorf("numpy array of shape %v needs %d bytes, has %d", shape, count*a.size, len(raw))
	}
	if a.fortran && len(shape) > 1 {
		return nil, errors.New("fortran-order arrays are not supported")
	}
	a.data = []byte(raw)
	return a, nil
}

// pyCSR turns a pickled scipy.sparse.csr_matrix into Features.
func pyCSR(v any) (*Features, error) {
	o, ok := v.(*pyObject)
	if !ok || o.class.name != "csr_matrix" {
		return nil, fmt.Errorf("not a pickled scipy csr_matrix (%T)", v)
	}
	st, ok := o.state.(*pyDict)
	if !ok {
		return nil, errors.New("csr_matrix state is not a dict")
	}
	field := func(k string) (*npyArray, error) {
		x, ok := st.get(k)
		if !ok {
			return nil, fmt.Errorf("csr_matrix has no %q", k)
		}
		a, err := pyNDArray(x)
		if err != nil {
			return nil, fmt.Errorf("csr_matrix %s: %v", k, err)
		}
		if len(a.shape) != 1 {
			return nil, fmt.Errorf("csr_matrix %s has shape %v, want 1-D", k, a.shape)
		}
		a.name = "csr_matrix " + k
		return a, nil
	}
	sh, ok := st.get("_shape")
	if !ok {
		sh, ok = st.get("shape")
	}
	shT, _ := sh.(pyTuple)
	if !ok || len(shT) != 2 {
		return nil, errors.New("csr_matrix shape is not a pair")
	}
	var dims [2]int
	for i, x := range shT {
		d, ok := x.(int64)
		if !ok || d < 0 || d > math.MaxInt32-1 {
			return nil, fmt.Errorf("csr_matrix shape %v is invalid", shT)
		}
		dims[i] = int(d)
	}
	ip, err := field("indptr")
	if err != nil {
		return nil, err
	}
	ix, err := field("indices")
	if err != nil {
		return nil, err
	}
	dt, err := field("data")
	if err != nil {
		return nil, err
	}
	if ip.len() != dims[0]+1 || ix.len() != dt.len() {
		return nil, fmt.Errorf("csr_matrix sizes disagree: shape %v, %d indptr, %d indices, %d values", dims, ip.len(), ix.len(), dt.len())
	}
	indptr, err := ip.int32s(0, int64(ix.len()))
	if err != nil {
		return nil, err
	}
	indices, err := ix.int32s(0, int64(dims[1])-1)
	if err != nil {
		return nil, err
	}
	indptr, indices, values, err := canonicalCSR("csr_matrix", dims[0], dims[1], indptr, indices, dt.float32s())
	if err != nil {
		return nil, err
	}
	return &Features{Rows: dims[0], Cols: dims[1], Indptr: indptr, Indices: indices, Values: values}, nil
}
