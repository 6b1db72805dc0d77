package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/internal/progress"
	"github.com/qgtc/qgtc/templates"
)

func init() {
	register(&command{name: "info", summary: "show the CPU, its bit-kernel path and the registered kernels", run: runInfo})
}

func runInfo(args []string, w io.Writer) error {
	fs := newFlags("info", w)
	quiet := fs.Bool("quiet", false, "no progress line on stderr while the GPU is probed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f := cpu.CPUFeatures()
	model := f.Model
	if model == "" {
		model = "unknown"
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	fmt.Fprintf(w, "CPU:             %s (%s, %d physical cores, %d logical)\n", model, f.Arch, f.Cores, runtime.NumCPU())
	fmt.Fprintf(w, "features:        popcnt %s, avx2 %s, fma %s, avx512 (f+vl+bw) %s, avx512 vpopcntdq %s\n",
		yes(f.POPCNT), yes(f.AVX2), yes(f.FMA), yes(f.AVX512), yes(f.VPOPCNTDQ))
	asm := "compiled in"
	if !f.Asm {
		asm = "not compiled in (purego build or not amd64)"
	}
	fmt.Fprintf(w, "assembly:        %s\n", asm)
	fmt.Fprintf(w, "bit-kernel path: %s (usable: %s)\n", cpu.Path(), strings.Join(cpu.Impls(), ", "))
	fmt.Fprintf(w, "fp32 GEMM:       %s\n", templates.SgemmImpl())
	var names []string
	for i, k := range bmm.Kernels() {
		n := k.Name()
		if i == 0 {
			n += " (default)"
		}
		names = append(names, n)
	}
	fmt.Fprintf(w, "bmm kernels:     %s\n", strings.Join(names, ", "))
	fmt.Fprintf(w, "GOMAXPROCS:      %d\n", runtime.GOMAXPROCS(0))
	// Opening the GPU may compile its kernels (seconds, once per driver).
	prog := progress.Stderr(*quiet)
	prog.Printf("info: probing the GPU backend")
	for _, section := range infoSections {
		section(w)
	}
	prog.Done()
	return nil
}
