package subgraph

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// A reader for the sparse matrices of MATLAB Level-5 MAT files, the format
// of the node2vec/DeepWalk multi-label graphs (Homo_sapiens.mat,
// blogcatalog.mat): a symmetric N×N `network` and an N×C `group`
// indicator, both sparse double, stored plain or zlib-compressed
// (miCOMPRESSED). Dense and non-numeric variables are skipped.

const (
	miINT8       = 1
	miUINT8      = 2
	miINT16      = 3
	miUINT16     = 4
	miINT32      = 5
	miUINT32     = 6
	miSINGLE     = 7
	miDOUBLE     = 9
	miINT64      = 12
	miUINT64     = 13
	miMATRIX     = 14
	miCOMPRESSED = 15
	mxSPARSE     = 5
)

// matSparse is one sparse variable in compressed-column form.
type matSparse struct {
	rows, cols int
	jc, ir     []int32 // column pointers (cols+1), row indices
	nz         []bool  // whether each stored value is non-zero (pr != 0)
}

type matReader struct {
	name  string
	order binary.ByteOrder
}

// readMATSparse returns every sparse variable in the MAT file b.
func readMATSparse(name string, b []byte) (map[string]*matSparse, error) {
	if len(b) < 128 {
		return nil, fmt.Errorf("%w: %s: MAT header: file has %d bytes, want at least 128", ErrFormat, name, len(b))
	}
	m := &matReader{name: name}
	switch string(b[126:128]) {
	case "IM":
		m.order = binary.LittleEndian
	case "MI":
		m.order = binary.BigEndian
	default:
		return nil, fmt.Errorf("%w: %s: MAT header: endian indicator %q, want \"IM\" or \"MI\" (is this a v7.3/HDF5 or v4 file?)", ErrFormat, name, b[126:128])
	}
	if v := m.order.Uint16(b[124:126]); v != 0x0100 {
		return nil, fmt.Errorf("%w: %s: MAT header: version 0x%04x, want 0x0100", ErrFormat, name, v)
	}
	out := map[string]*matSparse{}
	budget := inflateBudget(len(b))
	rest := b[128:]
	for len(rest) > 0 {
		typ, data, next, err := m.element(rest)
		if err != nil {
			return nil, err
		}
		rest = next
		if typ == miCOMPRESSED {
			zr, err := zlib.NewReader(bytes.NewReader(data))
			if err != nil {
				return nil, fmt.Errorf("%w: %s: miCOMPRESSED element: %v", ErrFormat, name, err)
			}
			inner, err := m.inflate(&budgetReader{r: zr, left: &budget, what: name + ": miCOMPRESSED element", size: len(b)})
			if err != nil {
				if errors.Is(err, ErrFormat) {
					return nil, err
				}
				return nil, fmt.Errorf("%w: %s: miCOMPRESSED element: %v", ErrFormat, name, err)
			}
			if typ, data, _, err = m.element(inner); err != nil {
				return nil, err
			}
		}
		if typ != miMATRIX {
			continue
		}
		v, s, err := m.matrix(data)
		if err != nil {
			return nil, err
		}
		if s != nil {
			if _, dup := out[v]; dup {
				return nil, fmt.Errorf("%w: %s: variable %s appears twice", ErrFormat, name, excerpt(v))
			}
			out[v] = s
		}
	}
	return out, nil
}

// inflate reads the one element a miCOMPRESSED element holds: its tag
// first, so that a size beyond the budget left fails before anything is
// allocated, then exactly the bytes the tag declares (no growing buffer),
// then at most 7 bytes of padding; more data than that is an error, which
// stops a stream of zeros (a tag of 0 bytes) after 16 bytes instead of at
// the budget.
func (m *matReader) inflate(r *budgetReader) ([]byte, error) {
	tag := make([]byte, 8)
	if _, err := io.ReadFull(r, tag); err != nil {
		return nil, err
	}
	n := int64(0)
	if m.order.Uint32(tag)>>16 == 0 { // a small element's data is in its tag
		n = int64(m.order.Uint32(tag[4:]))
	}
	if n > *r.left {
		return nil, fmt.Errorf("%w: %s: miCOMPRESSED element holds an element of %d bytes, more than this %d-byte file may inflate to (%dx plus %d MiB in all)",
			ErrFormat, m.name, n, r.size, inflateRatio, inflateFloor>>20)
	}
	b := make([]byte, 8+n)
	copy(b, tag)
	if _, err := io.ReadFull(r, b[8:]); err != nil {
		return nil, fmt.Errorf("its element declares %d bytes: %w", n, err)
	}
	var pad [8]byte
	k, err := io.ReadFull(r, pad[:])
	switch {
	case k == len(pad):
		return nil, fmt.Errorf("%w: %s: miCOMPRESSED element holds data past the %d-byte element it starts with", ErrFormat, m.name, 8+n)
	case err != nil && err != io.EOF && err != io.ErrUnexpectedEOF:
		return nil, err
	}
	return b, nil
}

// element splits one data element off b: its type, payload and the rest
// (after 8-byte padding).
func (m *matReader) element(b []byte) (typ uint32, data, rest []byte, err error) {
	if len(b) < 8 {
		return 0, nil, nil, fmt.Errorf("%w: %s: truncated element tag (%d bytes left)", ErrFormat, m.name, len(b))
	}
	t := m.order.Uint32(b)
	if t>>16 != 0 { // small data element: 2-byte size, 2-byte type, 4 bytes data
		n := int(t >> 16)
		if n > 4 {
			return 0, nil, nil, fmt.Errorf("%w: %s: small element of type %d claims %d bytes (max 4)", ErrFormat, m.name, t&0xffff, n)
		}
		return t & 0xffff, b[4 : 4+n], b[8:], nil
	}
	n := uint64(m.order.Uint32(b[4:]))
	if n > uint64(len(b)-8) {
		return 0, nil, nil, fmt.Errorf("%w: %s: element of type %d claims %d bytes, %d left", ErrFormat, m.name, t, n, len(b)-8)
	}
	end := 8 + int(n)
	if t != miCOMPRESSED {
		end = min(len(b), (end+7)&^7)
	}
	return t, b[8 : 8+n], b[end:], nil
}

// matrix parses a miMATRIX payload; non-sparse variables give a nil matrix.
func (m *matReader) matrix(b []byte) (string, *matSparse, error) {
	sub := func(what string) (uint32, []byte, error) {
		t, d, rest, err := m.element(b)
		if err != nil {
			return 0, nil, fmt.Errorf("matrix %s: %w", what, err)
		}
		b = rest
		return t, d, nil
	}
	_, flags, err := sub("array flags")
	if err != nil {
		return "", nil, err
	}
	if len(flags) < 8 {
		return "", nil, fmt.Errorf("%w: %s: matrix array flags has %d bytes, want 8", ErrFormat, m.name, len(flags))
	}
	class := m.order.Uint32(flags) & 0xff
	complexFlag := m.order.Uint32(flags)&0x0800 != 0
	dt, dims, err := sub("dimensions")
	if err != nil {
		return "", nil, err
	}
	dv, err := m.ints(dt, dims, "dimensions")
	if err != nil {
		return "", nil, err
	}
	_, nameB, err := sub("name")
	if err != nil {
		return "", nil, err
	}
	v := string(nameB)
	if class != mxSPARSE {
		return v, nil, nil
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: variable %s: %s: %s", ErrInconsistent, m.name, excerpt(v), field, fmt.Sprintf(format, args...))
	}
	if len(dv) != 2 || dv[0] < 0 || dv[1] < 0 {
		return "", nil, bad("dimensions", "%v, want two non-negative sizes", dv)
	}
	if complexFlag {
		return "", nil, bad("array flags", "complex sparse matrices are not supported")
	}
	it, ird, err := sub("ir")
	if err != nil {
		return "", nil, err
	}
	jt, jcd, err := sub("jc")
	if err != nil {
		return "", nil, err
	}
	pt, prd, err := sub("pr")
	if err != nil {
		return "", nil, err
	}
	ir, err := m.ints(it, ird, v+" ir")
	if err != nil {
		return "", nil, err
	}
	jc, err := m.ints(jt, jcd, v+" jc")
	if err != nil {
		return "", nil, err
	}
	pr, err := m.nonZero(pt, prd, v+" pr")
	if err != nil {
		return "", nil, err
	}
	rows, cols := int(dv[0]), int(dv[1])
	if len(jc) != cols+1 || jc[0] != 0 {
		return "", nil, bad("jc", "%d column pointers starting at %v, want %d starting at 0", len(jc), jc[:min(1, len(jc))], cols+1)
	}
	nnz := int(jc[cols])
	if nnz > len(ir) || nnz > len(pr) {
		return "", nil, bad("jc", "last pointer %d exceeds %d row indices / %d values", nnz, len(ir), len(pr))
	}
	for c := 0; c < cols; c++ {
		if jc[c+1] < jc[c] {
			return "", nil, bad("jc", "decreases at column %d", c)
		}
	}
	for i, r := range ir[:nnz] {
		if r < 0 || int(r) >= rows {
			return "", nil, bad("ir", "entry %d = %d outside [0, %d)", i, r, rows)
		}
	}
	return v, &matSparse{rows: rows, cols: cols, jc: jc, ir: ir[:nnz], nz: pr[:nnz]}, nil
}

// ints decodes a numeric payload to int32 without a float64 copy (a
// payload of int8 would otherwise take 8x its bytes).
func (m *matReader) ints(t uint32, d []byte, what string) ([]int32, error) {
	size, err := m.itemSize(t, d, what)
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(d)/size)
	for i := range out {
		x := m.at(t, d[i*size:])
		if x != math.Trunc(x) || x < math.MinInt32 || x > math.MaxInt32 {
			return nil, fmt.Errorf("%w: %s: %s: entry %d = %v is not an int32", ErrFormat, m.name, what, i, x)
		}
		out[i] = int32(x)
	}
	return out, nil
}

// itemSize is the byte size of MAT type t, checking that d holds whole items.
func (m *matReader) itemSize(t uint32, d []byte, what string) (int, error) {
	size := map[uint32]int{miINT8: 1, miUINT8: 1, miINT16: 2, miUINT16: 2, miINT32: 4, miUINT32: 4,
		miSINGLE: 4, miDOUBLE: 8, miINT64: 8, miUINT64: 8}[t]
	if size == 0 {
		return 0, fmt.Errorf("%w: %s: %s: data type %d is not numeric", ErrFormat, m.name, what, t)
	}
	if len(d)%size != 0 {
		return 0, fmt.Errorf("%w: %s: %s: %d bytes is not a whole number of %d-byte values", ErrFormat, m.name, what, len(d), size)
	}
	return size, nil
}

// nonZero decodes a numeric payload to whether each value is non-zero:
// all the loaders need of a sparse matrix's values, in one byte each.
func (m *matReader) nonZero(t uint32, d []byte, what string) ([]bool, error) {
	size, err := m.itemSize(t, d, what)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(d)/size)
	for i := range out {
		out[i] = m.at(t, d[i*size:]) != 0
	}
	return out, nil
}

// at decodes the value of type t at the start of p.
func (m *matReader) at(t uint32, p []byte) float64 {
	o := m.order
	switch t {
	case miINT8:
		return float64(int8(p[0]))
	case miUINT8:
		return float64(p[0])
	case miINT16:
		return float64(int16(o.Uint16(p)))
	case miUINT16:
		return float64(o.Uint16(p))
	case miINT32:
		return float64(int32(o.Uint32(p)))
	case miUINT32:
		return float64(o.Uint32(p))
	case miSINGLE:
		return float64(math.Float32frombits(o.Uint32(p)))
	case miDOUBLE:
		return math.Float64frombits(o.Uint64(p))
	case miINT64:
		return float64(int64(o.Uint64(p)))
	}
	return float64(o.Uint64(p)) // miUINT64
}

// readMAT loads a node2vec/DeepWalk style MAT file: `network` (N×N) and,
// when present, `group` (N×C multi-label indicator).
func readMAT(name string, b []byte) (*Dataset, error) {
	vars, err := readMATSparse(name, b)
	if err != nil {
		return nil, err
	}
	nw := vars["network"]
	if nw == nil {
		return nil, fmt.Errorf("%w: %s: no sparse variable \"network\"", ErrFormat, name)
	}
	if nw.rows != nw.cols {
		return nil, fmt.Errorf("%w: %s: network is %d×%d, not square", ErrInconsistent, name, nw.rows, nw.cols)
	}
	n := nw.rows
	src := make([]int32, 0, len(nw.ir))
	dst := make([]int32, 0, len(nw.ir))
	for c := 0; c < n; c++ {
		for i := nw.jc[c]; i < nw.jc[c+1]; i++ {
			if nw.nz[i] {
				src = append(src, nw.ir[i])
				dst = append(dst, int32(c))
			}
		}
	}
	g, err := FromEdges(n, src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	if err != nil {
		return nil, fmt.Errorf("%s: network: %w", name, err)
	}
	d := &Dataset{Graph: g}
	if gr := vars["group"]; gr != nil {
		if gr.rows != n {
			return nil, fmt.Errorf("%w: %s: group has %d rows for %d nodes", ErrInconsistent, name, gr.rows, n)
		}
		d.Multi = cscToBinaryCSR(gr)
		d.NumClasses = gr.cols
	}
	if err := d.checkValues(name); err != nil {
		return nil, err
	}
	return d, nil
}

// cscToBinaryCSR transposes the non-zero pattern of s into row-major CSR.
func cscToBinaryCSR(s *matSparse) *Features {
	ip := make([]int32, s.rows+1)
	for i, r := range s.ir {
		if s.nz[i] {
			ip[r+1]++
		}
	}
	for r := 0; r < s.rows; r++ {
		ip[r+1] += ip[r]
	}
	fill := append([]int32(nil), ip[:s.rows]...)
	ix := make([]int32, ip[s.rows])
	for c := 0; c < s.cols; c++ { // columns in order keep rows sorted
		for i := s.jc[c]; i < s.jc[c+1]; i++ {
			if s.nz[i] {
				r := s.ir[i]
				ix[fill[r]] = int32(c)
				fill[r]++
			}
		}
	}
	// Columns visited in order leave each row sorted; a malformed column
	// that lists a row twice leaves a repeat, which we drop.
	out := make([]int32, s.rows+1)
	w := 0
	for r := 0; r < s.rows; r++ {
		row := slices.Compact(ix[ip[r]:ip[r+1]])
		copy(ix[w:], row)
		w += len(row)
		out[r+1] = int32(w)
	}
	return &Features{Rows: s.rows, Cols: s.cols, Indptr: out, Indices: ix[:w]}
}
