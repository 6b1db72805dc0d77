package layers

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/qgtc/qgtc/internal/safetensors"
)

// PyG state dicts: what safetensors.torch.save_file(model.state_dict(), f)
// writes for torch_geometric.nn.models.GCN, GIN and GraphSAGE (PyG 2.x
// BasicGNN, no jk, no norm between layers). The kind is told by the names:
//
//	GCN   convs.{i}.lin.weight [out, in], convs.{i}.bias [out]
//	SAGE  convs.{i}.lin_l.weight, convs.{i}.lin_l.bias, convs.{i}.lin_r.weight
//	GIN   convs.{i}.eps [1] (a buffer, stored even without train_eps),
//	      convs.{i}.nn.lins.{0,1}.weight/bias and, with norm="batch_norm",
//	      convs.{i}.nn.norms.0.module.{weight,bias,running_mean,running_var,num_batches_tracked}
//
// The models compute what PyG's do: GCN D^-1/2 (A+I) D^-1/2 (H W) + b, SAGE
// lin_l(mean of the neighbours) + lin_r(h), GIN MLP(h + Σ neighbours); qgtc
// applies each linear before the aggregation (exact, as both are linear), so
// the fp32 logits agree up to float rounding, not bit for bit.

// pygKinds maps the tensor of layer i (convs.{i}.<mark>) that marks each kind.
var pygKinds = []struct{ mark, kind string }{
	{"lin.weight", GCN}, {"lin_l.weight", SAGE}, {"nn.lins.0.weight", GIN},
}

// IsPyG says whether a safetensors file's tensors are a PyG BasicGNN state
// dict (a convs.0 tensor qgtc knows) rather than a qgtc model file.
func IsPyG(ts map[string]*safetensors.Tensor) bool {
	for _, k := range pygKinds {
		if _, ok := ts["convs.0."+k.mark]; ok {
			return true
		}
	}
	return false
}

// ReadPyG reads a PyG state dict (see IsPyG) as an uncalibrated model of
// float weights: NormRows set (the feature scale is the caller's), widths
// 32 until Calibrate is given others.
func ReadPyG(r io.Reader) (*Model, error) {
	ts, _, err := safetensors.Read(r)
	if err != nil {
		return nil, err
	}
	return pygModel(ts)
}

// ReadModelOrPyG reads a qgtc model file (ReadModelOrigin) or, when it has
// no qgtc.qmodel metadata and its tensors are a PyG state dict, that
// (ReadPyG: uncalibrated, no origin).
func ReadModelOrPyG(r io.Reader) (*Model, *Origin, error) {
	ts, meta, err := safetensors.Read(r)
	if err != nil {
		return nil, nil, err
	}
	if _, ok := meta["qgtc.qmodel"]; !ok && IsPyG(ts) {
		m, err := pygModel(ts)
		return m, nil, err
	}
	return modelOrigin(ts, meta)
}

// pygDict is a state dict being read, with the tensors taken so far.
type pygDict struct {
	ts   map[string]*safetensors.Tensor
	used map[string]bool
}

func (d *pygDict) has(name string) bool { _, ok := d.ts[name]; return ok }

// take marks name used after checking its shape.
func (d *pygDict) take(name string, shape ...int) (*safetensors.Tensor, error) {
	t, ok := d.ts[name]
	if !ok {
		return nil, fmt.Errorf("%w: PyG state dict has no tensor %s", ErrModel, name)
	}
	if !slices.Equal(t.Shape, shape) {
		return nil, fmt.Errorf("%w: PyG tensor %s has shape %v, want %v", ErrModel, name, t.Shape, shape)
	}
	d.used[name] = true
	return t, nil
}

func (d *pygDict) floats(name string, shape ...int) ([]float32, error) {
	t, err := d.take(name, shape...)
	if err != nil {
		return nil, err
	}
	v, err := t.Float32s()
	if err != nil {
		return nil, fmt.Errorf("%w: PyG tensor %s: %v", ErrModel, name, err)
	}
	return v, nil
}

// linear reads prefix.weight [out, in] (in < 0: any width) and bias when
// the file has it.
func (d *pygDict) linear(prefix, bias string, in int) (*Linear, error) {
	name := prefix + ".weight"
	t, ok := d.ts[name]
	if !ok {
		return nil, fmt.Errorf("%w: PyG state dict has no tensor %s", ErrModel, name)
	}
	if len(t.Shape) != 2 || (in >= 0 && t.Shape[1] != in) {
		return nil, fmt.Errorf("%w: PyG tensor %s has shape %v, want [out, %d]", ErrModel, name, t.Shape, in)
	}
	w, err := d.floats(name, t.Shape...)
	if err != nil {
		return nil, err
	}
	l := &Linear{In: t.Shape[1], Out: t.Shape[0], W: w}
	if bias != "" && d.has(bias) {
		if l.B, err = d.floats(bias, l.Out); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// pygModel builds the model of a PyG state dict. Every tensor must be used,
// so a layout qgtc does not run (jk, norms between layers, SAGE's project,
// a GIN MLP of three linears) is an error naming the tensor, not a model
// that silently computes something else.
func pygModel(ts map[string]*safetensors.Tensor) (*Model, error) {
	d := &pygDict{ts: ts, used: map[string]bool{}}
	kind, mark := "", ""
	for _, k := range pygKinds {
		if d.has("convs.0." + k.mark) {
			kind, mark = k.kind, k.mark
			break
		}
	}
	if kind == "" {
		return nil, fmt.Errorf("%w: not a PyG GCN, GIN or GraphSAGE state dict (no convs.0.lin.weight, convs.0.lin_l.weight or convs.0.nn.lins.0.weight)", ErrModel)
	}
	m := &Model{Kind: kind, ABits: 32, WBits: 32, NormRows: true}
	in := -1 // the width the next layer reads; the first takes any
	for i := 0; d.has(fmt.Sprintf("convs.%d.%s", i, mark)); i++ {
		ly, err := d.layer(kind, "convs."+strconv.Itoa(i)+".", i, in)
		if err != nil {
			return nil, err
		}
		in = ly.Lin1.Out
		if kind == GIN {
			in = ly.Lin2.Out
		}
		m.Layers = append(m.Layers, ly)
	}
	m.Classes = in
	var extra []string
	for name := range ts {
		if !d.used[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return nil, fmt.Errorf("%w: PyG %s state dict has tensor %s, which qgtc's %s does not run (jk, norms between layers, SAGE's project, a deeper GIN MLP?)", ErrModel, kind, extra[0], kind)
	}
	if err := m.Validate(m.Layers[0].Lin1.In); err != nil {
		return nil, err
	}
	return m, nil
}

// layer reads layer i (tensors prefix*) of kind, which reads in features.
func (d *pygDict) layer(kind, p string, i, in int) (Layer, error) {
	var ly Layer
	switch kind {
	case GCN:
		l, err := d.linear(p+"lin", p+"bias", in)
		if err != nil {
			return ly, err
		}
		ly.Lin1 = *l
	case SAGE:
		l, err := d.linear(p+"lin_l", p+"lin_l.bias", in)
		if err != nil {
			return ly, err
		}
		if !d.has(p + "lin_r.weight") {
			return ly, fmt.Errorf("%w: PyG SAGE layer %d has no %slin_r.weight (root_weight=False); qgtc's SAGE needs the root weight", ErrModel, i, p)
		}
		r, err := d.linear(p+"lin_r", "", l.In)
		if err != nil {
			return ly, err
		}
		if r.Out != l.Out {
			return ly, fmt.Errorf("%w: PyG SAGE layer %d: lin_r has %d outputs, lin_l %d", ErrModel, i, r.Out, l.Out)
		}
		ly.Lin1, ly.Lin2 = *l, r
	case GIN:
		if d.has(p + "eps") {
			eps, err := d.floats(p+"eps", 1)
			if err != nil {
				return ly, err
			}
			if eps[0] != 0 {
				return ly, fmt.Errorf("%w: PyG GIN layer %d has eps %g; qgtc's GIN adds h to the sum of its neighbours with weight 1 (eps 0, train_eps=False)", ErrModel, i, eps[0])
			}
		}
		l0, err := d.linear(p+"nn.lins.0", p+"nn.lins.0.bias", in)
		if err != nil {
			return ly, err
		}
		l1, err := d.linear(p+"nn.lins.1", p+"nn.lins.1.bias", l0.Out)
		if err != nil {
			return ly, err
		}
		ly.Lin1, ly.Lin2 = *l0, l1
		if ly.BN, err = d.batchNorm(p+"nn.norms.0.", l0.Out); err != nil {
			return ly, err
		}
	}
	return ly, nil
}

// batchNorm reads the batch norm of a GIN MLP at prefix (PyG's BatchNorm
// wraps torch.nn.BatchNorm1d as .module; older MLPs held it directly), nil
// when there is none. PyG's default ε (1e-5, learn.BNEps) is assumed: the
// state dict does not store it.
func (d *pygDict) batchNorm(prefix string, n int) (*BatchNorm, error) {
	switch {
	case d.has(prefix + "module.weight"):
		prefix += "module."
	case !d.has(prefix + "weight"):
		return nil, nil
	}
	bn := &BatchNorm{}
	for _, t := range bnTensors(bn) {
		v, err := d.floats(prefix+t.name, n)
		if err != nil {
			return nil, err
		}
		*t.v = v
	}
	if d.has(prefix + "num_batches_tracked") { // a counter evaluation does not read
		if _, err := d.take(prefix+"num_batches_tracked", []int{}...); err != nil {
			return nil, err
		}
	}
	return bn, nil
}
