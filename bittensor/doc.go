// Package bittensor stores matrices of unsigned b-bit integers (1 <= b <= 32)
// as b stacked bit planes: the "3D-stacked bit compression" of QGTC.
//
// A matrix that feeds a product A·B is packed along the product's reduction
// axis K. PackRows packs each row of an M×K matrix (the left operand A);
// PackCols packs each column of a K×N matrix (the right operand B). Either
// way the tensor is a set of "lines" (rows of A, columns of B), and each line
// is K bits split into 64-bit words, least significant bit first:
//
//	word(p, l, w) = Words()[p*PlaneWords() + l*LineWords() + w]
//	bit k of line l in plane p = word(p, l, k/64) >> (k%64) & 1
//
// Plane p holds bit p of every value (plane 0 is the least significant).
// Lines are padded to a multiple of Padding.Lines and K to a multiple of
// Padding.Bits; padding bits are always zero, so a kernel may run over the
// padded extents without masking. The default padding (16 lines, 256 bits)
// fits mma m16n8k256 and wgmma k256 tiles, so the same bytes go to the GPU
// unchanged; a uint64 word read as two little-endian uint32 words keeps the
// bit order, which is what the 32-bit-word GPU kernels see.
//
// The product of an a-bit A and a b-bit B is
//
//	C[m][n] = Σ_i Σ_j 2^(i+j) · popcount(A_i[m] AND B_j[n])
//
// where A_i is plane i of A; package bmm computes it.
package bittensor
