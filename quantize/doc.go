// Package quantize maps float32 values to k-bit unsigned codes and back
// (QGTC's Eq. 2: q = floor((x − lower)/scale)), with calibration, per-tensor
// and per-column parameters, fake quantization for training, and the
// zero-point corrections that keep products of signed data exact.
//
// Codes. Params{Bits, Scale, Lower} maps x to
// q = clamp(floor(float32(x·Inv) + Off), 0, 2^Bits−1) with Inv = 1/Scale,
// Off = −Lower/Scale in float32: bit for bit bmm.Requant, so a product's
// fused re-quantization yields the same codes. q dequantizes to
// x̂ = Scale·(q + Zero()), the midpoint of its interval (Zero = Lower/Scale +
// 1/2). MinMax and Percentile (and ColumnMinMax, ColumnPercentile for one
// set per column, as for weights) put 2^Bits levels evenly from the low to
// the high end of the data and Lower half a step below, so floor rounds to
// the nearest level and both ends are reconstructed. Negative data is
// simply a negative Lower: codes are never negative and nothing is dropped.
//
// Exact signed products. With A (M×K) quantized per tensor, Â = s_a(Q_a +
// z_a), and B (K×N) per column, B̂[:,n] = s_b[n](Q_b[:,n] + z_b[n]),
// expanding the sum gives
//
//	(Â·B̂)[m][n] = s_a·s_b[n]·( C[m][n] + z_b[n]·R[m] + z_a·S[n] + K·z_a·z_b[n] )
//
// where C = Q_a·Q_b is the unsigned bit product bmm computes, R the row sums
// of Q_a and S the column sums of Q_b (RowSums, ColSums, or LineSums on
// packed tensors). This is an identity, not an approximation: ProductTerms
// maps it onto bmm.Epilogue's ColScale, RowTerm·ColTerm and ColConst, and the
// only error left is float32 rounding in the epilogue (bmm.MM2Dequant does
// it all).
//
// FakeQuant returns dequantize(quantize(x)) and the straight-through mask
// (which inputs were not clamped) for quantization-aware training.
package quantize
