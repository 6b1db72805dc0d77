package tcu

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// nvrtc is the runtime compiler, loaded at run time.
type nvrtc struct {
	lib          *library
	major, minor int
}

var nvrtcSyms = []string{
	"nvrtcVersion", "nvrtcCreateProgram", "nvrtcCompileProgram", "nvrtcGetProgramLogSize",
	"nvrtcGetProgramLog", "nvrtcGetCUBINSize", "nvrtcGetCUBIN", "nvrtcDestroyProgram",
	"nvrtcGetErrorString",
}

var (
	nvrtcOnce sync.Once
	nvrtcVal  *nvrtc
	nvrtcErr  error
)

func loadNVRTC() (*nvrtc, error) {
	nvrtcOnce.Do(func() {
		lib, err := openLibrary(ErrNoNVRTC, nvrtcCandidates(), nvrtcSyms)
		if err != nil {
			nvrtcErr = err
			return
		}
		n := &nvrtc{lib: lib}
		var maj, mnr int32
		if r := n.call("nvrtcVersion", uintptr(unsafe.Pointer(&maj)), uintptr(unsafe.Pointer(&mnr))); r != 0 {
			nvrtcErr = fmt.Errorf("%w: %s: nvrtcVersion: %s", ErrNoNVRTC, lib.path, n.errString(r))
			return
		}
		n.major, n.minor = int(maj), int(mnr)
		nvrtcVal = n
	})
	return nvrtcVal, nvrtcErr
}

//go:uintptrescapes
func (n *nvrtc) call(name string, args ...uintptr) int {
	r, _, _ := purego.SyscallN(n.lib.syms[name], args...)
	return int(int32(r))
}

func (n *nvrtc) errString(r int) string {
	p, _, _ := purego.SyscallN(n.lib.syms["nvrtcGetErrorString"], uintptr(r))
	if s := gostr(p); s != "" {
		return s
	}
	return fmt.Sprintf("NVRTC error %d", r)
}

// Version is NVRTC's "major.minor".
func (n *nvrtc) Version() string { return fmt.Sprintf("%d.%d", n.major, n.minor) }

// header is an include file handed to NVRTC by name.
type header struct{ name, src string }

// compile builds src into a cubin for arch (e.g. "sm_90a") with the given
// extra options. A failed compile returns ErrCompile with NVRTC's log.
func (n *nvrtc) compile(name, src string, headers []header, arch string, opts []string) ([]byte, error) {
	var prog uintptr
	hsrc := make([]*byte, len(headers)+1)
	hname := make([]*byte, len(headers)+1)
	for i, h := range headers {
		hsrc[i], hname[i] = cstr(h.src), cstr(h.name)
	}
	csrc, cname := cstr(src), cstr(name)
	if r := n.call("nvrtcCreateProgram", uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(csrc)),
		uintptr(unsafe.Pointer(cname)), uintptr(len(headers)),
		uintptr(unsafe.Pointer(&hsrc[0])), uintptr(unsafe.Pointer(&hname[0]))); r != 0 {
		return nil, fmt.Errorf("%w: %s: nvrtcCreateProgram: %s", ErrCompile, name, n.errString(r))
	}
	defer n.call("nvrtcDestroyProgram", uintptr(unsafe.Pointer(&prog)))
	all := append([]string{"--gpu-architecture=" + arch}, opts...)
	copts := make([]*byte, len(all))
	for i, o := range all {
		copts[i] = cstr(o)
	}
	r := n.call("nvrtcCompileProgram", prog, uintptr(len(copts)), uintptr(unsafe.Pointer(&copts[0])))
	var logSize uintptr
	n.call("nvrtcGetProgramLogSize", prog, uintptr(unsafe.Pointer(&logSize)))
	var log string
	if logSize > 1 {
		buf := make([]byte, logSize)
		n.call("nvrtcGetProgramLog", prog, uintptr(unsafe.Pointer(&buf[0])))
		log = strings.TrimSpace(cString(buf))
	}
	if r != 0 {
		return nil, fmt.Errorf("%w: %s for %s %v: %s:\n%s", ErrCompile, name, arch, opts, n.errString(r), log)
	}
	var size uintptr
	if r := n.call("nvrtcGetCUBINSize", prog, uintptr(unsafe.Pointer(&size))); r != 0 || size == 0 {
		return nil, fmt.Errorf("%w: %s: nvrtcGetCUBINSize: %s", ErrCompile, name, n.errString(r))
	}
	cubin := make([]byte, size)
	if r := n.call("nvrtcGetCUBIN", prog, uintptr(unsafe.Pointer(&cubin[0]))); r != 0 {
		return nil, fmt.Errorf("%w: %s: nvrtcGetCUBIN: %s", ErrCompile, name, n.errString(r))
	}
	return cubin, nil
}
