// SDDMM of the full-precision templates (templates.SDDMM's GPU twin): one
// value (u_dot_v, per head) or one vector (u_add_v, u_sub_v, u_mul_v) per
// edge u->v, written at its edge id. A group of G lanes owns a destination
// row (heavy rows in chunks, as fp_spmm.cu; no partials: every edge is
// written once), keeps y[v]'s columns in registers, and takes the row's
// edges U at a time, broadcast by shuffles. For u_dot_v each lane
// multiplies its columns of the head (blockIdx.y) and the group sums the
// lanes with a butterfly of shuffles (FeatGraph's tree reduction). tcu/fp.go
// generates the prelude: DOT (u_dot_v), else MSG(x, y) of one column.
#include "fp.cuh"

template <int NU>
__device__ __forceinline__ void edges(const float (&yv)[R][VW], unsigned gm, int gl, int j, int pb, int myu,
                                      int mye, const float* __restrict__ x, float* __restrict__ out, i64 f,
                                      i64 heads, i64 h, i64 c0, i64 lim) {
  int u[NU], id[NU];
#pragma unroll
  for (int i = 0; i < NU; i++) {
    u[i] = __shfl_sync(gm, myu, j + i, G);
    id[i] = HAS_EID ? __shfl_sync(gm, mye, j + i, G) : pb + j + i;
  }
#if DOT
  float s[NU];
#pragma unroll
  for (int i = 0; i < NU; i++) s[i] = 0.f;
#endif
#pragma unroll
  for (int r = 0; r < R; r++) {
    const i64 c = c0 + (i64)r * G * VW;
    if (c >= lim) continue;
    vt xv[NU];
#pragma unroll
    for (int i = 0; i < NU; i++) xv[i] = loadv(x + (i64)u[i] * f + c);
#pragma unroll
    for (int i = 0; i < NU; i++) {
#if DOT
#pragma unroll
      for (int k = 0; k < VW; k++) s[i] += xv[i].v[k] * yv[r][k];
#else
      vt o;
#pragma unroll
      for (int k = 0; k < VW; k++) o.v[k] = MSG(xv[i].v[k], yv[r][k]);
      storev(out + (i64)id[i] * f + c, o);
#endif
    }
  }
#if DOT
#pragma unroll
  for (int i = 0; i < NU; i++) {
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) s[i] += __shfl_xor_sync(gm, s[i], o, G);
  }
  if (gl == 0) {
#pragma unroll
    for (int i = 0; i < NU; i++) out[(i64)id[i] * heads + h] = s[i];
  }
#endif
}

// loadEdge reads the source and id of the edge at position p, if p < p1.
__device__ __forceinline__ void loadEdge(const int* __restrict__ indices, const int* __restrict__ eids, int p, int p1,
                                         int& u, int& id) {
  if (p < p1) {
    u = indices[p];
#if HAS_EID
    id = eids[p];
#endif
  }
}

extern "C" __global__ void __launch_bounds__(256)
    fp_sddmm(const int* __restrict__ indptr, const int* __restrict__ indices, const int* __restrict__ eids,
             const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
             const int* __restrict__ chunks, i64 nchunks, i64 rows, i64 f, i64 heads, i64 heavy) {
  const int gl = threadIdx.x & (G - 1);
  const i64 gid = (i64)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
  int v, p0, p1, seg;
  if (!workItem(gid, chunks, nchunks, indptr, nullptr, rows, heavy, v, p0, p1, seg)) return;  // the whole group
  const unsigned gm = groupMask();
#if DOT
  // blockIdx.y is the head: the group covers its f/heads columns.
  const i64 h = blockIdx.y, base = h * (f / heads), lim = base + f / heads;
#else
  const i64 h = 0, base = (i64)blockIdx.y * (G * VW * R), lim = f;
#endif
  const i64 c0 = base + gl * VW;
  float yv[R][VW];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const i64 c = c0 + (i64)r * G * VW;
#pragma unroll
    for (int k = 0; k < VW; k++) yv[r][k] = 0.f;
    if (c < lim) {
      const vt t = loadv(y + (i64)v * f + c);
#pragma unroll
      for (int k = 0; k < VW; k++) yv[r][k] = t.v[k];
    }
  }
  // The next batch's edges load while the group works on the current one.
  int myu = 0, mye = p0 + gl;
  loadEdge(indices, eids, p0 + gl, p1, myu, mye);
  for (int pb = p0; pb < p1; pb += G) {
    int nu = 0, ne = pb + G + gl;
    loadEdge(indices, eids, pb + G + gl, p1, nu, ne);
    const int n = min(G, p1 - pb);
    int j = 0;
    for (; j + U <= n; j += U) edges<U>(yv, gm, gl, j, pb, myu, mye, x, out, f, heads, h, c0, lim);
    for (; j < n; j++) edges<1>(yv, gm, gl, j, pb, myu, mye, x, out, f, heads, h, c0, lim);
    myu = nu, mye = ne;
  }
}
