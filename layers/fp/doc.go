// Package fp holds the full-precision GNN models: GCN, GIN, GraphSAGE and
// GAT in float32, trained with reverse-mode autodiff (internal/nn). They are
// the accuracy reference for the quantized models of package layers and the
// fp32 baseline of the benchmarks.
//
// # Models and training
//
// New builds a Model from a Config; Train fits it to a Data (a loaded
// subgraph.Dataset with its split) with Adam, L2 weight decay and early
// stopping on the validation set, full-batch or in Cluster-GCN mini-batches,
// deterministically for given seeds. The ops and their gradients live in
// internal/nn on top of templates.Sgemm and the sparse templates (package templates); GAT uses
// the fused attention aggregation whose backward recomputes the edge
// values instead of storing them.
//
// Hooks lets a caller transform each matrix product's input and weight
// (fake quantization for quantization-aware training) without touching the
// models.
//
// # Weights
//
// Save, Load and LoadParams use the safetensors format with PyTorch
// Geometric's state-dict names, so torch_geometric.nn.models.GCN /
// GraphSAGE / GAT / GIN (train_eps=True) trained in Python load here and
// ours load there
// (safetensors.torch.load_file + load_state_dict). In evaluation the
// forward passes match PyG's (GAT built with act="elu"); in training ours
// also drop out the input features, as Kipf & Welling and Veličković et
// al. do. Names per model:
//
//	GCN   convs.{i}.lin.weight [out,in], convs.{i}.bias [out]
//	GIN   convs.{i}.eps [1], convs.{i}.nn.lins.{0,1}.{weight,bias},
//	      with Norm "batch" also convs.{i}.nn.norms.0.module.{weight,bias,running_mean,running_var,num_batches_tracked}
//	SAGE  convs.{i}.lin_l.weight, convs.{i}.lin_l.bias, convs.{i}.lin_r.weight
//	GAT   convs.{i}.lin.weight [heads·out,in], convs.{i}.att_src / att_dst [1,heads,out],
//	      convs.{i}.bias (lin_src.weight, PyG < 2.3, is read as lin.weight)
//
// Files written by Save also carry the Config in __metadata__ (keys
// qgtc.model, qgtc.in, qgtc.hidden, ...), so Load needs nothing else.
package fp
