// Package tcu is qgtc's GPU backend: it loads the CUDA driver and NVRTC at
// run time (no CUDA toolkit at build time), compiles the embedded kernels
// for the device, and implements bmm.Kernel on 1-bit tensor cores.
package tcu
