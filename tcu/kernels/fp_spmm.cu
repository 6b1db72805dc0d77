// SpMM of the full-precision templates (templates.SpMM's GPU twin): out[v]
// = reduce over the in-edges u->v (id e) of msg(x[u], e[e], y[v]), after
// TLPGNN: a group of G lanes owns a destination row, its lanes split the
// feature columns (VW-wide vector loads, R slots each), the row's edges
// are loaded G at a time and broadcast by shuffles, and each lane reduces
// its columns in registers in edge order: no atomics, no shared memory.
// Rows longer than the heavy limit are cut into chunks reduced into
// partials (part) by groups of their own and merged in chunk order by
// fp_spmm_combine: the hybrid balancing that keeps one hub off the
// critical path, deterministic. tcu/fp.go generates the prelude:
//   MSG_X, MSG_Y     the message reads x[u] / y[v]
//   EW               edge operand: 0 none, 1 one value per edge, 2 f values,
//                    3 fe values (column k reads e[id*fe + k/(f/fe)])
//   MSG(x, e, y)     the message of one column
//   RED_INIT, RED(a, m), MERGE(a, p), FINISH(a, deg)   the reduction
//   ROW_SCALE        multiply each finished row v by rowScale[v] (ES-SpMM's
//                    sampled sums: deg(v)/kept(v))
// With a visiting order (UploadCSROrder, tcu/fp_parts.go) the light
// rows run in that order, so the rows in flight share more sources in L2.
#include "fp.cuh"

__device__ __forceinline__ float finish(float a, int deg, const float* __restrict__ rowScale, int v) {
  a = FINISH(a, deg);
#if ROW_SCALE
  a *= rowScale[v];
#endif
  return a;
}

// gather reduces U edges, broadcast from lane j.. of the group, into acc.
template <int NU>
__device__ __forceinline__ void gather(float (&acc)[R][VW], const float (&yv)[R][VW], unsigned gm, int j, int pb,
                                       int myu, int mye, float myw, const float* __restrict__ x,
                                       const float* __restrict__ e, i64 f, i64 fe, i64 c0) {
  int u[NU], id[NU];
  float w[NU];
#pragma unroll
  for (int i = 0; i < NU; i++) {
    u[i] = MSG_X ? __shfl_sync(gm, myu, j + i, G) : 0;
    id[i] = HAS_EID ? __shfl_sync(gm, mye, j + i, G) : pb + j + i;
    w[i] = EW == 1 ? __shfl_sync(gm, myw, j + i, G) : 0.f;
  }
#pragma unroll
  for (int r = 0; r < R; r++) {
    const i64 c = c0 + (i64)r * G * VW;
    if (c >= f) continue;  // not break: the loop unrolls whole, acc stays in registers
    vt xv[NU], ev[NU];
#pragma unroll
    for (int i = 0; i < NU; i++) {
#if MSG_X
      xv[i] = loadv(x + (i64)u[i] * f + c);
#endif
#if EW == 2
      ev[i] = loadv(e + (i64)id[i] * f + c);
#elif EW == 3
#pragma unroll
      for (int k = 0; k < VW; k++) ev[i].v[k] = e[(i64)id[i] * fe + (c + k) / (f / fe)];
#endif
    }
#pragma unroll
    for (int i = 0; i < NU; i++) {
#pragma unroll
      for (int k = 0; k < VW; k++) {
        float xs = 0.f, es = 0.f, ys = yv[r][k];
#if MSG_X
        xs = xv[i].v[k];
#endif
#if EW == 1
        es = w[i];
#elif EW >= 2
        es = ev[i].v[k];
#endif
        const float m = MSG(xs, es, ys);
        RED(acc[r][k], m);
      }
    }
  }
}

// loadEdge reads what a lane contributes to a batch: the source, id and
// (EW 1) weight of the edge at position p, if p < p1.
__device__ __forceinline__ void loadEdge(const int* __restrict__ indices, const int* __restrict__ eids,
                                         const float* __restrict__ e, int p, int p1, int& u, int& id, float& w) {
  u = 0, id = p, w = 0.f;
  if (p < p1) {
#if MSG_X
    u = indices[p];
#endif
#if HAS_EID
    id = eids[p];
#endif
#if EW == 1
    w = e[id];
#endif
  }
}

// At least 4 blocks an SM, i.e. at most 64 registers a thread: ptxas's
// code under that cap ran faster (bench/templates/RESULTS.md).
extern "C" __global__ void __launch_bounds__(256, 4)
    fp_spmm(const int* __restrict__ indptr, const int* __restrict__ indices, const int* __restrict__ eids,
            const float* __restrict__ x, const float* __restrict__ e, const float* __restrict__ y,
            float* __restrict__ out, float* __restrict__ part, const int* __restrict__ chunks, i64 nchunks, i64 rows,
            i64 f, i64 fe, i64 heavy, const float* __restrict__ rowScale, const int* __restrict__ order) {
  const int gl = threadIdx.x & (G - 1);
  const i64 gid = (i64)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
  int v, p0, p1, seg;
  if (!workItem(gid, chunks, nchunks, indptr, order, rows, heavy, v, p0, p1, seg)) return;  // the whole group
  const unsigned gm = groupMask();
  const i64 c0 = (i64)blockIdx.y * (G * VW * R) + gl * VW;
  float acc[R][VW], yv[R][VW];
#pragma unroll
  for (int r = 0; r < R; r++) {
    const i64 c = c0 + (i64)r * G * VW;
#pragma unroll
    for (int k = 0; k < VW; k++) acc[r][k] = RED_INIT, yv[r][k] = 0.f;
#if MSG_Y
    if (c < f) {
      const vt t = loadv(y + (i64)v * f + c);
#pragma unroll
      for (int k = 0; k < VW; k++) yv[r][k] = t.v[k];
    }
#endif
  }
  // Each lane loads one edge of the next batch while the group gathers
  // the current one, so the index loads overlap the feature loads.
  int myu, mye;
  float myw;
  loadEdge(indices, eids, e, p0 + gl, p1, myu, mye, myw);
  for (int pb = p0; pb < p1; pb += G) {
    int nu, ne;
    float nw;
    loadEdge(indices, eids, e, pb + G + gl, p1, nu, ne, nw);
    const int n = min(G, p1 - pb);
    int j = 0;
    for (; j + U <= n; j += U) gather<U>(acc, yv, gm, j, pb, myu, mye, myw, x, e, f, fe, c0);
    for (; j < n; j++) gather<1>(acc, yv, gm, j, pb, myu, mye, myw, x, e, f, fe, c0);
    myu = nu, mye = ne, myw = nw;
  }
  const int deg = p1 - p0;
#pragma unroll
  for (int r = 0; r < R; r++) {
    const i64 c = c0 + (i64)r * G * VW;
    if (c >= f) continue;
    vt t;
#pragma unroll
    for (int k = 0; k < VW; k++) t.v[k] = acc[r][k];
    if (seg >= 0) {
      storev(part + (i64)seg * f + c, t);
    } else {
#pragma unroll
      for (int k = 0; k < VW; k++) t.v[k] = finish(t.v[k], deg, rowScale, v);
      storev(out + (i64)v * f + c, t);
    }
  }
}

// fp_spmm_combine merges the partials of each heavy row, in chunk order,
// and finishes the row. heavyRows holds (row, first segment, segments).
extern "C" __global__ void __launch_bounds__(256)
    fp_spmm_combine(const int* __restrict__ heavyRows, i64 nheavy, const int* __restrict__ indptr,
                    const float* __restrict__ part, float* __restrict__ out, i64 f,
                    const float* __restrict__ rowScale) {
  const int gl = threadIdx.x & (G - 1);
  const i64 gid = (i64)blockIdx.x * (blockDim.x / G) + threadIdx.x / G;
  if (gid >= nheavy) return;
  const int v = heavyRows[3 * gid], s0 = heavyRows[3 * gid + 1], ns = heavyRows[3 * gid + 2];
  const int deg = indptr[v + 1] - indptr[v];
  const i64 c0 = (i64)blockIdx.y * (G * VW * R) + gl * VW;
#pragma unroll
  for (int r = 0; r < R; r++) {
    const i64 c = c0 + (i64)r * G * VW;
    if (c >= f) continue;
    vt a = loadv(part + (i64)s0 * f + c);
    for (int s = 1; s < ns; s++) {
      const vt p = loadv(part + (i64)(s0 + s) * f + c);
#pragma unroll
      for (int k = 0; k < VW; k++) MERGE(a.v[k], p.v[k]);
    }
#pragma unroll
    for (int k = 0; k < VW; k++) a.v[k] = finish(a.v[k], deg, rowScale, v);
    storev(out + (i64)v * f + c, a);
  }
}
