// Command export writes a bundled graph as the pull CSR the sparse template
// benchmarks use, for the PyTorch baseline to read: little-endian int32
// rows, nnz, then rows+1 indptr values and nnz indices (row v lists the
// sources of the edges into v; the graphs are undirected, so these are its
// neighbours).
package main
