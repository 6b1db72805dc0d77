package layers

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
)

// ErrSafetensors: a malformed safetensors file, or one that does not match
// the model it is loaded into.
var ErrSafetensors = errors.New("layers: bad safetensors file")

// maxHeader bounds the JSON header (the reference implementation's limit).
const maxHeader = 100 << 20

// STensor is one tensor of a safetensors file: its dtype ("F32", "F64",
// "F16", "BF16", "I64", "I32", ...), shape and raw little-endian bytes.
type STensor struct {
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
func (t *STensor) Float32s() ([]float32, error) {
	size, ok := dtypeSize[t.DType]
	if !ok {
		return nil, fmt.Errorf("%w: unknown dtype %q", ErrSafetensors, t.DType)
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
		return nil, fmt.Errorf("%w: dtype %s is not a floating-point type", ErrSafetensors, t.DType)
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

type stHeaderEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// ReadSafetensors parses a safetensors file: an 8-byte little-endian header
// length, a JSON header mapping names to {dtype, shape, data_offsets} with
// an optional "__metadata__" string map, then the tensor bytes. Every
// malformation (bad lengths, JSON, dtypes, shapes that disagree with the
// byte ranges, ranges outside the data, overlapping or with gaps) is an
// error wrapping ErrSafetensors that names the tensor at fault.
func ReadSafetensors(r io.Reader) (map[string]*STensor, map[string]string, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, nil, fmt.Errorf("%w: reading the header length: %v", ErrSafetensors, err)
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	if hlen > maxHeader {
		return nil, nil, fmt.Errorf("%w: header length %d exceeds %d", ErrSafetensors, hlen, maxHeader)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, nil, fmt.Errorf("%w: header of %d bytes: %v", ErrSafetensors, hlen, err)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if err := dec.Decode(&raw); err != nil {
		return nil, nil, fmt.Errorf("%w: header JSON: %v", ErrSafetensors, err)
	}
	if raw == nil {
		return nil, nil, fmt.Errorf("%w: header is not a JSON object", ErrSafetensors)
	}
	var meta map[string]string
	type span struct {
		name       string
		begin, end int64
	}
	entries := map[string]stHeaderEntry{}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, nil, fmt.Errorf("%w: __metadata__ must map strings to strings: %v", ErrSafetensors, err)
			}
			continue
		}
		var e stHeaderEntry
		d := json.NewDecoder(bytes.NewReader(msg))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil {
			return nil, nil, fmt.Errorf("%w: tensor %q: %v", ErrSafetensors, name, err)
		}
		size, ok := dtypeSize[e.DType]
		if !ok {
			return nil, nil, fmt.Errorf("%w: tensor %q has unknown dtype %q", ErrSafetensors, name, e.DType)
		}
		if e.Shape == nil {
			return nil, nil, fmt.Errorf("%w: tensor %q has no shape", ErrSafetensors, name)
		}
		count := int64(1)
		for _, s := range e.Shape {
			if s < 0 || (s > 0 && count > math.MaxInt32/s) {
				return nil, nil, fmt.Errorf("%w: tensor %q has shape %v", ErrSafetensors, name, e.Shape)
			}
			count *= s
		}
		b, en := e.DataOffsets[0], e.DataOffsets[1]
		if b < 0 || en < b || en-b != count*int64(size) {
			return nil, nil, fmt.Errorf("%w: tensor %q: data_offsets %v do not hold %d %s values", ErrSafetensors, name, e.DataOffsets, count, e.DType)
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
			return nil, nil, fmt.Errorf("%w: tensor %q starts at byte %d, want %d (overlap or gap)", ErrSafetensors, s.name, s.begin, end)
		}
		end = s.end
	}
	data := make([]byte, end)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, nil, fmt.Errorf("%w: data section of %d bytes: %v", ErrSafetensors, end, err)
	}
	if n, _ := r.Read(make([]byte, 1)); n > 0 {
		return nil, nil, fmt.Errorf("%w: bytes after the %d-byte data section", ErrSafetensors, end)
	}
	out := make(map[string]*STensor, len(entries))
	for name, e := range entries {
		shape := make([]int, len(e.Shape))
		for i, s := range e.Shape {
			shape[i] = int(s)
		}
		out[name] = &STensor{DType: e.DType, Shape: shape, Data: data[e.DataOffsets[0]:e.DataOffsets[1]]}
	}
	return out, meta, nil
}

// WriteSafetensors writes tensors in name order with the metadata.
func WriteSafetensors(w io.Writer, tensors map[string]*STensor, meta map[string]string) error {
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
			return fmt.Errorf("%w: tensor %q has unknown dtype %q", ErrSafetensors, n, t.DType)
		}
		count := 1
		for _, s := range t.Shape {
			count *= s
		}
		if count*size != len(t.Data) {
			return fmt.Errorf("%w: tensor %q has %d bytes for shape %v of %s", ErrSafetensors, n, len(t.Data), t.Shape, t.DType)
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

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Save writes m's state dict (PyG names, float32, batch-norm buffers and
// num_batches_tracked included) with its Config in the metadata, so Load
// can rebuild it and PyTorch can load_state_dict it.
func Save(w io.Writer, m Model) error {
	c := m.Config()
	meta := map[string]string{
		"format": "pt", "qgtc.model": c.Model,
		"qgtc.in": strconv.Itoa(c.In), "qgtc.hidden": strconv.Itoa(c.Hidden),
		"qgtc.out": strconv.Itoa(c.Out), "qgtc.layers": strconv.Itoa(c.Layers),
		"qgtc.dropout": ftoa(c.Dropout),
	}
	switch c.Model {
	case "sage":
		meta["qgtc.aggr"] = c.Aggr
	case "gin":
		meta["qgtc.norm"] = c.Norm
	case "gat":
		meta["qgtc.heads"] = strconv.Itoa(c.Heads)
		meta["qgtc.out_heads"] = strconv.Itoa(c.OutHeads)
		meta["qgtc.attn_dropout"] = ftoa(c.AttnDropout)
		meta["qgtc.slope"] = ftoa(c.Slope)
	}
	ts := map[string]*STensor{}
	for _, p := range m.Params() {
		ts[p.Name] = &STensor{DType: "F32", Shape: p.Shape, Data: f32Bytes(p.Data)}
	}
	if g, ok := m.(*GIN); ok {
		for i := range g.layers {
			if g.layers[i].bn == nil {
				continue
			}
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(g.layers[i].bn.tracked))
			ts[fmt.Sprintf("convs.%d.nn.norms.0.module.num_batches_tracked", i)] = &STensor{DType: "I64", Shape: []int{}, Data: b[:]}
		}
	}
	return WriteSafetensors(w, ts, meta)
}

func ftoa(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }

// Load reads a model written by Save (its Config comes from the metadata).
func Load(r io.Reader) (Model, error) {
	ts, meta, err := ReadSafetensors(r)
	if err != nil {
		return nil, err
	}
	c, err := configFromMeta(meta)
	if err != nil {
		return nil, err
	}
	m, err := New(c, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: metadata describes a bad model: %v", ErrSafetensors, err)
	}
	return m, setParams(m, ts)
}

// LoadParams loads a state dict (e.g. one exported from PyTorch with
// safetensors.torch.save_file(model.state_dict(), ...)) into m. Every
// parameter of m must be present with its shape; older PyG GATConv names
// (lin_src.weight) are accepted for lin.weight; extra tensors are ignored.
func LoadParams(m Model, r io.Reader) error {
	ts, _, err := ReadSafetensors(r)
	if err != nil {
		return err
	}
	return setParams(m, ts)
}

func setParams(m Model, ts map[string]*STensor) error {
	for _, p := range m.Params() {
		t, ok := ts[p.Name]
		if !ok && m.Config().Model == "gat" {
			if alt := replaceSuffix(p.Name, "lin.weight", "lin_src.weight"); alt != "" {
				t, ok = ts[alt]
			}
		}
		if !ok {
			return fmt.Errorf("%w: tensor %q missing", ErrSafetensors, p.Name)
		}
		if !sameInts(t.Shape, p.Shape) {
			return fmt.Errorf("%w: tensor %q has shape %v, model wants %v", ErrSafetensors, p.Name, t.Shape, p.Shape)
		}
		v, err := t.Float32s()
		if err != nil {
			return fmt.Errorf("tensor %q: %w", p.Name, err)
		}
		copy(p.Data, v)
	}
	if g, ok := m.(*GIN); ok {
		for i := range g.layers {
			if g.layers[i].bn == nil {
				continue
			}
			if t, ok := ts[fmt.Sprintf("convs.%d.nn.norms.0.module.num_batches_tracked", i)]; ok && t.DType == "I64" && len(t.Data) == 8 {
				g.layers[i].bn.tracked = int64(binary.LittleEndian.Uint64(t.Data))
			}
		}
	}
	return nil
}

func replaceSuffix(s, old, repl string) string {
	if len(s) < len(old) || s[len(s)-len(old):] != old {
		return ""
	}
	return s[:len(s)-len(old)] + repl
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func configFromMeta(meta map[string]string) (Config, error) {
	var c Config
	var errs []error
	geti := func(k string) int {
		s, ok := meta[k]
		if !ok {
			return 0
		}
		v, err := strconv.Atoi(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("metadata %s=%q: %v", k, s, err))
		}
		return v
	}
	getf := func(k string) float32 {
		s, ok := meta[k]
		if !ok {
			return 0
		}
		v, err := strconv.ParseFloat(s, 32)
		if err != nil {
			errs = append(errs, fmt.Errorf("metadata %s=%q: %v", k, s, err))
		}
		return float32(v)
	}
	c.Model = meta["qgtc.model"]
	if c.Model == "" {
		return c, fmt.Errorf("%w: no qgtc.model in the metadata (a PyTorch state dict needs LoadParams with a Config)", ErrSafetensors)
	}
	c.In, c.Hidden, c.Out, c.Layers = geti("qgtc.in"), geti("qgtc.hidden"), geti("qgtc.out"), geti("qgtc.layers")
	c.Dropout, c.Aggr, c.Norm = getf("qgtc.dropout"), meta["qgtc.aggr"], meta["qgtc.norm"]
	c.Heads, c.OutHeads = geti("qgtc.heads"), geti("qgtc.out_heads")
	c.AttnDropout, c.Slope = getf("qgtc.attn_dropout"), getf("qgtc.slope")
	if len(errs) > 0 {
		return c, fmt.Errorf("%w: %v", ErrSafetensors, errors.Join(errs...))
	}
	return c, nil
}
