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
//
// Pack (and SetInts, which re-packs into an existing tensor without
// allocating) converts 64 values at a time into their planes with a
// multiply-based bit gather and no per-bit branches, splitting large
// matrices across GOMAXPROCS goroutines: features are re-quantized and
// re-packed at every layer. A 32-bit tensor takes any int32 and stores its
// uint32 bit pattern, so Pack and Ints are inverses at every width.
//
// WriteTo and Read store a tensor in a small versioned binary format
// (header, words little-endian, CRC-32C checksums; see serial.go). Read
// checks everything it is given and never trusts a size it has not
// verified: corrupt or truncated input is an error wrapping ErrFormat.
//
// TileMask is the one zero-tile mask of the project: which tiles of a
// packed matrix hold a one, made once per packed batch adjacency and read
// by the batcher's users, the cost model and the kernels that skip empty
// tiles.
package bittensor
