// GAT's ops for full-precision training on the device (tcu/fp_gat.go plans
// them), appended to fp_dense.cu (BLOCK, FOR_EACH, splitmix64): HeadDot,
// the fused edge softmax + aggregation and its backward, ELU and
// MeanHeads, each the twin of an internal/nn op. The aggregation keeps
// only each (row, head)'s softmax maximum and 1/Σexp; its backward
// recomputes every edge's weight (and its dropout mask, from the seed)
// instead of reading O(E·heads) stored values. A warp owns a row; lanes
// stride over its edges for the softmax and over features for the sums,
// so nothing is atomic and the sums run in a fixed order.
#define WARPS (BLOCK / 32)
#define FULL 0xffffffffu

__device__ __forceinline__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o, 32);
  return v;
}

__device__ __forceinline__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL, v, o, 32));
  return v;
}

__device__ __forceinline__ float leaky(float z, float slope) { return z > 0.f ? z : z * slope; }

// dropFactor is templates' dropMask.factor: 1/(1−p) when element i
// survives (the hash's top 24 bits at least thr), else 0; thr 0 is no
// dropout.
__device__ __forceinline__ float dropFactor(u64 seed, u64 thr, float scale, i64 i) {
  if (thr == 0) return 1.f;
  return (splitmix64(seed ^ (u64)i * 0xd1342543de82ef95ull) >> 40) >= thr ? scale : 0.f;
}

#define FOR_EACH_WARP(r, n) \
  for (i64 r = (i64)blockIdx.x * WARPS + (threadIdx.x >> 5); r < (n); r += (i64)gridDim.x * WARPS)

// headdot: out[i,h] = Σ_j x[i,h·d+j]·att[h·d+j], in order and unfused as
// nn.HeadDot; a thread per (row, head).
extern "C" __global__ void __launch_bounds__(BLOCK)
    headdot(float* __restrict__ out, const float* __restrict__ x, const float* __restrict__ att, i64 rows, i64 heads,
            i64 d) {
  FOR_EACH(k, rows * heads) {
    const i64 i = k / heads, h = k % heads;
    const float* xr = x + i * heads * d + h * d;
    const float* ar = att + h * d;
    float s = 0.f;
    for (i64 j = 0; j < d; j++) s = __fadd_rn(s, __fmul_rn(xr[j], ar[j]));
    out[k] = s;
  }
}

// headdot_back_x: dx[i,c] (+)= dout[i,c/d]·att[c], HeadDot's gradient for x.
extern "C" __global__ void __launch_bounds__(BLOCK)
    headdot_back_x(float* __restrict__ dx, const float* __restrict__ dout, const float* __restrict__ att, i64 rows,
                   i64 heads, i64 d, i64 acc) {
  const i64 f = heads * d;
  FOR_EACH(k, rows * f) {
    const i64 i = k / f, c = k % f;
    const float v = __fmul_rn(dout[i * heads + c / d], att[c]);
    dx[k] = acc ? __fadd_rn(dx[k], v) : v;
  }
}

// headdot_back_att_part: part[chunk][c] = Σ over the chunk's rows of
// dout[i,c/d]·x[i,c] in double, for colsum_final to add up (HeadDot's
// gradient for att); block x is a chunk of rows, y a slice of columns.
extern "C" __global__ void __launch_bounds__(BLOCK)
    headdot_back_att_part(double* __restrict__ part, const float* __restrict__ x, const float* __restrict__ dout,
                          i64 rows, i64 heads, i64 d, i64 chunk) {
  const i64 f = heads * d;
  const i64 c = (i64)blockIdx.y * BLOCK + threadIdx.x;
  if (c >= f) return;
  const i64 r0 = (i64)blockIdx.x * chunk, r1 = min(rows, r0 + chunk);
  double s = 0;
  for (i64 i = r0; i < r1; i++) s += (double)__fmul_rn(dout[i * heads + c / d], x[i * f + c]);
  part[(i64)blockIdx.x * f + c] = s;
}

// rowGather writes dst[c] = Σ over the edges p in [p0, p1) of weight(p,
// indices[p])·src[indices[p]·f + c] for c < d, lanes over c: each lane
// weighs one edge of a 32-edge chunk, then every lane reads every weight
// (one weight per edge and 32-feature chunk), in edge order.
template <class Weight>
__device__ __forceinline__ void rowGather(float* __restrict__ dst, const float* __restrict__ src, i64 f, i64 d,
                                          const int* __restrict__ indices, i64 p0, i64 p1, int lane, Weight weight) {
  for (i64 f0 = 0; f0 < d; f0 += 32) {
    float acc = 0.f;
    for (i64 pb = p0; pb < p1; pb += 32) {
      const i64 p = pb + lane;
      int u = 0;
      float a = 0.f;
      if (p < p1) {
        u = indices[p];
        a = weight(p, u);
      }
      const int n = (int)min((i64)32, p1 - pb);
      for (int j = 0; j < n; j++) {
        const float aj = __shfl_sync(FULL, a, j, 32);
        const int uj = __shfl_sync(FULL, u, j, 32);
        if (f0 + lane < d) acc += aj * src[(i64)uj * f + f0 + lane];
      }
    }
    if (f0 + lane < d) dst[f0 + lane] = acc;
  }
}

// gat_fwd: for row v and head h, the weights a_e = softmax over v's
// in-edges of LeakyReLU(el[u,h] + er[v,h]), times the dropout factor of
// element e·heads+h, and out[v,h,:] = Σ a_e·x[u,h,:]
// (templates.GATAggregateDropout); stats[v,h] = (max, 1/Σexp), (−inf, 0)
// for a row without edges, whose out is 0.
extern "C" __global__ void __launch_bounds__(BLOCK)
    gat_fwd(float* __restrict__ out, float* __restrict__ stats, const int* __restrict__ indptr,
            const int* __restrict__ indices, const int* __restrict__ eids, const float* __restrict__ x,
            const float* __restrict__ el, const float* __restrict__ er, i64 rows, i64 heads, i64 d, double slope,
            u64 seed, u64 thr, double scale) {
  const int lane = threadIdx.x & 31;
  const float sl = (float)slope, sc = (float)scale;
  const i64 f = heads * d;
  FOR_EACH_WARP(v, rows) {
    const i64 p0 = indptr[v], p1 = indptr[v + 1];
    for (i64 h = 0; h < heads; h++) {
      const float erv = er[v * heads + h];
      float m = __int_as_float(0xff800000);  // -inf: NVRTC has no math.h macros
      for (i64 p = p0 + lane; p < p1; p += 32) m = fmaxf(m, leaky(el[(i64)indices[p] * heads + h] + erv, sl));
      m = warpMax(m);
      float z = 0.f;
      for (i64 p = p0 + lane; p < p1; p += 32) z += expf(leaky(el[(i64)indices[p] * heads + h] + erv, sl) - m);
      z = warpSum(z);
      const float inv = z > 0.f ? 1.f / z : 0.f;
      if (lane == 0) stats[(v * heads + h) * 2] = m, stats[(v * heads + h) * 2 + 1] = inv;
      rowGather(out + v * f + h * d, x + h * d, f, d, indices, p0, p1, lane, [&](i64 p, int u) {
        float a = expf(leaky(el[(i64)u * heads + h] + erv, sl) - m) * inv;
        return a * dropFactor(seed, thr, sc, (eids ? (i64)eids[p] : p) * heads + h);
      });
    }
  }
}

// gat_back_dst: the backward pass over the rows v of g
// (templates.GATAggregateDropoutBackward's first pass): c[v,h] =
// <gout[v,h], out[v,h]> into cvh for gat_back_src, and ger[v,h] = Σ over
// v's in-edges of a_e·(k_e·<gout[v,h], x[u,h]> − c)·LeakyReLU'(z), the
// weights a_e recomputed from stats.
extern "C" __global__ void __launch_bounds__(BLOCK)
    gat_back_dst(float* __restrict__ ger, float* __restrict__ cvh, const int* __restrict__ indptr,
                 const int* __restrict__ indices, const int* __restrict__ eids, const float* __restrict__ x,
                 const float* __restrict__ el, const float* __restrict__ er, const float* __restrict__ out,
                 const float* __restrict__ stats, const float* __restrict__ gout, i64 rows, i64 heads, i64 d,
                 double slope, u64 seed, u64 thr, double scale) {
  const int lane = threadIdx.x & 31;
  const float sl = (float)slope, sc = (float)scale;
  const i64 f = heads * d;
  FOR_EACH_WARP(v, rows) {
    const i64 p0 = indptr[v], p1 = indptr[v + 1];
    for (i64 h = 0; h < heads; h++) {
      const float* gv = gout + v * f + h * d;
      float c = 0.f;
      for (i64 k = lane; k < d; k += 32) c += gv[k] * out[v * f + h * d + k];
      c = warpSum(c);
      if (lane == 0) cvh[v * heads + h] = c;
      const float erv = er[v * heads + h];
      const float m = stats[(v * heads + h) * 2], inv = stats[(v * heads + h) * 2 + 1];
      float acc = 0.f;
      for (i64 p = p0 + lane; p < p1; p += 32) {
        const i64 u = indices[p];
        const float z = el[u * heads + h] + erv;
        const float a = expf(leaky(z, sl) - m) * inv;
        const float* xu = x + u * f + h * d;
        float ga = 0.f;
        for (i64 k = 0; k < d; k++) ga += gv[k] * xu[k];
        ga *= dropFactor(seed, thr, sc, (eids ? (i64)eids[p] : p) * heads + h);
        float gz = a * (ga - c);
        if (z <= 0.f) gz *= sl;
        acc += gz;
      }
      acc = warpSum(acc);
      if (lane == 0) ger[v * heads + h] = acc;
    }
  }
}

// gat_back_src: the backward pass over the rows u of the transpose gT
// (whose edge ids are g's): gel[u,h] = Σ over u's out-edges of the same
// a_e·(k_e·g_a − c[v,h])·LeakyReLU'(z), and gx[u,h,:] = Σ k_e·a_e·gout[v,h,:]
// (overwritten). Runs after gat_back_dst, which writes cvh.
extern "C" __global__ void __launch_bounds__(BLOCK)
    gat_back_src(float* __restrict__ gx, float* __restrict__ gel, const int* __restrict__ indptr,
                 const int* __restrict__ indices, const int* __restrict__ eids, const float* __restrict__ x,
                 const float* __restrict__ el, const float* __restrict__ er, const float* __restrict__ stats,
                 const float* __restrict__ cvh, const float* __restrict__ gout, i64 nsrc, i64 heads, i64 d,
                 double slope, u64 seed, u64 thr, double scale) {
  const int lane = threadIdx.x & 31;
  const float sl = (float)slope, sc = (float)scale;
  const i64 f = heads * d;
  FOR_EACH_WARP(u, nsrc) {
    const i64 q0 = indptr[u], q1 = indptr[u + 1];
    for (i64 h = 0; h < heads; h++) {
      const float elu = el[u * heads + h];
      const float* xu = x + u * f + h * d;
      float acc = 0.f;
      for (i64 q = q0 + lane; q < q1; q += 32) {
        const i64 v = indices[q];
        const float z = elu + er[v * heads + h];
        const float a = expf(leaky(z, sl) - stats[(v * heads + h) * 2]) * stats[(v * heads + h) * 2 + 1];
        const float* gv = gout + v * f + h * d;
        float ga = 0.f;
        for (i64 k = 0; k < d; k++) ga += gv[k] * xu[k];
        ga *= dropFactor(seed, thr, sc, (eids ? (i64)eids[q] : q) * heads + h);
        float gz = a * (ga - cvh[v * heads + h]);
        if (z <= 0.f) gz *= sl;
        acc += gz;
      }
      acc = warpSum(acc);
      if (lane == 0) gel[u * heads + h] = acc;
      rowGather(gx + u * f + h * d, gout + h * d, f, d, indices, q0, q1, lane, [&](i64 q, int v) {
        const float z = elu + er[(i64)v * heads + h];
        float w = expf(leaky(z, sl) - stats[((i64)v * heads + h) * 2]) * stats[((i64)v * heads + h) * 2 + 1];
        return w * dropFactor(seed, thr, sc, (eids ? (i64)eids[q] : q) * heads + h);
      });
    }
  }
}

// elu: out = x for x > 0, else alpha·expm1(x) (nn.ELU; expm1 in double,
// rounded to float, then scaled, as the CPU's).
extern "C" __global__ void __launch_bounds__(BLOCK)
    elu(float* __restrict__ out, const float* __restrict__ x, i64 n, double alpha) {
  FOR_EACH(i, n) {
    const float v = x[i];
    out[i] = v > 0.f ? v : __fmul_rn((float)alpha, (float)expm1((double)v));
  }
}

// elu_back: dx (+)= dy·(1 for x > 0, else y + alpha), y the ELU's output.
extern "C" __global__ void __launch_bounds__(BLOCK)
    elu_back(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x,
             const float* __restrict__ y, i64 n, double alpha, i64 acc) {
  FOR_EACH(i, n) {
    const float g = x[i] > 0.f ? dy[i] : __fmul_rn(dy[i], __fadd_rn(y[i], (float)alpha));
    dx[i] = acc ? __fadd_rn(dx[i], g) : g;
  }
}

// mean_heads: out[i,j] = Σ_h x[i,h·f+j]·(1/heads), heads added in order
// (nn.MeanHeads).
extern "C" __global__ void __launch_bounds__(BLOCK)
    mean_heads(float* __restrict__ out, const float* __restrict__ x, i64 rows, i64 heads, i64 f) {
  const float inv = 1.f / (float)heads;
  FOR_EACH(k, rows * f) {
    const i64 i = k / f, j = k % f;
    float s = 0.f;
    for (i64 h = 0; h < heads; h++) s = __fadd_rn(s, __fmul_rn(x[i * heads * f + h * f + j], inv));
    out[k] = s;
  }
}

// mean_heads_back: dx[i,h·f+j] (+)= dy[i,j]·(1/heads).
extern "C" __global__ void __launch_bounds__(BLOCK)
    mean_heads_back(float* __restrict__ dx, const float* __restrict__ dy, i64 rows, i64 heads, i64 f, i64 acc) {
  const float inv = 1.f / (float)heads;
  FOR_EACH(k, rows * heads * f) {
    const i64 i = k / (heads * f), j = k % f;
    const float v = __fmul_rn(dy[i * f + j], inv);
    dx[k] = acc ? __fadd_rn(dx[k], v) : v;
  }
}
