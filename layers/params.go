package layers

import "github.com/qgtc/qgtc/quantize"

// Params are the parameters of one uniform quantizer: quantize.Params, so
// codes come from the same formula as bmm.Requant (a fused epilogue that
// re-quantizes gives the same codes as package quantize) and dequantize to
// Scale·(q + Zero()), the midpoint of the code's interval.
type Params = quantize.Params
