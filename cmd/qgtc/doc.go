// Command qgtc is the command-line face of qgtc: quantized GNN inference,
// training, data handling and benchmarks. Each subcommand lives in its own
// file and registers itself in init; run `qgtc --help` for the list.
package main
