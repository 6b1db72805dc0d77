package subgraph

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// featChunk is the number of rows whose features one random stream
// draws: fixed, so the features depend on the seed alone, never on the
// number of goroutines.
const featChunk = 1 << 14

// PlantedFeatures returns sparse node features correlated with the
// classes: each node has nnz distinct columns of cols set, about half of
// them in a band of nnz columns that belongs to its class (class c owns
// columns c·stride.. modulo cols), the rest anywhere, each with a count in
// 1..8 drawn larger in the class band. A classifier can learn the class
// from the features, but not trivially: the bands of classes overlap when
// classes·nnz passes cols. Rows are drawn in parallel, chunk by chunk from
// streams fixed by the seed.
func PlantedFeatures(labels []int32, classes, cols, nnz int, seed uint64) (*Features, error) {
	n := len(labels)
	if cols < 1 || nnz < 1 || nnz > cols {
		return nil, fmt.Errorf("%w: %d features per node of %d columns", ErrSynth, nnz, cols)
	}
	if classes < 1 || int64(n)*int64(nnz) > MaxSynthFeatureEntries {
		return nil, fmt.Errorf("%w: %d nodes × %d features over %d classes", ErrSynth, n, nnz, classes)
	}
	f := &Features{Rows: n, Cols: cols, Indptr: make([]int32, n+1), Indices: make([]int32, n*nnz), Values: make([]float32, n*nnz)}
	for v := range n {
		f.Indptr[v+1] = int32((v + 1) * nnz)
	}
	stride := max(1, cols/classes)
	chunks := (n + featChunk - 1) / featChunk
	var wg sync.WaitGroup
	next := make(chan int, chunks)
	for c := range chunks {
		next <- c
	}
	close(next)
	for range min(runtime.GOMAXPROCS(0), chunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := make([]bool, cols)
			for c := range next {
				r := rng64(seed^0xfea7, uint64(c))
				for v := c * featChunk; v < min(n, (c+1)*featChunk); v++ {
					row := f.Indices[v*nnz : (v+1)*nnz]
					band := int(labels[v]) * stride
					for i := range row {
						for {
							x := r.Uint64()
							col := int(below(uint32(x), uint32(cols)))
							if x>>32&1 == 0 {
								col = (band + int(below(uint32(x>>33), uint32(nnz)))) % cols
							}
							if !seen[col] {
								seen[col] = true
								row[i] = int32(col)
								break
							}
						}
					}
					slices.Sort(row)
					for i, col := range row {
						seen[col] = false
						cnt := 1 + below(uint32(r.Uint64()), 4)
						if d := (int(col) - band + cols) % cols; d < nnz {
							cnt += 4 // the class band counts more
						}
						f.Values[v*nnz+i] = float32(cnt)
					}
				}
			}
		}()
	}
	wg.Wait()
	return f, nil
}

// PlantedFeaturesBytes is what PlantedFeatures keeps for n nodes of nnz
// features each.
func PlantedFeaturesBytes(n, nnz int) int64 { return 4*int64(n+1) + 8*int64(n)*int64(nnz) }

// WriteBenchmarkNPZ writes g, its features and labels in the
// gnn-benchmark layout the loader reads (Shchur et al.'s .npz): adj_* as a
// CSR matrix holding each undirected edge once (src < dst; the loader
// makes it symmetric), attr_* as a CSR matrix, labels, all as 4-byte
// little-endian arrays, stored uncompressed. Arrays are streamed in pieces
// of 1 MiB, so writing needs no copy of them.
func WriteBenchmarkNPZ(w io.Writer, g *Graph, f *Features, labels []int32) error {
	n := g.N()
	if f == nil || f.Rows != n || f.Dense != nil || len(labels) != n {
		return fmt.Errorf("%w: benchmark npz wants %d sparse feature rows and labels", ErrInconsistent, n)
	}
	// The upper triangle: rows of g are sorted, so its entries above the
	// diagonal are a suffix of each row.
	upIndptr := make([]int32, n+1)
	edges := 0
	for v := range n {
		nb := g.Neighbors(v)
		k, _ := slices.BinarySearch(nb, int32(v)+1)
		edges += len(nb) - k
		upIndptr[v+1] = int32(edges)
	}
	zw := zip.NewWriter(w)
	put := func(name, descr string, shape []int, write func(b []byte) []byte) error {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
		if err != nil {
			return err
		}
		dims := make([]string, len(shape))
		for i, d := range shape {
			dims[i] = strconv.Itoa(d) + ","
		}
		hdr := "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + strings.Join(dims, " ") + "), }"
		hdr += strings.Repeat(" ", 63-(10+len(hdr))%64) + "\n"
		b := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)), byte(len(hdr)>>8))
		if _, err := fw.Write(append(b, hdr...)); err != nil {
			return err
		}
		buf := make([]byte, 0, 1<<20)
		for {
			buf = write(buf[:0])
			if len(buf) == 0 {
				return nil
			}
			if _, err := fw.Write(buf); err != nil {
				return err
			}
		}
	}
	// int32s streams s; float32s streams v.
	int32s := func(s []int32) func([]byte) []byte {
		return func(b []byte) []byte {
			for len(s) > 0 && len(b)+4 <= cap(b) {
				b = binary.LittleEndian.AppendUint32(b, uint32(s[0]))
				s = s[1:]
			}
			return b
		}
	}
	float32s := func(v []float32, one bool, count int) func([]byte) []byte {
		return func(b []byte) []byte {
			for count > 0 && len(b)+4 <= cap(b) {
				x := float32(1)
				if !one {
					x, v = v[0], v[1:]
				}
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
				count--
			}
			return b
		}
	}
	upper := func() func([]byte) []byte { // the indices of upIndptr's rows
		v, i := 0, 0
		return func(b []byte) []byte {
			for v < n && len(b)+4 <= cap(b) {
				nb := g.Neighbors(v)
				lo := len(nb) - int(upIndptr[v+1]-upIndptr[v])
				if lo+i >= len(nb) {
					v, i = v+1, 0
					continue
				}
				b = binary.LittleEndian.AppendUint32(b, uint32(nb[lo+i]))
				i++
			}
			return b
		}
	}
	vals := f.Values
	for _, a := range []struct {
		name, descr string
		shape       []int
		write       func([]byte) []byte
	}{
		{"adj_indptr", "<i4", []int{n + 1}, int32s(upIndptr)},
		{"adj_indices", "<i4", []int{edges}, upper()},
		{"adj_data", "<f4", []int{edges}, float32s(nil, true, edges)},
		{"adj_shape", "<i4", []int{2}, int32s([]int32{int32(n), int32(n)})},
		{"attr_indptr", "<i4", []int{n + 1}, int32s(f.Indptr)},
		{"attr_indices", "<i4", []int{len(f.Indices)}, int32s(f.Indices)},
		{"attr_data", "<f4", []int{len(f.Indices)}, float32s(vals, vals == nil, len(f.Indices))},
		{"attr_shape", "<i4", []int{2}, int32s([]int32{int32(n), int32(f.Cols)})},
		{"labels", "<i4", []int{n}, int32s(labels)},
	} {
		if err := put(a.name, a.descr, a.shape, a.write); err != nil {
			return err
		}
	}
	return zw.Close()
}
