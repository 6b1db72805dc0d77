// Package datasets holds the small real datasets that qgtc carries inside
// its binary, so that a `go install`ed qgtc loads them from any folder.
// Today that is Cora (Planetoid files and the gnn-benchmark cora.npz, about
// 1.1 MB), byte for byte as testdata/README.md describes it; testdata/cora
// is a link to this folder, so the repository keeps one copy.
//
// subgraph.Load reads these copies last, after every folder on disk (see
// subgraph.Locate), so a copy in $QGTC_DATA or ./testdata always wins.
package datasets
