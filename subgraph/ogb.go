package subgraph

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// OGB node-property datasets (ogbn-arxiv, -products, -proteins, ...) as the
// ogb package downloads and unzips them: a folder with
//
//	raw/edge.csv.gz           "src,dst" per line, no header
//	raw/num-node-list.csv.gz  the node count (optional)
//	raw/node-feat.csv.gz      F comma-separated floats per node (optional)
//	raw/node-label.csv.gz     one class per node, or T 0/1 task columns
//	                          (multi-label, as ogbn-proteins); "nan" = none
//	split/<kind>/{train,valid,test}.csv.gz  node ids, one per line
//
// Point Load (or --dataset) at that folder. We cannot ship a real copy
// (tens of MB and up); testdata/fixtures/ogbn-tiny is a small hand-written
// folder in the same format.

// gzLines calls fn with the fields of every non-empty line of a gzipped
// CSV file; a missing optional file gives ok=false.
func gzLines(in files, path string, optional bool, fn func(line int, f []string) error) (ok bool, err error) {
	fh, err := in.Open(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	defer fh.Close()
	cin := &countReader{r: fh}
	zr, err := gzip.NewReader(cin)
	if err != nil {
		return false, fmt.Errorf("%w: %s: %v", ErrFormat, path, err)
	}
	sc := bufio.NewScanner(&ratioReader{r: zr, in: cin, what: path})
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if err := fn(line, strings.Split(s, ",")); err != nil {
			return false, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, ErrFormat) {
			return false, err
		}
		return false, fmt.Errorf("%w: %s: line %d: %v", ErrFormat, path, line+1, err)
	}
	return true, nil
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ratioReader fails once a stream of unknown compressed size has yielded
// more than inflateBudget of the compressed bytes read so far.
type ratioReader struct {
	r    io.Reader
	in   *countReader
	out  int64
	what string
}

func (z *ratioReader) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	z.out += int64(n)
	if z.out > inflateBudget(int(z.in.n)) {
		return n, fmt.Errorf("%w: %s inflates past %d bytes from %d compressed bytes (at most %dx plus %d MiB is accepted)", ErrFormat, z.what, z.out, z.in.n, inflateRatio, inflateFloor>>20)
	}
	return n, err
}

func readOGB(in files, dir string) (*Dataset, error) {
	raw := func(f string) string { return filepath.Join(dir, "raw", f) }
	var src, dst []int32
	maxID := int64(-1)
	edgeFile := raw("edge.csv.gz")
	if _, err := gzLines(in, edgeFile, false, func(line int, f []string) error {
		if len(f) < 2 {
			return fmt.Errorf("%w: %s: line %d: want \"src,dst\"", ErrFormat, edgeFile, line)
		}
		for i, p := range f[:2] {
			v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil || v < 0 || v > math.MaxInt32-1 {
				return fmt.Errorf("%w: %s: line %d: node id %s is not a non-negative int32", ErrFormat, edgeFile, line, excerpt(p))
			}
			maxID = max(maxID, v)
			if i == 0 {
				src = append(src, int32(v))
			} else {
				dst = append(dst, int32(v))
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	n := int(maxID + 1)
	numFile := raw("num-node-list.csv.gz")
	if _, err := gzLines(in, numFile, true, func(line int, f []string) error {
		v, err := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
		if err != nil || v < maxID+1 || v > math.MaxInt32-1 {
			return fmt.Errorf("%w: %s: line %d: node count %s, want an int32 of at least %d (largest edge endpoint + 1)", ErrInconsistent, numFile, line, excerpt(f[0]), maxID+1)
		}
		n = int(v)
		return nil
	}); err != nil {
		return nil, err
	}
	if n >= maxSparseID && n > 16*len(src) {
		return nil, fmt.Errorf("%w: %s: %d nodes for %d edges is implausible", ErrInconsistent, numFile, n, len(src))
	}
	g, err := FromEdges(n, src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", edgeFile, err)
	}
	d := &Dataset{Name: filepath.Base(filepath.Clean(dir)), Graph: g}

	featFile := raw("node-feat.csv.gz")
	var dense []float32
	cols, rows := -1, 0
	ok, err := gzLines(in, featFile, true, func(line int, f []string) error {
		if cols < 0 {
			cols = len(f)
		}
		if len(f) != cols {
			return fmt.Errorf("%w: %s: line %d: %d values, earlier rows have %d", ErrInconsistent, featFile, line, len(f), cols)
		}
		if rows >= n {
			return fmt.Errorf("%w: %s: line %d: more feature rows than the %d nodes", ErrInconsistent, featFile, line, n)
		}
		for _, p := range f {
			x, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
			if err != nil {
				return fmt.Errorf("%w: %s: line %d: feature %s is not a number", ErrFormat, featFile, line, excerpt(p))
			}
			dense = append(dense, float32(x))
		}
		rows++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ok {
		if rows != n {
			return nil, fmt.Errorf("%w: %s: %d feature rows for %d nodes", ErrInconsistent, featFile, rows, n)
		}
		d.Features = &Features{Rows: n, Cols: cols, Dense: dense}
	}

	labFile := raw("node-label.csv.gz")
	var labels []int32
	var mip, mix []int32
	tasks := -1
	ok, err = gzLines(in, labFile, true, func(line int, f []string) error {
		if tasks < 0 {
			tasks = len(f)
			mip = []int32{0}
		}
		if len(f) != tasks {
			return fmt.Errorf("%w: %s: line %d: %d columns, earlier rows have %d", ErrInconsistent, labFile, line, len(f), tasks)
		}
		if len(labels) >= n || len(mip) > n {
			return fmt.Errorf("%w: %s: line %d: more label rows than the %d nodes", ErrInconsistent, labFile, line, n)
		}
		for c, p := range f {
			p = strings.TrimSpace(p)
			if strings.EqualFold(p, "nan") || p == "" {
				if tasks == 1 {
					labels = append(labels, -1)
				}
				continue
			}
			x, err := strconv.ParseFloat(p, 64)
			if err != nil || x != math.Trunc(x) || x < 0 || x > math.MaxInt32-1 {
				return fmt.Errorf("%w: %s: line %d: label %s is not a non-negative integer", ErrFormat, labFile, line, excerpt(p))
			}
			if tasks == 1 {
				labels = append(labels, int32(x))
			} else if x != 0 {
				mix = append(mix, int32(c))
			}
		}
		if tasks > 1 {
			mip = append(mip, int32(len(mix)))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ok {
		if tasks == 1 {
			if len(labels) != n {
				return nil, fmt.Errorf("%w: %s: %d labels for %d nodes", ErrInconsistent, labFile, len(labels), n)
			}
			d.Labels, d.NumClasses = labels, numClasses(labels)
		} else {
			if len(mip) != n+1 {
				return nil, fmt.Errorf("%w: %s: %d label rows for %d nodes", ErrInconsistent, labFile, len(mip)-1, n)
			}
			d.Multi = &Features{Rows: n, Cols: tasks, Indptr: mip, Indices: mix}
			d.NumClasses = tasks
		}
	}

	kinds, _ := in.Glob(filepath.Join(dir, "split", "*"))
	if len(kinds) > 1 {
		return nil, fmt.Errorf("%w: %s: several splits %v; keep one", ErrFormat, filepath.Join(dir, "split"), kinds)
	}
	if len(kinds) == 1 {
		for _, part := range []struct {
			file string
			dst  *[]int32
		}{{"train.csv.gz", &d.Train}, {"valid.csv.gz", &d.Val}, {"test.csv.gz", &d.Test}} {
			p := filepath.Join(kinds[0], part.file)
			if _, err := gzLines(in, p, false, func(line int, f []string) error {
				v, err := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
				if err != nil || v < 0 || v >= int64(n) {
					return fmt.Errorf("%w: %s: line %d: node id %s outside [0, %d)", ErrInconsistent, p, line, excerpt(f[0]), n)
				}
				*part.dst = append(*part.dst, int32(v))
				return nil
			}); err != nil {
				return nil, err
			}
			slices.Sort(*part.dst)
		}
	}
	if err := d.checkValues(dir); err != nil {
		return nil, err
	}
	return d, nil
}
