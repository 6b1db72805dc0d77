package layers

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/qgtc/qgtc/internal/safetensors"
)

// fileMeta is the metadata of a saved Model (safetensors __metadata__).
type fileMeta struct {
	// Format is fileFormat; files without it (0) predate the GIN batch norm.
	Format     int      `json:"format"`
	Kind       string   `json:"kind"`
	Classes    int      `json:"classes"`
	ABits      int      `json:"abits"`
	WBits      int      `json:"wbits"`
	Calibrated bool     `json:"calibrated"`
	NormRows   bool     `json:"norm_rows"`
	Input      Params   `json:"input"`
	Params     []layerP `json:"params"`
	// SignWeights (format 4): 1-bit weights are ±mean|w| (Linear.Sign).
	SignWeights bool `json:"sign_weights,omitempty"`
	// LastBits (format 5): the last layer's width (Model.LastBits).
	LastBits int `json:"last_bits,omitempty"`
	// Aggr (format 6): a GIN's aggregation when it is not the sum
	// (Model.Aggr).
	Aggr string `json:"aggr,omitempty"`
}

// fileFormat is the current version of the saved model layout: 2 adds the GIN
// batch norm (layers.i.bn.*), so an older cached GIN is not misread; 3
// makes it optional (a GIN with no layers.i.bn.* tensors has none) and
// marks models calibrated on the output (KL) rather than the squared
// error, so cached models of either older kind are retrained.
const fileFormat = 3

// fileFormatEq is the format of a model with per-channel Z ranges
// (layers.i.z_scale, z_shift) or sign-binarized 1-bit weights: a reader of
// format 3 would run it without them, so it refuses these files; a model
// with neither is still written as format 3.
const fileFormatEq = 4

// fileFormatLast is the format of a model whose last layer is wider
// (Model.LastBits), with format 4's contents allowed: older readers would
// quantize its weights at WBits.
const fileFormatLast = 5

// fileFormatAggr is the format of a GIN that averages (Model.Aggr
// AggrMean), with format 5's contents allowed: older readers would sum.
const fileFormatAggr = 6

type layerP struct {
	Z   Params `json:"z"`
	U   Params `json:"u"`
	Out Params `json:"out"`
}

// Origin records what a saved model was trained on, so that a model
// applied to other data or with other settings can say so. Files written
// before it existed have none (ReadModelOrigin returns nil).
type Origin struct {
	Dataset string `json:"dataset"` // name or path as given
	// Data fingerprints the graph, features, labels and split (hex).
	Data         string `json:"data"`
	Kind         string `json:"kind"`
	ABits        int    `json:"abits"`
	WBits        int    `json:"wbits"`
	Norm         string `json:"norm"`
	FeatureScale string `json:"feature_scale"`
	// Key is the cache key of the settings the model was trained with.
	Key string `json:"key,omitempty"`
}

// Metadata keys added next to qgtc.qmodel; the tensors and qgtc.qmodel are
// encoded as before, so older readers still load the file.
const (
	metaOrigin = "qgtc.origin"
	metaSum    = "qgtc.sha256"
)

// WriteTo saves m as safetensors: the float weights under PyTorch-style
// names (layers.i.lin1.weight, ...) and the quantization parameters in the
// metadata, so the file is both a checkpoint and a deployable model. A
// SHA-256 of the tensors and parameters lets ReadModel detect corruption.
func (m *Model) WriteTo(w io.Writer) (int64, error) {
	return WriteModel(w, m, nil)
}

// WriteModel is WriteTo that also records o (when not nil) in the file.
func WriteModel(w io.Writer, m *Model, o *Origin) (int64, error) {
	meta := fileMeta{Format: fileFormat, Kind: m.Kind, Classes: m.Classes, ABits: m.ABits, WBits: m.WBits, Calibrated: m.Calibrated, Input: m.Input, NormRows: m.NormRows}
	ts := map[string]*safetensors.Tensor{}
	if m.SignWeights() {
		meta.Format, meta.SignWeights = fileFormatEq, true
	}
	for i, ly := range m.Layers {
		meta.Params = append(meta.Params, layerP{ly.Z, ly.U, ly.Out})
		put := func(name string, l *Linear) {
			ts[fmt.Sprintf("layers.%d.%s.weight", i, name)] = safetensors.F32(l.W, l.Out, l.In)
			if l.B != nil {
				ts[fmt.Sprintf("layers.%d.%s.bias", i, name)] = safetensors.F32(l.B)
			}
		}
		put("lin1", &ly.Lin1)
		if ly.Lin2 != nil {
			put("lin2", ly.Lin2)
		}
		if bn := ly.BN; bn != nil {
			for _, t := range bnTensors(bn) {
				ts[fmt.Sprintf("layers.%d.bn.%s", i, t.name)] = safetensors.F32(*t.v)
			}
		}
		if ly.ZScale != nil {
			meta.Format = fileFormatEq
			ts[fmt.Sprintf("layers.%d.z_scale", i)] = safetensors.F32(ly.ZScale)
			ts[fmt.Sprintf("layers.%d.z_shift", i)] = safetensors.F32(ly.ZShift)
		}
	}
	if m.LastBits != 0 {
		meta.Format, meta.LastBits = fileFormatLast, m.LastBits
	}
	if m.GINMean() {
		meta.Format, meta.Aggr = fileFormatAggr, m.Aggr
	}
	js, err := json.Marshal(meta)
	if err != nil {
		return 0, err
	}
	meta2 := map[string]string{"qgtc.qmodel": string(js), "layers": strconv.Itoa(len(m.Layers)),
		"saved": time.Now().UTC().Format(time.RFC3339)}
	if o != nil {
		ojs, err := json.Marshal(o)
		if err != nil {
			return 0, err
		}
		meta2[metaOrigin] = string(ojs)
	}
	meta2[metaSum] = fileChecksum(ts, meta2)
	cw := &countWriter{w: w}
	err = safetensors.Write(cw, ts, meta2)
	return cw.n, err
}

// fileChecksum is the hex SHA-256 of what a model file means: the qgtc.qmodel
// and qgtc.origin metadata, then every tensor (name, dtype, shape, bytes)
// in name order, each field length-prefixed so no two files collide by
// shifting bytes between fields.
func fileChecksum(ts map[string]*safetensors.Tensor, meta map[string]string) string {
	h := sha256.New()
	var n [8]byte
	put := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	put([]byte(meta["qgtc.qmodel"]))
	put([]byte(meta[metaOrigin]))
	names := make([]string, 0, len(ts))
	for name := range ts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := ts[name]
		put([]byte(name))
		put([]byte(t.DType))
		shape := make([]byte, 8*len(t.Shape))
		for i, d := range t.Shape {
			binary.LittleEndian.PutUint64(shape[8*i:], uint64(d))
		}
		put(shape)
		put(t.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// ReadModel loads a model written by WriteTo or WriteModel, verifying
// its checksum when the file has one (files from before checksums load as
// they did).
func ReadModel(r io.Reader) (*Model, error) {
	m, _, err := ReadModelOrigin(r)
	return m, err
}

// ReadModelOrigin is ReadModel that also returns what the model was
// trained on: nil when the file does not record it.
func ReadModelOrigin(r io.Reader) (*Model, *Origin, error) {
	ts, meta, err := safetensors.Read(r)
	if err != nil {
		return nil, nil, err
	}
	return modelOrigin(ts, meta)
}

// modelOrigin is ReadModelOrigin of a file's tensors ts and metadata meta.
func modelOrigin(ts map[string]*safetensors.Tensor, meta map[string]string) (*Model, *Origin, error) {
	js, ok := meta["qgtc.qmodel"]
	if !ok {
		return nil, nil, fmt.Errorf("%w: safetensors file has no qgtc.qmodel metadata (not a quantized model)", ErrModel)
	}
	if want, ok := meta[metaSum]; ok {
		if got := fileChecksum(ts, meta); got != want {
			return nil, nil, fmt.Errorf("%w: checksum mismatch: the file records SHA-256 %.16s..., its contents hash to %.16s...", ErrModel, want, got)
		}
	}
	var origin *Origin
	if ojs, ok := meta[metaOrigin]; ok {
		origin = &Origin{}
		if err := json.Unmarshal([]byte(ojs), origin); err != nil {
			return nil, nil, fmt.Errorf("%w: metadata %s: %v", ErrModel, metaOrigin, err)
		}
	}
	m, err := modelFrom(ts, js)
	if err != nil {
		return nil, nil, err
	}
	return m, origin, nil
}

// modelFrom builds the model of the tensors ts and qgtc.qmodel metadata js.
func modelFrom(ts map[string]*safetensors.Tensor, js string) (*Model, error) {
	var mt fileMeta
	if err := json.Unmarshal([]byte(js), &mt); err != nil {
		return nil, fmt.Errorf("%w: metadata qgtc.qmodel: %v", ErrModel, err)
	}
	if mt.Format < fileFormat || mt.Format > fileFormatAggr {
		return nil, fmt.Errorf("%w: model file format %d, this version reads %d to %d (retrain or re-save it)", ErrModel, mt.Format, fileFormat, fileFormatAggr)
	}
	m := &Model{Kind: mt.Kind, Classes: mt.Classes, ABits: mt.ABits, WBits: mt.WBits, Calibrated: mt.Calibrated, Input: mt.Input, NormRows: mt.NormRows,
		LastBits: mt.LastBits, Aggr: mt.Aggr}
	get := func(i int, name string) (*Linear, error) {
		key := fmt.Sprintf("layers.%d.%s.weight", i, name)
		t, ok := ts[key]
		if !ok {
			return nil, nil
		}
		if len(t.Shape) != 2 {
			return nil, fmt.Errorf("%w: tensor %s has shape %v, want [out, in]", ErrModel, key, t.Shape)
		}
		w, err := t.Float32s()
		if err != nil {
			return nil, err
		}
		l := &Linear{In: t.Shape[1], Out: t.Shape[0], W: w}
		if b, ok := ts[fmt.Sprintf("layers.%d.%s.bias", i, name)]; ok {
			if l.B, err = b.Float32s(); err != nil {
				return nil, err
			}
		}
		return l, nil
	}
	for i, p := range mt.Params {
		l1, err := get(i, "lin1")
		if err != nil {
			return nil, err
		}
		if l1 == nil {
			return nil, fmt.Errorf("%w: layer %d has no tensor layers.%d.lin1.weight", ErrModel, i, i)
		}
		l2, err := get(i, "lin2")
		if err != nil {
			return nil, err
		}
		ly := Layer{Lin1: *l1, Lin2: l2, Z: p.Z, U: p.U, Out: p.Out}
		if _, ok := ts[fmt.Sprintf("layers.%d.bn.weight", i)]; ok {
			ly.BN = &BatchNorm{}
			for _, bt := range bnTensors(ly.BN) {
				key := fmt.Sprintf("layers.%d.bn.%s", i, bt.name)
				t, ok := ts[key]
				if !ok {
					return nil, fmt.Errorf("%w: layer %d has a batch norm but no tensor %s", ErrModel, i, key)
				}
				if *bt.v, err = t.Float32s(); err != nil {
					return nil, err
				}
			}
		}
		for _, z := range []struct {
			name string
			v    *[]float32
		}{{"z_scale", &ly.ZScale}, {"z_shift", &ly.ZShift}} {
			t, ok := ts[fmt.Sprintf("layers.%d.%s", i, z.name)]
			switch {
			case ok && mt.Format < fileFormatEq:
				return nil, fmt.Errorf("%w: layer %d has tensor %s in a file of format %d", ErrModel, i, z.name, mt.Format)
			case ok:
				if *z.v, err = t.Float32s(); err != nil {
					return nil, err
				}
			}
		}
		m.ChannelZ = m.ChannelZ || ly.ZScale != nil
		m.Layers = append(m.Layers, ly)
	}
	if len(m.Layers) == 0 {
		return nil, fmt.Errorf("%w: no layers", ErrModel)
	}
	if mt.SignWeights && mt.Format < fileFormatEq {
		return nil, fmt.Errorf("%w: sign_weights in a file of format %d", ErrModel, mt.Format)
	}
	if mt.LastBits != 0 && mt.Format < fileFormatLast {
		return nil, fmt.Errorf("%w: last_bits in a file of format %d", ErrModel, mt.Format)
	}
	if mt.Aggr != "" && mt.Format < fileFormatAggr {
		return nil, fmt.Errorf("%w: aggr in a file of format %d", ErrModel, mt.Format)
	}
	m.SetSignWeights(mt.SignWeights)
	if err := m.Validate(m.Layers[0].Lin1.In); err != nil {
		return nil, err
	}
	return m, nil
}

// bnTensors names bn's vectors as PyTorch's BatchNorm1d state dict does.
func bnTensors(bn *BatchNorm) []struct {
	name string
	v    *[]float32
} {
	return []struct {
		name string
		v    *[]float32
	}{{"weight", &bn.Gamma}, {"bias", &bn.Beta}, {"running_mean", &bn.Mean}, {"running_var", &bn.Var}}
}
