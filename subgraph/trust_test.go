package subgraph

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regression tests for issue #17 (no silent wrong answers, no crash on a
// crafted file), one per item the loaders own.

// Item 4: NaN and Inf are refused naming row and column, in every loader
// that reads float features; an extreme value loads with a warning.
func TestFeatureValues(t *testing.T) {
	ogb := func(feat string) error {
		dir := writeTemp(t, map[string][]byte{
			"raw/edge.csv.gz":      gzBytes("0,1\n1,2\n"),
			"raw/node-feat.csv.gz": gzBytes(feat),
		})
		_, err := Load(dir)
		return err
	}
	sage := func(feats []byte) error {
		dir := writeTemp(t, map[string][]byte{
			"p-G.json":         []byte(`{"nodes":[{"id":0},{"id":1}],"links":[{"source":0,"target":1}]}`),
			"p-id_map.json":    []byte(`{"0":0,"1":1}`),
			"p-class_map.json": []byte(`{"0":1,"1":0}`),
			"p-feats.npy":      feats,
		})
		_, err := Load(dir)
		return err
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"graphsage nan", sage(npyBytes("<f4", []int{2, 2}, leF32(0, 1, float32(math.NaN()), 0))), "row 1, column 0 is NaN"},
		{"ogb nan", ogb("1,0\n0,nan\n1,1\n"), "row 1, column 1 is NaN"},
		{"ogb inf", ogb("1,0\n0,1\n1,-inf\n"), "row 2, column 1 is -Inf"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Error(t, tt.err)
			assert.ErrorIs(t, tt.err, ErrValue)
			assert.Contains(t, tt.err.Error(), tt.want)
		})
	}

	t.Run("extreme value warns", func(t *testing.T) {
		vals := make([]float32, 3)
		for i := range vals {
			vals[i] = 1
		}
		vals[2] = 1e30
		d, err := readNPZ("x.npz", tinyGNN(shape64(3, 3), npyBytes("<f4", []int{3}, leF32(vals...)), labels64(0, 1, 0)))
		require.NoError(t, err)
		require.Len(t, d.Warnings, 1)
		assert.Contains(t, d.Warnings[0], "feature value 1e+30 at row 2, column 2 is extreme")
	})
	t.Run("ordinary counts do not warn", func(t *testing.T) {
		d := loadCached(t, "coauthor_cs") // counts 1..105
		assert.Empty(t, d.Warnings)
	})
}

// Item 7: a declared feature shape is bounded in entries and, since the
// first layer scales with them whatever the row count, in columns (3 ×
// 3e8 passed the entry bound and asked for tens of gigabytes).
func TestFeatureShapeBounds(t *testing.T) {
	for _, tt := range []struct {
		rows, cols int
		err        string // "" when accepted
	}{
		{2708, MaxFeatureCols, ""},
		{3, MaxFeatureCols + 1, "3×65537, more than 65536 columns"},
		{3, 300_000_000, "more than 65536 columns"},
		{MaxFeatureEntries/1000 + 1, 1000, "more than 1073741824 entries"},
	} {
		err := (&Features{Rows: tt.rows, Cols: tt.cols}).checkSize("f.npz", "features")
		if tt.err == "" {
			assert.NoError(t, err, "%d×%d", tt.rows, tt.cols)
			continue
		}
		if assert.Error(t, err, "%d×%d", tt.rows, tt.cols) {
			assert.ErrorIs(t, err, ErrInconsistent)
			assert.Contains(t, err.Error(), tt.err)
		}
	}
}

// copyPlanetoid copies a bundled Planetoid folder into dir/<as>, leaving
// out the named files.
func copyPlanetoid(t *testing.T, from, name, as string, skip ...string) string {
	dir := filepath.Join(t.TempDir(), as)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, ext := range []string{"x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"} {
		if slices.Contains(skip, ext) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("..", "testdata", from, "ind."+name+"."+ext))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "ind."+name+"."+ext), b, 0o644))
	}
	return dir
}

// Item 5: a Planetoid folder without allx used to load 1,568 all-zero
// feature rows (Cora) and train to 77%; it is refused unless the folder
// says it is partial, and then it loads with a warning.
func TestPlanetoidMissingAllx(t *testing.T) {
	_, err := Load(copyPlanetoid(t, "cora", "cora", "cora", "allx"))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrFormat)
	assert.Contains(t, err.Error(), "ind.cora.allx is missing")

	d, err := Load(copyPlanetoid(t, "cora", "cora", "cora_partial", "allx"))
	require.NoError(t, err)
	require.Len(t, d.Warnings, 1)
	assert.Contains(t, d.Warnings[0], "1568 of 2708 nodes have all-zero features")
	lc, nodes := d.LargestComponent()
	require.NotNil(t, nodes, "Cora is not connected")
	assert.Equal(t, d.Warnings, lc.Warnings, "a subset keeps the warnings")

	d = loadCached(t, "pubmed_partial")
	require.Len(t, d.Warnings, 1)
	assert.Contains(t, d.Warnings[0], "18657 of 19717 nodes")

	assert.Empty(t, loadCached(t, "cora").Warnings)
}

// Item 6: one rule for comments and headers on every line; a BOM is not
// part of the first line.
func TestEdgeListLines(t *testing.T) {
	for _, tt := range []struct {
		name         string
		in           string
		nodes, edges int
		err          string // substring of the error, "" for none
	}{
		{"negative on line 1", "-1 2\n0 1\n", 0, 0, `line 1: node id "-1"`},
		{"negative on line 2", "0 1\n-1 2\n", 0, 0, `line 2: node id "-1"`},
		{"plus sign", "+1 2\n", 3, 1, ""},
		{"csv header", "src,dst\n0,1\n1,2\n", 3, 2, ""},
		{"header after edges", "0 1\nsrc dst\n", 0, 0, `line 2: "src dst" is not an edge`},
		{"two headers", "src dst\nfrom to\n0 1\n", 0, 0, "line 2"},
		{"comments anywhere", "% a\n0 1\n# b\n1 2\n", 3, 2, ""},
		{"bom then edge", "\uFEFF0 1\n1 2\n", 3, 2, ""},
		{"bom then node count", "\uFEFF# nodes: 10\n0 1\n", 10, 1, ""},
		{"bom then header", "\uFEFFsrc,dst\n0,1\n", 2, 1, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := readEdgeList("e.txt", []byte(tt.in))
			if tt.err != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrFormat)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.nodes, d.Graph.N())
			assert.Equal(t, tt.edges, d.Graph.NumUndirectedEdges())
		})
	}
}

// Item 9: a declared edge count that disagrees with the lines read (an
// interrupted `qgtc data synth -o x.txt`) is an error naming both.
func TestEdgeListDeclaredCounts(t *testing.T) {
	g, _, err := PlantedPartition(200, 4, 6, 0.1, 1)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteEdgeList(&buf, g))
	full := buf.Bytes()
	d, err := readEdgeList("s.txt", full)
	require.NoError(t, err)
	require.Equal(t, g.NumUndirectedEdges(), d.Graph.NumUndirectedEdges())

	cut := full[:bytes.LastIndexByte(full[:len(full)/2], '\n')+1]
	_, err = readEdgeList("s.txt", cut)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInconsistent)
	assert.Contains(t, err.Error(), "declares "+strconv.Itoa(g.NumUndirectedEdges())+" edges but "+strconv.Itoa(bytes.Count(cut, []byte("\n"))-2)+" were read")

	for _, tt := range []struct {
		in  string
		err string
	}{
		{"# edges: 2\n0 1\n1 2\n", ""},
		{"# edges: 4\n0 1\n1 0\n1 2\n2 1\n", ""}, // counts lines (directed)
		{"# edges: 3\n0 1\n1 2\n", "declares 3 edges but 2 were read"},
		{"# edges: x\n0 1\n", `edge count "x"`},
	} {
		_, err := readEdgeList("e.txt", []byte(tt.in))
		if tt.err == "" {
			assert.NoError(t, err, tt.in)
		} else if assert.Error(t, err, tt.in) {
			assert.Contains(t, err.Error(), tt.err)
		}
	}
}

// Item 8: decompression is bounded by the file's size: a gzip bomb in an
// OGB folder and a bomb nested in a zipped npz stop at the budget.
func TestInflateBudget(t *testing.T) {
	t.Run("ogb gzip", func(t *testing.T) {
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		w.Write([]byte("0,1\n"))
		nl := bytes.Repeat([]byte("\n"), 1<<20)
		for range 40 { // 40 MB of blank lines in ~40 KB
			w.Write(nl)
		}
		w.Close()
		dir := writeTemp(t, map[string][]byte{"raw/edge.csv.gz": z.Bytes()})
		_, err := Load(dir)
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrFormat)
		assert.Contains(t, err.Error(), "edge.csv.gz inflates past")
	})
	t.Run("exact fit", func(t *testing.T) {
		for _, tt := range []struct {
			size, budget int64
			ok           bool
		}{{100, 100, true}, {100, 99, false}, {0, 0, true}} {
			left := tt.budget
			_, err := io.ReadAll(&budgetReader{r: bytes.NewReader(make([]byte, tt.size)), left: &left, what: "s"})
			assert.Equal(t, tt.ok, err == nil, "%d bytes, budget %d: %v", tt.size, tt.budget, err)
		}
	})
	t.Run("nested npz", func(t *testing.T) {
		// The inner npz is 10 MB (a stored member of zeros), so its own
		// budget would allow its 12 MB deflated member; the outer zip
		// deflates it to ~25 KB, and the budget is the outer file's.
		var inner bytes.Buffer
		zw := zip.NewWriter(&inner)
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: "pad.npy", Method: zip.Store})
		w.Write(make([]byte, 10<<20))
		w, _ = zw.CreateHeader(&zip.FileHeader{Name: "adj_indptr.npy", Method: zip.Store})
		w.Write(npyBytes("<i4", []int{1}, le32(0)))
		w, _ = zw.CreateHeader(&zip.FileHeader{Name: "adj_shape.npy", Method: zip.Deflate})
		w.Write(npyBytes("<i4", []int{3 << 20}, make([]byte, 12<<20)))
		zw.Close()
		require.Less(t, int64(12<<20), inflateBudget(inner.Len()))
		var outer bytes.Buffer
		zw = zip.NewWriter(&outer)
		w, _ = zw.CreateHeader(&zip.FileHeader{Name: "x.npz", Method: zip.Deflate})
		w.Write(inner.Bytes())
		zw.Close()
		require.Less(t, outer.Len(), 64<<10)
		_, err := readNPZ("o.zip", outer.Bytes())
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrFormat)
		assert.Contains(t, err.Error(), `member "adj_shape.npy" declares`)
		assert.Contains(t, err.Error(), "may inflate to")
	})
}

// Item 14: errors quote at most a short, escaped excerpt of file content.
func TestErrorExcerpts(t *testing.T) {
	long := strings.Repeat("\x01\xfe", 5000)
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"edge list line", func() error { _, err := readEdgeList("e.txt", []byte("0 1\n5"+long+"\n")); return err }()},
		{"edge list id", func() error { _, err := readEdgeList("e.txt", []byte("0 1\n5"+long+" 1\n")); return err }()},
		{"npy header key", func() error {
			_, err := parseNPY("a.npy", append([]byte("\x93NUMPY\x01\x00\x10\x27"), []byte("{'"+strings.Repeat("k", 9990)+"' 1}")...))
			return err
		}()},
		{"npy many dimensions", func() error {
			hdr := "{'descr': '<i4', 'fortran_order': False, 'shape': (" + strings.Repeat("1,", 5000) + "), }"
			_, err := readNPZ("x.npz", tinyGNN(shape64(3, 3), append([]byte("\x93NUMPY\x02\x00"), append(le32(int32(len(hdr))), hdr...)...), labels64(0, 1, 0)))
			return err
		}()},
		{"tu token", func() error { _, err := parseTU("T.txt", []byte("1\n2 x"+long+"\n")); return err }()},
		{"index lines", func() error { _, err := parseIndexLines("t.index", []byte("1\n"+long+"\n")); return err }()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Error(t, tt.err)
			msg := tt.err.Error()
			assert.Less(t, len(msg), 300, msg)
			assert.NotContains(t, msg, "\x01")
			assert.NotContains(t, msg, "\xfe")
		})
	}
}
