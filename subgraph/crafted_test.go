package subgraph

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Crafted files from issue #17: each one used to load quietly, crash or
// take gigabytes. They live in the fuzz corpora (testdata/fuzz/FuzzX/
// crafted-*), where the fuzzers start from them and TestCraftedFiles and
// cmd/qgtc's TestCraftedCLI check that each gives its one-line error.
// Regenerate them with: go test ./subgraph -run TestCraftedFiles -update-crafted

var updateCrafted = flag.Bool("update-crafted", false, "rewrite the crafted-* fuzz corpus files")

type craftedFile struct {
	name   string // corpus file name under testdata/fuzz/<target>/
	target string // FuzzNPZ, FuzzMAT or FuzzEdgeList
	build  func() []byte
	is     error
	substr []string
}

func le32(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}

func leF32(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// npzOf zips .npy members (stored) in the given order; deflate names
// members to compress instead.
func npzOf(members [][2]string, data map[string][]byte, deflate map[string]bool) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, m := range members {
		method := zip.Store
		if deflate[m[0]] {
			method = zip.Deflate
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: m[0] + ".npy", Method: method})
		if err != nil {
			panic(err)
		}
		w.Write(data[m[0]])
	}
	zw.Close()
	return buf.Bytes()
}

// tinyGNN is a 3-node path in gnn-benchmark layout, with attr and labels
// members that the crafted files replace.
func tinyGNN(attrShape []byte, attrData []byte, labels []byte) []byte {
	names := [][2]string{{"adj_data"}, {"adj_indices"}, {"adj_indptr"}, {"adj_shape"},
		{"attr_data"}, {"attr_indices"}, {"attr_indptr"}, {"attr_shape"}, {"labels"}}
	data := map[string][]byte{
		"adj_data":     npyBytes("<f4", []int{4}, leF32(1, 1, 1, 1)),
		"adj_indices":  npyBytes("<i4", []int{4}, le32(1, 0, 2, 1)),
		"adj_indptr":   npyBytes("<i4", []int{4}, le32(0, 1, 3, 4)),
		"adj_shape":    npyBytes("<i8", []int{2}, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 3), 3)),
		"attr_data":    attrData,
		"attr_indices": npyBytes("<i4", []int{3}, le32(0, 1, 2)),
		"attr_indptr":  npyBytes("<i4", []int{4}, le32(0, 1, 2, 3)),
		"attr_shape":   attrShape,
		"labels":       labels,
	}
	return npzOf(names, data, nil)
}

func shape64(r, c int64) []byte {
	return npyBytes("<i8", []int{2}, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, uint64(r)), uint64(c)))
}

func labels64(v ...int64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return npyBytes("<i8", []int{len(v)}, b)
}

// deflated compresses n zero bytes after prefix, writing the zeros in
// chunks so that the test never holds them.
func deflated(prefix []byte, n int, zlibWrap bool) []byte {
	var buf bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	if zlibWrap {
		w, _ = zlib.NewWriterLevel(&buf, zlib.BestCompression)
	} else {
		w, _ = flate.NewWriter(&buf, flate.BestCompression)
	}
	w.Write(prefix)
	zero := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(zero) {
		w.Write(zero[:min(left, len(zero))])
	}
	w.Close()
	return buf.Bytes()
}

// rawMember adds a member whose deflated bytes and declared size are
// given as is, as a crafted archive may claim anything.
func rawMember(zw *zip.Writer, name string, comp []byte, declared uint64, crc uint32) {
	w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CompressedSize64: uint64(len(comp)), UncompressedSize64: declared, CRC32: crc})
	if err != nil {
		panic(err)
	}
	w.Write(comp)
}

// stubIndptr adds a small adj_indptr, which marks a gnn-benchmark npz.
func stubIndptr(zw *zip.Writer) {
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "adj_indptr.npy", Method: zip.Store})
	w.Write(npyBytes("<i4", []int{1}, le32(0)))
}

const bombSize = 24 << 20 // past inflateFloor plus 100x a ~25 KB file

var craftedFiles = []craftedFile{
	{"crafted-attr-shape-1e9", "FuzzNPZ", func() []byte {
		return tinyGNN(shape64(3, 1_000_000_000), npyBytes("<f4", []int{3}, leF32(1, 1, 1)), labels64(0, 1, 0))
	}, ErrInconsistent, []string{"features are 3×1000000000", "more than 1073741824 entries"}},
	{"crafted-attr-cols-3e8", "FuzzNPZ", func() []byte {
		// Under MaxFeatureEntries, but a first layer of 3e8 × hidden floats.
		return tinyGNN(shape64(3, 300_000_000), npyBytes("<f4", []int{3}, leF32(1, 1, 1)), labels64(0, 1, 0))
	}, ErrInconsistent, []string{"features are 3×300000000", "more than 65536 columns"}},
	{"crafted-label-1e6", "FuzzNPZ", func() []byte {
		return tinyGNN(shape64(3, 3), npyBytes("<f4", []int{3}, leF32(1, 1, 1)), labels64(0, 1, 1_000_000))
	}, ErrInconsistent, []string{"1000001 classes for 3 nodes"}},
	{"crafted-nan-feature", "FuzzNPZ", func() []byte {
		return tinyGNN(shape64(3, 3), npyBytes("<f4", []int{3}, leF32(1, float32(math.NaN()), 1)), labels64(0, 1, 0))
	}, ErrValue, []string{"row 1, column 1 is NaN"}},
	{"crafted-inf-feature", "FuzzNPZ", func() []byte {
		big := binary.LittleEndian.AppendUint64(nil, math.Float64bits(1))
		big = binary.LittleEndian.AppendUint64(big, math.Float64bits(1))
		big = binary.LittleEndian.AppendUint64(big, math.Float64bits(1e300)) // +Inf as float32
		return tinyGNN(shape64(3, 3), npyBytes("<f8", []int{3}, big), labels64(0, 1, 0))
	}, ErrValue, []string{"row 2, column 2 is +Inf"}},
	{"crafted-zip-declares-1tb", "FuzzNPZ", func() []byte {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		rawMember(zw, "adj_shape.npy", deflated(nil, 1000, false), 1<<40, 0)
		stubIndptr(zw)
		zw.Close()
		return buf.Bytes()
	}, ErrFormat, []string{`member "adj_shape.npy" declares 1099511627776 bytes`}},
	{"crafted-zip-bomb", "FuzzNPZ", func() []byte {
		// A valid header for bombSize/4 int32s, then zeros, declared
		// honestly: refused before inflating, from the sizes alone.
		hdr := npyBytes("<i4", []int{bombSize / 4}, nil)
		comp := deflated(hdr, bombSize, false)
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		crc := crc32.NewIEEE()
		crc.Write(hdr)
		zero := make([]byte, 1<<20)
		for left := bombSize; left > 0; left -= len(zero) {
			crc.Write(zero[:min(left, len(zero))])
		}
		rawMember(zw, "adj_shape.npy", comp, uint64(len(hdr)+bombSize), crc.Sum32())
		stubIndptr(zw)
		zw.Close()
		return buf.Bytes()
	}, ErrFormat, []string{`member "adj_shape.npy" declares 25165952 bytes`, "may inflate to"}},
	{"crafted-mat-bomb", "FuzzMAT", func() []byte {
		z := deflated(nil, bombSize, true)
		c := binary.LittleEndian.AppendUint32(nil, miCOMPRESSED)
		c = binary.LittleEndian.AppendUint32(c, uint32(len(z)))
		return matFile(append(c, z...))
	}, ErrFormat, []string{"miCOMPRESSED element holds data past the 8-byte element it starts with"}},
	{"crafted-mat-declares-1gb", "FuzzMAT", func() []byte {
		// A miMATRIX tag of 1 GiB, then zeros: refused from the tag.
		tag := binary.LittleEndian.AppendUint32(nil, miMATRIX)
		tag = binary.LittleEndian.AppendUint32(tag, 1<<30)
		z := deflated(tag, bombSize, true)
		c := binary.LittleEndian.AppendUint32(nil, miCOMPRESSED)
		c = binary.LittleEndian.AppendUint32(c, uint32(len(z)))
		return matFile(append(c, z...))
	}, ErrFormat, []string{"miCOMPRESSED element holds an element of 1073741824 bytes, more than this"}},
	{"crafted-mat-classes-1e6", "FuzzMAT", func() []byte {
		// group: 3 rows, 10^6 columns, no entries (jc all zero), compressed.
		jc := make([]int32, 1_000_001)
		return matFile(
			matSparseElem("network", 3, 3, []int32{0, 1, 3, 4}, []int32{1, 0, 2, 1}, []float64{1, 1, 1, 1}, false),
			matSparseElem("group", 3, 1_000_000, jc, nil, nil, true),
		)
	}, ErrInconsistent, []string{"1000000 classes for 3 nodes"}},
	{"crafted-edges-negative-first", "FuzzEdgeList", func() []byte {
		return []byte("-1 2\n0 1\n")
	}, ErrFormat, []string{"line 1", `node id "-1"`}},
	{"crafted-edges-truncated", "FuzzEdgeList", func() []byte {
		return []byte("# qgtc edge list, 5 undirected edges\n# nodes: 6\n0 1\n1 2\n")
	}, ErrInconsistent, []string{"declares 5 edges but 2 were read"}},
	{"crafted-edges-binary", "FuzzEdgeList", func() []byte {
		b := []byte("0 1\n\xff") // then 3000 bytes of noise, no newline
		for i := range 3000 {
			b = append(b, byte(i*131+7)|0x80)
		}
		return append(b, '\n')
	}, ErrFormat, []string{"line 2"}},
}

func corpusPath(c craftedFile) string { return filepath.Join("testdata", "fuzz", c.target, c.name) }

// readCorpus decodes a one-[]byte fuzz corpus file.
func readCorpus(t testing.TB, path string) []byte {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "go test fuzz v1\n[]byte(")
	require.True(t, ok, path)
	s, ok = strings.CutSuffix(s, ")")
	require.True(t, ok, path)
	v, err := strconv.Unquote(s)
	require.NoError(t, err, path)
	return []byte(v)
}

func loadCrafted(c craftedFile, b []byte) error {
	var err error
	switch c.target {
	case "FuzzNPZ":
		_, err = readNPZ(c.name+".npz", b)
	case "FuzzMAT":
		_, err = readMAT(c.name+".mat", b)
	default:
		_, err = readEdgeList(c.name+".txt", b)
	}
	return err
}

// TestCraftedFiles: every crafted file is one short error of the right
// kind, quickly and within a bounded allocation (the old loaders accepted
// most of them, and inflated the bombs to a gigabyte each).
func TestCraftedFiles(t *testing.T) {
	for _, c := range craftedFiles {
		t.Run(c.name, func(t *testing.T) {
			if *updateCrafted {
				b := c.build()
				require.NoError(t, os.MkdirAll(filepath.Dir(corpusPath(c)), 0o755))
				require.NoError(t, os.WriteFile(corpusPath(c), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644))
			}
			b := readCorpus(t, corpusPath(c))
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			start := time.Now()
			err := loadCrafted(c, b)
			took := time.Since(start)
			runtime.ReadMemStats(&m1)
			require.Error(t, err)
			assert.ErrorIs(t, err, c.is)
			for _, s := range c.substr {
				assert.Contains(t, err.Error(), s)
			}
			msg := err.Error()
			assert.NotContains(t, msg, "\n")
			assert.Less(t, len(msg), 400, "error too long: %s", msg)
			for _, r := range msg {
				assert.True(t, strconv.IsPrint(r) || r == '×', "unprintable %q in %s", r, msg)
			}
			alloc := m1.TotalAlloc - m0.TotalAlloc
			assert.Less(t, alloc, uint64(inflateBudget(len(b))*3), "allocated %d bytes for a %d-byte file", alloc, len(b))
			t.Logf("%d bytes: %v in %v, %d MB allocated", len(b), err, took, alloc>>20)
		})
	}
}
