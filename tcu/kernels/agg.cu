// The resident backend's kernels beside the bit products (tcu/backend.go):
// edge-list aggregation of byte codes with the fused epilogue into float,
// byte-code or packed-bit outputs (and, folded in by the host, the row
// sums of its codes or the argmax of its rows); the sums and epilogue of
// products past int32; the sum of two float branches; row sums of packed
// codes; argmax per row. Every parameter is 64 bits wide (Device.launch);
// floats arrive as their bit patterns. The epilogue and the
// re-quantization are common.cuh's, bit for bit bmm's.
#include "common.cuh"

typedef unsigned char u8;

// Output modes (backend_ops.go outFloat, outCodes, outBits).
enum { AGG_FLOAT = 0, AGG_CODES = 1, AGG_BITS = 2 };

__device__ __forceinline__ float bitsFloat(long long b) { return __int_as_float((int)b); }

// wideLanes says whether a lane takes 8 columns, for more entries in
// flight per warp (bench/e2e/RESULTS.md), not 4: where rows are 8-byte
// aligned and at least 64 wide (backend_ops.go's aggLaneWidth). The
// emulated test sets AGG_V 4 to run the narrow path on wide rows too.
#ifndef AGG_V
#define AGG_V 8
#endif
__device__ __forceinline__ bool wideLanes(long long cols, const u8* x) {
  return AGG_V > 4 && cols >= 64 && cols % AGG_V == 0 && (u64)x % AGG_V == 0;
}

// loadWords reads V = 8 or 4 aligned codes in one load.
__device__ __forceinline__ void loadWords(u32 (&q)[2], const u8* __restrict__ row) {
  const uint2 t = *(const uint2*)row;
  q[0] = t.x, q[1] = t.y;
}
__device__ __forceinline__ void loadWords(u32 (&q)[1], const u8* __restrict__ row) { q[0] = *(const u32*)row; }

// loadCodes reads a lane's V codes of one row as V/4 little-endian words,
// zeros past n: one load where the row is aligned and whole (vec); for V
// 4, the two aligned words around the codes, shifted (code buffers end
// with codesSlack bytes, so the second word is always there). V 8 is
// taken only for aligned rows, whose lanes have all 8 codes or none.
template <int V>
__device__ __forceinline__ void loadCodes(u32 (&q)[V / 4], const u8* __restrict__ row, int n, bool vec) {
  if (vec) {
    loadWords(q, row);
    return;
  }
  if (V == 4) {
    const u32* p = (const u32*)((u64)row & ~3ull);
    const u32 t = __funnelshift_r(p[0], p[1], (u32)((u64)row & 3ull) * 8u);
    q[0] = n >= 4 ? t : t & ((1u << (8 * n)) - 1u);
  } else {
    loadWords(q, row);
  }
}

// unpack adds a lane's 16-bit pair sums (ONE: a[2j] holds columns 4j and
// 4j+2 of word j, a[2j+1] columns 4j+1 and 4j+3) into its int32 sums and
// clears them.
template <int V>
__device__ __forceinline__ void unpack(int (&s)[V], u32 (&a)[V / 2]) {
#pragma unroll
  for (int j = 0; j < V / 4; j++) {
    s[4 * j] += (int)(a[2 * j] & 0xFFFFu), s[4 * j + 2] += (int)(a[2 * j] >> 16);
    s[4 * j + 1] += (int)(a[2 * j + 1] & 0xFFFFu), s[4 * j + 3] += (int)(a[2 * j + 1] >> 16);
    a[2 * j] = a[2 * j + 1] = 0;
  }
}

// addWord adds a word of four codes into a pair of 16-bit pair sums
// (unpack's layout): a mask and a byte permute.
__device__ __forceinline__ void addWord(u32& even, u32& odd, u32 q) {
  even += q & 0x00FF00FFu;
  odd += __byte_perm(q, 0u, 0x4341u);
}

// addPairs adds a lane's V codes of one entry (q, V/4 words) into its
// 16-bit pair sums.
template <int V>
__device__ __forceinline__ void addPairs(u32 (&a)[V / 2], const u32 (&q)[V / 4]) {
#pragma unroll
  for (int j = 0; j < V / 4; j++) addWord(a[2 * j], a[2 * j + 1], q[j]);
}

#define AGG_PARAMS                                                                                                     \
  const int *__restrict__ indptr, const int *__restrict__ indices, const u8 *__restrict__ w,                          \
      const u8 *__restrict__ x, long long rows, long long cols, long long mode, u64 out, u64 colScale, u64 rowTerm,  \
      u64 colTerm, u64 colConst, u64 rowScale, u64 colBias, long long relu, long long rqScale, long long rqOffset,     \
      long long outBits, long long outByCols, long long outLw32, long long outPlane32, u64 sums, u64 argOut,       \
      u64 argIdx, long long argOff, long long packLimit, long long laneLg
#define AGG_ARGS                                                                                                     \
  indptr, indices, w, x, rows, cols, mode, out, colScale, rowTerm, colTerm, colConst, rowScale, colBias, relu,       \
      rqScale, rqOffset, outBits, outByCols, outLw32, outPlane32, sums, argOut, argIdx, argOff, packLimit, laneLg

// AGG_CHUNK is the most columns one pass of aggRowV<W, 8> covers: red, the
// block's shared sums, holds that many; a warp's scratch holds its lanes'
// 8 partial sums each.
#define AGG_CHUNK 256

// aggProb is the epilogue's vectors and ReLU as applyEp reads them.
__device__ __forceinline__ Prob aggProb(AGG_PARAMS) {
  Prob P = {};
  P.colScale = colScale, P.rowTerm = rowTerm, P.colTerm = colTerm, P.colConst = colConst;
  P.rowScale = rowScale, P.colBias = colBias, P.relu = (int)relu;
  return P;
}

// noColumn marks a lane with no candidate for firstMax.
constexpr int noColumn = 1 << 30;

// firstMax reduces (best, at) over each aligned group of width lanes to
// the first column of the largest value: a lane's at is noColumn where it
// has none (NaNs never win; ties go to the lower column), as layers'
// QArgmax scans a row.
__device__ __forceinline__ void firstMax(float& best, int& at, int width) {
  for (int o = 1; o < width; o <<= 1) {
    const float ob = __int_as_float(__shfl_xor_sync(0xffffffffu, __float_as_int(best), o));
    const int oa = __shfl_xor_sync(0xffffffffu, at, o);
    if (oa != noColumn && (at == noColumn || ob > best || (ob == best && oa < at))) best = ob, at = oa;
  }
}

// clearPadding zeroes, in one plane of an output packed by rows, row v's
// words past its columns and, for the last row, the padding lines past
// the rows, lane k of step lanes taking every step-th word: nothing clears
// such an output before the aggregation writes it.
__device__ __forceinline__ void clearPadding(u32* plane, long long v, int k, int step, AGG_PARAMS) {
  for (long long i = ((cols + 31) >> 5) + k; i < outLw32; i += step) plane[v * outLw32 + i] = 0;
  if (v == rows - 1) {
    for (long long i = rows * outLw32 + k; i < outPlane32; i += step) plane[i] = 0;
  }
}

// aggFinish is the epilogue of column c of row v (in: a column of the
// output) with its sum: the float, or the re-quantized code into codes or
// planes (packed rows: a ballot per plane over the warp's 32 columns from
// c - lane). Codes add into rs (the row's code sum, sums); with argOut
// (the row in one slice: cols <= 32), the warp's first largest column
// goes to argOut, as argmax below.
__device__ __forceinline__ void aggFinish(const Prob& P, long long v, long long c, bool in, int sum, int& rs,
                                          float scale, float offset, AGG_PARAMS) {
  const int lane = threadIdx.x & 31;
  if (mode == AGG_FLOAT) {
    const float t = in ? applyEp(P, sum, (int)v, (int)c) : 0.f;
    if (in) ((float*)out)[v * cols + c] = t;
    if (argOut) {
      // Column 0 NaN keeps 0; other NaNs never win; ties go to the first.
      const bool nan0 = __shfl_sync(0xffffffffu, (int)(t != t), 0) != 0;
      float best = t;
      int at = in && t == t ? (int)c : noColumn;
      firstMax(best, at, 32);
      if (lane == 0) ((int*)argOut)[argIdx ? ((const int*)argIdx)[v] : argOff + v] = nan0 ? 0 : at;
    }
    return;
  }
  const u32 q = in ? quantize(applyEp(P, sum, (int)v, (int)c), scale, offset, (int)outBits) : 0u;
  rs += (int)q;
  if (mode == AGG_CODES) {
    if (in) ((u8*)out)[v * cols + c] = (u8)q;
  } else if (!outByCols) {
    u32* line = (u32*)out + v * outLw32 + ((c - lane) >> 5);
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

// aggRowV computes row v of G·X with the W warps of its block (wid: this
// warp's, my: its shared scratch). A warp takes its entries 32 at a time,
// each lane loading one entry's index (and weight) in one coalesced load,
// the next tile's in flight during this one's sums; the lanes then split
// into 32/L groups of L lanes, lane l of a group summing V consecutive
// columns of a V·L-column chunk, group g every (32/L)-th of those
// entries, four at a time. Unweighted (ONE), a lane adds its codes as 16-bit pairs (a mask
// and a byte permute per word, flushed into int32 before packLimit
// entries can overflow them); weighted, code by code times the weight.
// The groups' sums meet in the warp's shared scratch (lane c of the warp
// sums column c over the groups), the warps' in red; lane c of warp 0
// then finishes column c of each 32 (aggFinish), and with sums writes the
// row's code sum. Planes packed by rows are written whole: nothing clears
// them first.
template <int W, int V, bool ONE>
__device__ __forceinline__ void aggRowV(long long v, int wid, int* red, int* my, AGG_PARAMS) {
  const int lane = threadIdx.x & 31;
  const Prob P = aggProb(AGG_ARGS);
  const float scale = bitsFloat(rqScale), offset = bitsFloat(rqOffset);
  const int e0 = indptr[v], e1 = indptr[v + 1];
  const bool aligned = (cols % V) == 0 && ((u64)x % V) == 0;
  const u32 stride = (u32)cols;
  int rs = 0;
  for (long long c0 = 0; c0 < cols; c0 += 32 * V) {
    const int chunk = (int)min(cols - c0, 32LL * V);
    int lgL = 0;
    while ((V << lgL) < chunk) lgL++;
    const int L = 1 << lgL, G = 32 >> lgL, g = lane >> lgL, l = lane & (L - 1);
    const long long cc = c0 + V * l;
    const int n = (int)max(0LL, min(cols - cc, (long long)V));
    const bool vec = aligned && cc + V <= cols;  // not n == V: see aggGroupsV
    const u8* xl = x + cc;
    if (W > 1) {
      for (int k = threadIdx.x; k < chunk; k += 32 * W) red[k] = 0;
      __syncthreads();
    }
    int s[V] = {};
    u32 a[V / 2] = {};
    int packed = 0;
    int t0 = e0 + 32 * wid;
    int nextIdx = t0 + lane < e1 ? indices[t0 + lane] : 0;
    int nextW = !ONE && t0 + lane < e1 ? (int)w[t0 + lane] : 1;
    for (; t0 < e1; t0 += 32 * W) {
      const int m = min(e1 - t0, 32);
      const int myIdx = nextIdx, myW = nextW;
      const int t1 = t0 + 32 * W;
      nextIdx = t1 + lane < e1 ? indices[t1 + lane] : 0;
      if (!ONE) nextW = t1 + lane < e1 ? (int)w[t1 + lane] : 1;
      if (ONE) {
        // A tile adds at most 32 entries a lane.
        if (packed + 32 > packLimit) unpack<V>(s, a), packed = 0;
        packed += 32;
      }
      for (int j0 = 0; j0 < m; j0 += 4 * G) {
        u32 q[4][V / 4];
        int wt[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
          const int j = j0 + u * G + g;
          const int i = __shfl_sync(0xffffffffu, myIdx, j & 31);
          wt[u] = ONE ? 1 : __shfl_sync(0xffffffffu, myW, j & 31);
          if (j < m && n > 0) {
            loadCodes<V>(q[u], xl + (u64)(u32)i * stride, n, vec);
          } else {
            wt[u] = 0;
#pragma unroll
            for (int k = 0; k < V / 4; k++) q[u][k] = 0;
          }
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
          if (ONE) {
            addPairs<V>(a, q[u]);
          } else {
#pragma unroll
            for (int k = 0; k < V; k++) s[k] += wt[u] * (int)((q[u][k / 4] >> (8 * (k % 4))) & 255u);
          }
        }
      }
    }
    if (ONE) unpack<V>(s, a);
    // Group g's lane l holds columns V·l.. of the chunk: at lane·V.
#pragma unroll
    for (int k = 0; k < V; k++) my[lane * V + k] = s[k];
    __syncwarp();
    const int span = L * V;
    for (int c1 = 0; c1 < chunk; c1 += 32) {
      const int cl = c1 + lane;
      int sum = 0;
      if (cl < chunk) {
        for (int h = 0; h < G; h++) sum += my[h * span + cl];
      }
      if (W > 1) {
        if (cl < chunk) atomicAdd(red + cl, sum);
      } else {
        aggFinish(P, v, c0 + cl, cl < chunk, sum, rs, scale, offset, AGG_ARGS);
      }
    }
    __syncwarp();
    if (W > 1) {
      __syncthreads();
      if (wid == 0) {
        for (int c1 = 0; c1 < chunk; c1 += 32) {
          const int cl = c1 + lane;
          aggFinish(P, v, c0 + cl, cl < chunk, cl < chunk ? red[cl] : 0, rs, scale, offset, AGG_ARGS);
        }
      }
      __syncthreads();
    }
  }
  if (sums && wid == 0) {
    for (int o = 16; o > 0; o >>= 1) rs += __shfl_xor_sync(0xffffffffu, rs, o);
    if (lane == 0) ((float*)sums)[v] = __int2float_rn(rs);
  }
  if (mode == AGG_BITS && !outByCols && wid == 0) {
    for (int p = 0; p < outBits; p++) clearPadding((u32*)out + p * outPlane32, v, lane, 32, AGG_ARGS);
  }
}

// aggRow takes 8 columns a lane where wideLanes allows, 4 otherwise; the
// 16-bit pair sums where every weight is 1 (w null).
template <int W>
__device__ __forceinline__ void aggRow(long long v, int wid, int* red, int* my, AGG_PARAMS) {
  if (wideLanes(cols, x)) {
    if (w) {
      aggRowV<W, AGG_V, false>(v, wid, red, my, AGG_ARGS);
    } else {
      aggRowV<W, AGG_V, true>(v, wid, red, my, AGG_ARGS);
    }
  } else if (w) {
    aggRowV<W, 4, false>(v, wid, red, my, AGG_ARGS);
  } else {
    aggRowV<W, 4, true>(v, wid, red, my, AGG_ARGS);
  }
}

// planeBits gathers bit p of each of a lane's V codes (q, one a word)
// into a V-bit number, code k at bit k. Codes of a byte at most (bytes
// true) go four to a word, and each byte's bit p moves to the top by one
// multiply (no two of its partial products meet); wider ones bit by bit.
template <int V>
__device__ __forceinline__ u32 planeBits(const u32 (&q)[V], int p, bool bytes) {
  u32 b = 0;
  if (bytes) {
#pragma unroll
    for (int j = 0; j < V / 4; j++) {
      const u32 w4 = q[4 * j] | (q[4 * j + 1] << 8) | (q[4 * j + 2] << 16) | (q[4 * j + 3] << 24);
      b |= ((((w4 >> p) & 0x01010101u) * 0x10204080u) >> 28) << (4 * j);
    }
    return b;
  }
#pragma unroll
  for (int k = 0; k < V; k++) b |= ((q[k] >> p) & 1u) << k;
  return b;
}

template <int V>
__device__ __forceinline__ void groupsFinish(const int (&sums0)[V], long long v, bool live, int lgL, AGG_PARAMS);

// groupRow says whether a lane group's row v is one to compute and store
// (in the rows, not left to a heavy block), with its entries [e0, e1):
// none where it is not.
__device__ __forceinline__ bool groupRow(long long v, long long heavyDeg, long long nHeavy, const int* __restrict__ indptr,
                                         long long rows, int& e0, int& e1) {
  e0 = e1 = 0;
  if (v >= rows) return false;
  e0 = indptr[v], e1 = indptr[v + 1];
  if (nHeavy > 0 && e1 - e0 > heavyDeg) {
    e1 = e0;
    return false;
  }
  return true;
}

// aggGroupsV computes light rows of an unweighted graph a group of L =
// 2^lgL lanes each, 32/L rows a warp (from v0, group g row v0 + g): for
// outputs of at most 16·V columns, so that a warp's fixed costs (the
// loop, the epilogue's loads and stores) serve several short rows instead
// of one. Lane l of a group sums columns V·l.. of its row over every
// entry as 16-bit pairs, L entries at a time (their indices in one load,
// the next ones in flight), as aggRowV does, then finishes its own V
// columns: floats, codes (one store where aligned), or planes packed by
// rows, V bits of plane p a lane OR-ed into their word across the lanes
// that share it. Heavy rows (past heavyDeg where there are heavy blocks)
// are left to their blocks.
template <int V>
__device__ __forceinline__ void aggGroupsV(long long v0, int lgL, long long heavyDeg, long long nHeavy, AGG_PARAMS) {
  if (v0 >= rows) return;  // the whole warp
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31, L = 1 << lgL, g = lane >> lgL, l = lane & (L - 1);
  const long long v = v0 + g;
  int e0, e1;
  const bool live = groupRow(v, heavyDeg, nHeavy, indptr, rows, e0, e1);
  const int ic = (int)cols, cc = V * l;
  const int n = max(0, min(ic - cc, V));
  // The bound itself, not n == V: NVRTC 13's ptxas folded n's clamp and
  // that compare into one instruction and got it wrong, so lanes past the
  // row's end stored whole words over the next row's codes.
  const bool vec = (ic % V) == 0 && ((u64)x % V) == 0 && cc + V <= ic;
  const u8* xl = x + cc;
  const u32 stride = (u32)ic;
  int s[V] = {};
  u32 a[V / 2] = {};
  int packed = 0;
  int t = e0;
  int nextIdx = t + l < e1 ? indices[t + l] : 0;
  for (; __any_sync(full, t < e1); t += L) {
    const int myIdx = nextIdx, m = e1 - t;
    nextIdx = t + L + l < e1 ? indices[t + L + l] : 0;
    if (packed > packLimit - L) unpack<V>(s, a), packed = 0;
    packed += L;
    for (int u0 = 0; u0 < L; u0 += 4) {
      u32 q[4][V / 4];
#pragma unroll
      for (int k = 0; k < 4; k++) {
        const int u = u0 + k;
        const int i = __shfl_sync(full, myIdx, (g << lgL) | (u & (L - 1)));
        if (u < L && u < m && n > 0) {
          loadCodes<V>(q[k], xl + (u64)(u32)i * stride, n, vec);
        } else {
#pragma unroll
          for (int j = 0; j < V / 4; j++) q[k][j] = 0;
        }
      }
#pragma unroll
      for (int k = 0; k < 4; k++) addPairs<V>(a, q[k]);
    }
  }
  unpack<V>(s, a);
  groupsFinish<V>(s, v, live, lgL, AGG_ARGS);
}

// groupsFinish is the epilogue of row v (live: a row to store) for lane l
// of its group of L = 2^lgL lanes, which holds the sums s of columns V·l..
// of the row: floats, codes (one store where aligned), or planes packed by
// rows, V bits of plane p a lane OR-ed into their word across the lanes
// that share it; with the folds (sums, argOut) over the group.
template <int V>
__device__ __forceinline__ void groupsFinish(const int (&sums0)[V], long long v, bool live, int lgL, AGG_PARAMS) {
  // A copy: read through the reference, the sums went to local memory.
  int s[V];
#pragma unroll
  for (int k = 0; k < V; k++) s[k] = sums0[k];
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31, L = 1 << lgL, g = lane >> lgL, l = lane & (L - 1);
  const int ic = (int)cols, cc = V * l;
  const int n = max(0, min(ic - cc, V));
  const bool vec = (ic % V) == 0 && ((u64)x % V) == 0 && cc + V <= ic;  // see aggGroupsV
  const Prob P = aggProb(AGG_ARGS);
  const int vi = (int)min(v, rows - 1);  // rows past the end compute, store nothing
  if (mode == AGG_FLOAT) {
    float y[V];
#pragma unroll
    for (int k = 0; k < V; k++) y[k] = k < n ? applyEp(P, s[k], vi, cc + k) : 0.f;
    if (live) {
      float* orow = (float*)out + v * cols;
#pragma unroll
      for (int k = 0; k < V; k++) {
        if (k < n) orow[cc + k] = y[k];
      }
    }
    if (argOut) {
      // The group's first largest column; column 0 NaN keeps 0, other
      // NaNs never win (layers' QArgmax).
      float best = 0.f;
      int at = noColumn;
#pragma unroll
      for (int k = 0; k < V; k++) {
        if (k < n && y[k] == y[k] && (at == noColumn || y[k] > best)) best = y[k], at = cc + k;
      }
      firstMax(best, at, L);
      const bool nan0 = __shfl_sync(full, (int)(y[0] != y[0]), g << lgL) != 0;
      if (live && l == 0) ((int*)argOut)[argIdx ? ((const int*)argIdx)[v] : argOff + v] = nan0 ? 0 : at;
    }
    return;
  }
  const float scale = bitsFloat(rqScale), offset = bitsFloat(rqOffset);
  u32 q[V];
  int rs = 0;
#pragma unroll
  for (int k = 0; k < V; k++) {
    q[k] = k < n ? quantize(applyEp(P, s[k], vi, cc + k), scale, offset, (int)outBits) : 0u;
    rs += (int)q[k];
  }
  if (sums) {
    for (int o = 1; o < L; o <<= 1) rs += __shfl_xor_sync(full, rs, o);
    if (live && l == 0) ((float*)sums)[v] = __int2float_rn(rs);
  }
  if (mode == AGG_CODES) {
    if (!live) return;
    u8* orow = (u8*)out + v * cols + cc;
    if (vec) {
      u32 wq[V / 4];
#pragma unroll
      for (int j = 0; j < V / 4; j++) wq[j] = q[4 * j] | (q[4 * j + 1] << 8) | (q[4 * j + 2] << 16) | (q[4 * j + 3] << 24);
      if (V == 8) {
        uint2 t2;
        t2.x = wq[0], t2.y = wq[V / 4 - 1];
        *(uint2*)orow = t2;
      } else {
        *(u32*)orow = wq[0];
      }
    } else {
#pragma unroll
      for (int k = 0; k < V; k++) {
        if (k < n) orow[k] = (u8)q[k];
      }
    }
    return;
  }
  if (outByCols) {
    if (!live) return;
    for (int k = 0; k < n; k++) {
      u32* word = (u32*)out + (long long)(cc + k) * outLw32 + (v >> 5);
      for (int p = 0; p < outBits; p++) {
        if ((q[k] >> p) & 1u) atomicOr(word + p * outPlane32, 1u << (v & 31));
      }
    }
    return;
  }
  // Packed by rows: the 32/V lanes of a word OR their V bits together;
  // the first stores the word, and the group clears the words past the
  // columns (and, for the last row, the padding lines: nothing clears
  // the output first).
  const int per = min(32 / V, L);
  for (int p = 0; p < outBits; p++) {
    u32 wv = planeBits<V>(q, p, outBits <= 8) << (cc & 31);
    for (int o = 1; o < per; o <<= 1) wv |= (u32)__shfl_xor_sync(full, (int)wv, o);
    if (live) {
      u32* plane = (u32*)out + p * outPlane32;
      if ((l & (per - 1)) == 0 && n > 0) plane[v * outLw32 + (cc >> 5)] = wv;
      clearPadding(plane, v, l, L, AGG_ARGS);
    }
  }
}

// aggSplitStep is the entries a lane of aggSplit has in flight.
constexpr int aggSplitStep = 4;

// aggSplit computes light rows of at most 16 columns of an unweighted
// graph a group of L = 2^lgL lanes each, as aggGroupsV, but splits the
// row's entries over the lanes instead of its columns: lane l sums every
// column of entries l, l + L, ... (aggSplitStep in flight) as 16-bit
// pairs, so a short row has that many gathers a lane in flight rather
// than one. The host splits only where a light row's entries fit a pair
// (packLimit), so the lanes' pairs meet by shuffles unwidened; lane l
// then finishes columns 4l.. (groupsFinish).
__device__ __forceinline__ void aggSplit(long long v0, int lgL, long long heavyDeg, long long nHeavy, AGG_PARAMS) {
  if (v0 >= rows) return;  // the whole warp
  const unsigned full = 0xffffffffu;
  const int lane = threadIdx.x & 31, L = 1 << lgL, g = lane >> lgL, l = lane & (L - 1);
  const long long v = v0 + g;
  int e0, e1;
  const bool live = groupRow(v, heavyDeg, nHeavy, indptr, rows, e0, e1);
  const int ic = (int)cols, nw = (ic + 3) >> 2;
  const u32 stride = (u32)ic;
  u32 a[8] = {};
  // No shuffle in the loop: its trip count is the lane's own.
  for (int t = e0 + l; t < e1; t += aggSplitStep * L) {
    int i[aggSplitStep];
#pragma unroll
    for (int u = 0; u < aggSplitStep; u++) i[u] = t + u * L < e1 ? indices[t + u * L] : -1;
    u32 q[aggSplitStep][4];
#pragma unroll
    for (int u = 0; u < aggSplitStep; u++) {
#pragma unroll
      for (int j = 0; j < 4; j++) {
        u32 w1[1] = {0u};
        if (j < nw && i[u] >= 0) loadCodes<4>(w1, x + (u64)(u32)i[u] * stride + 4 * j, min(ic - 4 * j, 4), false);
        q[u][j] = w1[0];
      }
    }
#pragma unroll
    for (int u = 0; u < aggSplitStep; u++) {
#pragma unroll
      for (int j = 0; j < 4; j++) addWord(a[2 * j], a[2 * j + 1], q[u][j]);
    }
  }
#pragma unroll
  for (int j = 0; j < 8; j++) {
    if (j < 2 * nw) {  // the same for the whole warp
      for (int o = 1; o < L; o <<= 1) a[j] += (u32)__shfl_xor_sync(full, (int)a[j], o);
    }
  }
  u32 mine[2] = {};
#pragma unroll
  for (int j = 0; j < 4; j++) {
    if (j == l) mine[0] = a[2 * j], mine[1] = a[2 * j + 1];
  }
  int s[4] = {};
  unpack<4>(s, mine);
  groupsFinish<4>(s, v, live, lgL, AGG_ARGS);
}

// aggGroups takes 8 columns a lane where wideLanes allows, 4 otherwise.
// Unweighted graphs only: the host gives weighted ones a warp a row (see
// aggregate in backend_ops.go).
__device__ __forceinline__ void aggGroups(long long v0, int lgL, long long heavyDeg, long long nHeavy, AGG_PARAMS) {
  if (wideLanes(cols, x)) {
    aggGroupsV<AGG_V>(v0, lgL, heavyDeg, nHeavy, AGG_ARGS);
  } else {
    aggGroupsV<4>(v0, lgL, heavyDeg, nHeavy, AGG_ARGS);
  }
}

// aggBlocks: in one launch, block b < nHeavy takes row heavy[b] (rows of more
// than heavyDeg entries, longest first) with all its W warps, so that one
// warp's chain of loads over a long row does not hold up the kernel; each
// warp of the blocks after takes one of the other rows. The heavy blocks
// start first and the light ones fill the device around them. SPLIT: the
// light rows by aggSplit (agg8s, agg32s), a kernel of its own so that its
// registers do not cost the other paths spills.
template <int W, bool SPLIT>
__device__ __forceinline__ void aggBlocks(long long heavyDeg, const int* __restrict__ heavy, long long nHeavy, AGG_PARAMS) {
  __shared__ int red[AGG_CHUNK];
  __align__(16) __shared__ int scr[W * 32 * 8];
  const int wid = threadIdx.x >> 5;
  int* my = scr + wid * 32 * 8;  // this warp's scratch
  if ((long long)blockIdx.x < nHeavy) {
    aggRow<W>(heavy[blockIdx.x], wid, red, my, AGG_ARGS);
    return;
  }
  const long long v = ((long long)blockIdx.x - nHeavy) * W + wid;
  if (laneLg < 5) {
    if (SPLIT) {
      aggSplit(v << (5 - laneLg), (int)laneLg, heavyDeg, nHeavy, AGG_ARGS);
    } else {
      aggGroups(v << (5 - laneLg), (int)laneLg, heavyDeg, nHeavy, AGG_ARGS);
    }
    return;
  }
  if (v >= rows) return;  // the whole warp
  if (nHeavy > 0 && indptr[v + 1] - indptr[v] > heavyDeg) return;
  aggRow<1>(v, 0, nullptr, my, AGG_ARGS);
}
// Four blocks an SM: the groups' path, unbounded, takes registers enough
// to cost occupancy (bench/e2e/RESULTS.md).
extern "C" __global__ void __launch_bounds__(256, 4)
    agg8(long long heavyDeg, const int* __restrict__ heavy, long long nHeavy, AGG_PARAMS) {
  aggBlocks<8, false>(heavyDeg, heavy, nHeavy, AGG_ARGS);
}
extern "C" __global__ void __launch_bounds__(256, 4)
    agg8s(long long heavyDeg, const int* __restrict__ heavy, long long nHeavy, AGG_PARAMS) {
  aggBlocks<8, true>(heavyDeg, heavy, nHeavy, AGG_ARGS);
}
extern "C" __global__ void __launch_bounds__(1024)
    agg32(long long heavyDeg, const int* __restrict__ heavy, long long nHeavy, AGG_PARAMS) {
  aggBlocks<32, false>(heavyDeg, heavy, nHeavy, AGG_ARGS);
}
extern "C" __global__ void __launch_bounds__(1024)
    agg32s(long long heavyDeg, const int* __restrict__ heavy, long long nHeavy, AGG_PARAMS) {
  aggBlocks<32, true>(heavyDeg, heavy, nHeavy, AGG_ARGS);
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
