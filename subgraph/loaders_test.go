package subgraph

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bundled datasets are loaded once per test binary and shared.
var (
	cacheMu sync.Mutex
	cache   = map[string]*Dataset{}
)

func loadCached(t testing.TB, name string) *Dataset {
	t.Helper()
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if d, ok := cache[name]; ok {
		return d
	}
	d, err := Load(name)
	require.NoError(t, err, name)
	cache[name] = d
	return d
}

// Verified counts from testdata/README.md (checked there with numpy/scipy).
func TestBundledCounts(t *testing.T) {
	tests := []struct {
		name                       string
		nodes, edges, feats, nnz   int
		classes                    int
		train, val, test, multiNNZ int
	}{
		{"cora", 2708, 5278, 1433, 49216, 7, 140, 500, 1000, 0},
		{"citeseer", 3327, 4552, 3703, 105165, 6, 120, 500, 1000, 0},
		{"pubmed_partial", 19717, 44324, 500, -1, 3, 60, 500, 1000, 0},
		{"amazon_computers", 13752, 245861, 767, 3675081, 10, 0, 0, 0, 0},
		{"amazon_photo", 7650, 119081, 745, 1979909, 8, 0, 0, 0, 0},
		{"coauthor_cs", 18333, 81894, 6805, 1092079, 15, 0, 0, 0, 0},
		{"coauthor_physics", 34493, 247962, 8415, 1137311, 5, 0, 0, 0, 0},
		{"ppi_node2vec", 3890, 37845, 0, 0, 50, 0, 0, 0, 6640},
		{"blogcatalog", 10312, 333983, 0, 0, 39, 0, 0, 0, 14476},
		{"proteins", 43471, 81044, 3, 43471, 2, 0, 0, 0, 0},
		{"../testdata/cora/cora.npz", 2708, 5278, 1433, 49216, 7, 0, 0, 0, 0},
		{"../testdata/citeseer/citeseer.npz", 3312, 4536, 3703, 105165, 6, 0, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.name), func(t *testing.T) {
			d := loadCached(t, tt.name)
			g := d.Graph
			require.NoError(t, d.Validate())
			assert.Equal(t, tt.nodes, g.N(), "nodes")
			assert.Equal(t, tt.edges, g.NumUndirectedEdges(), "undirected edges")
			assert.Equal(t, 2*tt.edges, g.NumEdges(), "stored edges of a symmetric graph")
			assert.True(t, g.IsSymmetric())
			assert.Zero(t, g.SelfLoops())
			if tt.feats == 0 {
				assert.Nil(t, d.Features)
			} else {
				require.NotNil(t, d.Features)
				assert.Equal(t, tt.feats, d.Features.Cols, "features")
				assert.Equal(t, tt.nodes, d.Features.Rows)
				if tt.nnz >= 0 {
					assert.Equal(t, tt.nnz, d.Features.NNZ(), "feature nonzeros")
				}
			}
			assert.Equal(t, tt.classes, d.NumClasses, "classes")
			assert.Len(t, d.Train, tt.train)
			assert.Len(t, d.Val, tt.val)
			assert.Len(t, d.Test, tt.test)
			if tt.multiNNZ > 0 {
				require.NotNil(t, d.Multi)
				assert.Nil(t, d.Labels)
				assert.Equal(t, tt.multiNNZ, d.Multi.NNZ(), "label assignments")
				assert.Equal(t, tt.nodes, d.Multi.Rows)
			} else if tt.name != "proteins" {
				assert.Len(t, d.Labels, tt.nodes)
			}
		})
	}
}

func TestPlanetoidSplitAndLabels(t *testing.T) {
	cora := loadCached(t, "cora")
	counts := make([]int, cora.NumClasses)
	for _, c := range cora.Labels {
		require.GreaterOrEqual(t, c, int32(0))
		counts[c]++
	}
	assert.Equal(t, []int{351, 217, 418, 818, 426, 298, 180}, counts)
	assert.True(t, cora.Features.Binary())
	assert.Nil(t, cora.Features.Values, "binary features carry no values")
	assert.Equal(t, iota32(0, 140), cora.Train)
	assert.Equal(t, iota32(140, 640), cora.Val)
	assert.Equal(t, iota32(1708, 2708), cora.Test, "Cora's test.index covers 1708..2707")

	for _, name := range []string{"cora", "citeseer", "pubmed_partial"} {
		d := loadCached(t, name)
		per := make([]int, d.NumClasses)
		for _, v := range d.Train {
			per[d.Labels[v]]++
		}
		for c, n := range per {
			assert.Equal(t, 20, n, "%s: train nodes of class %d", name, c)
		}
		assert.True(t, slices.IsSorted(d.Test))
		b, err := os.ReadFile(filepath.Join("..", "testdata", name, "ind."+strings.TrimSuffix(name, "_partial")+".test.index"))
		require.NoError(t, err)
		idx, err := parseIndexLines("test.index", b)
		require.NoError(t, err)
		slices.Sort(idx)
		assert.Equal(t, idx, d.Test)
	}

	// CiteSeer: 15 test-range nodes absent from test.index have no
	// features and no label, as in the GCN loader.
	cs := loadCached(t, "citeseer")
	inTest := map[int32]bool{}
	for _, v := range cs.Test {
		inTest[v] = true
	}
	missing := 0
	for v := int32(2312); v < 3327; v++ {
		if !inTest[v] {
			missing++
			assert.Equal(t, int32(-1), cs.Labels[v], "node %d", v)
			assert.Equal(t, cs.Features.Indptr[v], cs.Features.Indptr[v+1], "node %d has features", v)
		}
	}
	assert.Equal(t, 15, missing)
	unlabelled := 0
	for _, c := range cs.Labels {
		if c < 0 {
			unlabelled++
		}
	}
	assert.Equal(t, 15, unlabelled)

	// pubmed_partial: feature rows only for x (60 train) and tx (1000 test).
	pm := loadCached(t, "pubmed_partial")
	want := map[int32]bool{}
	for _, v := range append(slices.Clone(pm.Train), pm.Test...) {
		want[v] = true
	}
	for v := 0; v < pm.Graph.N(); v++ {
		if pm.Features.Indptr[v] != pm.Features.Indptr[v+1] {
			assert.True(t, want[int32(v)], "node %d has a feature row", v)
		}
	}
	assert.False(t, pm.Features.Binary(), "PubMed features are TF-IDF")
}

// The Planetoid and gnn-benchmark copies of Cora are the same graph in a
// different node order: same degree sequence.
func TestCoraPlanetoidMatchesNPZ(t *testing.T) {
	a := loadCached(t, "cora").Graph.Degrees()
	b := loadCached(t, "../testdata/cora/cora.npz").Graph.Degrees()
	slices.Sort(a)
	slices.Sort(b)
	assert.Equal(t, a, b)
}

// Shchur et al., "Pitfalls of GNN Evaluation", Table 1 lists the sizes of
// each graph's largest connected component.
func TestLargestComponentMatchesShchur(t *testing.T) {
	tests := []struct {
		name         string
		nodes, edges int
	}{
		{"../testdata/cora/cora.npz", 2485, 5069},
		{"../testdata/citeseer/citeseer.npz", 2110, 3668},
		{"pubmed_partial", 19717, 44324},
		{"amazon_computers", 13381, 245778},
		{"amazon_photo", 7487, 119043},
		{"coauthor_cs", 18333, 81894},
		{"coauthor_physics", 34493, 247962},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.name), func(t *testing.T) {
			d, _ := loadCached(t, tt.name).LargestComponent()
			require.NoError(t, d.Graph.Validate())
			assert.Equal(t, tt.nodes, d.Graph.N())
			assert.Equal(t, tt.edges, d.Graph.NumUndirectedEdges())
			_, k := d.Graph.Components()
			assert.Equal(t, 1, k)
			assert.Len(t, d.Labels, tt.nodes)
			assert.Equal(t, tt.nodes, d.Features.Rows)
		})
	}
}

func TestRandomSplit(t *testing.T) {
	src := loadCached(t, "amazon_photo")
	d := *src
	d.RandomSplit(20, 30, 1)
	assert.Len(t, d.Train, 20*8)
	assert.Len(t, d.Val, 30*8)
	assert.Len(t, d.Test, 7650-50*8)
	per := make([]int, d.NumClasses)
	seen := map[int32]bool{}
	for _, part := range [][]int32{d.Train, d.Val, d.Test} {
		assert.True(t, slices.IsSorted(part))
		for _, v := range part {
			assert.False(t, seen[v], "node %d in two parts", v)
			seen[v] = true
		}
	}
	for _, v := range d.Train {
		per[d.Labels[v]]++
	}
	for c := range per {
		assert.Equal(t, 20, per[c])
	}
	e := *src
	e.RandomSplit(20, 30, 1)
	assert.Equal(t, d.Train, e.Train, "same seed, same split")
	e.RandomSplit(20, 30, 2)
	assert.NotEqual(t, d.Train, e.Train, "another seed, another split")
	assert.Empty(t, src.Train, "the cached dataset keeps no split")

	m := *loadCached(t, "ppi_node2vec")
	m.RandomSplit(1, 2, 3)
	assert.Len(t, m.Train, 50)
	assert.Len(t, m.Val, 100)
	assert.Len(t, m.Test, 3890-150)
}

func TestMultiLabel(t *testing.T) {
	ppi := loadCached(t, "ppi_node2vec")
	multi := 0
	for v := 0; v < ppi.Multi.Rows; v++ {
		k := ppi.Multi.Indptr[v+1] - ppi.Multi.Indptr[v]
		assert.Positive(t, k, "node %d has no label", v)
		if k > 1 {
			multi++
		}
	}
	assert.Equal(t, 1584, multi)
}

func TestGraphSetProteins(t *testing.T) {
	s, err := LoadGraphSet("proteins")
	require.NoError(t, err)
	assert.Equal(t, 1113, s.NumGraphs())
	assert.Equal(t, 43471, s.Graph.N())
	assert.Equal(t, 81044, s.Graph.NumUndirectedEdges())
	largest := 0
	for i := 0; i < s.NumGraphs(); i++ {
		largest = max(largest, int(s.Offsets[i+1]-s.Offsets[i]))
		for v := s.Offsets[i]; v < s.Offsets[i+1]; v++ {
			for _, u := range s.Graph.Neighbors(int(v)) {
				require.True(t, u >= s.Offsets[i] && u < s.Offsets[i+1], "edge leaves graph %d", i)
			}
		}
	}
	assert.Equal(t, 620, largest)
	tags := make([]int, s.NumTags)
	for _, x := range s.Tags {
		tags[x]++
	}
	assert.Equal(t, []int{21151, 20931, 1389}, tags)
	labels := make([]int, s.NumClasses)
	for _, x := range s.Labels {
		labels[x]++
	}
	assert.Equal(t, []int{663, 450}, labels)
	require.Len(t, s.Folds, 10)
	tested := map[int32]bool{}
	for _, f := range s.Folds {
		assert.Len(t, f.Train, 1002)
		assert.Len(t, f.Test, 111)
		for _, g := range f.Test {
			tested[g] = true
		}
	}
	assert.Len(t, tested, 1110)
	assert.Equal(t, 43471, s.Features.NNZ(), "one-hot tags")
}

func TestFixtures(t *testing.T) {
	fx := func(p string) string { return filepath.Join("..", "testdata", "fixtures", p) }
	// Every fixture is the same 6-node graph: triangle 0-1-2, path 2-3-4,
	// node 5 isolated.
	wantAdj := [][]int32{{1, 2}, {0, 2}, {0, 1, 3}, {2, 4}, {3}, {}}
	check := func(t *testing.T, g *Graph) {
		require.Equal(t, 6, g.N())
		for v, nb := range wantAdj {
			assert.Equal(t, nb, slices.Clip(append([]int32{}, g.Neighbors(v)...)), "node %d", v)
		}
	}
	t.Run("planetoid", func(t *testing.T) {
		d, err := Load(fx("planetoid-tiny"))
		require.NoError(t, err)
		check(t, d.Graph)
		assert.Equal(t, "planetoid-tiny", d.Name)
		assert.Equal(t, []int32{0, 1, 1, 0, -1, 1}, d.Labels)
		assert.Equal(t, 2, d.NumClasses)
		assert.Equal(t, &Features{Rows: 6, Cols: 3, Indptr: []int32{0, 1, 2, 4, 6, 6, 7}, Indices: []int32{0, 1, 0, 2, 1, 2, 2}}, d.Features)
		assert.Equal(t, []int32{0, 1}, d.Train)
		assert.Equal(t, []int32{2}, d.Val)
		assert.Equal(t, []int32{3, 5}, d.Test)
	})
	t.Run("ogb", func(t *testing.T) {
		d, err := Load(fx("ogbn-tiny"))
		require.NoError(t, err)
		check(t, d.Graph)
		assert.Equal(t, "ogbn-tiny", d.Name)
		assert.Equal(t, []int32{0, 1, 2, 1, -1, 0}, d.Labels)
		assert.Equal(t, 3, d.NumClasses)
		require.NotNil(t, d.Features)
		assert.Equal(t, 3, d.Features.Cols)
		assert.Equal(t, float32(4.2), d.Features.Dense[4*3+2])
		assert.Equal(t, []int32{0, 1, 2}, d.Train)
		assert.Equal(t, []int32{3}, d.Val)
		assert.Equal(t, []int32{4, 5}, d.Test)
	})
	t.Run("ogb-tasks", func(t *testing.T) {
		d, err := Load(fx("ogbn-tasks-tiny"))
		require.NoError(t, err)
		check(t, d.Graph)
		assert.Nil(t, d.Features)
		assert.Nil(t, d.Labels)
		require.NotNil(t, d.Multi)
		assert.Equal(t, []int32{0, 1, 2, 4, 4, 5, 6}, d.Multi.Indptr)
		assert.Equal(t, []int32{0, 1, 0, 1, 0, 1}, d.Multi.Indices)
	})
	t.Run("graphsage", func(t *testing.T) {
		for _, p := range []string{fx("sage-tiny"), fx("sage-tiny/tiny-G.json")} {
			d, err := Load(p)
			require.NoError(t, err)
			check(t, d.Graph)
			assert.Equal(t, []int32{0, 1, 2}, d.Train)
			assert.Equal(t, []int32{3}, d.Val)
			assert.Equal(t, []int32{4, 5}, d.Test)
			require.NotNil(t, d.Multi)
			assert.Equal(t, 2, d.NumClasses)
			// class 0 = even nodes, class 1 = multiples of 3
			assert.Equal(t, []int32{0, 2, 2, 3, 4, 5, 5}, d.Multi.Indptr)
			assert.Equal(t, []int32{0, 1, 0, 1, 0}, d.Multi.Indices)
			assert.Equal(t, float32(51), d.Features.Dense[5*2+1])
		}
	})
	t.Run("edge-list", func(t *testing.T) {
		d, err := Load(fx("tiny-edges.txt"))
		require.NoError(t, err)
		check(t, d.Graph)
		assert.Equal(t, "tiny-edges", d.Name)
	})
	t.Run("edge-npz", func(t *testing.T) {
		d, err := Load(fx("tiny-edges.npz"))
		require.NoError(t, err)
		check(t, d.Graph)
	})
	t.Run("tu", func(t *testing.T) {
		s, err := LoadGraphSet(fx("tu-tiny"))
		require.NoError(t, err)
		assert.Equal(t, []int32{0, 2, 5, 6}, s.Offsets)
		assert.Equal(t, []int32{0, 1, 0}, s.Labels)
		assert.Equal(t, []int32{0, 1, 2, 0, 1, 0}, s.Tags)
		assert.Equal(t, 4, s.Graph.NumUndirectedEdges())
		assert.Equal(t, []Fold{{Train: []int32{0, 1}, Test: []int32{2}}, {Train: []int32{1, 2}, Test: []int32{0}}}, s.Folds)
		d, err := Load(fx("tu-tiny"))
		require.NoError(t, err)
		assert.Equal(t, 6, d.Graph.N())
		assert.Equal(t, 2, d.NumClasses)
	})
}

func TestWriteEdgeListRoundTrip(t *testing.T) {
	g := loadCached(t, "cora").Graph
	var buf bytes.Buffer
	require.NoError(t, WriteEdgeList(&buf, g))
	h, err := parseEdgeList("cora.txt", &buf)
	require.NoError(t, err)
	assert.Equal(t, g.Indptr, h.Indptr)
	assert.Equal(t, g.Indices, h.Indices)
}

func TestWriteEdgeNPZRoundTrip(t *testing.T) {
	d := loadCached(t, "citeseer") // has isolated nodes and unlabelled ones
	var buf bytes.Buffer
	require.NoError(t, WriteEdgeNPZ(&buf, d.Graph, d.Labels))
	e, err := readNPZ("citeseer-edges.npz", buf.Bytes())
	require.NoError(t, err)
	assert.Equal(t, d.Graph.Indptr, e.Graph.Indptr)
	assert.Equal(t, d.Graph.Indices, e.Graph.Indices)
	assert.Equal(t, d.Labels, e.Labels)
	assert.Equal(t, 6, e.NumClasses)
	assert.ErrorIs(t, WriteEdgeNPZ(&buf, d.Graph, d.Labels[:3]), ErrInconsistent)
}

func TestNotFoundNamesSearchOrder(t *testing.T) {
	t.Setenv("QGTC_DATA", "/nonexistent/qgtc-data")
	_, err := Load("no_such_dataset")
	require.ErrorIs(t, err, ErrNotFound)
	msg := err.Error()
	assert.Contains(t, msg, `dataset "no_such_dataset" not found; looked in /nonexistent/qgtc-data/no_such_dataset, testdata/no_such_dataset`)
	assert.Contains(t, msg, filepath.Join("testdata", "no_such_dataset"))
	_, err = Load("./missing/file.npz")
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestQGTCDataOverridesBundled(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "cora"), 0o755))
	b, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "tiny-edges.txt"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cora", "edges.txt"), b, 0o644))
	t.Setenv("QGTC_DATA", dir)
	d, err := Load("cora")
	require.NoError(t, err)
	assert.Equal(t, 6, d.Graph.N())
	assert.Equal(t, "cora", d.Name)
}

// writeTemp writes files (relative name -> content) under a fresh folder.
func writeTemp(t testing.TB, files map[string][]byte) string {
	dir := t.TempDir()
	for name, b := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	return dir
}

// npyBytes encodes a 1-D or 2-D little-endian array.
func npyBytes(descr string, shape []int, data []byte) []byte {
	dims := ""
	for _, d := range shape {
		dims += strconv.Itoa(d) + ", "
	}
	hdr := "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + strings.TrimSuffix(dims, " ") + "), }"
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	out := []byte("\x93NUMPY\x01\x00")
	out = binary.LittleEndian.AppendUint16(out, uint16(len(hdr)))
	return append(append(out, hdr...), data...)
}

func gzBytes(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// matSparseElem encodes one sparse double miMATRIX element.
func matSparseElem(name string, rows, cols int, jc, ir []int32, pr []float64, compress bool) []byte {
	le := binary.LittleEndian
	elem := func(typ uint32, payload []byte) []byte {
		b := le.AppendUint32(nil, typ)
		b = le.AppendUint32(b, uint32(len(payload)))
		b = append(b, payload...)
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		return b
	}
	i32 := func(v []int32) []byte {
		var b []byte
		for _, x := range v {
			b = le.AppendUint32(b, uint32(x))
		}
		return b
	}
	var f64 []byte
	for _, x := range pr {
		f64 = le.AppendUint64(f64, math.Float64bits(x))
	}
	flags := le.AppendUint32(nil, mxSPARSE)
	flags = le.AppendUint32(flags, uint32(len(ir)))
	var body []byte
	body = append(body, elem(miUINT32, flags)...)
	body = append(body, elem(miINT32, i32([]int32{int32(rows), int32(cols)}))...)
	body = append(body, elem(miINT8, []byte(name))...)
	body = append(body, elem(miINT32, i32(ir))...)
	body = append(body, elem(miINT32, i32(jc))...)
	body = append(body, elem(miDOUBLE, f64)...)
	m := le.AppendUint32(nil, miMATRIX)
	m = le.AppendUint32(m, uint32(len(body)))
	m = append(m, body...)
	if !compress {
		return m
	}
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(m)
	w.Close()
	c := le.AppendUint32(nil, miCOMPRESSED)
	c = le.AppendUint32(c, uint32(z.Len()))
	return append(c, z.Bytes()...)
}

func matFile(elems ...[]byte) []byte {
	h := make([]byte, 128)
	copy(h, "MATLAB 5.0 MAT-file, written by qgtc tests")
	for i := 42; i < 116; i++ {
		h[i] = ' '
	}
	binary.LittleEndian.PutUint16(h[124:], 0x0100)
	copy(h[126:], "IM")
	for _, e := range elems {
		h = append(h, e...)
	}
	return h
}

// A 3-node path 0-1-2 with labels {0}, {1}, {0, 1}.
func tinyMAT(compress bool) []byte {
	return matFile(
		matSparseElem("network", 3, 3, []int32{0, 1, 3, 4}, []int32{1, 0, 2, 1}, []float64{1, 1, 1, 1}, compress),
		matSparseElem("group", 3, 2, []int32{0, 2, 4}, []int32{0, 2, 1, 2}, []float64{1, 1, 1, 1}, compress),
	)
}

func TestMATSmall(t *testing.T) {
	for _, compress := range []bool{false, true} {
		d, err := readMAT("tiny.mat", tinyMAT(compress))
		require.NoError(t, err)
		assert.Equal(t, []int32{0, 1, 3, 4}, d.Graph.Indptr)
		assert.Equal(t, []int32{1, 0, 2, 1}, d.Graph.Indices)
		assert.Equal(t, []int32{0, 1, 2, 4}, d.Multi.Indptr)
		assert.Equal(t, []int32{0, 1, 0, 1}, d.Multi.Indices)
		assert.Equal(t, 2, d.NumClasses)
	}
}

// Malformed, truncated or inconsistent input is an error naming the file
// and the field, never a panic.
func TestMalformed(t *testing.T) {
	i32 := func(v ...int32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		}
		return b
	}
	npz := func(members map[string][]byte) []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for _, k := range slices.Sorted(maps.Keys(members)) {
			w, _ := zw.Create(k + ".npy")
			w.Write(members[k])
		}
		zw.Close()
		return buf.Bytes()
	}
	goodAdj := map[string][]byte{
		"adj_shape":   npyBytes("<i4", []int{2}, i32(2, 2)),
		"adj_indptr":  npyBytes("<i4", []int{3}, i32(0, 1, 2)),
		"adj_indices": npyBytes("<i4", []int{2}, i32(1, 0)),
		"adj_data":    npyBytes("<i4", []int{2}, i32(1, 1)),
	}
	with := func(k string, v []byte) map[string][]byte {
		m := map[string][]byte{}
		for a, b := range goodAdj {
			m[a] = b
		}
		m[k] = v
		return m
	}
	d, err := readNPZ("ok.npz", npz(goodAdj))
	require.NoError(t, err)
	require.Equal(t, 1, d.Graph.NumUndirectedEdges())

	tests := []struct {
		name   string
		load   func() error
		is     error
		substr []string
	}{
		{"npz not zip", func() error { _, err := readNPZ("x.npz", []byte("hello")); return err }, ErrFormat, []string{"x.npz", "zip"}},
		{"npz missing member", func() error {
			m := with("adj_data", nil)
			delete(m, "adj_data")
			_, err := readNPZ("x.npz", npz(m))
			return err
		}, ErrFormat, []string{"x.npz", "adj_data"}},
		{"npy bad magic", func() error { _, err := readNPZ("x.npz", npz(with("adj_indptr", []byte("NOTNUMPY00")))); return err }, ErrFormat, []string{"x.npz:adj_indptr", "magic"}},
		{"npy truncated data", func() error {
			b := npyBytes("<i4", []int{3}, i32(0, 1, 2))
			_, err := readNPZ("x.npz", npz(with("adj_indptr", b[:len(b)-2])))
			return err
		}, ErrFormat, []string{"x.npz:adj_indptr", "data", "needs 12 bytes"}},
		{"npy bad header", func() error {
			_, err := readNPZ("x.npz", npz(with("adj_indptr", npyBytes("<i4", []int{3}, i32(0, 1, 2))[:30])))
			return err
		}, ErrFormat, []string{"x.npz:adj_indptr", "header"}},
		{"index out of range", func() error {
			_, err := readNPZ("x.npz", npz(with("adj_indices", npyBytes("<i4", []int{2}, i32(1, 7)))))
			return err
		}, ErrInconsistent, []string{"adj_indices", "element 1 = 7"}},
		{"indptr length", func() error {
			_, err := readNPZ("x.npz", npz(with("adj_indptr", npyBytes("<i4", []int{2}, i32(0, 2)))))
			return err
		}, ErrInconsistent, []string{"adj_indptr", "want adj_shape[0]+1"}},
		{"indptr decreasing", func() error {
			_, err := readNPZ("x.npz", npz(with("adj_indptr", npyBytes("<i4", []int{3}, i32(0, 2, 1)))))
			return err
		}, ErrInconsistent, []string{"x.npz:adj", "indptr"}},
		{"object dtype", func() error {
			_, err := readNPZ("x.npz", npz(with("adj_indptr", npyBytes("|O", []int{3}, nil))))
			return err
		}, ErrFormat, []string{"adj_indptr", "descr", "not a numeric array"}},
		{"edge npz sparse ids", func() error {
			_, err := readNPZ("e.npz", npz(map[string][]byte{
				"src_li": npyBytes("<i4", []int{1}, i32(0)),
				"dst_li": npyBytes("<i4", []int{1}, i32(2000000000)),
			}))
			return err
		}, ErrInconsistent, []string{"e.npz", "renumber"}},
		{"pickle truncated", func() error {
			b, err := os.ReadFile("../testdata/cora/ind.cora.y")
			require.NoError(t, err)
			dir := t.TempDir()
			for _, ext := range []string{"x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"} {
				c, err := os.ReadFile("../testdata/cora/ind.cora." + ext)
				require.NoError(t, err)
				if ext == "y" {
					c = b[:len(b)/2]
				}
				require.NoError(t, os.WriteFile(filepath.Join(dir, "ind.cora."+ext), c, 0o644))
			}
			_, err = Load(dir)
			return err
		}, ErrFormat, []string{"ind.cora.y", "pickle"}},
		{"planetoid missing file", func() error {
			dir := writeTemp(t, map[string][]byte{"ind.q.graph": []byte("x")})
			_, err := Load(dir)
			return err
		}, ErrFormat, []string{"ind.q.x"}},
		{"mat truncated", func() error { b := tinyMAT(false); _, err := readMAT("t.mat", b[:len(b)-20]); return err }, ErrFormat, []string{"t.mat", "claims"}},
		{"mat bad endian", func() error { b := tinyMAT(false); b[126] = 'X'; _, err := readMAT("t.mat", b); return err }, ErrFormat, []string{"t.mat", "endian"}},
		{"mat bad zlib", func() error { b := tinyMAT(true); b[140] ^= 0xff; _, err := readMAT("t.mat", b); return err }, ErrFormat, []string{"t.mat", "miCOMPRESSED"}},
		{"mat no network", func() error { _, err := readMAT("t.mat", matFile()); return err }, ErrFormat, []string{"t.mat", `"network"`}},
		{"mat row out of range", func() error {
			_, err := readMAT("t.mat", matFile(matSparseElem("network", 2, 2, []int32{0, 1, 1}, []int32{5}, []float64{1}, false)))
			return err
		}, ErrInconsistent, []string{"t.mat", `"network"`, "ir", "entry 0 = 5"}},
		{"tu bad neighbour", func() error { _, err := parseTU("T.txt", []byte("1\n2 0\n0 1 5\n0 0\n")); return err }, ErrInconsistent, []string{"T.txt", "line 3", "neighbour 5"}},
		{"tu truncated", func() error { _, err := parseTU("T.txt", []byte("2\n2 0\n0 1 1\n0 1 0\n")); return err }, ErrFormat, []string{"T.txt", "truncated"}},
		{"tu degree", func() error { _, err := parseTU("T.txt", []byte("1\n2 0\n0 3 1\n0 0\n")); return err }, ErrFormat, []string{"T.txt", "degree 3"}},
		{"edge list id", func() error { _, err := readEdgeList("e.txt", []byte("0 1\n1 -2\n")); return err }, ErrFormat, []string{"e.txt", "line 2", `"-2"`}},
		{"edge list short", func() error { _, err := readEdgeList("e.txt", []byte("0 1\n3\n")); return err }, ErrFormat, []string{"e.txt", "line 2"}},
		{"edge list sparse ids", func() error { _, err := readEdgeList("e.txt", []byte("0 2000000000\n")); return err }, ErrFormat, []string{"e.txt", "renumber"}},
		{"ogb bad edge", func() error {
			dir := writeTemp(t, map[string][]byte{"raw/edge.csv.gz": gzBytes("0,1\n1,x\n")})
			_, err := Load(dir)
			return err
		}, ErrFormat, []string{"edge.csv.gz", "line 2"}},
		{"ogb label count", func() error {
			dir := writeTemp(t, map[string][]byte{"raw/edge.csv.gz": gzBytes("0,1\n1,2\n"), "raw/node-label.csv.gz": gzBytes("0\n1\n")})
			_, err := Load(dir)
			return err
		}, ErrInconsistent, []string{"node-label.csv.gz", "2 labels for 3 nodes"}},
		{"ogb not gzip", func() error {
			dir := writeTemp(t, map[string][]byte{"raw/edge.csv.gz": []byte("0,1\n")})
			_, err := Load(dir)
			return err
		}, ErrFormat, []string{"edge.csv.gz"}},
		{"sage unknown link", func() error {
			dir := writeTemp(t, map[string][]byte{
				"p-G.json":         []byte(`{"nodes":[{"id":0},{"id":1}],"links":[{"source":0,"target":9}]}`),
				"p-id_map.json":    []byte(`{"0":0,"1":1}`),
				"p-class_map.json": []byte(`{"0":1,"1":0}`),
			})
			_, err := Load(dir)
			return err
		}, ErrInconsistent, []string{"p-G.json", "links[0].target"}},
		{"sage bad json", func() error {
			dir := writeTemp(t, map[string][]byte{"p-G.json": []byte(`{"nodes":[`), "p-id_map.json": []byte(`{}`), "p-class_map.json": []byte(`{}`)})
			_, err := Load(dir)
			return err
		}, ErrFormat, []string{"p-G.json"}},
		{"sage feats rows", func() error {
			dir := writeTemp(t, map[string][]byte{
				"p-G.json":         []byte(`{"nodes":[{"id":0},{"id":1}],"links":[{"source":0,"target":1}]}`),
				"p-id_map.json":    []byte(`{"0":0,"1":1}`),
				"p-class_map.json": []byte(`{"0":1,"1":0}`),
				"p-feats.npy":      npyBytes("<i4", []int{3}, i32(1, 2, 3)),
			})
			_, err := Load(dir)
			return err
		}, ErrInconsistent, []string{"p-feats.npy", "shape"}},
		{"unknown folder", func() error { _, err := Load(t.TempDir()); return err }, ErrFormat, []string{"cannot tell the format"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.load()
			require.Error(t, err)
			assert.ErrorIs(t, err, tt.is)
			for _, s := range tt.substr {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

// BenchmarkLoad times a full Load (read, decompress, parse, build the CSR)
// of bundled datasets; nodes/s and edges/s are the figures to compare.
func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{"cora", "citeseer", "amazon_computers", "coauthor_physics", "blogcatalog", "proteins"} {
		b.Run("dataset="+name, func(b *testing.B) {
			var d *Dataset
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if d, err = Load(name); err != nil {
					b.Fatal(err)
				}
			}
			s := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(d.Graph.N())/s, "nodes/s")
			b.ReportMetric(float64(d.Graph.NumUndirectedEdges())/s, "edges/s")
		})
	}
}

// Edge homophily (fraction of edges joining same-label nodes) is 0.81 for
// Cora, 0.74 for CiteSeer and 0.80 for PubMed (Zhu et al., "Beyond
// Homophily in GNNs", NeurIPS 2020, Table 5). It confirms that row j of
// ty goes to node test.index[j]: placing it at sorted(test.index)[j]
// instead scrambles the test labels and drops the figure far below.
func TestPlanetoidHomophily(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    float64
	}{{"cora", 0.81}, {"citeseer", 0.74}, {"pubmed_partial", 0.80}} {
		d := loadCached(t, tt.name)
		same, total := 0, 0
		for v := 0; v < d.Graph.N(); v++ {
			for _, u := range d.Graph.Neighbors(v) {
				if d.Labels[v] >= 0 && d.Labels[u] >= 0 {
					total++
					if d.Labels[v] == d.Labels[u] {
						same++
					}
				}
			}
		}
		assert.InDelta(t, tt.h, float64(same)/float64(total), 0.005, tt.name)
	}
}

func TestTUFoldWithoutTestFile(t *testing.T) {
	dir := writeTemp(t, map[string][]byte{
		"T.txt":                      []byte("1\n2 0\n0 1 1\n0 1 0\n"),
		"10fold_idx/train_idx-1.txt": []byte("0\n"),
	})
	_, err := LoadGraphSet(dir)
	require.ErrorIs(t, err, ErrFormat)
	assert.Contains(t, err.Error(), "test_idx-1.txt")
}

// The same defaultdict adjacency pickled by Python 3 at protocols 0, 2, 4.
func TestPickleProtocols(t *testing.T) {
	for proto, b := range map[int]string{
		0: "ccollections\ndefaultdict\np0\n(c__builtin__\nlist\np1\ntp2\nRp3\nI0\n(lp4\nI1\naI2\nasI1\n(lp5\nI0\nasI2\n(lp6\nI0\nas.",
		2: "\x80\x02ccollections\ndefaultdict\nq\x00c__builtin__\nlist\nq\x01\x85q\x02Rq\x03(K\x00]q\x04(K\x01K\x02eK\x01]q\x05K\x00aK\x02]q\x06K\x00au.",
		4: "\x80\x04\x95Q\x00\x00\x00\x00\x00\x00\x00\x8c\x0bcollections\x94\x8c\x0bdefaultdict\x94\x93\x94\x8c\x08builtins\x94\x8c\x04list\x94\x93\x94\x85\x94R\x94(K\x00]\x94(K\x01K\x02eK\x01]\x94K\x00aK\x02]\x94K\x00au.",
	} {
		v, err := unpickle("adj.pkl", []byte(b))
		require.NoError(t, err, "protocol %d", proto)
		src, dst, err := pyAdjacency(v, 3)
		require.NoError(t, err, "protocol %d", proto)
		assert.Equal(t, []int32{0, 0, 1, 2}, src, "protocol %d", proto)
		assert.Equal(t, []int32{1, 2, 0, 0}, dst, "protocol %d", proto)
		_, _, err = pyAdjacency(v, 2)
		assert.ErrorContains(t, err, "neighbour of node 0 2 is not a node id in [0, 2)")
	}
	_, err := unpickle("adj.pkl", []byte("\x80\x02ccollections\ndefault"))
	assert.ErrorIs(t, err, ErrFormat)
	assert.ErrorContains(t, err, "adj.pkl: pickle at byte")
}

func TestLocateRelativeToSearchDirs(t *testing.T) {
	d, err := Load("cora/cora.npz")
	require.NoError(t, err)
	assert.Equal(t, 2708, d.Graph.N())
	assert.Equal(t, "cora", d.Name)
	_, err = Load("cora/nothing.npz")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), filepath.Join("testdata", "cora", "nothing.npz"))
}

func TestPickledArrays(t *testing.T) {
	b, err := os.ReadFile("../testdata/fixtures/pickle/tiny-csr.pkl")
	require.NoError(t, err)
	v, err := unpickle("tiny-csr.pkl", b)
	require.NoError(t, err)
	m, err := pyCSR(v)
	require.NoError(t, err)
	assert.Equal(t, &Features{Rows: 3, Cols: 4, Indptr: []int32{0, 2, 2, 3}, Indices: []int32{1, 3, 0}, Values: []float32{1, 1, 0.5}}, m)
	b, err = os.ReadFile("../testdata/fixtures/pickle/tiny-y.pkl")
	require.NoError(t, err)
	v, err = unpickle("tiny-y.pkl", b)
	require.NoError(t, err)
	a, err := pyNDArray(v)
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3}, a.shape)
	assert.Equal(t, []float32{0, 1, 0, 1, 0, 0}, a.float32s())
	_, err = pyCSR(v)
	assert.ErrorContains(t, err, "not a pickled scipy csr_matrix")
}

// TestRandomSplitTestByScan: the test nodes, made by a scan, are what
// sorting the shuffled pools' rests gives (the split before the scan), for
// labelled nodes with some unlabelled (-1) and for no labels at all.
func TestRandomSplitTestByScan(t *testing.T) {
	n := 5000
	g, err := FromEdges(n, []int32{0}, []int32{1}, BuildOptions{Symmetrize: true})
	require.NoError(t, err)
	labels := make([]int32, n)
	for v := range labels {
		labels[v] = int32(v*7%5) - 1 // -1 is unlabelled
	}
	for _, lab := range [][]int32{labels, nil} {
		d := &Dataset{Graph: g, Labels: lab, NumClasses: 4}
		d.RandomSplit(20, 30, 9)
		// The rest of each shuffled pool, as the split drew them.
		rng := rand.New(rand.NewPCG(9, 0x9e3779b97f4a7c15))
		var want []int32
		rest := func(pool []int32, nTrain, nVal int) {
			rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
			want = append(want, pool[min(len(pool), nTrain+nVal):]...)
		}
		if lab == nil {
			rest(iota32(0, n), 4*20, 4*30)
		} else {
			byClass := make([][]int32, 4)
			for v, c := range lab {
				if c >= 0 {
					byClass[c] = append(byClass[c], int32(v))
				}
			}
			for _, pool := range byClass {
				rest(pool, 20, 30)
			}
		}
		slices.Sort(want)
		assert.Equal(t, want, d.Test)
		assert.Len(t, d.Train, 80)
		assert.Len(t, d.Val, 120)
	}
}
