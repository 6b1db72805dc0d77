package layers

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// qMeta is the metadata of a saved QModel (safetensors __metadata__).
type qMeta struct {
	// Format is qFormat; files without it (0) predate the GIN batch norm.
	Format     int       `json:"format"`
	Kind       string    `json:"kind"`
	Classes    int       `json:"classes"`
	ABits      int       `json:"abits"`
	WBits      int       `json:"wbits"`
	Calibrated bool      `json:"calibrated"`
	NormRows   bool      `json:"norm_rows"`
	Input      QParams   `json:"input"`
	Params     []qLayerP `json:"params"`
}

// qFormat is the current version of the saved model layout: 2 adds the GIN
// batch norm (layers.i.bn.*), so an older cached GIN is not misread; 3
// makes it optional (a GIN with no layers.i.bn.* tensors has none) and
// marks models calibrated on the output (KL) rather than the squared
// error, so cached models of either older kind are retrained.
const qFormat = 3

type qLayerP struct {
	Z   QParams `json:"z"`
	U   QParams `json:"u"`
	Out QParams `json:"out"`
}

// WriteTo saves m as safetensors: the float weights under PyTorch-style
// names (layers.i.lin1.weight, ...) and the quantization parameters in the
// metadata, so the file is both a checkpoint and a deployable model.
func (m *QModel) WriteTo(w io.Writer) (int64, error) {
	meta := qMeta{Format: qFormat, Kind: m.Kind, Classes: m.Classes, ABits: m.ABits, WBits: m.WBits, Calibrated: m.Calibrated, Input: m.Input, NormRows: m.NormRows}
	ts := map[string]*STensor{}
	for i, ly := range m.Layers {
		meta.Params = append(meta.Params, qLayerP{ly.Z, ly.U, ly.Out})
		put := func(name string, l *QLinear) {
			ts[fmt.Sprintf("layers.%d.%s.weight", i, name)] = &STensor{DType: "F32", Shape: []int{l.Out, l.In}, Data: qF32Bytes(l.W)}
			if l.B != nil {
				ts[fmt.Sprintf("layers.%d.%s.bias", i, name)] = &STensor{DType: "F32", Shape: []int{l.Out}, Data: qF32Bytes(l.B)}
			}
		}
		put("lin1", &ly.Lin1)
		if ly.Lin2 != nil {
			put("lin2", ly.Lin2)
		}
		if bn := ly.BN; bn != nil {
			for _, t := range qBNTensors(bn) {
				ts[fmt.Sprintf("layers.%d.bn.%s", i, t.name)] = &STensor{DType: "F32", Shape: []int{len(*t.v)}, Data: qF32Bytes(*t.v)}
			}
		}
	}
	js, err := json.Marshal(meta)
	if err != nil {
		return 0, err
	}
	cw := &qCountWriter{w: w}
	err = WriteSafetensors(cw, ts, map[string]string{"qgtc.qmodel": string(js), "layers": strconv.Itoa(len(m.Layers)),
		"saved": time.Now().UTC().Format(time.RFC3339)})
	return cw.n, err
}

type qCountWriter struct {
	w io.Writer
	n int64
}

func (c *qCountWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func qF32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// ReadQModel loads a model written by WriteTo.
func ReadQModel(r io.Reader) (*QModel, error) {
	ts, meta, err := ReadSafetensors(r)
	if err != nil {
		return nil, err
	}
	js, ok := meta["qgtc.qmodel"]
	if !ok {
		return nil, fmt.Errorf("%w: safetensors file has no qgtc.qmodel metadata (not a quantized model)", ErrQModel)
	}
	var mt qMeta
	if err := json.Unmarshal([]byte(js), &mt); err != nil {
		return nil, fmt.Errorf("%w: metadata qgtc.qmodel: %v", ErrQModel, err)
	}
	if mt.Format != qFormat {
		return nil, fmt.Errorf("%w: model file format %d, this version reads %d (retrain or re-save it)", ErrQModel, mt.Format, qFormat)
	}
	m := &QModel{Kind: mt.Kind, Classes: mt.Classes, ABits: mt.ABits, WBits: mt.WBits, Calibrated: mt.Calibrated, Input: mt.Input, NormRows: mt.NormRows}
	get := func(i int, name string) (*QLinear, error) {
		key := fmt.Sprintf("layers.%d.%s.weight", i, name)
		t, ok := ts[key]
		if !ok {
			return nil, nil
		}
		if len(t.Shape) != 2 {
			return nil, fmt.Errorf("%w: tensor %s has shape %v, want [out, in]", ErrQModel, key, t.Shape)
		}
		w, err := t.Float32s()
		if err != nil {
			return nil, err
		}
		l := &QLinear{In: t.Shape[1], Out: t.Shape[0], W: w}
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
			return nil, fmt.Errorf("%w: layer %d has no tensor layers.%d.lin1.weight", ErrQModel, i, i)
		}
		l2, err := get(i, "lin2")
		if err != nil {
			return nil, err
		}
		ly := QLayer{Lin1: *l1, Lin2: l2, Z: p.Z, U: p.U, Out: p.Out}
		if _, ok := ts[fmt.Sprintf("layers.%d.bn.weight", i)]; ok {
			ly.BN = &QBatchNorm{}
			for _, bt := range qBNTensors(ly.BN) {
				key := fmt.Sprintf("layers.%d.bn.%s", i, bt.name)
				t, ok := ts[key]
				if !ok {
					return nil, fmt.Errorf("%w: layer %d has a batch norm but no tensor %s", ErrQModel, i, key)
				}
				if *bt.v, err = t.Float32s(); err != nil {
					return nil, err
				}
			}
		}
		m.Layers = append(m.Layers, ly)
	}
	if len(m.Layers) == 0 {
		return nil, fmt.Errorf("%w: no layers", ErrQModel)
	}
	if err := m.Validate(m.Layers[0].Lin1.In); err != nil {
		return nil, err
	}
	return m, nil
}

// qBNTensors names bn's vectors as PyTorch's BatchNorm1d state dict does.
func qBNTensors(bn *QBatchNorm) []struct {
	name string
	v    *[]float32
} {
	return []struct {
		name string
		v    *[]float32
	}{{"weight", &bn.Gamma}, {"bias", &bn.Beta}, {"running_mean", &bn.Mean}, {"running_var", &bn.Var}}
}
