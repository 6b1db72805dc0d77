// Bit matrix product on mma.sync m16n8k256 .b1 .and.popc (sm_80 and newer;
// the sm_90 fallback of bmm_wgmma.cu).
//
// A block computes a BM×BN tile of C for one problem of the batch. For each
// non-zero 256-bit k-step of its row tile (the zero-tile list), every bit
// plane of the A tile and of the B tile is staged in shared memory with
// cp.async, STAGES deep, so loads overlap the math. Each A fragment, once in
// registers, is multiplied with every plane of B ("non-zero tile reuse");
// plane pairs (i, j) of equal weight 2^(i+j) share an accumulator, so a
// warp holds ABITS+BBITS-1 accumulators per output fragment, combined with
// shifts in the epilogue, which then applies the float epilogue and the
// re-quantization and packs bit planes without touching global int32.
//
// Compile-time parameters (-D): ABITS, BBITS, BM, BN, WM, WN, STAGES, OUT16,
// ONEPROB (1: one product, its descriptor the by-value parameter p1).
#include "common.cuh"

#ifndef ONEPROB
#define ONEPROB 0
#endif

// Plane pairs of weight 2^31 or more cannot contribute to a product that
// fits int32 (bmm.Check), except as zeros: they are skipped, and at most
// 31 accumulators are kept.
#define NW (ABITS + BBITS - 1 < 31 ? ABITS + BBITS - 1 : 31)
#define MF (WM / 16)
#define NF (WN / 8)
#define WARPS_N (BN / WN)
#define NTHREADS ((BM / WM) * WARPS_N * 32)
#define A_BYTES (ABITS * BM * 32)
#define B_BYTES (BBITS * BN * 32)
#define STAGE_BYTES (A_BYTES + B_BYTES)

// Shared layout of a line's 32-byte k-step: two 16-byte halves, the half
// index XOR-ed with bit 2 of the line so that the 8 line addresses of an
// ldmatrix hit 32 distinct banks.
__device__ __forceinline__ u32 swz(int line, int h) { return (u32)((line * 2 + (h ^ ((line >> 2) & 1))) * 16); }

// KERNEL_EMU: the CPU emulation (tcu/testdata/mma_emu.h) provides these.
#ifndef KERNEL_EMU
__device__ __forceinline__ void ldm4(u32& r0, u32& r1, u32& r2, u32& r3, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
__device__ __forceinline__ void ldm2(u32& r0, u32& r1, u32 addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(addr));
}
__device__ __forceinline__ void bmma(int* c, const u32* a, const u32* b) {
  asm volatile(
      "mma.sync.aligned.m16n8k256.row.col.s32.b1.b1.s32.and.popc "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

// loadStage queues the copies of k-step ks of the A rows [m0, m0+BM) and
// B columns [n0, n0+BN), all planes. Lines past the stored ones read as 0.
__device__ __forceinline__ void loadStage(const Prob& P, u32 sA, int m0, int n0, int ks) {
  const u32* A = (const u32*)P.A;
  const u32* B = (const u32*)P.B;
  const u32 sB = sA + A_BYTES;
  for (int c = threadIdx.x; c < ABITS * BM * 2; c += NTHREADS) {
    const int plane = c / (BM * 2), rem = c - plane * (BM * 2), row = rem >> 1, h = rem & 1;
    const int gm = m0 + row;
    const bool in = gm < P.aLines;
    const u32* src = A + plane * P.aPlane + (long long)(in ? gm : 0) * P.lw32 + ks * 8 + h * 4;
    cp_async16(sA + plane * (BM * 32) + swz(row, h), src, in ? 16 : 0);
  }
  for (int c = threadIdx.x; c < BBITS * BN * 2; c += NTHREADS) {
    const int plane = c / (BN * 2), rem = c - plane * (BN * 2), col = rem >> 1, h = rem & 1;
    const int gn = n0 + col;
    const bool in = gn < P.bLines;
    const u32* src = B + plane * P.bPlane + (long long)(in ? gn : 0) * P.lw32 + ks * 8 + h * 4;
    cp_async16(sB + plane * (BN * 32) + swz(col, h), src, in ? 16 : 0);
  }
}

extern "C" __global__ void __launch_bounds__(NTHREADS) bmm_mma(const Prob* __restrict__ probsG, long long nprobs, const __grid_constant__ Prob p1) {
  extern __shared__ __align__(128) unsigned char smem[];
  // A register copy: the "memory" clobbers of the asm statements would make
  // the compiler re-read every field of a reference to global memory. A
  // launch of one product (ONEPROB=1) passes its descriptor by value (p1),
  // so that the resident backend copies nothing to the device per product;
  // the epilogue (emit, packBits) then reads it at p1's address.
#if ONEPROB
  const Prob* const probs = &p1;
  const int pi = 0;
  Prob P;
  PROB_FROM_PARAM(P, p1);
#else
  const Prob* const probs = probsG;
  const int pi = findProb(probs, (int)nprobs, blockIdx.x);
  const Prob P = probs[pi];
#endif
  const Work wk = blockWork(P, blockIdx.x);
  const int tm = wk.tm;
  const int m0 = tm * BM, n0 = wk.tn * BN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp / WARPS_N, wn = warp - wm * WARPS_N;
  const u32 sbase = smem_u32(smem);

  int acc[NW][MF][NF][4];
#pragma unroll
  for (int w = 0; w < NW; w++)
#pragma unroll
    for (int i = 0; i < MF; i++)
#pragma unroll
      for (int j = 0; j < NF; j++)
#pragma unroll
        for (int r = 0; r < 4; r++) acc[w][i][j][r] = 0;

  const int nk = wk.nk;
  // This block's k-steps: the tile's zero-tile list, or all.
  const int* klist = P.kptr ? (const int*)P.kidx + ((const int*)P.kptr)[tm] : nullptr;
  for (int s = 0; s < STAGES - 1; s++) {
    if (s < nk) loadStage(P, sbase + s * STAGE_BYTES, m0, n0, klist ? klist[s] : s);
    cp_async_commit();
  }
  int ksNext = STAGES - 1 < nk ? (klist ? klist[STAGES - 1] : STAGES - 1) : 0;
  for (int t = 0; t < nk; t++) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    {
      const int nt = t + STAGES - 1;
      if (nt < nk) loadStage(P, sbase + (nt % STAGES) * STAGE_BYTES, m0, n0, ksNext);
      cp_async_commit();
      // Fetch the next step's index now, so its latency hides behind this step.
      ksNext = nt + 1 < nk ? (klist ? klist[nt + 1] : nt + 1) : 0;
    }
    const u32 sA = sbase + (t % STAGES) * STAGE_BYTES, sB = sA + A_BYTES;
#pragma unroll
    for (int i = 0; i < ABITS; i++) {
      u32 a[MF][4];
#pragma unroll
      for (int mf = 0; mf < MF; mf++) {
        const int row = wm * WM + mf * 16 + (lane & 7) + ((lane >> 3) & 1) * 8;
        ldm4(a[mf][0], a[mf][1], a[mf][2], a[mf][3], sA + i * (BM * 32) + swz(row, lane >> 4));
      }
#pragma unroll
      for (int j = 0; j < BBITS; j++) {
        u32 b[NF][2];
#if NF % 2 == 0
#pragma unroll
        for (int nf = 0; nf < NF; nf += 2) {
          const int col = wn * WN + nf * 8 + (lane & 7) + ((lane >> 4) & 1) * 8;
          ldm4(b[nf][0], b[nf][1], b[nf + 1][0], b[nf + 1][1], sB + j * (BN * 32) + swz(col, (lane >> 3) & 1));
        }
#else
#pragma unroll
        for (int nf = 0; nf < NF; nf++) {
          const int col = wn * WN + nf * 8 + (lane & 7);
          ldm2(b[nf][0], b[nf][1], sB + j * (BN * 32) + swz(col, (lane >> 3) & 1));
        }
#endif
#pragma unroll
        for (int mf = 0; mf < MF; mf++)
#pragma unroll
          for (int nf = 0; nf < NF; nf++)
            if (i + j < NW) bmma(acc[i + j < NW ? i + j : 0][mf][nf], a[mf], b[nf]);
      }
    }
  }
  cp_async_wait<0>();
  __syncthreads();  // the q tile below reuses the stage buffers

  // FOR_OUT runs body for each output this thread holds: (lr, lc) in the
  // tile and its product v.
#define FOR_OUT(body)                                                     \
  _Pragma("unroll") for (int mf = 0; mf < MF; mf++)                       \
  _Pragma("unroll") for (int nf = 0; nf < NF; nf++)                       \
  _Pragma("unroll") for (int r = 0; r < 4; r++) {                         \
    const int lr = wm * WM + mf * 16 + (lane >> 2) + (r >> 1) * 8;        \
    const int lc = wn * WN + nf * 8 + (lane & 3) * 2 + (r & 1);           \
    int v = 0;                                                            \
    _Pragma("unroll") for (int w = 0; w < NW; w++) v += (int)((u32)acc[w][mf][nf][r] << w); \
    body                                                                  \
  }
  FINISH_TILE(BM, BN);
#undef FOR_OUT
}
