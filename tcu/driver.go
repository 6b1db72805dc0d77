package tcu

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// driver is the part of the CUDA driver API qgtc uses, resolved from
// libcuda.so.1 at run time.
type driver struct {
	lib *library
	fn  map[string]uintptr
}

var driverSyms = []string{
	"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
	"cuDeviceGetAttribute", "cuDeviceTotalMem_v2", "cuDevicePrimaryCtxRetain",
	"cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent",
	"cuGetErrorName", "cuGetErrorString", "cuModuleLoadData", "cuModuleUnload",
	"cuModuleGetFunction", "cuFuncSetAttribute", "cuLaunchKernel", "cuOccupancyMaxActiveBlocksPerMultiprocessor",
	"cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocHost_v2", "cuMemFreeHost",
	"cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2", "cuMemsetD32Async",
	"cuStreamCreate", "cuStreamDestroy_v2", "cuStreamSynchronize",
	"cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventQuery", "cuEventElapsedTime", "cuEventDestroy_v2",
	"cuStreamBeginCapture_v2", "cuStreamEndCapture", "cuGraphInstantiateWithFlags", "cuGraphLaunch",
	"cuGraphExecDestroy", "cuGraphDestroy",
}

var (
	driverOnce sync.Once
	driverVal  *driver
	driverErr  error
)

// loadDriver loads libcuda and calls cuInit once per process.
func loadDriver() (*driver, error) {
	driverOnce.Do(func() {
		lib, err := openLibrary(ErrNoDriver, driverCandidates(), driverSyms)
		if err != nil {
			driverErr = err
			return
		}
		d := &driver{lib: lib, fn: lib.syms}
		if err := d.check("cuInit", d.call("cuInit", 0)); err != nil {
			if ce, ok := err.(*CUDAError); ok && (ce.Code == cudaErrorNoDevice || ce.Code == cudaErrorInsufficientDriver) {
				driverErr = fmt.Errorf("%w: %v", ErrNoDevice, err)
			} else {
				driverErr = err
			}
			return
		}
		driverVal = d
	})
	return driverVal, driverErr
}

const (
	cudaErrorNoDevice           = 100
	cudaErrorInsufficientDriver = 35
)

// call invokes a driver entry point and returns its CUresult. Arguments
// that are addresses of Go variables stay put for the call (uintptrescapes
// moves them to the heap), as with syscall.Syscall.
//
//go:uintptrescapes
func (d *driver) call(name string, args ...uintptr) int {
	r, _, _ := purego.SyscallN(d.fn[name], args...)
	return int(int32(r))
}

// check maps a CUresult to nil or a *CUDAError naming the call.
func (d *driver) check(call string, res int) error {
	if res == 0 {
		return nil
	}
	var namep, msgp uintptr
	purego.SyscallN(d.fn["cuGetErrorName"], uintptr(res), uintptr(unsafe.Pointer(&namep)))
	purego.SyscallN(d.fn["cuGetErrorString"], uintptr(res), uintptr(unsafe.Pointer(&msgp)))
	name, msg := gostr(namep), gostr(msgp)
	if name == "" {
		name = "CUDA_ERROR_UNKNOWN"
	}
	return &CUDAError{Call: call, Code: res, Name: name, Message: msg}
}

// do calls and checks in one step.
//
//go:uintptrescapes
func (d *driver) do(name string, args ...uintptr) error {
	return d.check(name, d.call(name, args...))
}

// Device attributes (CUdevice_attribute).
const (
	attrClockRate          = 13
	attrMultiprocessors    = 16
	attrL2CacheSize        = 38
	attrComputeMajor       = 75
	attrComputeMinor       = 76
	attrMaxSharedPerBlockO = 97
)

func (d *driver) attr(dev int32, a int) (int, error) {
	var v int32
	if err := d.do("cuDeviceGetAttribute", uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(dev)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceInfo describes one CUDA device.
type DeviceInfo struct {
	Ordinal        int
	Name           string
	Major, Minor   int // compute capability
	SMs            int
	TotalMem       uint64
	SharedPerBlock int // opt-in shared memory per block, bytes
	L2Bytes        int
	ClockKHz       int
	DriverVersion  int // e.g. 13000
}

// Arch is the NVRTC architecture kernels are built for: the exact
// compute capability, with the "a" suffix on Hopper for wgmma.
func (i DeviceInfo) Arch() string {
	if i.Major == 9 && i.Minor == 0 {
		return "sm_90a"
	}
	return fmt.Sprintf("sm_%d%d", i.Major, i.Minor)
}

func (i DeviceInfo) String() string {
	return fmt.Sprintf("GPU %d: %s, compute %d.%d (%s), %d SMs, %.1f GiB, driver %d.%d",
		i.Ordinal, i.Name, i.Major, i.Minor, i.Arch(), i.SMs, float64(i.TotalMem)/(1<<30),
		i.DriverVersion/1000, i.DriverVersion%1000/10)
}

// Devices lists the CUDA devices. It fails with ErrNoDriver when libcuda
// cannot be loaded and ErrNoDevice when it reports none.
func Devices() ([]DeviceInfo, error) {
	d, err := loadDriver()
	if err != nil {
		return nil, err
	}
	var n, ver int32
	if err := d.do("cuDriverGetVersion", uintptr(unsafe.Pointer(&ver))); err != nil {
		return nil, err
	}
	if err := d.do("cuDeviceGetCount", uintptr(unsafe.Pointer(&n))); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: driver %s reports 0 devices", ErrNoDevice, d.lib.path)
	}
	out := make([]DeviceInfo, n)
	for i := range out {
		info, err := d.deviceInfo(i)
		if err != nil {
			return nil, err
		}
		info.DriverVersion = int(ver)
		out[i] = info
	}
	return out, nil
}

func (d *driver) deviceInfo(ordinal int) (DeviceInfo, error) {
	var dev int32
	if err := d.do("cuDeviceGet", uintptr(unsafe.Pointer(&dev)), uintptr(ordinal)); err != nil {
		return DeviceInfo{}, err
	}
	name := make([]byte, 256)
	if err := d.do("cuDeviceGetName", uintptr(unsafe.Pointer(&name[0])), 256, uintptr(dev)); err != nil {
		return DeviceInfo{}, err
	}
	info := DeviceInfo{Ordinal: ordinal, Name: cString(name)}
	var mem uint64
	if err := d.do("cuDeviceTotalMem_v2", uintptr(unsafe.Pointer(&mem)), uintptr(dev)); err != nil {
		return DeviceInfo{}, err
	}
	info.TotalMem = mem
	for _, a := range []struct {
		attr int
		dst  *int
	}{
		{attrComputeMajor, &info.Major}, {attrComputeMinor, &info.Minor},
		{attrMultiprocessors, &info.SMs}, {attrMaxSharedPerBlockO, &info.SharedPerBlock},
		{attrL2CacheSize, &info.L2Bytes}, {attrClockRate, &info.ClockKHz},
	} {
		v, err := d.attr(dev, a.attr)
		if err != nil {
			return DeviceInfo{}, err
		}
		*a.dst = v
	}
	return info, nil
}

// cString is the text of b up to its first NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
