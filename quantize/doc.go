// Package quantize maps float32 values to k-bit unsigned codes and back
// (QGTC's Eq. 2: q = floor((x − lower)/scale)), with calibration, per-tensor
// and per-column parameters, fake quantization for training, and the
// zero-point corrections that keep products of signed data exact.
package quantize
