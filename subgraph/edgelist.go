package subgraph

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// maxSparseID bounds node ids in edge lists relative to their size: a
// file naming node 4,000,000,000 in ten lines would otherwise make us
// allocate for billions of isolated nodes.
const maxSparseID = 1 << 20

// parseEdgeList reads a text edge list: one edge "u v" per line (extra
// columns such as weights are ignored), separated by spaces, tabs or
// commas; lines starting with '#' or '%' are comments, and a first line
// that does not start with a number is taken as a CSV header. Node ids
// are non-negative integers; the graph has 1 + the largest id nodes, or
// N when a comment line "# nodes: N" says so (which keeps isolated nodes
// at the end; WriteEdgeList writes it).
func parseEdgeList(name string, r io.Reader) (*Graph, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var src, dst []int32
	maxID, declared := int64(-1), int64(-1)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' || s[0] == '%' {
			if rest, ok := strings.CutPrefix(s, "# nodes:"); ok {
				v, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
				if err != nil || v < 0 || v > math.MaxInt32-1 {
					return nil, fmt.Errorf("%w: %s: line %d: node count %q is not a non-negative int32", ErrFormat, name, line, rest)
				}
				declared = v
			}
			continue
		}
		f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == ';' })
		if line == 1 && len(f) > 0 && (f[0][0] < '0' || f[0][0] > '9') {
			continue // header
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: %s: line %d: %q, want \"src dst\"", ErrFormat, name, line, s)
		}
		var e [2]int32
		for i := range e {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil || v < 0 || v > math.MaxInt32-1 {
				return nil, fmt.Errorf("%w: %s: line %d: node id %q is not a non-negative int32", ErrFormat, name, line, f[i])
			}
			e[i] = int32(v)
			maxID = max(maxID, v)
		}
		src = append(src, e[0])
		dst = append(dst, e[1])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: line %d: %v", ErrFormat, name, line+1, err)
	}
	n := maxID + 1
	if declared >= 0 {
		if declared < n {
			return nil, fmt.Errorf("%w: %s: \"# nodes: %d\" but an edge names node %d", ErrInconsistent, name, declared, maxID)
		}
		n = declared
	}
	if n > maxSparseID && n > 16*int64(len(src)) {
		return nil, fmt.Errorf("%w: %s: %d nodes is far beyond what %d edges need; renumber the nodes 0..N-1", ErrFormat, name, n, len(src))
	}
	g, err := FromEdges(int(n), src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return g, nil
}

func readEdgeList(name string, b []byte) (*Dataset, error) {
	g, err := parseEdgeList(name, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return &Dataset{Graph: g}, nil
}

// WriteEdgeList writes g's undirected edges once each (u < v) as "u v"
// lines after a "# nodes: N" comment, a file Load reads back to the same
// (symmetrized) graph.
func WriteEdgeList(w io.Writer, g *Graph) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# qgtc edge list, %d undirected edges\n# nodes: %d\n", g.NumUndirectedEdges(), g.N())
	var buf []byte
	for v := 0; v < g.N(); v++ {
		for _, u := range g.Neighbors(v) {
			if int(u) > v {
				buf = strconv.AppendInt(buf[:0], int64(v), 10)
				buf = append(buf, ' ')
				buf = strconv.AppendInt(buf, int64(u), 10)
				buf = append(buf, '\n')
				if _, err := bw.Write(buf); err != nil {
					return err
				}
			}
		}
	}
	return bw.Flush()
}
