// Command export writes a dataset and a qgtc partition file as NumPy
// arrays, so that bench/e2e/pyg.py runs PyG on the very batches qgtc
// infer runs (parts of the file, one batch each with --batch 1).
//
//	go run ./bench/e2e/export --dataset coauthor_physics --partition part.bin --out dir/
package main
