package subgraph

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// npzFile is an open NumPy .npz (a zip of .npy members), read lazily.
type npzFile struct {
	name    string // file name for errors, e.g. "x.zip:inner.npz"
	members map[string]*zip.File
	size    int    // compressed size of the outermost file
	budget  *int64 // bytes its members may still inflate to (shared when nested)
}

// openNPZ opens the zip b; budget is nil for a file read from disk (it
// then gets inflateBudget(len(b))) or the outer archive's for a nested one.
func openNPZ(name string, b []byte, size int, budget *int64) (*npzFile, error) {
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: not a zip archive: %v", ErrFormat, name, err)
	}
	if budget == nil {
		left := inflateBudget(len(b))
		budget, size = &left, len(b)
	}
	z := &npzFile{name: name, members: map[string]*zip.File{}, size: size, budget: budget}
	for _, f := range zr.File {
		z.members[strings.TrimSuffix(f.Name, ".npy")] = f
	}
	return z, nil
}

// readMember reads one member, charging it to the archive's inflation
// budget: a declared size beyond what is left is refused before reading,
// and the bytes read are capped by it whatever the header claims.
func (z *npzFile) readMember(f *zip.File) ([]byte, error) {
	if f.UncompressedSize64 > uint64(*z.budget) {
		return nil, fmt.Errorf("%w: %s: member %s declares %d bytes from %d compressed, more than this %d-byte file may inflate to (%dx plus %d MiB in all)",
			ErrFormat, z.name, excerpt(f.Name), f.UncompressedSize64, f.CompressedSize64, z.size, inflateRatio, inflateFloor>>20)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: member %s: %v", ErrFormat, z.name, excerpt(f.Name), err)
	}
	defer rc.Close()
	// Start the buffer at the declared size only as far as the compressed
	// bytes can back it (a header may lie); it grows as data really comes.
	buf := bytes.NewBuffer(make([]byte, 0, min(f.UncompressedSize64, 4*f.CompressedSize64+64<<10)+bytes.MinRead))
	if _, err := buf.ReadFrom(&budgetReader{r: rc, left: z.budget, what: z.name + ": member " + excerpt(f.Name), size: z.size}); err != nil {
		if errors.Is(err, ErrFormat) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: member %s: %v", ErrFormat, z.name, excerpt(f.Name), err)
	}
	return buf.Bytes(), nil
}

func (z *npzFile) has(member string) bool { _, ok := z.members[member]; return ok }

// array reads member (without ".npy"); a missing member is an error.
func (z *npzFile) array(member string) (*npyArray, error) {
	f, ok := z.members[member]
	if !ok {
		return nil, fmt.Errorf("%w: %s: missing array %q", ErrFormat, z.name, member)
	}
	b, err := z.readMember(f)
	if err != nil {
		return nil, err
	}
	a, err := parseNPY(z.name+":"+member, b)
	if errors.Is(err, errNPYNotNumeric) {
		return nil, fmt.Errorf("%w: %s: array %q is not numeric: %v", ErrFormat, z.name, member, err)
	}
	return a, err
}

// vector reads a 1-D (or scalar-free flat) member.
func (z *npzFile) vector(member string) (*npyArray, error) {
	a, err := z.array(member)
	if err != nil {
		return nil, err
	}
	if len(a.shape) != 1 {
		return nil, fmt.Errorf("%w: %s: array %q has shape %v, want 1-D", ErrFormat, z.name, member, a.shape)
	}
	return a, nil
}

// shape2 reads a 2-element shape member such as adj_shape.
func (z *npzFile) shape2(member string) (rows, cols int, err error) {
	a, err := z.vector(member)
	if err != nil {
		return 0, 0, err
	}
	v, err := a.int32s(0, math.MaxInt32-1)
	if err != nil || len(v) != 2 {
		return 0, 0, fmt.Errorf("%w: %s: %s must be two non-negative int32 values", ErrFormat, z.name, member)
	}
	return int(v[0]), int(v[1]), nil
}

// csr reads a scipy CSR matrix stored as <p>_data, <p>_indices,
// <p>_indptr and <p>_shape, checking every invariant. Rows come back with
// sorted, unique columns (duplicates summed, as scipy would).
func (z *npzFile) csr(p string) (rows, cols int, indptr, indices []int32, values []float32, err error) {
	rows, cols, err = z.shape2(p + "_shape")
	if err != nil {
		return
	}
	var ip, ix, dt *npyArray
	if ip, err = z.vector(p + "_indptr"); err != nil {
		return
	}
	if ix, err = z.vector(p + "_indices"); err != nil {
		return
	}
	if dt, err = z.vector(p + "_data"); err != nil {
		return
	}
	if ip.len() != rows+1 {
		err = fmt.Errorf("%w: %s: %s_indptr has %d entries, want %s_shape[0]+1 = %d", ErrInconsistent, z.name, p, ip.len(), p, rows+1)
		return
	}
	if ix.len() != dt.len() {
		err = fmt.Errorf("%w: %s: %s_indices has %d entries but %s_data has %d", ErrInconsistent, z.name, p, ix.len(), p, dt.len())
		return
	}
	if indptr, err = ip.int32s(0, int64(ix.len())); err != nil {
		return
	}
	if indices, err = ix.int32s(0, int64(cols)-1); err != nil {
		return
	}
	values = dt.float32s()
	indptr, indices, values, err = canonicalCSR(z.name+":"+p, rows, cols, indptr, indices, values)
	return
}

// canonicalCSR checks indptr (starts at 0, non-decreasing, ends at
// len(indices)) and column indices (in [0, cols)), and returns rows with
// sorted, unique columns, summing duplicates as scipy does. Sorted input
// is returned as is; otherwise two counting-sort transposes (CSR -> CSC ->
// CSR) sort every row in O(nnz + rows + cols).
func canonicalCSR(name string, rows, cols int, indptr, indices []int32, values []float32) ([]int32, []int32, []float32, error) {
	if len(indptr) != rows+1 || indptr[0] != 0 || int(indptr[rows]) != len(indices) || len(values) != len(indices) {
		return nil, nil, nil, fmt.Errorf("%w: %s: indptr must run from 0 to %d over %d rows", ErrInconsistent, name, len(indices), rows)
	}
	sorted := true
	for r := 0; r < rows; r++ {
		if indptr[r+1] < indptr[r] {
			return nil, nil, nil, fmt.Errorf("%w: %s: indptr decreases at row %d", ErrInconsistent, name, r)
		}
		row := indices[indptr[r]:indptr[r+1]]
		for i, c := range row {
			if c < 0 || int(c) >= cols {
				return nil, nil, nil, fmt.Errorf("%w: %s: row %d has column %d outside [0, %d)", ErrInconsistent, name, r, c, cols)
			}
			if i > 0 && row[i-1] >= c {
				sorted = false
			}
		}
	}
	if sorted {
		return indptr, indices, values, nil
	}
	if cols > 4*len(indices)+1024 { // few entries over many columns: sort rows directly
		return sortRows(rows, indptr, indices, values)
	}
	// CSR -> CSC: visiting rows in order lists each column's rows sorted.
	cp := make([]int32, cols+1)
	for _, c := range indices {
		cp[c+1]++
	}
	for c := 0; c < cols; c++ {
		cp[c+1] += cp[c]
	}
	fill := slices.Clone(cp[:cols])
	crow := make([]int32, len(indices))
	cval := make([]float32, len(indices))
	for r := 0; r < rows; r++ {
		for i := indptr[r]; i < indptr[r+1]; i++ {
			c := indices[i]
			crow[fill[c]], cval[fill[c]] = int32(r), values[i]
			fill[c]++
		}
	}
	// CSC -> CSR: visiting columns in order lists each row's columns sorted.
	fill = slices.Clone(indptr[:rows])
	outIdx := make([]int32, len(indices))
	outVal := make([]float32, len(indices))
	for c := 0; c < cols; c++ {
		for i := cp[c]; i < cp[c+1]; i++ {
			r := crow[i]
			outIdx[fill[r]], outVal[fill[r]] = int32(c), cval[i]
			fill[r]++
		}
	}
	// Merge duplicates in place.
	outPtr := make([]int32, rows+1)
	w := int32(0)
	for r := 0; r < rows; r++ {
		start := w
		for i := indptr[r]; i < indptr[r+1]; i++ {
			if w > start && outIdx[w-1] == outIdx[i] {
				outVal[w-1] += outVal[i]
				continue
			}
			outIdx[w], outVal[w] = outIdx[i], outVal[i]
			w++
		}
		outPtr[r+1] = w
	}
	return outPtr, outIdx[:w], outVal[:w], nil
}

// sortRows sorts each row by column with a comparison sort, summing
// duplicates; canonicalCSR's fallback when the column count dwarfs nnz.
func sortRows(rows int, indptr, indices []int32, values []float32) ([]int32, []int32, []float32, error) {
	type ent struct {
		c int32
		v float32
	}
	outPtr := make([]int32, rows+1)
	outIdx := make([]int32, 0, len(indices))
	outVal := make([]float32, 0, len(indices))
	var buf []ent
	for r := 0; r < rows; r++ {
		buf = buf[:0]
		for i := indptr[r]; i < indptr[r+1]; i++ {
			buf = append(buf, ent{indices[i], values[i]})
		}
		slices.SortStableFunc(buf, func(a, b ent) int { return int(a.c) - int(b.c) })
		for i, e := range buf {
			if i > 0 && buf[i-1].c == e.c {
				outVal[len(outVal)-1] += e.v
				continue
			}
			outIdx = append(outIdx, e.c)
			outVal = append(outVal, e.v)
		}
		outPtr[r+1] = int32(len(outIdx))
	}
	return outPtr, outIdx, outVal, nil
}

// sparseFeatures wraps a canonical CSR as Features, dropping explicit
// zeros and the values slice when every value is one.
func sparseFeatures(rows, cols int, indptr, indices []int32, values []float32) *Features {
	zeros, ones := 0, true
	for _, v := range values {
		if v == 0 {
			zeros++
		}
		ones = ones && v == 1
	}
	if zeros > 0 {
		ip := make([]int32, rows+1)
		ix := make([]int32, 0, len(indices)-zeros)
		vs := make([]float32, 0, len(indices)-zeros)
		for r := 0; r < rows; r++ {
			for i := indptr[r]; i < indptr[r+1]; i++ {
				if values[i] != 0 {
					ix = append(ix, indices[i])
					vs = append(vs, values[i])
				}
			}
			ip[r+1] = int32(len(ix))
		}
		indptr, indices, values = ip, ix, vs
		ones = true
		for _, v := range values {
			ones = ones && v == 1
		}
	}
	if ones {
		values = nil
	}
	return &Features{Rows: rows, Cols: cols, Indptr: indptr, Indices: indices, Values: values}
}

// graphFromCSR turns a (possibly directed, weighted, self-looped) square
// adjacency in CSR form into the undirected Graph of a Dataset.
func graphFromCSR(n int, indptr, indices []int32) (*Graph, error) {
	src := make([]int32, len(indices))
	for r := 0; r < n; r++ {
		for i := indptr[r]; i < indptr[r+1]; i++ {
			src[i] = int32(r)
		}
	}
	return FromEdges(n, src, indices, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
}

// readNPZ loads a .npz file, or a .zip archive holding one .npz (as the
// amazon/coauthor downloads are), from the bytes b of file name.
func readNPZ(name string, b []byte) (*Dataset, error) {
	z, err := openNPZ(name, b, 0, nil)
	if err != nil {
		return nil, err
	}
	var inner []*zip.File
	for _, f := range z.members {
		if strings.HasSuffix(f.Name, ".npz") {
			inner = append(inner, f)
		}
	}
	if len(inner) > 1 {
		return nil, fmt.Errorf("%w: %s: archive holds %d .npz files, want one", ErrFormat, name, len(inner))
	}
	if len(inner) == 1 {
		ib, err := z.readMember(inner[0])
		if err != nil {
			return nil, err
		}
		if z, err = openNPZ(name+":"+excerpt(inner[0].Name), ib, z.size, z.budget); err != nil {
			return nil, err
		}
	}
	var d *Dataset
	switch {
	case z.has("adj_indptr") || z.has("adj_data"):
		d, err = gnnBenchmark(z)
	case z.has("src_li") && z.has("dst_li"):
		d, err = edgeNPZ(z)
	default:
		return nil, fmt.Errorf("%w: %s: neither a gnn-benchmark npz (adj_*) nor an edge npz (src_li, dst_li)", ErrFormat, z.name)
	}
	if err != nil {
		return nil, err
	}
	if err := d.checkValues(z.name); err != nil {
		return nil, err
	}
	return d, nil
}

// gnnBenchmark reads Shchur et al.'s gnn-benchmark layout: adj_* and
// attr_* CSR matrices and a labels vector. String and object members
// (node_names, attr_names, class_names) are not read.
func gnnBenchmark(z *npzFile) (*Dataset, error) {
	n, n2, ip, ix, _, err := z.csr("adj")
	if err != nil {
		return nil, err
	}
	if n != n2 {
		return nil, fmt.Errorf("%w: %s: adj_shape (%d, %d) is not square", ErrInconsistent, z.name, n, n2)
	}
	g, err := graphFromCSR(n, ip, ix)
	if err != nil {
		return nil, fmt.Errorf("%s: adj: %w", z.name, err)
	}
	d := &Dataset{Graph: g}
	switch {
	case z.has("attr_indptr"):
		rows, cols, aip, aix, av, err := z.csr("attr")
		if err != nil {
			return nil, err
		}
		if rows != n {
			return nil, fmt.Errorf("%w: %s: attr_shape has %d rows but the graph has %d nodes", ErrInconsistent, z.name, rows, n)
		}
		d.Features = sparseFeatures(rows, cols, aip, aix, av)
	case z.has("attr_matrix"):
		a, err := z.array("attr_matrix")
		if err != nil {
			return nil, err
		}
		if len(a.shape) != 2 || a.shape[0] != n || a.fortran {
			return nil, fmt.Errorf("%w: %s: attr_matrix has shape %v, want (%d, F) in C order", ErrInconsistent, z.name, a.shape, n)
		}
		d.Features = &Features{Rows: n, Cols: a.shape[1], Dense: a.float32s()}
	}
	if z.has("labels") {
		a, err := z.vector("labels")
		if err != nil {
			return nil, err
		}
		if a.len() != n {
			return nil, fmt.Errorf("%w: %s: labels has %d entries for %d nodes", ErrInconsistent, z.name, a.len(), n)
		}
		if d.Labels, err = a.int32s(-1, math.MaxInt32-1); err != nil {
			return nil, err
		}
		d.NumClasses = numClasses(d.Labels)
	}
	return d, nil
}

// numClasses is 1 + the largest label (0 when there is none).
func numClasses(labels []int32) int {
	c := int32(-1)
	for _, l := range labels {
		c = max(c, l)
	}
	return int(c) + 1
}

// edgeNPZ reads QGTC's benchmark graphs: src_li and dst_li edge lists and,
// when present, num_nodes (otherwise the node count is 1 + the largest id)
// and per-node labels.
func edgeNPZ(z *npzFile) (*Dataset, error) {
	s, err := z.vector("src_li")
	if err != nil {
		return nil, err
	}
	t, err := z.vector("dst_li")
	if err != nil {
		return nil, err
	}
	if s.len() != t.len() {
		return nil, fmt.Errorf("%w: %s: src_li has %d entries but dst_li has %d", ErrInconsistent, z.name, s.len(), t.len())
	}
	src, err := s.int32s(0, math.MaxInt32-1)
	if err != nil {
		return nil, err
	}
	dst, err := t.int32s(0, math.MaxInt32-1)
	if err != nil {
		return nil, err
	}
	n := 0
	for i := range src {
		n = max(n, int(src[i])+1, int(dst[i])+1)
	}
	if z.has("num_nodes") {
		a, err := z.array("num_nodes")
		if err != nil {
			return nil, err
		}
		v, err := a.int32s(0, math.MaxInt32-1)
		if err != nil || len(v) != 1 {
			return nil, fmt.Errorf("%w: %s: num_nodes must be one non-negative integer", ErrFormat, z.name)
		}
		if int(v[0]) < n {
			return nil, fmt.Errorf("%w: %s: num_nodes = %d but an edge names node %d", ErrInconsistent, z.name, v[0], n-1)
		}
		n = int(v[0])
	}
	if n > maxSparseID && n > 16*len(src) {
		return nil, fmt.Errorf("%w: %s: %d nodes is far beyond what %d edges need; renumber the nodes 0..N-1", ErrInconsistent, z.name, n, len(src))
	}
	g, err := FromEdges(n, src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", z.name, err)
	}
	d := &Dataset{Graph: g}
	if z.has("labels") {
		a, err := z.vector("labels")
		if err != nil {
			return nil, err
		}
		if a.len() != n {
			return nil, fmt.Errorf("%w: %s: labels has %d entries for %d nodes", ErrInconsistent, z.name, a.len(), n)
		}
		if d.Labels, err = a.int32s(-1, math.MaxInt32-1); err != nil {
			return nil, err
		}
		d.NumClasses = numClasses(d.Labels)
	}
	return d, nil
}

// datasetName is a file's base name without its extensions.
func datasetName(path string) string {
	b := filepath.Base(filepath.Clean(path))
	if i := strings.IndexByte(b, '.'); i > 0 {
		b = b[:i]
	}
	return b
}

// WriteEdgeNPZ writes g as a QGTC-style edge npz that Load reads back:
// src_li and dst_li (int64, each undirected edge once with src < dst),
// num_nodes, and labels (int64 per node) when labels is not nil.
func WriteEdgeNPZ(w io.Writer, g *Graph, labels []int32) error {
	if labels != nil && len(labels) != g.N() {
		return fmt.Errorf("%w: %d labels for %d nodes", ErrInconsistent, len(labels), g.N())
	}
	var src, dst []int64
	for v := 0; v < g.N(); v++ {
		for _, u := range g.Neighbors(v) {
			if int(u) > v || (int(u) < v && !g.HasEdge(u, int32(v))) {
				src = append(src, int64(min(v, int(u))))
				dst = append(dst, int64(max(v, int(u))))
			}
		}
	}
	zw := zip.NewWriter(w)
	put := func(name string, shape []int, vals []int64) error {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
		if err != nil {
			return err
		}
		dims := ""
		for _, d := range shape {
			dims += strconv.Itoa(d) + ","
		}
		hdr := "{'descr': '<i8', 'fortran_order': False, 'shape': (" + dims + "), }"
		hdr += strings.Repeat(" ", 63-(10+len(hdr))%64) + "\n"
		b := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)), byte(len(hdr)>>8))
		b = append(b, hdr...)
		for _, x := range vals {
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		}
		_, err = f.Write(b)
		return err
	}
	if err := put("src_li", []int{len(src)}, src); err != nil {
		return err
	}
	if err := put("dst_li", []int{len(dst)}, dst); err != nil {
		return err
	}
	if err := put("num_nodes", nil, []int64{int64(g.N())}); err != nil {
		return err
	}
	if labels != nil {
		l := make([]int64, len(labels))
		for i, x := range labels {
			l[i] = int64(x)
		}
		if err := put("labels", []int{len(l)}, l); err != nil {
			return err
		}
	}
	return zw.Close()
}
