package subgraph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A small, strict reader for NumPy's .npy format (versions 1.0-3.0).
//
// We parse the header ourselves rather than use sbinet/npyio: the loaders
// only need flat numeric arrays, they must never allocate from a size the
// file merely claims (every length here is checked against the bytes that
// are actually present before anything is allocated), and every error must
// name the member and the field at fault. The whole format is one magic
// string, a Python-literal dict and raw little/big-endian data.

// errNPYNotNumeric marks a member whose dtype is not a number (object,
// unicode or structured arrays): callers that do not need it skip it.
var errNPYNotNumeric = errors.New("not a numeric array")

// npyArray is one decoded .npy array, its data still raw.
type npyArray struct {
	name    string // file or member name, for errors
	kind    byte   // 'f', 'i', 'u' or 'b'
	size    int    // item size in bytes
	big     bool   // big-endian data
	shape   []int
	fortran bool
	data    []byte
}

// maxDims is numpy's limit on dimensions (NPY_MAXDIMS, 64 since 2.0); it
// also keeps a shape short enough to print in an error.
const maxDims = 64

// len is the number of elements.
func (a *npyArray) len() int { return len(a.data) / a.size }

// parseNPY decodes b, the bytes of one .npy file named name.
func parseNPY(name string, b []byte) (*npyArray, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: npy %s: %s", ErrFormat, name, field, fmt.Sprintf(format, args...))
	}
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" {
		return nil, bad("magic", "not a .npy array (want \\x93NUMPY)")
	}
	var hlen, off int
	switch b[6] {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, bad("header", "truncated")
		}
		h := binary.LittleEndian.Uint32(b[8:12])
		if uint64(h) > uint64(len(b)) {
			return nil, bad("header", "length %d exceeds file size %d", h, len(b))
		}
		hlen, off = int(h), 12
	default:
		return nil, bad("version", "unsupported version %d.%d", b[6], b[7])
	}
	if off+hlen > len(b) {
		return nil, bad("header", "length %d exceeds file size %d", hlen, len(b))
	}
	hdr, err := parsePyDict(string(b[off : off+hlen]))
	if err != nil {
		return nil, bad("header", "%v", err)
	}
	a := &npyArray{name: name, data: b[off+hlen:]}
	descr, ok := hdr["descr"].(string)
	if !ok {
		return nil, bad("descr", "missing or not a string")
	}
	if err := a.setDescr(descr); err != nil {
		return nil, bad("descr", "%s: %v", excerpt(descr), err)
	}
	if f, ok := hdr["fortran_order"].(bool); ok {
		a.fortran = f
	} else {
		return nil, bad("fortran_order", "missing or not a bool")
	}
	shape, ok := hdr["shape"].([]int)
	if !ok {
		return nil, bad("shape", "missing or not a tuple of integers")
	}
	if len(shape) > maxDims {
		return nil, bad("shape", "%d dimensions (numpy allows %d)", len(shape), maxDims)
	}
	count := 1
	for _, d := range shape {
		if d < 0 || (d > 0 && count > math.MaxInt32/d) {
			return nil, bad("shape", "%v too large", shape)
		}
		count *= d
	}
	a.shape = shape
	if need := count * a.size; need != len(a.data) {
		return nil, bad("data", "shape %v of %s needs %d bytes, file has %d", shape, descr, need, len(a.data))
	}
	return a, nil
}

func (a *npyArray) setDescr(d string) error {
	if len(d) < 3 {
		return errNPYNotNumeric
	}
	switch d[0] {
	case '<', '|', '=':
	case '>':
		a.big = true
	default:
		return errNPYNotNumeric
	}
	a.kind = d[1]
	n, err := strconv.Atoi(d[2:])
	if err != nil {
		return errNPYNotNumeric
	}
	a.size = n
	switch {
	case a.kind == 'f' && (n == 4 || n == 8),
		(a.kind == 'i' || a.kind == 'u') && (n == 1 || n == 2 || n == 4 || n == 8),
		a.kind == 'b' && n == 1:
		return nil
	}
	return errNPYNotNumeric
}

func (a *npyArray) order() binary.ByteOrder {
	if a.big {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// at returns element i as float64 (exact for every integer below 2^53).
func (a *npyArray) at(i int) float64 {
	p := a.data[i*a.size : (i+1)*a.size]
	o := a.order()
	switch a.kind {
	case 'f':
		if a.size == 4 {
			return float64(math.Float32frombits(o.Uint32(p)))
		}
		return math.Float64frombits(o.Uint64(p))
	case 'i':
		switch a.size {
		case 1:
			return float64(int8(p[0]))
		case 2:
			return float64(int16(o.Uint16(p)))
		case 4:
			return float64(int32(o.Uint32(p)))
		}
		return float64(int64(o.Uint64(p)))
	default: // 'u', 'b'
		switch a.size {
		case 1:
			return float64(p[0])
		case 2:
			return float64(o.Uint16(p))
		case 4:
			return float64(o.Uint32(p))
		}
		return float64(o.Uint64(p))
	}
}

// int64At returns integer element i exactly; floats must hold integers.
func (a *npyArray) int64At(i int) (int64, bool) {
	if a.kind == 'i' && a.size == 8 {
		return int64(a.order().Uint64(a.data[i*8:])), true
	}
	if a.kind == 'u' && a.size == 8 {
		u := a.order().Uint64(a.data[i*8:])
		return int64(u), u <= math.MaxInt64
	}
	f := a.at(i)
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// int32s converts the array to int32, failing on values outside
// [lo, hi] or non-integers; field names the array in errors.
func (a *npyArray) int32s(lo, hi int64) ([]int32, error) {
	out := make([]int32, a.len())
	if a.kind == 'i' && a.size == 4 && !a.big { // the common case, 10x faster
		for i := range out {
			v := int32(binary.LittleEndian.Uint32(a.data[4*i:]))
			if int64(v) < lo || int64(v) > hi {
				return nil, fmt.Errorf("%w: %s: element %d = %d outside [%d, %d]", ErrInconsistent, a.name, i, v, lo, hi)
			}
			out[i] = v
		}
		return out, nil
	}
	for i := range out {
		v, ok := a.int64At(i)
		if !ok || v < lo || v > hi {
			return nil, fmt.Errorf("%w: %s: element %d = %v outside [%d, %d]", ErrInconsistent, a.name, i, a.at(i), lo, hi)
		}
		out[i] = int32(v)
	}
	return out, nil
}

// float32s converts the array to float32.
func (a *npyArray) float32s() []float32 {
	out := make([]float32, a.len())
	if a.kind == 'f' && a.size == 4 {
		o := a.order()
		for i := range out {
			out[i] = math.Float32frombits(o.Uint32(a.data[4*i:]))
		}
		return out
	}
	for i := range out {
		out[i] = float32(a.at(i))
	}
	return out
}

// parsePyDict parses the Python literal dict of a .npy header: string
// keys; values are strings, True/False, or tuples of non-negative ints.
func parsePyDict(s string) (map[string]any, error) {
	p := &pyLit{s: s}
	p.space()
	if !p.eat('{') {
		return nil, errors.New("not a dict")
	}
	out := map[string]any{}
	for {
		p.space()
		if p.eat('}') {
			return out, nil
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if !p.eat(':') {
			return nil, fmt.Errorf("missing ':' after key %s", excerpt(k))
		}
		p.space()
		v, err := p.value()
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", excerpt(k), err)
		}
		out[k] = v
		p.space()
		if !p.eat(',') {
			p.space()
			if p.eat('}') {
				return out, nil
			}
			return nil, errors.New("missing ',' or '}'")
		}
	}
}

type pyLit struct {
	s string
	i int
}

func (p *pyLit) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyLit) eat(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyLit) str() (string, error) {
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", errors.New("expected a quoted string")
	}
	q := p.s[p.i]
	j := strings.IndexByte(p.s[p.i+1:], q)
	if j < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+j]
	p.i += j + 2
	return v, nil
}

func (p *pyLit) value() (any, error) {
	switch {
	case p.i >= len(p.s):
		return nil, errors.New("missing value")
	case p.s[p.i] == '\'' || p.s[p.i] == '"':
		return p.str()
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	case p.s[p.i] == '(':
		p.i++
		var dims []int
		for {
			p.space()
			if p.eat(')') {
				return dims, nil
			}
			j := p.i
			for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
				p.i++
			}
			for p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 longs
				p.i++
			}
			d, err := strconv.Atoi(strings.TrimRight(p.s[j:p.i], "L"))
			if err != nil {
				return nil, fmt.Errorf("bad dimension %s", excerpt(p.s[j:p.i]))
			}
			dims = append(dims, d)
			p.space()
			if !p.eat(',') {
				p.space()
				if p.eat(')') {
					return dims, nil
				}
				return nil, errors.New("bad tuple")
			}
		}
	}
	return nil, fmt.Errorf("unsupported value at %s", excerpt(p.s[p.i:min(len(p.s), p.i+10)]))
}
