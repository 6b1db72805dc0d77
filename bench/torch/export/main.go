package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/qgtc/qgtc/subgraph"
)

func main() {
	name := pflag.String("graph", "coauthor_cs", "bundled dataset name or path")
	out := pflag.StringP("out", "o", "graph.bin", "output file")
	pflag.Parse()
	if err := run(*name, *out); err != nil {
		fmt.Fprintln(os.Stderr, "export:", err)
		os.Exit(1)
	}
}

func run(name, path string) error {
	d, err := subgraph.Load(name)
	if err != nil {
		return err
	}
	g := d.Graph
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, v := range [][]int32{{int32(g.N()), int32(g.NumEdges())}, g.Indptr, g.Indices} {
		if err := binary.Write(w, binary.LittleEndian, v); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
