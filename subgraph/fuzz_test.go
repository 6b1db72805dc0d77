package subgraph

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Fuzz targets for every parser: any input must give a dataset that
// passes Validate or an error, never a panic or a runaway allocation.
// Run each with: go test ./subgraph -run '^$' -fuzz '^FuzzX$' -fuzztime 60s

func checkLoaded(t *testing.T, d *Dataset, err error) {
	if err != nil {
		return
	}
	if verr := d.Validate(); verr != nil {
		t.Fatalf("loaded an invalid dataset: %v", verr)
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

// memFiles is an in-memory files for fuzzing: no disk I/O per input.
type memFiles map[string][]byte

func (m memFiles) Open(p string) (io.ReadCloser, error) {
	b, ok := m[p]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrNotExist}
	}
	return io.NopCloser(bytes.NewReader(b)), nil
}

func (m memFiles) Glob(pattern string) ([]string, error) {
	seen := map[string]bool{}
	for k := range m {
		for d := k; d != "." && d != "/"; d = filepath.Dir(d) {
			if ok, _ := filepath.Match(pattern, d); ok {
				seen[d] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// FuzzPlanetoid replaces one file of the 6-node Planetoid fixture with the
// input (small files keep the fuzzer fast; Cora's are 4-260 KB).
func FuzzPlanetoid(f *testing.F) {
	exts := []string{"x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"}
	orig := memFiles{}
	for _, e := range exts {
		orig["d/ind.tiny."+e] = readSeed(f, "fixtures/planetoid-tiny/ind.tiny."+e, 0)
	}
	for i, e := range exts {
		f.Add(uint8(i), orig["d/ind.tiny."+e])
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		m := maps.Clone(orig)
		m["d/ind.tiny."+exts[int(which)%len(exts)]] = b
		d, err := readPlanetoid(m, "d", "tiny")
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

// gzw is reused: a fresh gzip.Writer allocates ~800 KB, which dominated
// FuzzOGB. Fuzz functions run one at a time within a worker.
var gzw = gzip.NewWriter(io.Discard)

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	gzw.Reset(&buf)
	gzw.Write(b)
	gzw.Close()
	return buf.Bytes()
}

func FuzzOGB(f *testing.F) {
	f.Add([]byte("0,1\n1,2\n2,0\n2,3\n3,4\n"), []byte("6"), []byte("0,1\n1,1\n2,2\n3,3\n4,4\n5,5\n"), []byte("0\n1\n2\n1\nnan\n0\n"), []byte("0\n1\n"))
	f.Add([]byte("0,1\n"), []byte(""), []byte(""), []byte("1,0\n0,1\n"), []byte(""))
	f.Fuzz(func(t *testing.T, edges, num, feat, label, train []byte) {
		m := memFiles{
			"d/raw/edge.csv.gz":      gzipped(edges),
			"d/split/s/train.csv.gz": gzipped(train),
			"d/split/s/valid.csv.gz": gzipped(nil),
			"d/split/s/test.csv.gz":  gzipped(nil),
		}
		for name, b := range map[string][]byte{"num-node-list": num, "node-feat": feat, "node-label": label} {
			if len(b) > 0 { // empty: the optional file is absent
				m["d/raw/"+name+".csv.gz"] = gzipped(b)
			}
		}
		d, err := readOGB(m, "d")
		checkLoaded(t, d, err)
	})
}

func FuzzGraphSAGE(f *testing.F) {
	f.Add(readSeed(f, "fixtures/sage-tiny/tiny-G.json", 0), readSeed(f, "fixtures/sage-tiny/tiny-id_map.json", 0), readSeed(f, "fixtures/sage-tiny/tiny-class_map.json", 0), readSeed(f, "fixtures/sage-tiny/tiny-feats.npy", 0))
	f.Add([]byte(`{"nodes":[{"id":0,"test":true},{"id":1}],"links":[{"source":0,"target":1}]}`), []byte(`{"0":0,"1":1}`), []byte(`{"0":1,"1":0}`), []byte(nil))
	f.Fuzz(func(t *testing.T, g, ids, classes, feats []byte) {
		m := memFiles{"d/p-G.json": g, "d/p-id_map.json": ids, "d/p-class_map.json": classes}
		if len(feats) > 0 {
			m["d/p-feats.npy"] = feats
		}
		d, err := readGraphSAGE(m, "d/p")
		checkLoaded(t, d, err)
	})
}
