package fp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/qgtc/qgtc/internal/safetensors"
)

// ErrSafetensors: a malformed safetensors file, or one that does not match
// the model it is loaded into (the codec's sentinel, so errors.Is works
// without importing an internal package).
var ErrSafetensors = safetensors.ErrFormat

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
	ts := map[string]*safetensors.Tensor{}
	for _, p := range m.Params() {
		ts[p.Name] = safetensors.F32(p.Data, p.Shape...)
	}
	if g, ok := m.(*GIN); ok {
		for i := range g.layers {
			if g.layers[i].bn == nil {
				continue
			}
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], uint64(g.layers[i].bn.tracked))
			ts[fmt.Sprintf("convs.%d.nn.norms.0.module.num_batches_tracked", i)] = &safetensors.Tensor{DType: "I64", Shape: []int{}, Data: b[:]}
		}
	}
	return safetensors.Write(w, ts, meta)
}

func ftoa(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }

// Load reads a model written by Save (its Config comes from the metadata).
func Load(r io.Reader) (Model, error) {
	ts, meta, err := safetensors.Read(r)
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
	ts, _, err := safetensors.Read(r)
	if err != nil {
		return err
	}
	return setParams(m, ts)
}

func setParams(m Model, ts map[string]*safetensors.Tensor) error {
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
