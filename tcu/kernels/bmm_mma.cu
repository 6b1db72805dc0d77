// Bit matrix product on mma.sync m16n8k256 .b1 .and.popc (sm_80 and newer;
// the sm_90 fallback of bmm_wgmma.cu).
//
// A block computes BM×BN tiles of C: one tile of one problem of the batch,
// or, for a single product (ONEPROB), every gridDim.x-th tile, its copies
// running on from one tile into the next. For each non-zero 256-bit k-step
// of a row tile (the zero-tile list), every bit plane of the A tile and of
// the B tile is staged in shared memory with cp.async, STAGES deep, so
// loads overlap the math. Each A fragment, once in
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

// Epi is one thread's share of a tile's epilogue vectors: the column
// values of its 2·NF columns and the row values of its 2·MF rows, loaded
// once per tile instead of once per output (0 past the product's edge and
// where the descriptor has no such vector, which the flags then skip).
struct Epi {
  float cs[NF][2], ct[NF][2], cc[NF][2], cb[NF][2], rt[MF][2], rs[MF][2];
};
__device__ __forceinline__ float epiLoad(u64 v, int i, int n) { return v && i < n ? ((const float*)v)[i] : 0.f; }

// applyEpi is applyEp (common.cuh) on the loaded values: the same steps
// in the same order, each rounded on its own.
__device__ __forceinline__ float applyEpi(const Prob& P, const Epi& e, int c, int mf, int rh, int nf, int rl) {
  float t = __int2float_rn(c);
  if (P.colScale) t = __fmul_rn(t, e.cs[nf][rl]);
  if (P.rowTerm) t = __fadd_rn(t, __fmul_rn(e.rt[mf][rh], e.ct[nf][rl]));
  if (P.colConst) t = __fadd_rn(t, e.cc[nf][rl]);
  if (P.rowScale) t = __fmul_rn(t, e.rs[mf][rh]);
  if (P.colBias) t = __fadd_rn(t, e.cb[nf][rl]);
  if (P.relu && !(t > 0.f)) t = 0.f;
  return t;
}

extern "C" __global__ void __launch_bounds__(NTHREADS) bmm_mma(const Prob* __restrict__ probsG, long long nprobs, const __grid_constant__ Prob p1) {
  extern __shared__ __align__(128) unsigned char smem[];
  // A register copy: the "memory" clobbers of the asm statements would make
  // the compiler re-read every field of a reference to global memory. A
  // launch of one product (ONEPROB=1) passes its descriptor by value (p1),
  // so that the resident backend copies nothing to the device per product;
  // the epilogue (packBits) then reads it at p1's address.
#if ONEPROB
  const Prob* const probs = &p1;
  const int pi = 0;
  Prob P;
  PROB_FROM_PARAM(P, p1);
  // One product: a block takes every gridDim.x-th tile, and its pipeline
  // runs on across them, so the next tile's copies overlap this tile's
  // epilogue (short products are one k-step a tile).
  const int tileEnd = P.tileStart + ((P.M + BM - 1) / BM) * P.tilesN, stride = gridDim.x;
#else
  const Prob* const probs = probsG;
  const int pi = findProb(probs, (int)nprobs, blockIdx.x);
  const Prob P = probs[pi];
  const int tileEnd = blockIdx.x + 1, stride = 1;  // one tile: the block map is per block
#endif
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int wm = warp / WARPS_N, wn = warp - wm * WARPS_N;
  const u32 sbase = smem_u32(smem);
  // MulBit's tile of codes lies past the stages, which may be loading the
  // next tile meanwhile.
  u32* const q = (u32*)(smem + STAGES * STAGE_BYTES);

  // The loader's place: tile lt, its k-th non-zero k-step next.
  int lt = blockIdx.x, lk = 0;
  Work lw = blockWork(P, lt);
  // loadNext queues the copies of the next (tile, k-step) into the stage
  // at saddr, or nothing past the last; one commit group either way, so
  // that wait_group counts stages.
  auto loadNext = [&](u32 saddr) {
    while (lt < tileEnd && lk >= lw.nk) {
      lt += stride, lk = 0;
      if (lt < tileEnd) lw = blockWork(P, lt);
    }
    if (lt < tileEnd) {
      const int ks = P.kptr ? ((const int*)P.kidx)[((const int*)P.kptr)[lw.tm] + lk] : lk;
      loadStage(P, saddr, lw.tm * BM, lw.tn * BN, ks);
      lk++;
    }
    cp_async_commit();
  };
  for (int s = 0; s < STAGES - 1; s++) loadNext(sbase + s * STAGE_BYTES);
  int slot = 0;  // the stage the next k-step is read from

  for (int tile = blockIdx.x; tile < tileEnd; tile += stride) {
    const Work wk = blockWork(P, tile);
    const int m0 = wk.tm * BM, n0 = wk.tn * BN;
    int acc[NW][MF][NF][4];
#pragma unroll
    for (int w = 0; w < NW; w++)
#pragma unroll
      for (int i = 0; i < MF; i++)
#pragma unroll
        for (int j = 0; j < NF; j++)
#pragma unroll
          for (int r = 0; r < 4; r++) acc[w][i][j][r] = 0;

    for (int t = 0; t < wk.nk; t++) {
      cp_async_wait<STAGES - 2>();
      __syncthreads();
      loadNext(sbase + (slot == 0 ? STAGES - 1 : slot - 1) * STAGE_BYTES);
      const u32 sA = sbase + slot * STAGE_BYTES, sB = sA + A_BYTES;
      slot = slot + 1 == STAGES ? 0 : slot + 1;
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

    // The products: plane pairs of equal weight shared an accumulator.
    // Output (mf, nf, r) is row wm·WM + mf·16 + lane/4 + (r/2)·8 and
    // column wn·WN + nf·8 + (lane%4)·2 + r%2 of the tile.
    int v[MF][NF][4];
#pragma unroll
    for (int mf = 0; mf < MF; mf++)
#pragma unroll
      for (int nf = 0; nf < NF; nf++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
          int s = 0;
#pragma unroll
          for (int w = 0; w < NW; w++) s += (int)((u32)acc[w][mf][nf][r] << w);
          v[mf][nf][r] = s;
        }
    const int rbase = m0 + wm * WM + (lane >> 2), cbase = n0 + wn * WN + (lane & 3) * 2;
    if (P.mode == MODE_INT) {
      // Adjacent columns in pairs: one 8-byte store each when N is even.
#pragma unroll
      for (int mf = 0; mf < MF; mf++)
#pragma unroll
        for (int nf = 0; nf < NF; nf++)
#pragma unroll
          for (int h = 0; h < 2; h++) storePair(P, rbase + mf * 16 + h * 8, cbase + nf * 8, v[mf][nf][2 * h], v[mf][nf][2 * h + 1]);
      continue;
    }
    Epi e;
#pragma unroll
    for (int nf = 0; nf < NF; nf++)
#pragma unroll
      for (int l = 0; l < 2; l++) {
        const int n = cbase + nf * 8 + l;
        e.cs[nf][l] = epiLoad(P.colScale, n, P.N);
        e.ct[nf][l] = epiLoad(P.rowTerm ? P.colTerm : 0, n, P.N);
        e.cc[nf][l] = epiLoad(P.colConst, n, P.N);
        e.cb[nf][l] = epiLoad(P.colBias, n, P.N);
      }
#pragma unroll
    for (int mf = 0; mf < MF; mf++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int m = rbase + mf * 16 + h * 8;
        e.rt[mf][h] = epiLoad(P.rowTerm, m, P.M);
        e.rs[mf][h] = epiLoad(P.rowScale, m, P.M);
      }
    if (P.mode == MODE_BIT) __syncthreads();  // the previous tile's packBits has read q
#pragma unroll
    for (int mf = 0; mf < MF; mf++)
#pragma unroll
      for (int nf = 0; nf < NF; nf++)
#pragma unroll
        for (int r = 0; r < 4; r++) {
          const int m = rbase + mf * 16 + (r >> 1) * 8, n = cbase + nf * 8 + (r & 1);
          const bool ok = m < P.M && n < P.N;
          const float y = applyEpi(P, e, v[mf][nf][r], mf, r >> 1, nf, r & 1);
          if (P.mode == MODE_FLOAT) {
            if (ok) ((float*)P.out)[(long long)m * P.N + n] = y;
          } else {
            const u32 c = ok ? quantize(y, P.rqScale, P.rqOffset, P.outBits) : 0u;
            if (P.mode == MODE_CODES) {
              if (ok) ((unsigned char*)P.out)[(long long)m * P.N + n] = (unsigned char)c;
            } else {
              q[(m - m0) * (BN + 1) + (n - n0)] = c;
            }
          }
        }
    if (P.mode == MODE_BIT) {
      __syncthreads();
      packBits(probs + pi, q, BN + 1, m0, n0, BM, BN);
    }
  }
  cp_async_wait<0>();
}
