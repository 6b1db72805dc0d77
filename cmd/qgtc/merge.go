package main

import (
	"fmt"
	"io"

	"github.com/qgtc/qgtc/pipeline"
)

func init() {
	register(&command{name: "merge", summary: "merge the shard files of `infer --shard i/n` into the whole graph's predictions", run: runMerge})
}

func runMerge(args []string, stdout io.Writer) error {
	fs := newFlags("merge", stdout)
	out := fs.String("out", "", "the predictions file to write (.npy, as `infer --out` without --shard writes it; required)")
	quiet := fs.Bool("quiet", false, "print nothing on success")
	if err := parseFlagsArgs(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("%w: --out is required", errUsage)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("%w: merge wants the shard files (every shard 0..n-1 of one run)", errUsage)
	}
	if err := pipeline.Merge(*out, fs.Args()); err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintf(stdout, "qgtc merge: %d shards merged into %s\n", fs.NArg(), *out)
	}
	return nil
}
