package tcu

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The CPU emulation of the kernels (testdata/fp_emu.h): a kernel's source
// with a driver appended (testdata/*_emu_main.inc) is compiled as C++ and
// run on a launch written to a file, int64 scalars then arrays each led by
// its byte length; the driver writes its output array to another file.

// emuTool is clang++, or the test skips (as it does in -short).
func emuTool(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("compiles and runs emulated kernels")
	}
	clang, err := exec.LookPath("clang++")
	if err != nil {
		t.Skip("no clang++ on PATH (apt install clang)")
	}
	return clang
}

// emuBuild compiles src (a kernel source and its driver) in dir, with the
// headers beside it and the preludes (testdata paths) included first, and
// returns the program. No step is fused (-ffp-contract=off), as the
// kernels' __fmul_rn/__fadd_rn are not.
func emuBuild(t *testing.T, clang, dir, name, src string, preludes ...string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(bin+".cc", []byte(src), 0o644))
	var args []string
	for _, p := range preludes {
		abs, err := filepath.Abs(p)
		require.NoError(t, err)
		args = append(args, "-include", abs)
	}
	args = append(args, "-std=c++17", "-O1", "-w", "-ffp-contract=off", "-I", dir, "-o", bin, bin+".cc")
	out, err := exec.Command(clang, args...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// runEmu writes the launch (scalars, then arrays), runs prog on it and
// returns the output array's bytes.
func runEmu(t *testing.T, prog, name string, scalars []int64, arrays ...[]byte) []byte {
	t.Helper()
	var in []byte
	for _, v := range scalars {
		in = binary.LittleEndian.AppendUint64(in, uint64(v))
	}
	for _, a := range arrays {
		in = binary.LittleEndian.AppendUint64(in, uint64(len(a)))
		in = append(in, a...)
	}
	base := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(base+".in", in, 0o644))
	out, err := exec.Command(prog, base+".in", base+".out").CombinedOutput()
	require.NoError(t, err, "%s", out)
	raw, err := os.ReadFile(base + ".out")
	require.NoError(t, err)
	return raw
}
