// Command export writes a dataset as NumPy arrays for bench/interop's PyG
// side: the graph (CSR, row v = v's neighbours), the features with rows
// scaled to sum 1 (what qgtc train --normalize row and infer
// --feature-scale rows compute, PyG's NormalizeFeatures), the labels and the
// split: the shipped one, or for data that ships none (Amazon, Coauthor)
// the random one qgtc infer and train draw at --seed; and, for each --logits model (a qgtc train --out file),
// the logits qgtc's fp32 model computes on those features, for PyG to match
// after load_state_dict.
//
//	go run ./bench/interop/export --dataset cora --out dir/ --logits gcn=gcn.safetensors
package main
