// The resident backend's kernels beside the bit products (tcu/backend.go):
// edge-list aggregation of byte codes with the fused epilogue into float,
// byte-code or packed-bit outputs; the sums and epilogue of products past
// int32; the sum of two float branches; row sums of packed codes; argmax
// per row. Every parameter is 64 bits wide
// (Device.launch); floats arrive as their bit patterns. The epilogue and the
// re-quantization are common.cuh's, bit for bit bmm's.
#include "common.cuh"

typedef unsigned char u8;

// Output modes (backend_ops.go outFloat, outCodes, outBits).
enum { AGG_FLOAT = 0, AGG_CODES = 1, AGG_BITS = 2 };

__device__ __forceinline__ float bitsFloat(long long b) { return __int_as_float((int)b); }

// loadWords reads V = 8 or 4 aligned codes in one load.
__device__ __forceinline__ void loadWords(u32 (&q)[2], const u8* __restrict__ row) {
  const uint2 t = *(const uint2*)row;
  q[0] = t.x, q[1] = t.y;
}
__device__ __forceinline__ void loadWords(u32 (&q)[1], const u8* __restrict__ row) { q[0] = *(const u32*)row; }

// loadCodes reads a lane's V codes of one row as V/4 little-endian words:
// one load where the row is aligned and whole (vec), else byte by byte up
// to n, zeros past it.
template <int V>
__device__ __forceinline__ void loadCodes(u32 (&q)[V / 4], const u8* __restrict__ row, int n, bool vec) {
  if (vec) {
    loadWords(q, row);
    return;
  }
#pragma unroll
  for (int j = 0; j < V / 4; j++) q[j] = 0;
#pragma unroll
  for (int k = 0; k < V; k++) {
    if (k < n) q[k / 4] |= (u32)row[k] << (8 * (k % 4));
  }
}

#define AGG_PARAMS                                                                                                     \
  const int *__restrict__ indptr, const int *__restrict__ indices, const u8 *__restrict__ w,                          \
      const u8 *__restrict__ x, long long rows, long long cols, long long mode, u64 out, u64 colScale, u64 rowTerm,  \
      u64 colTerm, u64 colConst, u64 rowScale, u64 colBias, long long relu, long long rqScale, long long rqOffset,     \
      long long outBits, long long outByCols, long long outLw32, long long outPlane32
#define AGG_ARGS                                                                                                     \
  indptr, indices, w, x, rows, cols, mode, out, colScale, rowTerm, colTerm, colConst, rowScale, colBias, relu,       \
      rqScale, rqOffset, outBits, outByCols, outLw32, outPlane32

// AGG_CHUNK is the most columns one pass of aggRowV<W, 8> covers: red, the
// block's shared sums, holds that many.
#define AGG_CHUNK 256

// aggRowV computes row v of G·X with the W warps of its block (wid: this
// warp's). A warp takes its entries 32 at a time, each lane loading one
// entry's index (and weight) in one coalesced load; the lanes then split
// into 32/L groups of L lanes, lane l of a group summing in int32 V
// consecutive columns (one 4- or 8-byte load where rows are aligned) of
// a V·L-column chunk, group g every (32/L)-th of those entries, four at a
// time: a row of 32 entries costs one round trip for its indices and one
// or a few for its codes, however narrow the output. The groups' sums meet
// by shuffles, the warps' in shared memory; then lane c of warp 0 takes
// column c of each 32 for the epilogue, and for AGG_CODES/AGG_BITS the
// re-quantization. Packed rows (outByCols 0) are whole words per warp,
// written with ballots; packed columns put row v's bit into words other
// rows share, so they are OR-ed into the zeroed output.
template <int W, int V>
__device__ __forceinline__ void aggRowV(long long v, int wid, int* red, AGG_PARAMS) {
  const int lane = threadIdx.x & 31;
  Prob P = {};
  P.colScale = colScale, P.rowTerm = rowTerm, P.colTerm = colTerm, P.colConst = colConst;
  P.rowScale = rowScale, P.colBias = colBias, P.relu = (int)relu;
  const float scale = bitsFloat(rqScale), offset = bitsFloat(rqOffset);
  const int e0 = indptr[v], e1 = indptr[v + 1];
  const bool aligned = (cols % V) == 0 && ((u64)x % V) == 0;
  for (long long c0 = 0; c0 < cols; c0 += 32 * V) {
    const int chunk = (int)min(cols - c0, 32LL * V);
    int L = 1;
    while (V * L < chunk) L <<= 1;
    const int G = 32 / L, g = lane / L, l = lane % L;
    const long long cc = c0 + V * l;
    const int n = (int)max(0LL, min(cols - cc, (long long)V));
    const bool vec = aligned && n == V;
    int s[V];
#pragma unroll
    for (int k = 0; k < V; k++) s[k] = 0;
    int t0 = e0 + 32 * wid;
    int nextIdx = t0 + lane < e1 ? indices[t0 + lane] : 0;
    int nextW = w && t0 + lane < e1 ? (int)w[t0 + lane] : 1;
    for (; t0 < e1; t0 += 32 * W) {
      // This tile's indices arrived during the last one's sums; the next
      // tile's are on their way during this one's.
      const int m = min(e1 - t0, 32);
      const int myIdx = nextIdx, myW = nextW;
      const int t1 = t0 + 32 * W;
      nextIdx = t1 + lane < e1 ? indices[t1 + lane] : 0;
      nextW = w && t1 + lane < e1 ? (int)w[t1 + lane] : 1;
      for (int j0 = 0; j0 < m; j0 += 4 * G) {
        u32 q[4][V / 4];
        int wt[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
          const int j = j0 + u * G + g;
          const int i = __shfl_sync(0xffffffffu, myIdx, j & 31);
          wt[u] = w ? __shfl_sync(0xffffffffu, myW, j & 31) : 1;
          if (j < m && n > 0) {
            loadCodes<V>(q[u], x + (long long)i * cols + cc, n, vec);
          } else {
            wt[u] = 0;
#pragma unroll
            for (int k = 0; k < V / 4; k++) q[u][k] = 0;
          }
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
#pragma unroll
          for (int k = 0; k < V; k++) s[k] += wt[u] * (int)((q[u][k / 4] >> (8 * (k % 4))) & 255u);
        }
      }
    }
    for (int o = L; o < 32; o <<= 1) {
#pragma unroll
      for (int k = 0; k < V; k++) s[k] += __shfl_xor_sync(0xffffffffu, s[k], o);
    }
    if (W > 1) {
      for (int k = threadIdx.x; k < chunk; k += 32 * W) red[k] = 0;
      __syncthreads();
      if (g == 0) {
#pragma unroll
        for (int k = 0; k < V; k++) {
          if (k < n) atomicAdd(red + V * l + k, s[k]);
        }
      }
      __syncthreads();
      if (wid == 0) {
#pragma unroll
        for (int k = 0; k < V; k++) s[k] = k < n ? red[V * l + k] : 0;
      }
      __syncthreads();
      if (wid != 0) continue;
    }
    for (long long c1 = c0; c1 < c0 + chunk; c1 += 32) {
      const long long c = c1 + lane;
      const bool in = c < cols;
      const int src = (int)((c - c0) / V) & 31, k = (int)((c - c0) % V);
      int sum = 0;
#pragma unroll
      for (int j = 0; j < V; j++) {
        const int t = __shfl_sync(0xffffffffu, s[j], src);
        if (j == k) sum = t;
      }
      if (mode == AGG_FLOAT) {
        if (in) ((float*)out)[v * cols + c] = applyEp(P, sum, (int)v, (int)c);
        continue;
      }
      const u32 q = in ? quantize(applyEp(P, sum, (int)v, (int)c), scale, offset, (int)outBits) : 0u;
      if (mode == AGG_CODES) {
        if (in) ((u8*)out)[v * cols + c] = (u8)q;
      } else if (!outByCols) {
        u32* line = (u32*)out + v * outLw32 + (c1 >> 5);
        for (int p = 0; p < outBits; p++) {
          const u32 word = __ballot_sync(0xffffffffu, (q >> p) & 1u);
          if (lane == 0) line[p * outPlane32] = word;
        }
      } else if (in) {
        u32* word = (u32*)out + c * outLw32 + (v >> 5);
        for (int p = 0; p < outBits; p++) {
          if ((q >> p) & 1u) atomicOr(word + p * outPlane32, 1u << (v & 31));
        }
      }
    }
  }
}

// aggRow takes 8 columns a lane where rows are 8-byte aligned and at least
// 64 wide, for more entries in flight per warp (bench/e2e/RESULTS.md), 4
// otherwise. The emulated test sets AGG_V 4 to run the narrow path on
// wide rows too.
#ifndef AGG_V
#define AGG_V 8
#endif
template <int W>
__device__ __forceinline__ void aggRow(long long v, int wid, int* red, AGG_PARAMS) {
  if (AGG_V > 4 && cols >= 64 && cols % AGG_V == 0 && (u64)x % AGG_V == 0) {
    aggRowV<W, AGG_V>(v, wid, red, AGG_ARGS);
  } else {
    aggRowV<W, 4>(v, wid, red, AGG_ARGS);
  }
}

// aggBlocks: in one launch, block b < nHeavy takes row heavy[b] (rows of more
// than heavyDeg entries, longest first) with all its W warps, so that one
// warp's chain of loads over a long row does not hold up the kernel; each
// warp of the blocks after takes one of the other rows. The heavy blocks
// start first and the light ones fill the device around them.
template <int W>
__device__ __forceinline__ void aggBlocks(long long heavyDeg, const int* __restrict__ heavy, long long nHeavy, AGG_PARAMS) {
  __shared__ int red[AGG_CHUNK];
  const int wid = threadIdx.x >> 5;
  if ((long long)blockIdx.x < nHeavy) {
    aggRow<W>(heavy[blockIdx.x], wid, red, AGG_ARGS);
    return;
  }
  const long long v = ((long long)blockIdx.x - nHeavy) * W + wid;
  if (v >= rows) return;  // the whole warp
  if (nHeavy > 0 && indptr[v + 1] - indptr[v] > heavyDeg) return;
  aggRow<1>(v, 0, nullptr, AGG_ARGS);
}
extern "C" __global__ void __launch_bounds__(256)
    agg8(long long heavyDeg, const int* __restrict__ heavy, long long nHeavy, AGG_PARAMS) {
  aggBlocks<8>(heavyDeg, heavy, nHeavy, AGG_ARGS);
}
extern "C" __global__ void __launch_bounds__(1024)
    agg32(long long heavyDeg, const int* __restrict__ heavy, long long nHeavy, AGG_PARAMS) {
  aggBlocks<32>(heavyDeg, heavy, nHeavy, AGG_ARGS);
}

// storeOut writes value t of element i (row r, column c) in an output of
// mode AGG_FLOAT (float32), AGG_CODES (byte codes) or AGG_BITS (planes
// OR-ed into the zeroed output, either packing), re-quantized for the last
// two: the tail wideout and add share.
__device__ __forceinline__ void storeOut(float t, long long i, long long r, long long c, long long mode, u64 out,
                                         float scale, float offset, long long outBits, long long outByCols,
                                         long long outLw32, long long outPlane32) {
  if (mode == AGG_FLOAT) {
    ((float*)out)[i] = t;
    return;
  }
  const u32 q = quantize(t, scale, offset, (int)outBits);
  if (mode == AGG_CODES) {
    ((u8*)out)[i] = (u8)q;
    return;
  }
  const long long line = outByCols ? c : r, pos = outByCols ? r : c;
  u32* word = (u32*)out + line * outLw32 + (pos >> 5);
  for (int p = 0; p < outBits; p++) {
    if ((q >> p) & 1u) atomicOr(word + p * outPlane32, 1u << (pos & 31));
  }
}

// widen adds one plane group's int32 products, times 2^shift, into the
// sums: exactly in int64 (exact set), else in float64, as bmm's
// WideProduct (layers' qWideProduct) does on the host.
extern "C" __global__ void widen(const int* __restrict__ part, u64 acc, long long n, long long exact, long long shift) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    if (exact) {
      ((long long*)acc)[i] += (long long)part[i] << shift;
    } else {
      double* d = (double*)acc + i;
      *d = __dadd_rn(*d, __dmul_rn((double)part[i], ldexp(1.0, (int)shift)));
    }
  }
}

// wideout finishes a wide product: float32 of the float64 of each sum (the
// host's two conversions), then Epilogue.ApplyFloat, into float32, byte
// codes or planes OR-ed into the zeroed output (either packing).
extern "C" __global__ void wideout(u64 acc, long long exact, long long m, long long n, long long mode, u64 out,
                                   u64 colScale, u64 rowTerm, u64 colTerm, u64 colConst, u64 rowScale, u64 colBias,
                                   long long relu, long long rqScale, long long rqOffset, long long outBits,
                                   long long outByCols, long long outLw32, long long outPlane32) {
  const float scale = bitsFloat(rqScale), offset = bitsFloat(rqOffset);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m * n; i += (long long)gridDim.x * blockDim.x) {
    const int r = (int)(i / n), c = (int)(i - (i / n) * n);
    const double s = exact ? __ll2double_rn(((const long long*)acc)[i]) : ((const double*)acc)[i];
    float t = __double2float_rn(s);
    if (colScale) t = __fmul_rn(t, ((const float*)colScale)[c]);
    if (rowTerm) t = __fadd_rn(t, __fmul_rn(((const float*)rowTerm)[r], ((const float*)colTerm)[c]));
    if (colConst) t = __fadd_rn(t, ((const float*)colConst)[c]);
    if (rowScale) t = __fmul_rn(t, ((const float*)rowScale)[r]);
    if (colBias) t = __fadd_rn(t, ((const float*)colBias)[c]);
    if (relu && !(t > 0.f)) t = 0.f;
    storeOut(t, i, r, c, mode, out, scale, offset, outBits, outByCols, outLw32, outPlane32);
  }
}

// add writes x + y (rounded once), then the ReLU, into float32, byte codes
// or planes OR-ed into the zeroed output (either packing), as bmm.AddValue
// and the host backends do: the join of two branches.
extern "C" __global__ void add(const float* __restrict__ x, const float* __restrict__ y, long long m, long long n,
                               long long mode, u64 out, long long relu, long long rqScale, long long rqOffset,
                               long long outBits, long long outByCols, long long outLw32, long long outPlane32) {
  const float scale = bitsFloat(rqScale), offset = bitsFloat(rqOffset);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m * n; i += (long long)gridDim.x * blockDim.x) {
    float t = __fadd_rn(x[i], y[i]);
    if (t != t) t = __int_as_float(0x7fc00000);  // bmm.NaN, whatever NaN the addition gave
    if (relu && !(t > 0.f)) t = 0.f;
    const long long r = i / n;
    storeOut(t, i, r, i - r * n, mode, out, scale, offset, outBits, outByCols, outLw32, outPlane32);
  }
}

// rowsums writes the float32 of each row's code sum Σ_p 2^p popcount(plane
// p's line), summed exactly in int64 (layers' qRowSums). A row takes g lanes
// (its lw words rounded up to a power of two, at most 32; rowsumsLanes in
// Go), so a warp reads 32/g whole lines of a plane at once instead of one.
extern "C" __global__ void rowsums(const u64* __restrict__ a, float* __restrict__ out, long long rows, long long bits,
                                   long long lw, long long planeWords) {
  int g = 1;
  while (g < lw && g < 32) g <<= 1;
  const int lane = threadIdx.x & 31, sub = lane & (g - 1);
  const long long v = ((long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5)) * (32 / g) + lane / g;
  long long s = 0;
  if (v < rows) {
    for (int p = 0; p < bits; p++) {
      const u64* line = a + p * planeWords + v * lw;
      int pop = 0;
      for (long long i = sub; i < lw; i += g) pop += __popcll(line[i]);
      s += (long long)pop << p;
    }
  }
  for (int o = g >> 1; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o, g);
  if (v < rows && sub == 0) out[v] = __ll2float_rn(s);
}

// argmax writes each row's first column of its largest value, scanning
// with > from column 0 (a NaN never wins, one in column 0 keeps 0), as
// layers.QArgmax: a thread per row, rows are a few classes wide. Row r
// goes to out[idx[r]] (ArgmaxTo: a batch's nodes in a graph-sized array,
// distinct, so no two threads meet), or to out[r] where idx is null.
extern "C" __global__ void argmax(const float* __restrict__ y, const int* __restrict__ idx, int* __restrict__ out,
                                  long long rows, long long cols) {
  const long long r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* row = y + r * cols;
  float run = row[0];
  int best = 0;
  for (int j = 1; j < cols; j++) {
    const float x = row[j];
    if (x > run) run = x, best = j;
  }
  out[idx ? idx[r] : r] = best;
}
