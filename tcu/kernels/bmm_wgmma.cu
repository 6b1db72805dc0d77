// Bit matrix product on Hopper's wgmma m64nNk256 .b1 .and.popc (sm_90a).
//
// A block of WGS warpgroups computes a (64·WGS)×BN tile of C. B's bit
// planes are laid side by side as the N' = BBITS·BN columns of one wgmma,
// so each A tile, once in shared memory, meets every plane of B in a
// single instruction per A plane ("non-zero tile reuse"). Stages are filled
// with cp.async, STAGES deep, and the wgmma of one k-step runs while the
// next is issued; only the non-zero k-steps of the row tile (the zero-tile
// list) are visited. Operands use the no-swizzle K-major core-matrix layout:
// 8 lines × 16 bytes per core matrix (128 contiguous bytes); the two core
// matrices of a line group's 256-bit k-step are 128 bytes apart and line
// groups 256 bytes apart. DESC_LBO and DESC_SBO are the descriptor's
// leading and stride byte offsets for that layout (128 and 256 when the
// leading dimension is K); the host checks the choice against the CPU once.
//
// Compile-time parameters (-D): ABITS, BBITS, BN, NP, WGS, STAGES, DESC_LBO, DESC_SBO.
#include "common.cuh"
#include "wgmma_ops.cuh"

// NP = BBITS * BN, the wgmma N, comes as a number (-DNP) for token pasting.
#define BM (64 * WGS)
#define NTHREADS (128 * WGS)
#define A_BYTES (ABITS * BM * 32)
#define B_BYTES (NP * 32)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define PREFETCH (STAGES - 2)

#define WGMMA_N_(n) wgmma_n##n
#define WGMMA_N(n) WGMMA_N_(n)

// Offset of line l's k-half h inside a K-major no-swizzle operand.
__device__ __forceinline__ u32 coreOff(int l, int h) {
  return (u32)((l >> 3) * 256 + h * 128 + (l & 7) * 16);
}

__device__ __forceinline__ u64 desc(u32 saddr) {
  return (u64)((saddr & 0x3FFFF) >> 4) | ((u64)(DESC_LBO >> 4) << 16) | ((u64)(DESC_SBO >> 4) << 32);
}

__device__ __forceinline__ void loadStage(const Prob& P, u32 sA, int m0, int n0, int ks) {
  const u32* A = (const u32*)P.A;
  const u32* B = (const u32*)P.B;
  const u32 sB = sA + A_BYTES;
  for (int c = threadIdx.x; c < ABITS * BM * 2; c += NTHREADS) {
    const int plane = c / (BM * 2), rem = c - plane * (BM * 2), row = rem >> 1, h = rem & 1;
    const int gm = m0 + row;
    const bool in = gm < P.aLines;
    const u32* src = A + plane * P.aPlane + (long long)(in ? gm : 0) * P.lw32 + ks * 8 + h * 4;
    cp_async16(sA + plane * (BM * 32) + coreOff(row, h), src, in ? 16 : 0);
  }
  for (int c = threadIdx.x; c < NP * 2; c += NTHREADS) {
    const int col = c >> 1, h = c & 1;  // col = plane*BN + n
    const int plane = col / BN, gn = n0 + (col - plane * BN);
    const bool in = gn < P.bLines;
    const u32* src = B + plane * P.bPlane + (long long)(in ? gn : 0) * P.lw32 + ks * 8 + h * 4;
    cp_async16(sB + coreOff(col, h), src, in ? 16 : 0);
  }
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

extern "C" __global__ void __launch_bounds__(NTHREADS, 1) bmm_wgmma(const Prob* __restrict__ probs, long long nprobs) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const int pi = findProb(probs, (int)nprobs, blockIdx.x);
  // A register copy: the "memory" clobbers of the asm statements would make
  // the compiler re-read every field of a reference to global memory.
  const Prob P = probs[pi];
  const Work wk = blockWork(P, blockIdx.x);
  const int tm = wk.tm;
  const int m0 = tm * BM, n0 = wk.tn * BN;
  const int wg = threadIdx.x >> 7, warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
  const u32 sbase = smem_u32(smem);

  int d[ABITS][NP / 2];
#pragma unroll
  for (int i = 0; i < ABITS; i++)
#pragma unroll
    for (int r = 0; r < NP / 2; r++) d[i][r] = 0;

  const int nk = wk.k1 - wk.k0;
  // This block's k-steps: its slice of the tile's zero-tile list, or all.
  const int* klist = P.kptr ? (const int*)P.kidx + ((const int*)P.kptr)[tm] + wk.k0 : nullptr;
  for (int s = 0; s < PREFETCH; s++) {
    if (s < nk) loadStage(P, sbase + s * STAGE_BYTES, m0, n0, klist ? klist[s] : wk.k0 + s);
    cp_async_commit();
  }
  int ksNext = PREFETCH < nk ? (klist ? klist[PREFETCH] : wk.k0 + PREFETCH) : 0;
  for (int t = 0; t < nk; t++) {
    cp_async_wait<PREFETCH - 1>();
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    __syncthreads();
    {
      // Stage (t+PREFETCH)%STAGES was last read by the wgmma of step t-2,
      // which every warpgroup has waited for before this iteration's barrier.
      const int nt = t + PREFETCH;
      if (nt < nk) loadStage(P, sbase + (nt % STAGES) * STAGE_BYTES, m0, n0, ksNext);
      cp_async_commit();
      // Fetch the next step's index now, so its latency hides behind this step.
      ksNext = nt + 1 < nk ? (klist ? klist[nt + 1] : wk.k0 + nt + 1) : 0;
    }
    const u32 sA = sbase + (t % STAGES) * STAGE_BYTES, sB = sA + A_BYTES;
    wg_fence();
#pragma unroll
    for (int i = 0; i < ABITS; i++) {
      WGMMA_N(NP)(d[i], desc(sA + i * (BM * 32) + wg * (64 * 32)), desc(sB));
    }
    wg_commit();
    wg_wait<1>();
  }
  wg_wait<0>();
  cp_async_wait<0>();
  __syncthreads();  // the q tile below reuses the stage buffers

  u32* q = (u32*)smem;
  const int ldq = BN + 1;
  // FOR_OUT runs body for each output this thread holds: (lr, lc) in the
  // tile and its product v, B's planes combined with their weights.
#define FOR_OUT(body)                                                          \
  _Pragma("unroll") for (int c = 0; c < BN / 8; c++)                           \
  _Pragma("unroll") for (int r = 0; r < 4; r++) {                              \
    const int lr = wg * 64 + warp * 16 + (lane >> 2) + (r >> 1) * 8;           \
    const int lc = c * 8 + (lane & 3) * 2 + (r & 1);                           \
    int v = 0;                                                                 \
    _Pragma("unroll") for (int i = 0; i < ABITS; i++)                          \
    _Pragma("unroll") for (int j = 0; j < BBITS; j++)                          \
      if (i + j < 31) v += (int)((u32)d[i][4 * (j * (BN / 8) + c) + r] << (i + j)); \
    body                                                                       \
  }
  // Split-K: add the partial tile into the workspace; the last split to
  // arrive takes the sums back (zeroing the workspace) and finishes.
  const bool split = P.splits > 1;
  int* ws = split ? (int*)P.ws + (long long)wk.tile * (BM * BN) : nullptr;
  if (split) {
    FOR_OUT(atomicAdd(ws + lr * BN + lc, v);)
    if (!splitArrive(P, wk.tile)) return;
  }
  FOR_OUT(if (split) v = atomicExch(ws + lr * BN + lc, 0); emit(probs + pi, v, m0 + lr, n0 + lc, q, lr * ldq + lc);)
  if (P.mode == MODE_BIT) {
    __syncthreads();
    packBits(probs + pi, q, ldq, m0, n0, BM, BN);
  }
}
