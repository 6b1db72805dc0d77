package nn

// Param is a named model tensor. Name is the PyTorch state_dict key and
// Shape the shape stored in files (the Tensor's Rows×Cols is how ops see
// it, e.g. GAT's att_src is [1, H, F] on file and 1×(H·F) here).
type Param struct {
	*Tensor
	Name   string
	Shape  []int
	Decay  bool // weight decay applies
	Buffer bool // state, not trained (batch-norm running statistics)
}

// NewParam returns a trainable parameter of the given file shape, seen by
// ops as rows×cols.
func NewParam(name string, rows, cols int, shape ...int) *Param {
	t := New(rows, cols).SetRequiresGrad(true)
	if len(shape) == 0 {
		shape = []int{rows, cols}
	}
	return &Param{Tensor: t, Name: name, Shape: shape, Decay: true}
}

// NewBuffer returns an untrained state tensor (no gradient, no decay).
func NewBuffer(name string, n int) *Param {
	return &Param{Tensor: New(1, n), Name: name, Shape: []int{n}, Buffer: true}
}
