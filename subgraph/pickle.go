package subgraph

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// A minimal Python pickle reader for the Planetoid files: protocols 0-2
// (what Python 2's cPickle wrote for numpy/scipy objects) and the
// protocol 3-4 opcodes a Python 3 re-pickling adds. Out-of-band buffers
// (protocol 5) are not supported.
//
// github.com/nlpodyssey/gopickle was the obvious choice, but it allocates
// buffers of whatever length a file declares before reading them, so a
// 20-byte corrupt file can ask for gigabytes; the loaders promise a clear
// error for any input. This reader works on the file's bytes in memory and
// checks every length against what is left, never calls into Go code
// chosen by the file (globals are inert records), and caps nesting.

type pyGlobal struct{ module, name string }

type pyTuple []any

type pyList struct{ items []any }

// pyDict keeps insertion order; keys are compared as Go values (ints and
// strings in the files we read).
type pyDict struct {
	keys []any
	vals []any
}

func (d *pyDict) set(k, v any) { d.keys = append(d.keys, k); d.vals = append(d.vals, v) }

func (d *pyDict) get(k string) (any, bool) {
	for i := len(d.keys) - 1; i >= 0; i-- {
		if s, ok := d.keys[i].(string); ok && s == k {
			return d.vals[i], true
		}
	}
	return nil, false
}

// pyObject is the result of calling or instantiating a global: the class,
// the arguments, the BUILD state and any items set on it (defaultdict).
type pyObject struct {
	class pyGlobal
	args  pyTuple
	state any
	items *pyDict
}

// unpickle decodes one pickle from b; name is used in errors.
func unpickle(name string, b []byte) (any, error) {
	u := &unpickler{b: b, memo: map[int64]any{}}
	v, err := u.run()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: pickle at byte %d: %v", ErrFormat, name, u.pos, err)
	}
	return v, nil
}

type unpickler struct {
	b     []byte
	pos   int
	stack []any
	marks []int
	memo  map[int64]any
}

func (u *unpickler) take(n int) ([]byte, error) {
	if n < 0 || n > len(u.b)-u.pos {
		return nil, fmt.Errorf("length %d runs past the end (%d bytes left)", n, len(u.b)-u.pos)
	}
	p := u.b[u.pos : u.pos+n]
	u.pos += n
	return p, nil
}

func (u *unpickler) line() (string, error) {
	i := bytes.IndexByte(u.b[u.pos:], '\n')
	if i < 0 {
		return "", errors.New("unterminated line")
	}
	s := string(u.b[u.pos : u.pos+i])
	u.pos += i + 1
	return s, nil
}

func (u *unpickler) push(v any) { u.stack = append(u.stack, v) }

func (u *unpickler) pop() (any, error) {
	lo := 0
	if len(u.marks) > 0 {
		lo = u.marks[len(u.marks)-1]
	}
	if len(u.stack) <= lo {
		return nil, errors.New("stack underflow")
	}
	v := u.stack[len(u.stack)-1]
	u.stack = u.stack[:len(u.stack)-1]
	return v, nil
}

// memoIndex reads the memo index of a PUT or GET opcode: one byte for the
// BIN forms ('q', 'h'), four little-endian bytes for the LONG_BIN forms
// ('r', 'j'), a decimal line for the text forms ('p', 'g').
func (u *unpickler) memoIndex(op byte, name string) (int64, error) {
	switch op {
	case 'q', 'h':
		p, err := u.take(1)
		if err != nil {
			return 0, err
		}
		return int64(p[0]), nil
	case 'r', 'j':
		p, err := u.take(4)
		if err != nil {
			return 0, err
		}
		return int64(binary.LittleEndian.Uint32(p)), nil
	}
	s, err := u.line()
	if err != nil {
		return 0, err
	}
	k, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad %s index %s", name, excerpt(s))
	}
	return k, nil
}

func (u *unpickler) top() (any, error) {
	v, err := u.pop()
	if err == nil {
		u.push(v)
	}
	return v, err
}

// popMark pops everything above the last MARK.
func (u *unpickler) popMark() ([]any, error) {
	if len(u.marks) == 0 {
		return nil, errors.New("no MARK on the stack")
	}
	m := u.marks[len(u.marks)-1]
	u.marks = u.marks[:len(u.marks)-1]
	items := append([]any(nil), u.stack[m:]...)
	u.stack = u.stack[:m]
	return items, nil
}

func (u *unpickler) popN(n int) ([]any, error) {
	out := make([]any, n)
	for i := n - 1; i >= 0; i-- {
		v, err := u.pop()
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

const maxMarks = 1 << 16

func (u *unpickler) run() (any, error) {
	for {
		if u.pos >= len(u.b) {
			return nil, errors.New("truncated: no STOP opcode")
		}
		op := u.b[u.pos]
		u.pos++
		switch op {
		case '\x80': // PROTO
			p, err := u.take(1)
			if err != nil {
				return nil, err
			}
			if p[0] > 5 {
				return nil, fmt.Errorf("protocol %d not supported (want 0-5)", p[0])
			}
		case '\x95': // FRAME: the framed bytes follow inline
			if _, err := u.take(8); err != nil {
				return nil, err
			}
		case '\x8c': // SHORT_BINUNICODE
			p, err := u.take(1)
			if err != nil {
				return nil, err
			}
			q, err := u.take(int(p[0]))
			if err != nil {
				return nil, err
			}
			u.push(string(q))
		case '\x8d', '\x8e': // BINUNICODE8, BINBYTES8
			p, err := u.take(8)
			if err != nil {
				return nil, err
			}
			n := binary.LittleEndian.Uint64(p)
			if n > uint64(len(u.b)) {
				return nil, fmt.Errorf("length %d runs past the end", n)
			}
			q, err := u.take(int(n))
			if err != nil {
				return nil, err
			}
			u.push(string(q))
		case '\x8b': // LONG4
			p, err := u.take(4)
			if err != nil {
				return nil, err
			}
			q, err := u.take(int(int32(binary.LittleEndian.Uint32(p))))
			if err != nil {
				return nil, err
			}
			v, err := decodeLong(q)
			if err != nil {
				return nil, err
			}
			u.push(v)
		case '\x8f': // EMPTY_SET (kept as a list)
			u.push(&pyList{})
		case '\x90': // ADDITEMS
			items, err := u.popMark()
			if err != nil {
				return nil, err
			}
			t, err := u.top()
			if err != nil {
				return nil, err
			}
			l, ok := t.(*pyList)
			if !ok {
				return nil, fmt.Errorf("ADDITEMS to a %T, want a set", t)
			}
			l.items = append(l.items, items...)
		case '\x91': // FROZENSET
			items, err := u.popMark()
			if err != nil {
				return nil, err
			}
			u.push(&pyList{items: items})
		case '\x93': // STACK_GLOBAL
			items, err := u.popN(2)
			if err != nil {
				return nil, err
			}
			m, ok1 := items[0].(string)
			n, ok2 := items[1].(string)
			if !ok1 || !ok2 {
				return nil, errors.New("STACK_GLOBAL wants two strings")
			}
			u.push(pyGlobal{m, n})
		case '\x94': // MEMOIZE
			v, err := u.top()
			if err != nil {
				return nil, err
			}
			u.memo[int64(len(u.memo))] = v
		case '\x92': // NEWOBJ_EX: cls, args, kwargs
			items, err := u.popN(3)
			if err != nil {
				return nil, err
			}
			cls, ok := items[0].(pyGlobal)
			args, ok2 := items[1].(pyTuple)
			if !ok || !ok2 {
				return nil, errors.New("NEWOBJ_EX wants a global and a tuple")
			}
			u.push(&pyObject{class: cls, args: args})
		case '.': // STOP
			v, err := u.pop()
			if err != nil {
				return nil, err
			}
			return v, nil
		case '(': // MARK
			if len(u.marks) >= maxMarks {
				return nil, errors.New("MARKs nested too deeply")
			}
			u.marks = append(u.marks, len(u.stack))
		case 'N':
			u.push(nil)
		case '\x88':
			u.push(true)
		case '\x89':
			u.push(false)
		case 'J': // BININT
			p, err := u.take(4)
			if err != nil {
				return nil, err
			}
			u.push(int64(int32(binary.LittleEndian.Uint32(p))))
		case 'K': // BININT1
			p, err := u.take(1)
			if err != nil {
				return nil, err
			}
			u.push(int64(p[0]))
		case 'M': // BININT2
			p, err := u.take(2)
			if err != nil {
				return nil, err
			}
			u.push(int64(binary.LittleEndian.Uint16(p)))
		case '\x8a': // LONG1
			p, err := u.take(1)
			if err != nil {
				return nil, err
			}
			q, err := u.take(int(p[0]))
			if err != nil {
				return nil, err
			}
			v, err := decodeLong(q)
			if err != nil {
				return nil, err
			}
			u.push(v)
		case 'I', 'L': // INT, LONG (text)
			s, err := u.line()
			if err != nil {
				return nil, err
			}
			switch s = strings.TrimSuffix(s, "L"); s {
			case "01":
				u.push(true)
			case "00":
				u.push(false)
			default:
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("bad integer %s", excerpt(s))
				}
				u.push(v)
			}
		case 'G': // BINFLOAT
			p, err := u.take(8)
			if err != nil {
				return nil, err
			}
			u.push(math.Float64frombits(binary.BigEndian.Uint64(p)))
		case 'F': // FLOAT (text)
			s, err := u.line()
			if err != nil {
				return nil, err
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return nil, fmt.Errorf("bad float %s", excerpt(s))
			}
			u.push(v)
		case 'U', 'C': // SHORT_BINSTRING, SHORT_BINBYTES
			p, err := u.take(1)
			if err != nil {
				return nil, err
			}
			q, err := u.take(int(p[0]))
			if err != nil {
				return nil, err
			}
			u.push(string(q))
		case 'T', 'X', 'B': // BINSTRING, BINUNICODE, BINBYTES
			p, err := u.take(4)
			if err != nil {
				return nil, err
			}
			q, err := u.take(int(int32(binary.LittleEndian.Uint32(p))))
			if err != nil {
				return nil, err
			}
			u.push(string(q))
		case 'S': // STRING (text, quoted)
			s, err := u.line()
			if err != nil {
				return nil, err
			}
			v, err := strconv.Unquote(s)
			if err != nil && len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' {
				v, err = strconv.Unquote(`"` + strings.ReplaceAll(s[1:len(s)-1], `"`, `\"`) + `"`)
			}
			if err != nil {
				return nil, fmt.Errorf("bad STRING %s", excerpt(s))
			}
			u.push(v)
		case 'V': // UNICODE (text, raw-unicode-escape: taken as is)
			s, err := u.line()
			if err != nil {
				return nil, err
			}
			u.push(s)
		case ')':
			u.push(pyTuple{})
		case ']':
			u.push(&pyList{})
		case '}':
			u.push(&pyDict{})
		case '\x85', '\x86', '\x87': // TUPLE1..3
			items, err := u.popN(int(op-'\x85') + 1)
			if err != nil {
				return nil, err
			}
			u.push(pyTuple(items))
		case 't': // TUPLE
			items, err := u.popMark()
			if err != nil {
				return nil, err
			}
			u.push(pyTuple(items))
		case 'l': // LIST
			items, err := u.popMark()
			if err != nil {
				return nil, err
			}
			u.push(&pyList{items: items})
		case 'd': // DICT
			items, err := u.popMark()
			if err != nil {
				return nil, err
			}
			d := &pyDict{}
			if err := setItems(d, items); err != nil {
				return nil, err
			}
			u.push(d)
		case 'a', 'e': // APPEND, APPENDS
			var items []any
			var err error
			if op == 'a' {
				items, err = u.popN(1)
			} else {
				items, err = u.popMark()
			}
			if err != nil {
				return nil, err
			}
			t, err := u.top()
			if err != nil {
				return nil, err
			}
			l, ok := t.(*pyList)
			if !ok {
				return nil, fmt.Errorf("APPEND to a %T, want a list", t)
			}
			l.items = append(l.items, items...)
		case 's', 'u': // SETITEM, SETITEMS
			var items []any
			var err error
			if op == 's' {
				items, err = u.popN(2)
			} else {
				items, err = u.popMark()
			}
			if err != nil {
				return nil, err
			}
			t, err := u.top()
			if err != nil {
				return nil, err
			}
			var d *pyDict
			switch t := t.(type) {
			case *pyDict:
				d = t
			case *pyObject: // defaultdict and other dict subclasses
				if t.items == nil {
					t.items = &pyDict{}
				}
				d = t.items
			default:
				return nil, fmt.Errorf("SETITEM on a %T, want a dict", t)
			}
			if err := setItems(d, items); err != nil {
				return nil, err
			}
		case 'c': // GLOBAL
			m, err := u.line()
			if err != nil {
				return nil, err
			}
			n, err := u.line()
			if err != nil {
				return nil, err
			}
			u.push(pyGlobal{m, n})
		case 'R', '\x81': // REDUCE, NEWOBJ
			items, err := u.popN(2)
			if err != nil {
				return nil, err
			}
			cls, ok := items[0].(pyGlobal)
			if !ok {
				return nil, fmt.Errorf("call of a %T, want a global", items[0])
			}
			args, ok := items[1].(pyTuple)
			if !ok {
				return nil, fmt.Errorf("call arguments are a %T, want a tuple", items[1])
			}
			u.push(&pyObject{class: cls, args: args})
		case 'b': // BUILD
			st, err := u.pop()
			if err != nil {
				return nil, err
			}
			t, err := u.top()
			if err != nil {
				return nil, err
			}
			o, ok := t.(*pyObject)
			if !ok {
				return nil, fmt.Errorf("BUILD on a %T, want an object", t)
			}
			o.state = st
		case 'q', 'r', 'p': // BINPUT, LONG_BINPUT, PUT
			k, err := u.memoIndex(op, "PUT")
			if err != nil {
				return nil, err
			}
			v, err := u.top()
			if err != nil {
				return nil, err
			}
			u.memo[k] = v
		case 'h', 'j', 'g': // BINGET, LONG_BINGET, GET
			k, err := u.memoIndex(op, "GET")
			if err != nil {
				return nil, err
			}
			v, ok := u.memo[k]
			if !ok {
				return nil, fmt.Errorf("memo %d not set", k)
			}
			u.push(v)
		case '0': // POP
			if len(u.marks) > 0 && u.marks[len(u.marks)-1] == len(u.stack) {
				u.marks = u.marks[:len(u.marks)-1]
			} else if _, err := u.pop(); err != nil {
				return nil, err
			}
		case '1': // POP_MARK
			if _, err := u.popMark(); err != nil {
				return nil, err
			}
		case '2': // DUP
			v, err := u.top()
			if err != nil {
				return nil, err
			}
			u.push(v)
		default:
			return nil, fmt.Errorf("unsupported opcode 0x%02x", op)
		}
	}
}

func setItems(d *pyDict, items []any) error {
	if len(items)%2 != 0 {
		return errors.New("odd number of items for a dict")
	}
	for i := 0; i < len(items); i += 2 {
		d.set(items[i], items[i+1])
	}
	return nil
}

// decodeLong decodes a little-endian two's-complement LONG1 payload.
func decodeLong(p []byte) (int64, error) {
	if len(p) == 0 {
		return 0, nil
	}
	be := make([]byte, len(p))
	for i := range p {
		be[len(p)-1-i] = p[i]
	}
	v := new(big.Int).SetBytes(be)
	if p[len(p)-1]&0x80 != 0 {
		v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(p))))
	}
	if !v.IsInt64() {
		return 0, errors.New("LONG1 value does not fit in 64 bits")
	}
	return v.Int64(), nil
}
