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
// columns such as weights are ignored), separated by spaces, tabs, commas
// or semicolons. A leading UTF-8 byte order mark is dropped. Every line is
// classified by one rule:
//
//   - blank, or starting with '#' or '%': a comment;
//   - starting with a letter, '_' or a quote: a CSV header ("src,dst"),
//     allowed once, before the first edge;
//   - anything else is an edge, and both ids must be non-negative int32s
//     ("-1 2" is an error on any line).
//
// The graph has 1 + the largest id nodes, or N when a comment "# nodes: N"
// says so (which keeps isolated nodes at the end; WriteEdgeList writes it).
// A declared edge count ("# edges: M", or WriteEdgeList's "# qgtc edge
// list, M undirected edges") must match what was read, so a truncated file
// is an error, not a smaller graph.
func parseEdgeList(name string, r io.Reader) (*Graph, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var src, dst []int32
	maxID, declared, declaredEdges := int64(-1), int64(-1), int64(-1)
	line := 0
	header := false
	count := func(rest, what string) (int64, error) {
		v, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil || v < 0 || v > math.MaxInt32-1 {
			return 0, fmt.Errorf("%w: %s: line %d: %s count %s is not a non-negative int32", ErrFormat, name, line, what, excerpt(strings.TrimSpace(rest)))
		}
		return v, nil
	}
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\uFEFF")
		}
		s := strings.TrimSpace(text)
		if s == "" || s[0] == '#' || s[0] == '%' {
			var err error
			if rest, ok := strings.CutPrefix(s, "# nodes:"); ok {
				declared, err = count(rest, "node")
			} else if rest, ok := strings.CutPrefix(s, "# edges:"); ok {
				declaredEdges, err = count(rest, "edge")
			} else if rest, ok := strings.CutPrefix(s, "# qgtc edge list,"); ok {
				if m, ok := strings.CutSuffix(strings.TrimSpace(rest), " undirected edges"); ok {
					declaredEdges, err = count(m, "edge")
				}
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		if c := s[0]; c == '_' || c == '"' || c == '\'' || (c|0x20 >= 'a' && c|0x20 <= 'z') {
			if header || len(src) > 0 {
				return nil, fmt.Errorf("%w: %s: line %d: %s is not an edge (only one header line, before the first edge, may start with a letter)", ErrFormat, name, line, excerpt(s))
			}
			header = true
			continue
		}
		f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == ';' })
		if len(f) < 2 {
			return nil, fmt.Errorf("%w: %s: line %d: %s, want \"src dst\"", ErrFormat, name, line, excerpt(s))
		}
		var e [2]int32
		for i := range e {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil || v < 0 || v > math.MaxInt32-1 {
				return nil, fmt.Errorf("%w: %s: line %d: node id %s is not a non-negative int32", ErrFormat, name, line, excerpt(f[i]))
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
	// The count may be of lines or of undirected edges; a truncated file
	// falls short of both.
	if declaredEdges >= 0 && declaredEdges != int64(len(src)) && declaredEdges != int64(g.NumUndirectedEdges()) {
		return nil, fmt.Errorf("%w: %s: the header declares %d edges but %d were read (%d undirected); is the file truncated?", ErrInconsistent, name, declaredEdges, len(src), g.NumUndirectedEdges())
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
