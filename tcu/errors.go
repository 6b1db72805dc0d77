package tcu

import (
	"errors"
	"fmt"
)

// Errors returned by this package, wrapped with the detail at fault. A
// caller that only wants to know whether the GPU path is usable tests for
// ErrUnavailable, which every "no GPU here" error wraps.
var (
	// ErrUnavailable wraps ErrNoDriver, ErrNoDevice and ErrNoNVRTC.
	ErrUnavailable = errors.New("tcu: GPU path unavailable")
	// ErrNoDriver: libcuda.so.1 could not be loaded or lacks a symbol.
	ErrNoDriver = fmt.Errorf("%w: no CUDA driver", ErrUnavailable)
	// ErrNoDevice: the driver loaded but reports no usable device.
	ErrNoDevice = fmt.Errorf("%w: no CUDA device", ErrUnavailable)
	// ErrNoNVRTC: the NVRTC runtime compiler could not be loaded.
	ErrNoNVRTC = fmt.Errorf("%w: no NVRTC", ErrUnavailable)
	// ErrUnsupported: the device is too old for the 1-bit tensor-core kernels (sm_80+).
	ErrUnsupported = errors.New("tcu: device not supported")
	// ErrDriver: a CUDA driver call failed; the message names the call and the CUDA error.
	ErrDriver = errors.New("tcu: CUDA driver error")
	// ErrCompile: NVRTC failed; the message carries the compiler log.
	ErrCompile = errors.New("tcu: kernel compilation failed")
	// ErrCache: the on-disk kernel cache could not be used.
	ErrCache = errors.New("tcu: kernel cache")
	// ErrClosed: the device was used after Close.
	ErrClosed = errors.New("tcu: device closed")
	// ErrShape: operands or jobs that do not fit together.
	ErrShape = errors.New("tcu: bad shape")
)

// CUDAError is a failed driver call: the call's name and the driver's
// code, name and message. It wraps ErrDriver.
type CUDAError struct {
	Call    string
	Code    int
	Name    string
	Message string
}

func (e *CUDAError) Error() string {
	return fmt.Sprintf("tcu: %s: %s (%d): %s", e.Call, e.Name, e.Code, e.Message)
}

// Unwrap makes errors.Is(err, ErrDriver) true.
func (e *CUDAError) Unwrap() error { return ErrDriver }
