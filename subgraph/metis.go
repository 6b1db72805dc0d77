package subgraph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
)

// ErrMETIS reports a malformed METIS graph or partition file.
var ErrMETIS = errors.New("subgraph: bad METIS file")

// WriteMETIS writes g in the METIS graph format read by gpmetis: a header
// "n m" (m undirected edges) and one line per vertex listing its
// neighbours, 1-based. The graph written is g's symmetric closure without
// self-loops, the graph Partition works on, so cuts are comparable.
func WriteMETIS(w io.Writer, g *Graph) error {
	wg := fromGraph(g, runtime.GOMAXPROCS(0))
	bw := bufio.NewWriterSize(w, 1<<20)
	fmt.Fprintf(bw, "%d %d\n", wg.n(), len(wg.adjncy)/2)
	var line []byte
	for v := 0; v < wg.n(); v++ {
		line = line[:0]
		for i, u := range wg.adjncy[wg.xadj[v]:wg.xadj[v+1]] {
			if i > 0 {
				line = append(line, ' ')
			}
			line = strconv.AppendInt(line, int64(u)+1, 10)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadMETIS reads an unweighted METIS graph file (format code 0 or absent;
// '%' lines are comments). The adjacency lists must be symmetric, which is
// checked, as is the edge count in the header.
func ReadMETIS(r io.Reader) (*Graph, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<30)
	line := 0
	next := func() ([]byte, bool) {
		for sc.Scan() {
			line++
			b := sc.Bytes()
			if len(b) > 0 && b[0] == '%' {
				continue
			}
			return b, true
		}
		return nil, false
	}
	head, ok := next()
	if !ok {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMETIS, err)
		}
		return nil, fmt.Errorf("%w: empty file, want a header line \"n m\"", ErrMETIS)
	}
	hf := bytes.Fields(head)
	if len(hf) < 2 || len(hf) > 4 {
		return nil, fmt.Errorf("%w: header %q, want \"n m [fmt [ncon]]\"", ErrMETIS, head)
	}
	n, err1 := strconv.ParseInt(string(hf[0]), 10, 32)
	m, err2 := strconv.ParseInt(string(hf[1]), 10, 64)
	if err1 != nil || err2 != nil || n < 0 || m < 0 || n > 1<<31-2 || m > 1<<30 {
		return nil, fmt.Errorf("%w: header %q has bad counts", ErrMETIS, head)
	}
	if len(hf) >= 3 {
		if f := string(hf[2]); f != "0" && f != "000" && f != "00" {
			return nil, fmt.Errorf("%w: format code %s (only unweighted graphs, code 0, are read)", ErrMETIS, f)
		}
	}
	indptr := make([]int32, 1, min(n, 1<<20)+1)
	var indices []int32
	for v := int64(0); v < n; v++ {
		b, ok := next()
		if !ok {
			return nil, fmt.Errorf("%w: %d vertex lines, header says %d", ErrMETIS, v, n)
		}
		start := len(indices)
		for _, f := range bytes.Fields(b) {
			u, err := strconv.ParseInt(string(f), 10, 64)
			if err != nil || u < 1 || u > n {
				return nil, fmt.Errorf("%w: line %d: neighbour %q not in 1..%d", ErrMETIS, line, f, n)
			}
			if u-1 == v {
				return nil, fmt.Errorf("%w: line %d: self-loop on vertex %d", ErrMETIS, line, v+1)
			}
			indices = append(indices, int32(u-1))
			if int64(len(indices)) > 2*m {
				return nil, fmt.Errorf("%w: more than 2·%d adjacency entries (line %d)", ErrMETIS, m, line)
			}
		}
		row := indices[start:]
		slices.Sort(row)
		for i := 1; i < len(row); i++ {
			if row[i] == row[i-1] {
				return nil, fmt.Errorf("%w: line %d: neighbour %d repeated", ErrMETIS, line, row[i]+1)
			}
		}
		indptr = append(indptr, int32(len(indices)))
	}
	for {
		b, ok := next()
		if !ok {
			break
		}
		if len(bytes.TrimSpace(b)) > 0 {
			return nil, fmt.Errorf("%w: line %d: more vertex lines than the %d in the header", ErrMETIS, line, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMETIS, err)
	}
	if int64(len(indices)) != 2*m {
		return nil, fmt.Errorf("%w: %d adjacency entries, header says %d edges (want %d)", ErrMETIS, len(indices), m, 2*m)
	}
	g := &Graph{Indptr: indptr, Indices: indices}
	if !isSymmetric(g) {
		return nil, fmt.Errorf("%w: adjacency lists are not symmetric", ErrMETIS)
	}
	return g, nil
}

// ReadMETISPartition reads a gpmetis output file (one part number per line,
// line v for vertex v) for a graph of n nodes into k parts.
func ReadMETISPartition(r io.Reader, n, k int) (*Partitioning, error) {
	sc := bufio.NewScanner(r)
	p := &Partitioning{K: k, Parts: make([]int32, 0, n)}
	for sc.Scan() {
		f := bytes.TrimSpace(sc.Bytes())
		if len(f) == 0 {
			continue
		}
		q, err := strconv.ParseInt(string(f), 10, 32)
		if err != nil || q < 0 || int(q) >= k {
			return nil, fmt.Errorf("%w: partition line %d: %q is not a part in 0..%d", ErrMETIS, len(p.Parts)+1, f, k-1)
		}
		if len(p.Parts) == n {
			return nil, fmt.Errorf("%w: partition has more than %d lines", ErrMETIS, n)
		}
		p.Parts = append(p.Parts, int32(q))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMETIS, err)
	}
	if len(p.Parts) != n {
		return nil, fmt.Errorf("%w: partition has %d lines for %d nodes", ErrMETIS, len(p.Parts), n)
	}
	return p, nil
}
