package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// ErrFormat: a malformed safetensors file, or one that does not match the
// model it is loaded into (the model packages wrap it for the latter).
var ErrFormat = errors.New("safetensors: bad file")

// maxHeader bounds the JSON header (the reference implementation's limit).
const maxHeader = 100 << 20

// Tensor is one tensor of a safetensors file: its dtype ("F32", "F64",
// "F16", "BF16", "I64", "I32", ...), shape and raw little-endian bytes.
type Tensor struct {
	DType string
	Shape []int
	Data  []byte
}

var dtypeSize = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// Float32s converts a floating-point tensor to float32 values.
func (t *Tensor) Float32s() ([]float32, error) {
	size, ok := dtypeSize[t.DType]
	if !ok {
		return nil, fmt.Errorf("%w: unknown dtype %q", ErrFormat, t.DType)
	}
	n := len(t.Data) / size
	out := make([]float32, n)
	le := binary.LittleEndian
	switch t.DType {
	case "F32":
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(t.Data[4*i:]))
		}
	case "F64":
		for i := range out {
			out[i] = float32(math.Float64frombits(le.Uint64(t.Data[8*i:])))
		}
	case "BF16":
		for i := range out {
			out[i] = math.Float32frombits(uint32(le.Uint16(t.Data[2*i:])) << 16)
		}
	case "F16":
		for i := range out {
			out[i] = half(le.Uint16(t.Data[2*i:]))
		}
	default:
		return nil, fmt.Errorf("%w: dtype %s is not a floating-point type", ErrFormat, t.DType)
	}
	return out, nil
}

// half converts an IEEE binary16 value to float32.
func half(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := int(h>>10) & 0x1f
	frac := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0:
		v := float32(frac) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	}
	return math.Float32frombits(sign | uint32(exp-15+127)<<23 | frac<<13)
}

type headerEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// Read parses a safetensors file: an 8-byte little-endian header
// length, a JSON header mapping names to {dtype, shape, data_offsets} with
// an optional "__metadata__" string map, then the tensor bytes. Every
// malformation (bad lengths, JSON, dtypes, shapes that disagree with the
// byte ranges, ranges outside the data, overlapping or with gaps) is an
// error wrapping ErrFormat that names the tensor at fault.
func Read(r io.Reader) (map[string]*Tensor, map[string]string, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, nil, fmt.Errorf("%w: reading the header length: %v", ErrFormat, err)
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	if hlen > maxHeader {
		return nil, nil, fmt.Errorf("%w: header length %d exceeds %d", ErrFormat, hlen, maxHeader)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, nil, fmt.Errorf("%w: header of %d bytes: %v", ErrFormat, hlen, err)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, fmt.Errorf("%w: header JSON: %v", ErrFormat, err)
	}
	if raw == nil {
		return nil, nil, fmt.Errorf("%w: header is not a JSON object", ErrFormat)
	}
	var meta map[string]string
	type span struct {
		name       string
		begin, end int64
	}
	entries := map[string]headerEntry{}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, nil, fmt.Errorf("%w: __metadata__ must map strings to strings: %v", ErrFormat, err)
			}
			continue
		}
		var e headerEntry
		d := json.NewDecoder(bytes.NewReader(msg))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		size, ok := dtypeSize[e.DType]
		if !ok {
			return nil, nil, fmt.Errorf("%w: tensor %q has unknown dtype %q", ErrFormat, name, e.DType)
		}
		if e.Shape == nil {
			return nil, nil, fmt.Errorf("%w: tensor %q has no shape", ErrFormat, name)
		}
		count := int64(1)
		for _, s := range e.Shape {
			if s < 0 || (s > 0 && count > math.MaxInt32/s) {
				return nil, nil, fmt.Errorf("%w: tensor %q has shape %v", ErrFormat, name, e.Shape)
			}
			count *= s
		}
		b, en := e.DataOffsets[0], e.DataOffsets[1]
		if b < 0 || en < b || en-b != count*int64(size) {
			return nil, nil, fmt.Errorf("%w: tensor %q: data_offsets %v do not hold %d %s values", ErrFormat, name, e.DataOffsets, count, e.DType)
		}
		entries[name] = e
		spans = append(spans, span{name, b, en})
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	var end int64
	for _, s := range spans {
		if s.begin != end {
			return nil, nil, fmt.Errorf("%w: tensor %q starts at byte %d, want %d (overlap or gap)", ErrFormat, s.name, s.begin, end)
		}
		end = s.end
	}
	// Grown as bytes arrive: a header claiming gigabytes over a short file
	// fails after reading what is there, not after allocating the claim.
	var buf bytes.Buffer
	if n, err := io.CopyN(&buf, r, end); err != nil {
		return nil, nil, fmt.Errorf("%w: data section of %d bytes ends after %d: %v", ErrFormat, end, n, err)
	}
	data := buf.Bytes()
	if n, _ := r.Read(make([]byte, 1)); n > 0 {
		return nil, nil, fmt.Errorf("%w: bytes after the %d-byte data section", ErrFormat, end)
	}
	out := make(map[string]*Tensor, len(entries))
	for name, e := range entries {
		shape := make([]int, len(e.Shape))
		for i, s := range e.Shape {
			shape[i] = int(s)
		}
		out[name] = &Tensor{DType: e.DType, Shape: shape, Data: data[e.DataOffsets[0]:e.DataOffsets[1]]}
	}
	return out, meta, nil
}

// Write writes tensors in name order with the metadata.
func Write(w io.Writer, tensors map[string]*Tensor, meta map[string]string) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	hdr := map[string]any{}
	if len(meta) > 0 {
		hdr["__metadata__"] = meta
	}
	var off int64
	for _, n := range names {
		t := tensors[n]
		size, ok := dtypeSize[t.DType]
		if !ok {
			return fmt.Errorf("%w: tensor %q has unknown dtype %q", ErrFormat, n, t.DType)
		}
		count := 1
		for _, s := range t.Shape {
			count *= s
		}
		if count*size != len(t.Data) {
			return fmt.Errorf("%w: tensor %q has %d bytes for shape %v of %s", ErrFormat, n, len(t.Data), t.Shape, t.DType)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		hdr[n] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": [2]int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(js)%8 != 0 { // align the data section, as the reference writer does
		js = append(js, ' ')
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(js); err != nil {
		return err
	}
	for _, n := range names {
		if _, err := w.Write(tensors[n].Data); err != nil {
			return err
		}
	}
	return nil
}

// F32 returns v as an F32 tensor of the given shape (len(v) values when
// shape is nil).
func F32(v []float32, shape ...int) *Tensor {
	if shape == nil {
		shape = []int{len(v)}
	}
	return &Tensor{DType: "F32", Shape: shape, Data: f32Bytes(v)}
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
