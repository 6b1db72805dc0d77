package main

import (
	"io"

	"github.com/qgtc/qgtc/bmm"
)

// Hooks between subcommand files, so that each backend's CLI code lives in
// its own file. Each is filled in from that file's init.

// infoSections are printed by `qgtc info` after the CPU section, in order.
var infoSections []func(w io.Writer)

// benchShape is one product of a benchmark: A is M×K at ABits (Density of
// ones in its bits; 1-bit adjacency grids use BlockDiag batches), B is K×N
// at BBits.
type benchShape struct {
	Name         string
	M, K, N      int
	ABits, BBits int
	Density      float64 // fraction of non-zero A values (1 = dense random)
	BlockDiag    int     // > 0: A is block-diagonal with blocks of this many rows
}

// gpuBenchBMM times shapes on the GPU with device events and writes one
// table row per shape to w. Set by the GPU file; nil means no GPU support
// is compiled in (it always is: tcu needs no toolkit to build).
var gpuBenchBMM func(shapes []benchShape, w io.Writer) error

// openGPUBackend opens GPU ordinal as the backend that runs compiled
// plans; the closer releases the backend and the device. gpuCount says how
// many GPUs there are (--device gpu:all).
var (
	openGPUBackend func(ordinal int) (bmm.Backend, io.Closer, error)
	gpuCount       func() (int, error)
)
