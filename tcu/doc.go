// Package tcu is qgtc's GPU backend: bit matrix products on the 1-bit
// tensor cores of NVIDIA GPUs (sm_80 and newer), with no CUDA toolkit at
// build time.
//
// Runtime. The CUDA driver (libcuda.so.1) and the NVRTC runtime compiler
// are loaded with purego when a device is opened, so `CGO_ENABLED=0 go
// build` works anywhere; without a driver, a device or NVRTC, Open returns
// an error wrapping ErrNoDriver, ErrNoDevice or ErrNoNVRTC (all
// ErrUnavailable) that says which, and callers carry on with the CPU
// kernels. A Device owns the device's primary context on one goroutine
// locked to an OS thread, a default stream, a caching device-memory pool
// (Alloc), pinned host buffers (AllocHost) and timing events; driver
// failures are *CUDAError values carrying the call and CUDA's message.
// Close releases everything; there are no finalizers.
//
// Kernels. tcu/kernels/*.cu are embedded and compiled by NVRTC for the
// device's exact architecture (sm_90a on Hopper) into cubins cached on
// disk ($QGTC_CACHE_DIR, default <user cache>/qgtc/kernels), keyed by the
// hash of source, headers, options, architecture and NVRTC version; an
// entry carries its own checksum, and a corrupt one is rebuilt, not
// loaded. Each bit width pair and tile shape is its own variant.
//
// Bit matmul. Kernel implements bmm.Kernel (MulInt, MulFloat, MulBit) on
// the bittensor layout (mma.sync takes a Tensor's words unchanged when its
// K padding is a multiple of 256 bits; wgmma takes the tiled copy below):
//   - bmm_wgmma.cu: wgmma m64nNk256 .b1 .and.popc on Hopper, B's bit planes
//     side by side as the N of one instruction, so an A tile meets every
//     plane of B at once; bmm_mma.cu: mma.sync m16n8k256 .b1 on sm_80..sm_89
//     and for the shapes no wgmma variant fits. The choice is made per
//     launch; NewKernel checks wgmma against the CPU once before using it.
//   - staging that overlaps loads with the math: on the wgmma path the
//     operands go to the device in a tile-major layout (tiledWords) in
//     which a block's k-steps are contiguous, fetched by one thread with
//     bulk copies (cp.async.bulk) into up to 16 stages of up to 4
//     k-steps each, with full/empty mbarriers per stage; mma.sync uses
//     cp.async, many stages deep (a short product's k-steps and one, and
//     half the warp tile, where a wave of blocks takes its tiles). One
//     function, chooseConfig, decides a launch's variant (path, tiles,
//     pipeline, epilogue, tail, uint16 outputs) from the shapes and
//     output modes of its products; tuning holds the knobs the tests and
//     benchmarks override it with.
//   - zero-tile jumping: a per-A mask of non-zero (16 rows, 256-bit k-step)
//     tiles, computed once per operand, becomes a list per row tile; zero
//     tiles are neither loaded nor multiplied.
//   - the epilogue: bmm.Epilogue and bmm.Requant evaluated in the kernel
//     with the same float32 rounding (__fmul_rn, __fadd_rn, floorf, clamp,
//     NaN to 0), and MulBit's codes bit-decomposed with warp ballots
//     straight into the output planes: no int32 round trip through memory.
//     On wgmma, tiles whose packed words they own whole (N tiles of 32
//     columns or more, which MulBit launches keep, or packing by columns)
//     pack from the registers (by rows) or from shared memory 8 words per
//     warp at a time with plain stores; the rest take a call per output
//     and an atomic OR per word.
//   - narrow int outputs: where every product of a launch fits a uint16
//     (K·(2^a-1)·(2^b-1) <= 65535, e.g. a 1-bit adjacency of up to 65535
//     columns by 1-bit features, or 4369 columns by 4-bit ones), MulInt's
//     kernel stores uint16 and the host widens the outputs to int32 as it
//     copies them back (config.out16; kernels/common.cuh OUT16): half the
//     device's store traffic and half the download, the same int32 result.
//   - batches: MulIntBatch and MulBitBatch run many independent products
//     (the subgraphs of a layer) in one launch.
//
// Full precision. fp.go holds the GPU twins of the float32 graph
// templates (package templates): SpMM for every message and reduction and
// SDDMM for every op of the templates' spec, each variant generated from
// that spec (kernels/fp_spmm.cu, fp_sddmm.cu with a #define prelude per
// message, reduction, edge-operand mode and geometry) and compiled like the
// bit kernels. The mapping is TLPGNN's: a group of lanes per destination row
// (narrow features put several rows in a warp), lanes over the features in
// vector loads, the row's edges broadcast by shuffles, reduction in
// registers with no atomics; rows past a degree limit run in chunks merged
// in order by a second kernel (hybrid balancing); u_dot_v sums its lanes
// with a butterfly of shuffles. UploadCSR puts a graph on the device,
// PrepareSpMM/PrepareSDDMM bind device buffers into an FPCall that a
// training loop runs every step; SpMMHost/SDDMMHost take host slices.
// UploadSampledCSR is ES-SpMM's cache-first sampling, opt-in, for inference.
//
// Bench times products (int, or MulBit with BenchOptions.OutBits) with
// CUDA events around the kernels only (uint16 outputs where they fit, as
// MulInt launches them; the config string says "o161"); the benchmarks in bench_test.go and
// bench/gpu/baselines.py give the table against cuBLAS and cuSPARSE (see
// bench/gpu/run.sh).
package tcu
