package subgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strconv"
)

// GraphSAGE's data layout (Hamilton et al., used for PPI, Reddit, and
// GraphSAINT's Flickr/Yelp exports), all files sharing a prefix:
//
//	<prefix>-G.json          networkx node_link_data: nodes with "id" and
//	                         "val"/"test" flags, links with "source"/"target"
//	<prefix>-id_map.json     {"<node id>": row index}
//	<prefix>-class_map.json  {"<node id>": class} or {"<node id>": [0/1...]}
//	<prefix>-feats.npy       rows × F float array, optional
//
// Link endpoints are node ids; files written by networkx 1.x give
// positions in "nodes" instead, which we accept when no id matches.
// Nodes flagged "val" form Val, "test" Test, the rest Train. Point Load at
// the folder (or the -G.json file); testdata/fixtures/sage-tiny is a small
// hand-written example.

type sageGraph struct {
	Nodes []struct {
		ID   json.RawMessage `json:"id"`
		Val  bool            `json:"val"`
		Test bool            `json:"test"`
	} `json:"nodes"`
	Links []struct {
		Source json.RawMessage `json:"source"`
		Target json.RawMessage `json:"target"`
	} `json:"links"`
}

// jsonKey turns a JSON id (number or string) into the string used as a
// key in id_map.json and class_map.json.
func jsonKey(r json.RawMessage) string {
	r = bytes.TrimSpace(r)
	var s string
	if len(r) > 0 && r[0] == '"' && json.Unmarshal(r, &s) == nil {
		return s
	}
	return string(r)
}

func readGraphSAGE(in files, prefix string) (*Dataset, error) {
	file := func(suffix string) string { return prefix + suffix }
	read := func(suffix string, v any) error {
		b, err := readFile(in, file(suffix))
		if err != nil {
			return fmt.Errorf("%w: %v", ErrFormat, err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrFormat, file(suffix), err)
		}
		return nil
	}
	var g sageGraph
	if err := read("-G.json", &g); err != nil {
		return nil, err
	}
	var idMap map[string]int64
	if err := read("-id_map.json", &idMap); err != nil {
		return nil, err
	}
	var classMap map[string]json.RawMessage
	if err := read("-class_map.json", &classMap); err != nil {
		return nil, err
	}
	return assembleGraphSAGE(in, file, &g, idMap, classMap)
}

func assembleGraphSAGE(in files, file func(string) string, g *sageGraph, idMap map[string]int64, classMap map[string]json.RawMessage) (*Dataset, error) {
	n := len(idMap)
	if n > math.MaxInt32-1 {
		return nil, fmt.Errorf("%w: %s: too many nodes", ErrFormat, file("-id_map.json"))
	}
	seen := make([]bool, n)
	for k, v := range idMap {
		if v < 0 || v >= int64(n) || seen[v] {
			return nil, fmt.Errorf("%w: %s: node %s maps to %d; indices must be 0..%d, each once", ErrInconsistent, file("-id_map.json"), excerpt(k), v, n-1)
		}
		seen[v] = true
	}
	index := func(r json.RawMessage, field string) (int32, error) {
		if i, ok := idMap[jsonKey(r)]; ok {
			return int32(i), nil
		}
		if p, err := strconv.Atoi(string(bytes.TrimSpace(r))); err == nil && p >= 0 && p < len(g.Nodes) {
			if i, ok := idMap[jsonKey(g.Nodes[p].ID)]; ok {
				return int32(i), nil
			}
		}
		return 0, fmt.Errorf("%w: %s: %s %s is not a node in id_map.json", ErrInconsistent, file("-G.json"), field, excerpt(string(r)))
	}
	d := &Dataset{}
	inG := make([]bool, n)
	for i, nd := range g.Nodes {
		v, err := index(nd.ID, fmt.Sprintf("nodes[%d].id", i))
		if err != nil {
			return nil, err
		}
		inG[v] = true
		switch {
		case nd.Test:
			d.Test = append(d.Test, v)
		case nd.Val:
			d.Val = append(d.Val, v)
		default:
			d.Train = append(d.Train, v)
		}
	}
	for v, ok := range inG {
		if !ok {
			return nil, fmt.Errorf("%w: %s: id_map index %d has no node in -G.json", ErrInconsistent, file("-id_map.json"), v)
		}
	}
	src := make([]int32, len(g.Links))
	dst := make([]int32, len(g.Links))
	for i, l := range g.Links {
		var err error
		if src[i], err = index(l.Source, fmt.Sprintf("links[%d].source", i)); err != nil {
			return nil, err
		}
		if dst[i], err = index(l.Target, fmt.Sprintf("links[%d].target", i)); err != nil {
			return nil, err
		}
	}
	var err error
	if d.Graph, err = FromEdges(n, src, dst, BuildOptions{Symmetrize: true, SelfLoops: RemoveSelfLoops}); err != nil {
		return nil, fmt.Errorf("%s: %w", file("-G.json"), err)
	}
	slices.Sort(d.Train)
	slices.Sort(d.Val)
	slices.Sort(d.Test)

	// Labels: ints (single-label) or lists of 0/1 (multi-label).
	multi := make([][]int32, n)
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = -1
	}
	isMulti, classes := -1, 0
	for k, raw := range classMap {
		v, ok := idMap[k]
		if !ok {
			return nil, fmt.Errorf("%w: %s: node %s is not in id_map.json", ErrInconsistent, file("-class_map.json"), excerpt(k))
		}
		var c int32
		var vec []float64
		switch {
		case json.Unmarshal(raw, &c) == nil && c >= 0:
			if isMulti == 1 {
				return nil, fmt.Errorf("%w: %s: node %s mixes single- and multi-label entries", ErrInconsistent, file("-class_map.json"), excerpt(k))
			}
			isMulti, labels[v], classes = 0, c, max(classes, int(c)+1)
		case json.Unmarshal(raw, &vec) == nil:
			if isMulti == 0 || (isMulti == 1 && len(vec) != classes) {
				return nil, fmt.Errorf("%w: %s: node %s has %d label columns, others %d", ErrInconsistent, file("-class_map.json"), excerpt(k), len(vec), classes)
			}
			isMulti, classes = 1, len(vec)
			for j, x := range vec {
				if x != 0 {
					multi[v] = append(multi[v], int32(j))
				}
			}
		default:
			return nil, fmt.Errorf("%w: %s: node %s label %s is neither a class nor a 0/1 list", ErrFormat, file("-class_map.json"), excerpt(k), excerpt(string(raw)))
		}
	}
	d.NumClasses = classes
	if isMulti == 1 {
		ip := make([]int32, n+1)
		var ix []int32
		for v := range multi {
			ix = append(ix, multi[v]...)
			ip[v+1] = int32(len(ix))
		}
		d.Multi = &Features{Rows: n, Cols: classes, Indptr: ip, Indices: ix}
	} else {
		d.Labels = labels
	}

	fb, err := readFile(in, file("-feats.npy"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	default:
		a, err := parseNPY(file("-feats.npy"), fb)
		if err != nil {
			return nil, err
		}
		if len(a.shape) != 2 || a.shape[0] != n || a.fortran {
			return nil, fmt.Errorf("%w: %s: shape %v, want (%d, F) in C order", ErrInconsistent, file("-feats.npy"), a.shape, n)
		}
		d.Features = &Features{Rows: n, Cols: a.shape[1], Dense: a.float32s()}
	}
	if err := d.checkValues(file("-G.json")); err != nil {
		return nil, err
	}
	return d, nil
}
