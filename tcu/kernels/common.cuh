// Shared by the bit-matmul kernels: the job descriptor, the epilogue and
// re-quantization (bit for bit bmm.Epilogue.Apply and bmm.Requant.Quantize:
// every float step rounded on its own with __fmul_rn/__fadd_rn, no FMA),
// and the bit-plane packing of MulBit results.
#pragma once

typedef unsigned int u32;
typedef unsigned long long u64;

// BLOCK_SYNC is a barrier of the threads that hold outputs, BLOCK_WARPS
// their warps: the whole block, unless the kernel defines them first (the
// wgmma kernel's producer warpgroup leaves after the main loop).
#ifndef BLOCK_SYNC
#define BLOCK_SYNC() __syncthreads()
#endif
#ifndef BLOCK_WARPS
#define BLOCK_WARPS ((int)(blockDim.x >> 5))
#endif

// Prob is one product of a batch. Field order and sizes must match
// tcu/layout.go (probBytes, encodeProb).
struct Prob {
  u64 A, B, out, kptr, kidx;                                    //   0
  u64 colScale, rowTerm, colTerm, colConst, rowScale, colBias;  //  40
  long long aPlane, bPlane, outPlane;  //  88: 32-bit words per plane (wgmma: A and B per tile)
  int M, N, lw32, aLines, bLines, tilesN, tileStart, mode;      // 112
  int outBits, outByCols, outLw32, relu;                        // 144
  float rqScale, rqOffset;                                      // 160
};                                                              // 168
static_assert(sizeof(Prob) == 168, "Prob layout");

// MODE_CODES: the re-quantized code as one byte, row-major (MulCodes).
enum { MODE_INT = 0, MODE_FLOAT = 1, MODE_BIT = 2, MODE_CODES = 3 };

// OUT16=1: MODE_INT outputs are stored as uint16 (the host chooses it only
// when every product fits, K·(2^a-1)·(2^b-1) <= 65535, and widens them to
// int32 as it copies them back), halving the output's stores and download.
// outT is the element the device writes.
#ifndef OUT16
#define OUT16 0
#endif
#if OUT16
typedef unsigned short outT;
#else
typedef int outT;
#endif
// OUTB is the bytes of one stored int output (sizeof(outT), in a form the
// preprocessor can evaluate).
#define OUTB (OUT16 ? 2 : 4)
static_assert(OUTB == sizeof(outT), "OUTB");

// pack2 is the pair (a, b) of products as one 32-bit word of uint16s, a
// in the low half (the lower address).
__device__ __forceinline__ u32 pack2(int a, int b) { return ((u32)a & 0xFFFFu) | ((u32)b << 16); }

// PROB_FROM_PARAM copies a by-value descriptor (a __grid_constant__
// kernel parameter) into P field by field through empty asm statements:
// each a register value, as the copy from global memory is.
#define PROB_FROM_PARAM(P, p1)                                                                                       \
  do {                                                                                                                \
    PFP_(P, p1, A, "l") PFP_(P, p1, B, "l") PFP_(P, p1, out, "l") PFP_(P, p1, kptr, "l") PFP_(P, p1, kidx, "l")       \
    PFP_(P, p1, colScale, "l") PFP_(P, p1, rowTerm, "l") PFP_(P, p1, colTerm, "l") PFP_(P, p1, colConst, "l")         \
    PFP_(P, p1, rowScale, "l") PFP_(P, p1, colBias, "l") PFP_(P, p1, aPlane, "l") PFP_(P, p1, bPlane, "l")            \
    PFP_(P, p1, outPlane, "l") PFP_(P, p1, M, "r") PFP_(P, p1, N, "r") PFP_(P, p1, lw32, "r") PFP_(P, p1, aLines, "r") \
    PFP_(P, p1, bLines, "r") PFP_(P, p1, tilesN, "r") PFP_(P, p1, tileStart, "r") PFP_(P, p1, mode, "r")              \
    PFP_(P, p1, outBits, "r") PFP_(P, p1, outByCols, "r") PFP_(P, p1, outLw32, "r") PFP_(P, p1, relu, "r")            \
    PFP_(P, p1, rqScale, "f") PFP_(P, p1, rqOffset, "f")                                                              \
  } while (0)
#define PFP_(P, p1, f, c) \
  P.f = p1.f;             \
  asm("" : "+" c(P.f));

// findProb returns the problem whose tile range holds block b: with
// several problems, the host's block → problem map (int32 per block) that
// follows the n descriptors.
__device__ __forceinline__ int findProb(const Prob* p, int n, int b) {
  return n > 1 ? ((const int*)(p + n))[b] : 0;
}

// applyEp mirrors bmm.Epilogue.Apply.
__device__ __forceinline__ float applyEp(const Prob& P, int c, int m, int n) {
  float t = __int2float_rn(c);
  if (P.colScale) t = __fmul_rn(t, ((const float*)P.colScale)[n]);
  if (P.rowTerm) t = __fadd_rn(t, __fmul_rn(((const float*)P.rowTerm)[m], ((const float*)P.colTerm)[n]));
  if (P.colConst) t = __fadd_rn(t, ((const float*)P.colConst)[n]);
  if (P.rowScale) t = __fmul_rn(t, ((const float*)P.rowScale)[m]);
  if (P.colBias) t = __fadd_rn(t, ((const float*)P.colBias)[n]);
  if (P.relu && !(t > 0.f)) t = 0.f;
  return t;
}

// quantize mirrors bmm.Requant.Quantize.
__device__ __forceinline__ u32 quantize(float y, float scale, float offset, int bits) {
  float v = __fadd_rn(__fmul_rn(y, scale), offset);
  if (!(v > 0.f)) return 0u;  // also NaN
  u64 mx = (1ull << bits) - 1ull;
  if (v >= __ull2float_rn(mx)) return (u32)mx;
  return __float2uint_rz(floorf(v));
}

// packBits bit-decomposes the block's bm×bn tile of codes q (row stride
// ldq) into the output tensor's planes: a warp takes 32 consecutive
// positions of one output line, __ballot_sync turns bit p of the 32
// codes into plane p's word, and lane p stores it. Words that tiles share
// are OR-ed in (the output was zeroed), so they compose. The descriptor's
// fields are read once: the stores could alias it for all the compiler
// knows, and re-reading them after each store chained the loop's latency.
__device__ __noinline__ void packBits(const Prob* __restrict__ Pg, const u32* q, int ldq, int m0, int n0, int bm, int bn) {
  const int byCols = Pg->outByCols, M = Pg->M, N = Pg->N, bits = Pg->outBits, lw32 = Pg->outLw32;
  const long long plane = Pg->outPlane;
  u32* const out = (u32*)Pg->out;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = BLOCK_WARPS;
  // Lines are rows (ByRows) or columns (ByCols); bits run along the other axis.
  const int lines = byCols ? min(bn, N - n0) : min(bm, M - m0);
  const int b0 = byCols ? m0 : n0;
  const int bext = byCols ? min(bm, M - m0) : min(bn, N - n0);
  if (lines <= 0 || bext <= 0) return;
  const int w0 = b0 >> 5, w1 = (b0 + bext + 31) >> 5;
  for (int l = warp; l < lines; l += nw) {
    const long long line = byCols ? (long long)(n0 + l) : (long long)(m0 + l);
    for (int w = w0; w < w1; w++) {
      const int pos = w * 32 + lane;  // bit position along the packed axis
      u32 v = 0;
      if (pos >= b0 && pos < b0 + bext) {
        v = byCols ? q[(pos - m0) * ldq + l] : q[l * ldq + (pos - n0)];
      }
      u32 mine = 0;  // plane lane's word
      for (int p = 0; p < bits; p++) {
        const u32 word = __ballot_sync(0xffffffffu, (v >> p) & 1u);
        if (lane == p) mine = word;
      }
      if (lane < bits && mine) {
        u32* dst = out + line * lw32 + w + lane * plane;
        // A word none of whose bits another tile holds is stored, not OR-ed.
        if (w * 32 >= b0 && min(w * 32 + 32, byCols ? M : N) <= b0 + bext) {
          *dst = mine;
        } else {
          atomicOr(dst, mine);
        }
      }
    }
  }
}

// KERNEL_EMU: agg.cu compiled as C++ for the CPU (tcu/agg_emu_test.go),
// which has no PTX to assemble.
#ifndef KERNEL_EMU
__device__ __forceinline__ void cp_async16(u32 saddr, const void* g, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(g), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }
#endif

// Block b of problem P: its output tile and its number of k-steps (the
// row tile's zero-tile list, or all).
struct Work {
  int tm, tn, nk;
};
__device__ __forceinline__ Work blockWork(const Prob& P, int b) {
  Work w;
  const int tile = b - P.tileStart;
  w.tm = tile / P.tilesN;
  w.tn = tile - w.tm * P.tilesN;
  if (P.kptr) {
    const int* kp = (const int*)P.kptr;
    w.nk = kp[w.tm + 1] - kp[w.tm];
  } else {
    w.nk = P.lw32 >> 3;
  }
  return w;
}

// storePair stores int products a, b at (m, n) and (m, n+1), n even (as
// outT: int32, or uint16 with OUT16).
__device__ __forceinline__ void storePair(const Prob& P, int m, int n, int a, int b) {
  if (m >= P.M || n >= P.N) return;
  outT* o = (outT*)P.out + (long long)m * P.N + n;
  if ((P.N & 1) == 0) {
#if OUT16
    *(u32*)o = pack2(a, b);
#else
    *(int2*)o = make_int2(a, b);
#endif
  } else {
    o[0] = (outT)a;
    if (n + 1 < P.N) o[1] = (outT)b;
  }
}
