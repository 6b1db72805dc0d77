// Shared pieces of the full-precision graph templates (fp_spmm.cu,
// fp_sddmm.cu). tcu/fp.go prepends the variant's #defines, generated from
// the template spec (templates.Msg, templates.Reduce, templates.SDDMMOp):
//   VW  floats per lane per vector load (1, 2 or 4), dividing f
//   G   lanes per row group (a power of two, at most 32)
//   R   vector slots per lane (the group covers G*VW*R columns of a tile)
//   U   edges gathered per step (loads in flight per lane)
//   HAS_EID  the CSR carries edge ids (else the id of position p is p)
// Every parameter is 64 bits wide (Device.launch).
typedef long long i64;

template <int N>
struct __align__(4 * N) vecf {
  float v[N];
};
typedef vecf<VW> vt;

__device__ __forceinline__ vt loadv(const float* __restrict__ p) { return *(const vt*)p; }
__device__ __forceinline__ void storev(float* __restrict__ p, const vt& x) { *(vt*)p = x; }

// groupMask is the lanes of the calling lane's group: shuffles name only
// them, so groups of one warp may run different trip counts.
__device__ __forceinline__ unsigned groupMask() {
#if G == 32
  return 0xffffffffu;
#else
  const unsigned lane = threadIdx.x & 31u;
  return ((1u << G) - 1u) << (lane & ~(unsigned)(G - 1));
#endif
}

// workItem finds what group gid owns: a chunk of a heavy row (chunks are
// numbered first, so the long work starts early) or a light row, which it
// skips (returns false) when the row is heavy. A chunk is (row, p0, p1,
// segment). Light rows are taken in order (the rows' visiting order) when
// it is given, else 0, 1, ...
__device__ __forceinline__ bool workItem(i64 gid, const int* __restrict__ chunks, i64 nchunks,
                                         const int* __restrict__ indptr, const int* __restrict__ order, i64 rows,
                                         i64 heavy, int& v, int& p0, int& p1, int& seg) {
  if (gid < nchunks) {
    v = chunks[4 * gid], p0 = chunks[4 * gid + 1], p1 = chunks[4 * gid + 2], seg = chunks[4 * gid + 3];
    return true;
  }
  const i64 r = gid - nchunks;
  if (r >= rows) return false;
  v = order ? order[r] : (int)r, p0 = indptr[v], p1 = indptr[v + 1], seg = -1;
  return p1 - p0 <= heavy;
}
