// Bit matrix product on Hopper's wgmma m64nNk256 .b1 .and.popc (sm_90a).
//
// A block of WGS warpgroups computes a (64·WGS)×BN tile of C. B's bit
// planes are laid side by side as the N' = BBITS·BN columns of one wgmma,
// so each A tile, once in shared memory, meets every plane of B in a
// single instruction per A plane ("non-zero tile reuse"). A pipeline stage
// holds KS k-steps of 256 bits (the next KS entries of the row tile's
// zero-tile list, or KS consecutive k-steps), STAGES deep. The operands
// come in the tiled layout of tcu's tiledWords, where consecutive k-steps
// of a tile, every plane, are one contiguous block: one thread fetches a
// stage with one bulk copy per operand (cp.async.bulk, the copy engine;
// one per sub-step when the zero-tile list skips steps) completing on the
// stage's mbarrier, so the L2 sees whole-line requests rather than one per
// 16 bytes. A slot is refilled as soon as every warp's wgmmas that read it
// have finished (an "empty" mbarrier per slot), so STAGES-1 stages load
// while one is multiplied, with one wgmma wait per KS·ABITS wgmmas and no
// block-wide barrier in the loop. Sub-steps
// past the end of the list fetch an all-zero k-step, so the
// wgmma sequence has no data-dependent branch. Operands use the no-swizzle
// K-major core-matrix layout: 8 lines × 16 bytes per core matrix (128
// contiguous bytes); the two core matrices of a line group's 256-bit
// k-step are 128 bytes apart and line groups 256 bytes apart. DESC_LBO and
// DESC_SBO are the descriptor's leading and stride byte offsets for that
// layout (128 and 256 when the leading dimension is K); the host checks
// the choice against the CPU once.
//
// With EPI=1 (the host's choice for 256-column tiles), whole int32 tiles
// leave through shared memory: the warps write their rows there and bulk
// copies (cp.async.bulk shared -> global) store them, one per row.
//
// With OUT16=1 (common.cuh), every int output path above and below stores
// uint16 instead of int32: the host picks it when every product fits
// (K·(2^a-1)·(2^b-1) <= 65535) and widens on the way back, so the
// "int32" tiles below are then half as many bytes.
//
// MulBit tiles that lie wholly inside the output and whose
// packed words belong to this block alone (BN a multiple of 32, the
// output's only column tile, or packed by columns) leave through shared
// memory: codes made from the registers (or, with an epilogue, the raw
// products, re-quantized by the packing), then each warp packs 32
// positions of an output line at a time (packTileBits), __ballot_sync
// making each bit plane's word, stored plainly (no atomics, no per-output
// call).
//
// With WS=n (n >= 1; dense or listed A), a producer
// warpgroup (one thread of it) issues every bulk copy: it alone waits on
// the "empty" barriers, so the consumer warpgroups only wait for data,
// multiply and release (each warp arriving once its wgmmas of n stages
// back are done: wgmma.wait_group n). The producer gives its registers to
// the consumers (setmaxnreg: 40 and 232 of the 168 per thread a block of
// 384 threads gets) and leaves after its last copy; the epilogue's
// barriers are the consumers' own (named barrier 1).
//
// Compile-time parameters (-D): ABITS, BBITS, BN, NP, WGS, KS, STAGES, EPI, BITREG, WS, TAIL, TAILEPI, ONEPROB, L2HINT,
// TIMING, OUT16 (common.cuh), DESC_LBO, DESC_SBO.
#if WS
// The epilogue's barriers and packing: the consumers only.
#define BLOCK_SYNC() asm volatile("bar.sync 1, %0;\n" ::"n"(128 * WGS) : "memory")
#define BLOCK_WARPS (4 * WGS)
#endif
#include "common.cuh"

// emit stores product c at (m, n): int (outT), float32 or the
// re-quantized byte code straight to the row-major output, or the
// re-quantized code into the block's q tile
// (ldq words per row) for packBits. Out-of-range positions store code 0.
// Not inlined: the epilogue runs once per output, and an inlined copy per
// accumulator register made NVRTC take seconds per kernel variant. P is the
// descriptor in global memory (its fields stay in L1).
__device__ __noinline__ void emit(const Prob* __restrict__ Pg, int c, int m, int n, u32* q, int qi) {
  const Prob& P = *Pg;
  bool ok = m < P.M && n < P.N;
  if (P.mode == MODE_INT) {
    if (ok) ((outT*)P.out)[(long long)m * P.N + n] = (outT)c;
  } else if (P.mode == MODE_FLOAT) {
    if (ok) ((float*)P.out)[(long long)m * P.N + n] = applyEp(P, c, m, n);
  } else if (P.mode == MODE_CODES) {
    if (ok) ((unsigned char*)P.out)[(long long)m * P.N + n] = (unsigned char)quantize(applyEp(P, c, m, n), P.rqScale, P.rqOffset, P.outBits);
  } else {
    q[qi] = ok ? quantize(applyEp(P, c, m, n), P.rqScale, P.rqOffset, P.outBits) : 0u;
  }
}

// FINISH_TILE is the kernel's tail, expanded inside the kernel
// body after the main loop: FOR_OUT(body) must run body once per output
// the thread holds, with (lr, lc) its place in the BMv×BNv tile and v its
// product, and P, probs, pi, m0, n0 and smem be in scope. int outputs are
// stored inline; float and bit outputs go through emit (and packBits).
#define FINISH_TILE(BMv, BNv)                                                           \
  do {                                                                                  \
    if (P.mode == MODE_INT) {                                                           \
      /* Outputs come in pairs of adjacent columns (even first): one 8-byte */         \
      /* store each when N is even. */                                                  \
      int pv_ = 0;                                                                      \
      FOR_OUT(if ((lc & 1) == 0) pv_ = v; else storePair(P, m0 + lr, n0 + lc - 1, pv_, v);) \
      return;                                                                           \
    }                                                                                   \
    /* The q tile reuses the stage buffers: wait for every warp's wgmmas. */          \
    if (P.mode == MODE_BIT) BLOCK_SYNC();                                               \
    u32* q_ = (u32*)smem;                                                               \
    FOR_OUT(emit(probs + pi, v, m0 + lr, n0 + lc, q_, lr * ((BNv) + 1) + lc);)          \
    if (P.mode == MODE_BIT) {                                                           \
      BLOCK_SYNC();                                                                     \
      packBits(probs + pi, q_, (BNv) + 1, m0, n0, (BMv), (BNv));                        \
    }                                                                                   \
  } while (0)
#include "wgmma_ops.cuh"

// NP = BBITS * BN, the wgmma N, comes as a number (-DNP) for token pasting.
#ifndef WS
#define WS 0
#endif
#ifndef ONEPROB
#define ONEPROB 0
#endif
#define BM (64 * WGS)
// NTHREADS: the consumer warpgroups; the launch adds the producer's (WS).
#define NTHREADS (128 * WGS)
#define NTHREADS_ALL (NTHREADS + (WS ? 128 : 0))
#define A_BYTES (ABITS * BM * 32)
#define B_BYTES (NP * 32)
// A stage: KS k-steps of A (every plane), then KS k-steps of B.
#define STAGE_BYTES (KS * (A_BYTES + B_BYTES))

#define WGMMA_N_(n) wgmma_n##n
#define WGMMA_N(n) WGMMA_N_(n)

__device__ __forceinline__ u64 desc(u32 saddr) {
  return (u64)((saddr & 0x3FFFF) >> 4) | ((u64)(DESC_LBO >> 4) << 16) | ((u64)(DESC_SBO >> 4) << 32);
}

__device__ __forceinline__ void mbarInit(u32 bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarExpect(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarArrive(u32 bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbarWait(u32 bar, u32 phase) {
  asm volatile(
      "{\n.reg .pred P1;\nLAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n" ::"r"(bar),
      "r"(phase)
      : "memory");
}
// bulkCopy copies bytes (a multiple of 16) from global to shared memory on
// the copy engine, completing on the mbarrier bar.
__device__ __forceinline__ void bulkCopy(u32 dst, const void* src, u32 bytes, u32 bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

// L2HINT=1 stores whole int32 tiles with an L2 evict-first policy (the
// output is read once, by the copy to the host), so that A's lines are
// the ones that stay in the L2 from one product to the next on the same
// adjacency.
#ifndef L2HINT
#define L2HINT 0
#endif
__device__ __forceinline__ u64 policyEvictFirst() {
  u64 p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
  return p;
}
// bulkStore copies bytes (a multiple of 16, both addresses 16-byte
// aligned) from shared to global memory on the copy engine.
__device__ __forceinline__ void bulkStore(void* dst, u32 src, u32 bytes) {
#if L2HINT >= 1
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;\n" ::"l"(dst), "r"(src), "r"(bytes),
               "l"(policyEvictFirst())
               : "memory");
#else
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(src), "r"(bytes) : "memory");
#endif
}
// stGlobalV2 stores the words (a, b) at p (8-byte aligned): with L2HINT,
// under the evict-first policy.
__device__ __forceinline__ void stGlobalV2(void* p, u32 a, u32 b) {
#if L2HINT >= 1
  asm volatile("st.global.L2::cache_hint.v2.b32 [%0], {%1, %2}, %3;\n" ::"l"(p), "r"(a), "r"(b), "l"(policyEvictFirst()) : "memory");
#else
  *(uint2*)p = make_uint2(a, b);
#endif
}
// stGlobal2 stores the pair (a, b) of int outputs at p (aligned to the
// pair): with L2HINT, under the evict-first policy.
__device__ __forceinline__ void stGlobal2(outT* p, int a, int b) {
#if OUT16
#if L2HINT >= 1
  asm volatile("st.global.L2::cache_hint.b32 [%0], %1, %2;\n" ::"l"(p), "r"(pack2(a, b)), "l"(policyEvictFirst()) : "memory");
#else
  *(u32*)p = pack2(a, b);
#endif
#else
  stGlobalV2(p, (u32)a, (u32)b);
#endif
}
__device__ __forceinline__ void stShared2(u32 addr, int a, int b) {
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(addr), "r"(a), "r"(b) : "memory");
}
// stSharedOut stores the pair (a, b) of int outputs at addr, as outT.
__device__ __forceinline__ void stSharedOut(u32 addr, int a, int b) {
#if OUT16
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr), "r"(pack2(a, b)) : "memory");
#else
  stShared2(addr, a, b);
#endif
}

// EPI=1: whole int32 tiles leave through shared memory and bulk stores
// (cp.async.bulk shared -> global, one per row) instead of 8-byte stores
// from the registers.
#ifndef EPI
#define EPI 0
#endif
#ifndef BITREG
#define BITREG 0
#endif
// TIMING=1 (a diagnostic, tuning only): thread 0 of each block prints the
// global timer (ns) at entry, when its first stage has landed, after its
// last wgmma and after its int32 stores were issued (TIMING lines);
// thread 128, of the second warpgroup, the same and, between the first
// stage and the last wgmma, after the tail's barrier let it go on (0
// without the tail; TIMEWG1 lines). ptxas may move a timer read across a
// barrier (nothing orders it): read the lines as estimates.
#ifndef TIMING
#define TIMING 0
#endif
#if TIMING
extern "C" __device__ int vprintf(const char*, const char*);
__device__ __forceinline__ u64 gtime() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t)::"memory");
  return t & ((1ull << 40) - 1);  // exact in a double (awk) for 18 minutes
}
#define TSTAMP(v) u64 v = gtime()
#define TREPORT(t3)                                                                      \
  if (threadIdx.x == 0) {                                                                \
    struct {                                                                             \
      u64 b, g, a, c, d, e;                                                              \
    } args_ = {blockIdx.x, gridDim.x, tt0, tt1, tt2, t3};                                \
    vprintf("TIMING %llu %llu %llu %llu %llu %llu\n", (const char*)&args_);               \
  } else if (threadIdx.x == 128) {                                                       \
    struct {                                                                             \
      u64 b, g, a, c, r, d, e;                                                           \
    } args_ = {blockIdx.x, gridDim.x, tt0, tt1, ttr, tt2, t3};                           \
    vprintf("TIMEWG1 %llu %llu %llu %llu %llu %llu %llu\n", (const char*)&args_);         \
  }
#endif
// TILE_DONE, at the end of each epilogue: with TIMING, threads 0 and 128 report the
// block's phase times; otherwise nothing.
#if TIMING
#define TILE_DONE() \
  do {              \
    TSTAMP(tt3);    \
    TREPORT(tt3);   \
  } while (0)
#else
#define TILE_DONE() \
  do {              \
  } while (0)
#endif
// TAIL=n (with WS): the consumer warpgroups multiply the last n stages
// one after the other, the first warpgroup alone and then the second, so
// that the first one's epilogue (its int32 rows stored from the registers)
// overlaps the second one's last stages; the second then stores its int32
// rows through shared memory with no block barrier. Every one of those n
// stages is in shared memory by then (n <= STAGES), so neither waits for
// a copy. The host builds it for int32 launches only (tcu chooseTail:
// under it racecheck reported hazards in the MulBit packing paths).
#ifndef TAIL
#define TAIL 0
#endif
// TAILEPI=1 (with TAIL = STAGES-1 and EPI): the first warpgroup's int32
// rows leave through shared memory too, while the second multiplies the
// tail: its first two warps' rows through TAILEPI_BYTES past the stages
// (the host allocates them), the last two's through the one slot f the
// tail leaves free (it held the stage before the tail, which both
// warpgroups have released once its "empty" barrier completes). The
// second warpgroup's rows then go through the two slots after f, two
// warps' to a slot, so the two never share a byte.
#ifndef TAILEPI
#define TAILEPI 0
#endif
// EPI_LD: the bytes of a staged output row, BN outputs and 8 more (the
// two half-warps of a store hit distinct banks).
#define EPI_LD ((BN + 8) * OUTB)
#define TAILEPI_BYTES (2 * 16 * EPI_LD)
#if TAILEPI && (TAIL != STAGES - 1 || !EPI || STAGES < 3 || STAGE_BYTES < TAILEPI_BYTES)
#error "TAILEPI needs TAIL = STAGES-1 >= 2, EPI, and two warps' rows in a stage"
#endif
#if TAIL && (!WS || TAIL > STAGES)
#error "TAIL needs WS and TAIL <= STAGES"
#endif
#if WS && WGS != 2
#error "WS needs WGS=2 (the setmaxnreg counts are those of 384 threads)"
#endif

// loadStage (one thread) queues the bulk copies of pipeline stage st on
// the stage's mbarrier: sub-step u holds the block's k-step number st·KS+u
// (its list entry, or that k-step itself), every plane of A's BM rows and of B's
// BN columns, in the tiled layout of tcu's tiledWords (P.aPlane and
// P.bPlane are the 32-bit words of one tile there). A full stage of
// consecutive k-steps is one copy per operand; otherwise each sub-step is
// one copy per operand, and sub-steps past nk fetch the all-zero k-step
// that follows the last one, so a part-filled stage adds nothing.
__device__ __forceinline__ void loadStage(const Prob& P, u32 sS, u32 bar, int tm, int tn, const int* klist, int st, int nk) {
  const u32* A = (const u32*)P.A + tm * P.aPlane;
  const u32* B = (const u32*)P.B + tn * P.bPlane;
  const int zero = P.lw32 >> 3;
  mbarExpect(bar, STAGE_BYTES);
  if (!klist && (st + 1) * KS <= nk) {
    const int ks = st * KS;
    bulkCopy(sS, A + (long long)ks * (A_BYTES / 4), KS * A_BYTES, bar);
    bulkCopy(sS + KS * A_BYTES, B + (long long)ks * (B_BYTES / 4), KS * B_BYTES, bar);
    return;
  }
#pragma unroll
  for (int u = 0; u < KS; u++) {
    const int kk = st * KS + u;
    const int ks = kk < nk ? (klist ? klist[kk] : kk) : zero;
    bulkCopy(sS + u * A_BYTES, A + (long long)ks * (A_BYTES / 4), A_BYTES, bar);
    bulkCopy(sS + KS * A_BYTES + u * B_BYTES, B + (long long)ks * (B_BYTES / 4), B_BYTES, bar);
  }
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }
// fenceAcc pins the accumulators at this point of the program: the memory
// clobber of wg_wait does not order register reads, and the compiler would
// otherwise start combining B's planes before the last wgmma has finished
// (ptxas then serializes every wgmma, warning C7514).
__device__ __forceinline__ void fenceAcc(int* d, int n) {
#pragma unroll
  for (int r = 0; r < n; r++) asm volatile("" : "+r"(d[r])::"memory");
}

// combine returns the product held in accumulator r of column group c,
// B's planes combined with their weights (pairs of weight 2^31 or more are
// left out, as in bmm_mma.cu).
__device__ __forceinline__ int combine(const int (&d)[ABITS][NP / 2], int c, int r) {
  int v = 0;
#pragma unroll
  for (int i = 0; i < ABITS; i++)
#pragma unroll
    for (int j = 0; j < BBITS; j++)
      if (i + j < 31) v += (int)((u32)d[i][4 * (j * (BN / 8) + c) + r] << (i + j));
  return v;
}

// quantizeFast is quantize (common.cuh) with no branch: cvt.rzi.u32.f32
// saturates (NaN and v <= 0 give 0, v >= 2^32 gives 2^32-1), truncation
// is floor for v > 0, and min(., mx) clamps exactly where quantize does
// (no float lies in [mx, float(mx)) when float(mx) rounds up).
__device__ __forceinline__ u32 quantizeFast(float y, float scale, float offset, u32 mx) {
  return min(__float2uint_rz(__fadd_rn(__fmul_rn(y, scale), offset)), mx);
}

// packTileBits packs the block's BMv×BNv tile q (row stride ldq words)
// into the output planes, along rows or (COLS) down columns: a warp takes
// 8 output words at a time (LPI lines of NW words), each lane one
// position of each, and stores one word per plane, lane p storing plane p.
// q holds the codes when coded, else the raw products, which are
// re-quantized here through the job's epilogue. Every word it writes
// belongs to this block alone: BMv is a multiple of 32, and rows narrower
// than 32 columns (ByRows) are packed only when the tile is the output's
// only column tile, positions past BNv writing zero bits. Shapes are
// compile-time: the loop is loads, ballots and stores (ncu: the
// runtime-shaped loop spent 32 instructions per word).
template <int BMv, int BNv, bool COLS>
__device__ __forceinline__ void packTileBits(const Prob& P, const int* q, int ldq, int m0, int n0, bool coded) {
  constexpr int NW = ((COLS ? BMv : BNv) + 31) / 32;  // words per line
  constexpr int LPI = NW >= 8 ? 1 : 8 / NW;           // lines per iteration
  constexpr int LINES = COLS ? BNv : BMv;
  constexpr bool PART = LINES % LPI != 0;  // the last iteration is part-filled
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = BLOCK_WARPS;
  const int bits = P.outBits;
  // Lane p's words: plane p, from the tile's first line and word.
  u32* out = (u32*)P.out + (long long)lane * P.outPlane + (long long)(COLS ? n0 : m0) * P.outLw32 + ((COLS ? m0 : n0) >> 5);
  for (int l0 = warp * LPI; l0 < LINES; l0 += nw * LPI) {
    u32 code[LPI][NW], mine[LPI][NW];
#pragma unroll
    for (int i = 0; i < LPI; i++)
#pragma unroll
      for (int j = 0; j < NW; j++) {
        const int r = COLS ? j * 32 + lane : l0 + i, c = COLS ? l0 + i : j * 32 + lane;
        const bool in = (!PART || l0 + i < LINES) && (COLS || BNv % 32 == 0 || c < BNv);
        code[i][j] = in ? (u32)q[r * ldq + c] : 0u;
        if (!coded && in) code[i][j] = quantize(applyEp(P, (int)code[i][j], m0 + r, n0 + c), P.rqScale, P.rqOffset, bits);
        mine[i][j] = 0;
      }
    for (int p = 0; p < bits; p++) {
#pragma unroll
      for (int i = 0; i < LPI; i++)
#pragma unroll
        for (int j = 0; j < NW; j++) {
          const u32 word = __ballot_sync(0xffffffffu, (code[i][j] >> p) & 1u);
          if (lane == p) mine[i][j] = word;
        }
    }
    if (lane < bits) {
#pragma unroll
      for (int i = 0; i < LPI; i++)
#pragma unroll
        for (int j = 0; j < NW; j++)
          if (!PART || l0 + i < LINES) out[(long long)(l0 + i) * P.outLw32 + j] = mine[i][j];
    }
  }
}

#if BITREG && BN % 64 == 0
// BITREG=1: MulBit tiles packed by rows with no epilogue and at most 8
// output bits leave straight from the accumulators, without shared
// memory. In the m64nNk256 layout lane l of a warp holds rows l/4 and
// l/4+8 of its 16, columns 8c + 2(l%4) + {0,1} of every column group c, so
// the 32 columns of output word w (column groups 4w..4w+3) lie in the 4
// lanes of a quad, 8 codes each. Each lane makes, per plane, its partial
// word (its 8 bits in place), and the quad ORs 4 partial words into 4
// whole ones with 3 shuffles (quadScatter), lane q keeping the q-th.
// BN % 64 == 0: the (row, word) pairs of a lane come in whole groups of 4.
// BITREG=2: 2 to 8 bits exchange whole plane bytes instead (2 shuffles
// per 4 words and plane, no spread).

// quadScatter returns, in lane q = lane%4 of each quad, the OR over the
// quad of its v[q] (the partial words of 4 output words, disjoint bits).
__device__ __forceinline__ u32 quadScatter(u32 v0, u32 v1, u32 v2, u32 v3, int q) {
  const bool hi = q & 2, odd = q & 1;
  u32 k0 = hi ? v2 : v0, k1 = hi ? v3 : v1;
  const u32 s0 = hi ? v0 : v2, s1 = hi ? v1 : v3;
  k0 |= __shfl_xor_sync(0xffffffffu, s0, 2);
  k1 |= __shfl_xor_sync(0xffffffffu, s1, 2);
  const u32 keep = odd ? k1 : k0, send = odd ? k0 : k1;
  return keep | __shfl_xor_sync(0xffffffffu, send, 1);
}

// spread2 moves the bit pairs (2j, 2j+1) of byte b to bits (8j, 8j+1).
__device__ __forceinline__ u32 spread2(u32 b) {
  b = (b | (b << 12)) & 0x000F000Fu;
  return (b | (b << 6)) & 0x03030303u;
}

// transpose8 transposes the 8x8 bit matrix whose row k is byte k of
// (lo, hi): afterwards bit k of byte p is bit p of the former byte k
// (three delta swaps, Hacker's Delight 7-3, on 32-bit halves).
__device__ __forceinline__ void transpose8(u32& lo, u32& hi) {
  u32 t = (lo ^ (lo >> 7)) & 0x00AA00AAu;
  lo ^= t ^ (t << 7);
  t = (hi ^ (hi >> 7)) & 0x00AA00AAu;
  hi ^= t ^ (t << 7);
  t = (lo ^ (lo >> 14)) & 0x0000CCCCu;
  lo ^= t ^ (t << 14);
  t = (hi ^ (hi >> 14)) & 0x0000CCCCu;
  hi ^= t ^ (t << 14);
  t = (lo ^ (hi << 4)) & 0xF0F0F0F0u;
  lo ^= t;
  hi ^= t >> 4;
}

// packRegBits packs this thread's codes of the block's BM×BN tile into
// the output planes (ByRows): row0 is its first tile row (the second is
// row0+8). Codes as the shared-memory path makes them (quantizeFast).
__device__ __forceinline__ void packRegBits(const Prob& P, const int (&d)[ABITS][NP / 2], int m0, int n0, int row0, int lane) {
  constexpr int W = BN / 32;  // words per row; pairs (h, w) = 2W, 4 per group
  const int q = lane & 3, bits = P.outBits;
  const float sc = P.rqScale, of = P.rqOffset;
  const u32 mx = (1u << bits) - 1u;
  u32* out = (u32*)P.out + (long long)(m0 + row0) * P.outLw32 + (n0 >> 5);
#define QC(c, r) quantizeFast(__int2float_rn(combine(d, c, r)), sc, of, mx)
#pragma unroll
  for (int g = 0; g < 2 * W / 4; g++) {
    // Lane q stores pair 4g+q: row h, word w.
    const int pr = 4 * g + q, h = pr / W, w = pr % W;
    u32* o = out + (long long)(8 * h) * P.outLw32 + w;
    if (bits == 1) {
      u32 v[4];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const int hh = (4 * g + i) / W, ww = (4 * g + i) % W;
        u32 x = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) x |= (QC(4 * ww + j, 2 * hh) | (QC(4 * ww + j, 2 * hh + 1) << 1)) << (8 * j);
        v[i] = x << (2 * q);
      }
      *o = quadScatter(v[0], v[1], v[2], v[3], q);
    } else {
      // Byte k of (lo, hi): the code of column group 4w + k/2, row k%2;
      // transposed, byte p is plane p.
      u32 lo[4], hi[4];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const int hh = (4 * g + i) / W, ww = (4 * g + i) % W;
        lo[i] = QC(4 * ww, 2 * hh) | (QC(4 * ww, 2 * hh + 1) << 8) | (QC(4 * ww + 1, 2 * hh) << 16) | (QC(4 * ww + 1, 2 * hh + 1) << 24);
        hi[i] = QC(4 * ww + 2, 2 * hh) | (QC(4 * ww + 2, 2 * hh + 1) << 8) | (QC(4 * ww + 3, 2 * hh) << 16) | (QC(4 * ww + 3, 2 * hh + 1) << 24);
        transpose8(lo[i], hi[i]);
      }
#if BITREG == 2
      // The quad exchanges whole plane bytes: R holds this lane's byte of
      // plane p for the 4 pairs; two shuffles and byte permutes give lane
      // q the bytes of pair q from the 4 lanes (byte r from lane r), whose
      // 2-bit fields (lane r, column group j) a transpose puts in place.
      const u32 selA = (q & 2) ? 0x7362u : 0x5140u;
      u32 selB = 0;
#pragma unroll
      for (int r = 0; r < 4; r++) {
        const int x = r ^ q;
        selB |= (u32)((q & 1) * 2 + (x & 1) * 4 + (x >> 1)) << (4 * r);
      }
#pragma unroll
      for (int p = 0; p < 8; p++) {
        if (p < bits) {
          const u32 s1 = (u32)((p & 3) | ((4 + (p & 3)) << 4));
          const u32 t01 = __byte_perm(p < 4 ? lo[0] : hi[0], p < 4 ? lo[1] : hi[1], s1);
          const u32 t23 = __byte_perm(p < 4 ? lo[2] : hi[2], p < 4 ? lo[3] : hi[3], s1);
          const u32 R = __byte_perm(t01, t23, 0x5410u);
          const u32 S = __byte_perm(R, __shfl_xor_sync(0xffffffffu, R, 2), selA);
          u32 x = __byte_perm(S, __shfl_xor_sync(0xffffffffu, S, 1), selB);
          u32 t = (x ^ (x >> 6)) & 0x00CC00CCu;
          x ^= t ^ (t << 6);
          t = (x ^ (x >> 12)) & 0x0000F0F0u;
          x ^= t ^ (t << 12);
          o[(long long)p * P.outPlane] = x;
        }
      }
#else
#pragma unroll
      for (int p = 0; p < 8; p++) {
        if (p < bits) {
          u32 v[4];
#pragma unroll
          for (int i = 0; i < 4; i++) v[i] = spread2(((p < 4 ? lo[i] : hi[i]) >> (8 * (p & 3))) & 0xFFu) << (2 * q);
          o[(long long)p * P.outPlane] = quadScatter(v[0], v[1], v[2], v[3], q);
        }
      }
#endif
    }
  }
#undef QC
}
#endif

extern "C" __global__ void __launch_bounds__(NTHREADS_ALL, 1) bmm_wgmma(const Prob* __restrict__ probs, long long nprobs, const __grid_constant__ Prob p1) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const int pi = findProb(probs, (int)nprobs, blockIdx.x);
  // A register copy: the "memory" clobbers of the asm statements would make
  // the compiler re-read every field of a reference to global memory. A
  // launch of one product (ONEPROB=1) reads the copy it passes by value
  // (p1) instead: no dependent global load before the first copy. (The
  // choice is made at compile time: a run-time select of the two sources
  // made the compiler read the descriptor through a generic pointer.)
#if ONEPROB
  // Field by field (PROB_FROM_PARAM). (MulBit of 256-column tiles still
  // ran slower with it than with the global copy, so the host does not
  // choose it there: bench/gpu/RESULTS.md, session 5.)
  Prob P;
  PROB_FROM_PARAM(P, p1);
#else
  const Prob P = probs[pi];
#endif
  const Work wk = blockWork(P, blockIdx.x);
  const int tm = wk.tm;
  const int m0 = tm * BM, n0 = wk.tn * BN;
  const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
  const u32 sbase = smem_u32(smem);
#if TIMING
  TSTAMP(tt0);
  u64 tt1 = 0, ttr = 0;
#endif

  int d[ABITS][NP / 2];
#define ZERO_ACC()                                             \
  do {                                                         \
    _Pragma("unroll") for (int i = 0; i < ABITS; i++)          \
    _Pragma("unroll") for (int r = 0; r < NP / 2; r++) d[i][r] = 0; \
    _Pragma("unroll") for (int i = 0; i < ABITS; i++) fenceAcc(d[i], NP / 2); \
  } while (0)

#if TIMING
#define STAMP_FIRST(t) \
  if ((t) == 0) tt1 = gtime()
#else
#define STAMP_FIRST(t)
#endif
  // MMA_STAGE(t) waits for stage t's copies and issues its wgmmas (every
  // plane of A against B's planes side by side) as one commit group.
#define MMA_STAGE(t)                                                                                                          \
  do {                                                                                                                        \
    const int slot_ = (t) % STAGES;                                                                                           \
    mbarWait(full0 + 8 * slot_, ((t) / STAGES) & 1);                                                                          \
    STAMP_FIRST(t);                                                                                                           \
    const u32 sS_ = sbase + slot_ * STAGE_BYTES;                                                                              \
    wg_fence();                                                                                                               \
    _Pragma("unroll") for (int u = 0; u < KS; u++)                                                                            \
    _Pragma("unroll") for (int i = 0; i < ABITS; i++)                                                                         \
      WGMMA_N(NP)(d[i], desc(sS_ + u * A_BYTES + i * (BM * 32) + wg * (64 * 32)), desc(sS_ + KS * A_BYTES + u * B_BYTES));    \
    wg_commit();                                                                                                              \
  } while (0)

  const int nk = wk.nk;
  const int nst = (nk + KS - 1) / KS;
  // This block's k-steps: the tile's zero-tile list, or all.
  const int* klist = P.kptr ? (const int*)P.kidx + ((const int*)P.kptr)[tm] : nullptr;
  // Each slot has a "full" mbarrier (the copies landed) and an "empty" one
  // (every warp's wgmmas that read it have finished). Thread 0 issues
  // every copy: all STAGES slots up front, then each slot again as soon as
  // it is released, so STAGES-1 stages are in flight while one is
  // multiplied, and no block-wide barrier is needed inside the loop.
  __shared__ __align__(8) u64 bars[2 * STAGES];
  const u32 full0 = smem_u32(bars), empty0 = full0 + 8 * STAGES;
#if WS
  // The producer warpgroup (the last; its first thread) initializes the
  // barriers and queues the first stages before the block barrier; after
  // it, it refills each slot as soon as every consumer warp has released
  // it. The consumers wait only for data: stage t's wgmmas are issued once
  // it has landed, and a warp releases stage t-WS once its wgmmas are done.
  if (threadIdx.x == NTHREADS) {
    for (int s = 0; s < STAGES; s++) {
      mbarInit(full0 + 8 * s, 1);
      mbarInit(empty0 + 8 * s, 4 * WGS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    for (int s = 0; s < STAGES && s < nst; s++) loadStage(P, sbase + s * STAGE_BYTES, full0 + 8 * s, tm, wk.tn, klist, s, nk);
  }
  __syncthreads();
  if (threadIdx.x >= NTHREADS) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (threadIdx.x == NTHREADS) {
      for (int t = STAGES; t < nst; t++) {
        const int slot = t % STAGES;
        mbarWait(empty0 + 8 * slot, ((t / STAGES) - 1) & 1);
        loadStage(P, sbase + slot * STAGE_BYTES, full0 + 8 * slot, tm, wk.tn, klist, t, nk);
      }
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
  ZERO_ACC();
#if TAIL
  // The second warpgroup stops before stage tail0 until the first has
  // finished every stage, having released all it has multiplied (so the
  // producer can queue the last stages and the first need not wait for
  // it); rel is the next stage it releases. Only where the loop is long
  // enough for the tail to pay (tailOn); otherwise tail0 = nst, and the
  // two warpgroups meet after their loops (barrier 3 both ways, as
  // BLOCK_SYNC) and store as without the tail.
  const bool tailOn = nst >= 4 * TAIL;
  const int tail0 = tailOn ? nst - TAIL : nst;
  int rel = 0;
  bool waited = false;
#endif
  for (int t = 0; t < nst; t++) {
#if TAIL
    if (wg == 1 && t == tail0) {
      wg_wait<0>();
      if (lane == 0)
        for (int j = rel; j < t; j++) mbarArrive(empty0 + 8 * (j % STAGES));
      rel = t;
      asm volatile("bar.sync 3, 256;\n" ::: "memory");
      waited = true;
#if TIMING
      ttr = gtime();
#endif
    }
#endif
    MMA_STAGE(t);
    wg_wait<WS>();
#if TAIL
    if (t >= WS && t - WS >= rel) {
      if (lane == 0) mbarArrive(empty0 + 8 * ((t - WS) % STAGES));
      rel = t - WS + 1;
    }
#else
    if (t >= WS && lane == 0) mbarArrive(empty0 + 8 * ((t - WS) % STAGES));
#endif
  }
  wg_wait<0>();
#if TAIL
  // The first warpgroup is done with the stage buffers: the second may go
  // on (and, past its loop, reuse every buffer). Where the tail did not
  // run, both wait here for each other.
  if (wg == 0 && tailOn)
    asm volatile("bar.arrive 3, 256;\n" ::: "memory");
  else if (!waited)
    asm volatile("bar.sync 3, 256;\n" ::: "memory");
#endif
#else
  ZERO_ACC();
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; s++) {
      mbarInit(full0 + 8 * s, 1);
      mbarInit(empty0 + 8 * s, 4 * WGS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (int s = 0; s < STAGES && s < nst; s++) loadStage(P, sbase + s * STAGE_BYTES, full0 + 8 * s, tm, wk.tn, klist, s, nk);
  for (int t = 0; t < nst; t++) {
    MMA_STAGE(t);
    wg_wait<1>();
    // This warp's wgmmas of stage t-1 are done: release its slot, and
    // (thread 0) refill it with stage t-1+STAGES once every warp has.
    if (t > 0) {
      const int ps = (t - 1) % STAGES, nt = t - 1 + STAGES;
      if (lane == 0) mbarArrive(empty0 + 8 * ps);
      if (threadIdx.x == 0 && nt < nst) {
        mbarWait(empty0 + 8 * ps, ((t - 1) / STAGES) & 1);
        loadStage(P, sbase + ps * STAGE_BYTES, full0 + 8 * ps, tm, wk.tn, klist, nt, nk);
      }
    }
  }
  wg_wait<0>();
#endif
#if TIMING
  TSTAMP(tt2);
#endif
#pragma unroll
  for (int i = 0; i < ABITS; i++) fenceAcc(d[i], NP / 2);

  // ACC(c, r) is the product held in accumulator r of column group c
  // (compile-time constants after unrolling).
#define ACC(c, r) combine(d, c, r)
  // MulBit of a whole tile: raw products into shared memory, then
  // re-quantized and packed a word at a time.
  // Rows narrower than a word belong to this block alone when it holds
  // the output's only column tile.
  if (P.mode == MODE_BIT && m0 + BM <= P.M && n0 + BN <= P.N && (P.outByCols || BN % 32 == 0 || P.tilesN == 1)) {
    const int row = wg * 64 + warp * 16 + (lane >> 2);
    // With no epilogue the codes are made here, from the registers (short
    // independent chains); with one, the packing applies it (one inlined
    // epilogue instead of one per accumulator).
    const bool coded = !P.colScale && !P.rowTerm && !P.colConst && !P.rowScale && !P.colBias && !P.relu;
#if BITREG && BN % 64 == 0
    if (coded && !P.outByCols && P.outBits <= 8) {
      packRegBits(P, d, m0, n0, row, lane);
      TILE_DONE();
      return;
    }
#endif
    BLOCK_SYNC();  // every warp's wgmmas are done with the stage buffers
    int* q = (int*)smem;
    const float sc = P.rqScale, of = P.rqOffset;
    const u32 mx = P.outBits >= 32 ? 0xffffffffu : (1u << P.outBits) - 1u;
#define QV(c, r) (coded ? (int)quantizeFast(__int2float_rn(ACC(c, r)), sc, of, mx) : ACC(c, r))
    const int ldq = P.outByCols ? BN + 1 : BN + 8;
    if (!P.outByCols) {
      // Rows of BN+8 words: 8-byte stores, the two half-warps' in distinct
      // banks (as EPI); the packing reads along rows.
      const u32 s0 = sbase + (row * ldq + (lane & 3) * 2) * 4;
#pragma unroll
      for (int c = 0; c < BN / 8; c++) {
        stShared2(s0 + c * 32, QV(c, 0), QV(c, 1));
        stShared2(s0 + 8 * ldq * 4 + c * 32, QV(c, 2), QV(c, 3));
      }
    } else {
      // Rows of BN+1 words: the packing reads down columns.
      int* qr = q + row * ldq + (lane & 3) * 2;
#pragma unroll
      for (int c = 0; c < BN / 8; c++) {
        qr[c * 8] = QV(c, 0);
        qr[c * 8 + 1] = QV(c, 1);
        qr[8 * ldq + c * 8] = QV(c, 2);
        qr[8 * ldq + c * 8 + 1] = QV(c, 3);
      }
    }
#undef QV
    BLOCK_SYNC();
    if (P.outByCols)
      packTileBits<BM, BN, true>(P, q, ldq, m0, n0, coded);
    else
      packTileBits<BM, BN, false>(P, q, ldq, m0, n0, coded);
    TILE_DONE();
    return;
  }
#if EPI
  // int output of a whole tile through shared memory: each warp writes
  // its 16 rows (row stride EPI_LD: the two half-warps of a store hit
  // distinct banks) and its lanes store one row each with a bulk copy. N a
  // multiple of 16/OUTB keeps every row's global address 16-byte aligned.
  // With the tail, the first warpgroup's rows leave through shared memory
  // only with TAILEPI (or where the tail did not run).
#if TAIL
  const bool viaShared = wg == 1 || TAILEPI || nst < 4 * TAIL;
#else
  const bool viaShared = true;
#endif
  if (P.mode == MODE_INT && viaShared && m0 + BM <= P.M && n0 + BN <= P.N && (P.N & (16 / OUTB - 1)) == 0) {
#if !TAIL
    BLOCK_SYNC();  // every warp's wgmmas are done with the stage buffers
#endif
    const int ld = EPI_LD, row = wg * 64 + warp * 16;
    // This warp's 16 rows: in place, or (TAILEPI, where the tail ran) where
    // the tail leaves room.
    u32 rbase = sbase + row * ld;
#if TAILEPI
    if (nst >= 4 * TAIL) {
      const int j = nst - TAIL - 1, f = j % STAGES;
      if (wg == 1) {
        // Slot f+1+w/2 held stage nst-TAIL+w/2: its "empty" barrier says
        // the first warpgroup's wgmmas are done with it too. Barrier 3
        // should order this already; the timer reads put the second
        // warpgroup past it early (session 7), so the wait makes the rows'
        // place safe by the mbarrier alone.
        const int js = nst - TAIL + (warp >> 1);
        mbarWait(empty0 + 8 * (js % STAGES), (js / STAGES) & 1);
        rbase = sbase + ((f + 1 + (warp >> 1)) % STAGES) * STAGE_BYTES + (warp & 1) * 16 * ld;
      } else if (warp < 2) {
        rbase = sbase + STAGES * STAGE_BYTES + warp * 16 * ld;
      } else {
        mbarWait(empty0 + 8 * f, (j / STAGES) & 1);
        rbase = sbase + f * STAGE_BYTES + (warp - 2) * 16 * ld;
      }
    }
#endif
    const u32 s0 = rbase + (lane >> 2) * ld + (lane & 3) * 2 * OUTB;
#pragma unroll
    for (int c = 0; c < BN / 8; c++) {
      stSharedOut(s0 + c * 8 * OUTB, ACC(c, 0), ACC(c, 1));
      stSharedOut(s0 + 8 * ld + c * 8 * OUTB, ACC(c, 2), ACC(c, 3));
    }
    // The writes above (generic proxy) before the copy engine's reads.
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncwarp();
    if (lane < 16) {
      bulkStore((outT*)P.out + (long long)(m0 + row + lane) * P.N + n0, rbase + lane * ld, BN * OUTB);
      asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
      // Shared memory must outlive the copy's reads.
      asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    }
    TILE_DONE();
    return;
  }
#endif
  // int output of a whole tile, N even (the common case): each thread
  // holds column pairs of two rows; one store per pair (8 bytes, or 4 with
  // OUT16), addresses from one row pointer.
  if (P.mode == MODE_INT && m0 + BM <= P.M && n0 + BN <= P.N && (P.N & 1) == 0) {
    outT* o = (outT*)P.out + (long long)(m0 + wg * 64 + warp * 16 + (lane >> 2)) * P.N + n0 + (lane & 3) * 2;
    const long long down = 8LL * P.N;
#if OUT16 && BN % 16 == 0
    if ((P.N & 3) == 0) {
      // uint16 pairs are 4 bytes, so a quad's pairs of one column group
      // fill only half a 32-byte sector. Per two column groups (16
      // columns, 32 bytes of a row) the quad exchanges one word per lane
      // so that each lane stores 8 contiguous bytes and the quad whole
      // sectors: lane q holds X (group 2g) and Y (group 2g+1) at columns
      // 2q, 2q+1 of each; even lanes store X_q X_q+1 at column 16g+2q, odd
      // lanes Y_q-1 Y_q at 16g+2q+6 (lane 1 at 8, lane 3 at 12).
      const bool odd = lane & 1;
      outT* o2 = o + (odd ? 6 : 0);
#pragma unroll
      for (int g = 0; g < BN / 16; g++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const u32 x = pack2(ACC(2 * g, 2 * h), ACC(2 * g, 2 * h + 1));
          const u32 y = pack2(ACC(2 * g + 1, 2 * h), ACC(2 * g + 1, 2 * h + 1));
          const u32 r = __shfl_xor_sync(0xffffffffu, odd ? x : y, 1);
          stGlobalV2(o2 + h * down + 16 * g, odd ? r : x, odd ? y : r);
        }
      TILE_DONE();
      return;
    }
#endif
#pragma unroll
    for (int c = 0; c < BN / 8; c++) {
      stGlobal2(o + c * 8, ACC(c, 0), ACC(c, 1));
      stGlobal2(o + down + c * 8, ACC(c, 2), ACC(c, 3));
    }
    TILE_DONE();
    return;
  }

  // FOR_OUT runs body for each output this thread holds: (lr, lc) in the
  // tile and its product v, B's planes combined with their weights.
#define FOR_OUT(body)                                                          \
  _Pragma("unroll") for (int c = 0; c < BN / 8; c++)                           \
  _Pragma("unroll") for (int r = 0; r < 4; r++) {                              \
    const int lr = wg * 64 + warp * 16 + (lane >> 2) + (r >> 1) * 8;           \
    const int lc = c * 8 + (lane & 3) * 2 + (r & 1);                           \
    int v = ACC(c, r);                                                         \
    body                                                                       \
  }
  FINISH_TILE(BM, BN);
#undef FOR_OUT
#undef ACC
}
