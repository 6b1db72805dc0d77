package tcu

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// library is a dlopen'ed shared object and the symbols resolved in it.
type library struct {
	path   string
	handle uintptr
	syms   map[string]uintptr
}

// openLibrary dlopens the first candidate that loads and resolves every
// name in syms. The error lists each candidate with why it failed, wrapped
// in kind (ErrNoDriver, ErrNoNVRTC).
func openLibrary(kind error, candidates, syms []string) (*library, error) {
	var why []string
	for _, c := range candidates {
		h, err := purego.Dlopen(c, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			why = append(why, dlopenWhy(c, err))
			continue
		}
		lib := &library{path: c, handle: h, syms: make(map[string]uintptr, len(syms))}
		var missing []string
		for _, s := range syms {
			p, err := purego.Dlsym(h, s)
			if err != nil || p == 0 {
				missing = append(missing, s)
				continue
			}
			lib.syms[s] = p
		}
		if len(missing) > 0 {
			why = append(why, fmt.Sprintf("%s: missing symbols %s", c, strings.Join(missing, ", ")))
			_ = purego.Dlclose(h)
			continue
		}
		return lib, nil
	}
	if len(candidates) == 0 {
		why = append(why, "no candidate paths")
	}
	return nil, fmt.Errorf("%w: %s", kind, strings.Join(why, "; "))
}

// dlopenWhy names the candidate once: dlerror's message usually starts
// with the path already ("libcuda.so.1: cannot open shared object file").
func dlopenWhy(candidate string, err error) string {
	if msg := err.Error(); strings.Contains(msg, candidate) {
		return msg
	}
	return fmt.Sprintf("%s: %v", candidate, err)
}

// nvrtcCandidates lists where NVRTC is looked for, in order: the
// QGTC_NVRTC override, $CUDA_HOME/lib64, the usual toolkit folders, then
// bare names for the loader path. Within a folder the newest soname wins.
func nvrtcCandidates() []string {
	if p := os.Getenv("QGTC_NVRTC"); p != "" {
		return []string{p}
	}
	var dirs []string
	if h := os.Getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"), filepath.Join(h, "targets/x86_64-linux/lib"))
	}
	if h := os.Getenv("CUDA_PATH"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib")
	names := []string{"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}
	var out []string
	for _, d := range dirs {
		for _, n := range names {
			p := filepath.Join(d, n)
			if _, err := os.Stat(p); err == nil {
				out = append(out, p)
			}
		}
	}
	return append(out, names...)
}

// driverCandidates lists where libcuda is looked for: QGTC_CUDA_DRIVER, then the loader path.
func driverCandidates() []string {
	if p := os.Getenv("QGTC_CUDA_DRIVER"); p != "" {
		return []string{p}
	}
	return []string{"libcuda.so.1", "libcuda.so"}
}

// cstr returns a NUL-terminated copy of s.
func cstr(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

// gostr copies the NUL-terminated C string at p.
func gostr(p uintptr) string {
	if p == 0 {
		return ""
	}
	base := cptr(p)
	var n int
	for *(*byte)(unsafe.Add(base, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(base), n))
}

// cptr turns an address of C memory into a pointer without tripping vet's
// unsafeptr check (the memory is not Go's, so the GC never moves it).
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }
