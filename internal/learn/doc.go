// Package learn holds the training and evaluation arithmetic that the
// quantized models (layers) and the full-precision ones (layers/fp) share,
// so that each exists once: Adam with L2 weight decay, the batch-norm
// constants and the fold of a batch norm's running statistics into a
// per-channel scale and shift, and the arg max and accuracy of logits.
//
// It works on plain float32 slices and depends on nothing else in the
// module, so both model packages (and their training loops) can use it
// without pulling in a backend.
package learn
