package subgraph

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// Fuzz targets for every parser: any input must give a dataset that
// passes Validate or an error, never a panic or a runaway allocation.
// Run each with: go test ./subgraph -run '^$' -fuzz '^FuzzX$' -fuzztime 60s

func checkLoaded(t *testing.T, d *Dataset, err error) {
	if err != nil {
		return
	}
	if verr := d.Graph.Validate(); verr != nil {
		t.Fatalf("loaded an invalid graph: %v", verr)
	}
	if !d.Graph.IsSymmetric() || d.Graph.SelfLoops() != 0 {
		t.Fatal("loaded graph is not undirected and loop-free")
	}
	n := d.Graph.N()
	for _, f := range []*Features{d.Features, d.Multi} {
		if f != nil && f.Rows != n {
			t.Fatalf("features have %d rows for %d nodes", f.Rows, n)
		}
		if f != nil && f.Dense == nil {
			if _, _, _, err := canonicalCSR("f", f.Rows, f.Cols, f.Indptr, f.Indices, make([]float32, len(f.Indices))); err != nil {
				t.Fatalf("features CSR: %v", err)
			}
			for _, c := range f.Indices {
				if c < 0 || int(c) >= f.Cols {
					t.Fatalf("feature column %d outside [0, %d)", c, f.Cols)
				}
			}
		}
	}
	if d.Labels != nil && len(d.Labels) != n {
		t.Fatalf("%d labels for %d nodes", len(d.Labels), n)
	}
	for _, part := range [][]int32{d.Train, d.Val, d.Test} {
		for _, v := range part {
			if v < 0 || int(v) >= n {
				t.Fatalf("split node %d outside [0, %d)", v, n)
			}
		}
	}
}

func readSeed(f *testing.F, path string, limit int) []byte {
	b, err := os.ReadFile(filepath.Join("..", "testdata", path))
	if err != nil {
		f.Fatal(err)
	}
	if limit > 0 && len(b) > limit {
		b = b[:limit]
	}
	return b
}

func FuzzNPY(f *testing.F) {
	f.Add(npyBytes("<i4", []int{3}, []byte{0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0}))
	f.Add(npyBytes("<f8", []int{1, 1}, make([]byte, 8)))
	f.Add(npyBytes(">u2", []int{2}, []byte{0, 1, 0, 2}))
	f.Add(readSeed(f, "fixtures/sage-tiny/tiny-feats.npy", 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseNPY("f.npy", b)
		if err != nil {
			return
		}
		if a.len()*a.size != len(a.data) {
			t.Fatal("size mismatch")
		}
		a.float32s()
		a.int32s(-1, 1<<30)
	})
}

func FuzzNPZ(f *testing.F) {
	f.Add(readSeed(f, "fixtures/tiny-edges.npz", 0))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := readNPZ("f.npz", b)
		checkLoaded(t, d, err)
	})
}

func FuzzPickle(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input, slow for big ones.
	f.Add(readSeed(f, "fixtures/pickle/tiny-csr.pkl", 0))
	f.Add(readSeed(f, "fixtures/pickle/tiny-y.pkl", 0))
	f.Add(append(readSeed(f, "cora/ind.cora.graph", 600), '.'))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := unpickle("f", b)
		if err != nil {
			return
		}
		if m, err := pyCSR(v); err == nil {
			if _, _, _, err := canonicalCSR("m", m.Rows, m.Cols, m.Indptr, m.Indices, m.Values); err != nil {
				t.Fatalf("pyCSR returned a bad CSR: %v", err)
			}
		}
		if a, err := pyNDArray(v); err == nil {
			a.float32s()
		}
		if src, dst, err := pyAdjacency(v, 3000); err == nil && len(src) != len(dst) {
			t.Fatal("adjacency lists differ in length")
		}
	})
}

// FuzzPlanetoid replaces one file of the 6-node Planetoid fixture with the
// input (small files keep the fuzzer fast; Cora's are 4-260 KB).
func FuzzPlanetoid(f *testing.F) {
	exts := []string{"x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"}
	orig := map[string][]byte{}
	for _, e := range exts {
		orig[e] = readSeed(f, "fixtures/planetoid-tiny/ind.tiny."+e, 0)
	}
	for i, e := range exts {
		f.Add(uint8(i), orig[e])
	}
	dir := f.TempDir()
	for e, b := range orig {
		if err := os.WriteFile(filepath.Join(dir, "ind.tiny."+e), b, 0o644); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		e := exts[int(which)%len(exts)]
		p := filepath.Join(dir, "ind.tiny."+e)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(p, orig[e], 0o644)
		d, err := readPlanetoid(dir, "tiny")
		checkLoaded(t, d, err)
	})
}

func FuzzMAT(f *testing.F) {
	f.Add(tinyMAT(false))
	f.Add(tinyMAT(true))
	f.Add(readSeed(f, "blogcatalog/blogcatalog.mat", 2048))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := readMAT("f.mat", b)
		checkLoaded(t, d, err)
	})
}

func FuzzTU(f *testing.F) {
	f.Add(readSeed(f, "fixtures/tu-tiny/TINY.txt", 0))
	f.Add(readSeed(f, "proteins/PROTEINS.txt", 1500))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := parseTU("f.txt", b)
		if err != nil {
			return
		}
		checkLoaded(t, s.Dataset(), nil)
		if len(s.Labels) != s.NumGraphs() || len(s.Tags) != s.Graph.N() {
			t.Fatal("labels or tags do not match the graphs")
		}
	})
}

func FuzzEdgeList(f *testing.F) {
	f.Add(readSeed(f, "fixtures/tiny-edges.txt", 0))
	f.Add([]byte("0,1\n1,2\n"))
	f.Add([]byte("# nodes: 4\n0\t1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := readEdgeList("f.txt", b)
		checkLoaded(t, d, err)
	})
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func FuzzOGB(f *testing.F) {
	f.Add([]byte("0,1\n1,2\n2,0\n2,3\n3,4\n"), []byte("6"), []byte("0,1\n1,1\n2,2\n3,3\n4,4\n5,5\n"), []byte("0\n1\n2\n1\nnan\n0\n"), []byte("0\n1\n"))
	f.Add([]byte("0,1\n"), []byte(""), []byte(""), []byte("1,0\n0,1\n"), []byte(""))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, edges, num, feat, label, train []byte) {
		for name, b := range map[string][]byte{
			"raw/edge.csv.gz": edges, "raw/num-node-list.csv.gz": num, "raw/node-feat.csv.gz": feat,
			"raw/node-label.csv.gz": label, "split/s/train.csv.gz": train, "split/s/valid.csv.gz": nil, "split/s/test.csv.gz": nil,
		} {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if len(b) == 0 && name != "raw/edge.csv.gz" && !bytes.Contains([]byte(name), []byte("split")) {
				os.Remove(p)
				continue
			}
			if err := os.WriteFile(p, gzipped(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d, err := readOGB(dir)
		checkLoaded(t, d, err)
	})
}

func FuzzGraphSAGE(f *testing.F) {
	f.Add(readSeed(f, "fixtures/sage-tiny/tiny-G.json", 0), readSeed(f, "fixtures/sage-tiny/tiny-id_map.json", 0), readSeed(f, "fixtures/sage-tiny/tiny-class_map.json", 0))
	f.Add([]byte(`{"nodes":[{"id":0,"test":true},{"id":1}],"links":[{"source":0,"target":1}]}`), []byte(`{"0":0,"1":1}`), []byte(`{"0":1,"1":0}`))
	dir := f.TempDir()
	prefix := filepath.Join(dir, "p")
	f.Fuzz(func(t *testing.T, g, ids, classes []byte) {
		for suffix, b := range map[string][]byte{"-G.json": g, "-id_map.json": ids, "-class_map.json": classes} {
			if err := os.WriteFile(prefix+suffix, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d, err := readGraphSAGE(prefix)
		checkLoaded(t, d, err)
	})
}
