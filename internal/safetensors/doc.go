// Package safetensors reads and writes the safetensors file format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian
// header length, a JSON header mapping tensor names to dtype, shape and
// byte range (plus an optional "__metadata__" string map), then the raw
// little-endian tensor bytes.
//
// It is the one codec behind both the quantized models (layers) and the
// full-precision ones (layers/fp). Read is bounded and strict: the header
// is capped, every tensor's shape must match its byte range, and the
// ranges must tile the data section exactly, so a malformed or hostile
// file is an error wrapping ErrFormat, never a panic or a huge allocation.
// Write emits tensors in name order with the header padded to 8 bytes, as
// the reference writer does, so a file's bytes depend only on its content.
package safetensors
