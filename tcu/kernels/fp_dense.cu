// Dense and elementwise fp32 kernels of full-precision training on the
// device (tcu/fp_dense.go plans their launches): the products, bias, ReLU,
// dropout, GIN's (1+eps) update, cross-entropy, evaluation and Adam, each
// the twin of an op of internal/nn or internal/learn, close to it per op.
// Reductions are deterministic: per-block partials in double, then one pass
// that adds them in order; no atomics. Every parameter is 64 bits wide
// (Device.launch): pointers, i64, and double for float scalars. Row-major
// throughout, with no leading dimensions (operands are contiguous).
typedef long long i64;
typedef unsigned long long u64;

#define BLOCK 256

// ---- SGEMM: C = alpha*op(A)*op(B) + beta*C, op(A) M×K, op(B) K×N ----
// A 64×64 tile of C per block of 256 threads, 4×4 per thread (rows ty+16r,
// columns tx+16c: the shared-memory reads of a warp broadcast or run
// consecutive), k in steps of 16. Split-K (gridDim.z > 1) writes each
// slice's product to part[z] and sgemm_reduce adds the slices in order:
// the tall-skinny weight gradients (M, N ≤ 256, K = nodes) would
// otherwise run on a handful of blocks.
#define TM 64
#define TN 64
#define TK 16

template <bool TA, bool TB>
__device__ __forceinline__ void sgemm_body(const float* __restrict__ A, const float* __restrict__ B,
                                           float* __restrict__ C, float* __restrict__ part, i64 M, i64 N, i64 K,
                                           i64 kc, double alpha, double beta) {
  __shared__ float As[TK][TM + 1];
  __shared__ float Bs[TK][TN + 1];
  const int tid = threadIdx.x, tx = tid & 15, ty = tid >> 4;
  const i64 i0 = (i64)blockIdx.x * TM, j0 = (i64)blockIdx.y * TN;
  const i64 k0 = (i64)blockIdx.z * kc, k1 = min(K, k0 + kc);
  float acc[4][4];
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 4; c++) acc[r][c] = 0.f;
  for (i64 kb = k0; kb < k1; kb += TK) {
    // The contiguous axis of each operand is the fastest of the loading
    // threads, so the loads coalesce.
    for (int e = tid; e < TM * TK; e += BLOCK) {
      int ii, kk;
      if (TA) {
        ii = e % TM, kk = e / TM;
      } else {
        kk = e % TK, ii = e / TK;
      }
      const i64 i = i0 + ii, k = kb + kk;
      float v = 0.f;
      if (i < M && k < k1) v = TA ? A[k * M + i] : A[i * K + k];
      As[kk][ii] = v;
    }
    for (int e = tid; e < TN * TK; e += BLOCK) {
      int jj, kk;
      if (TB) {
        kk = e % TK, jj = e / TK;
      } else {
        jj = e % TN, kk = e / TN;
      }
      const i64 j = j0 + jj, k = kb + kk;
      float v = 0.f;
      if (j < N && k < k1) v = TB ? B[j * K + k] : B[k * N + j];
      Bs[kk][jj] = v;
    }
    __syncthreads();
    for (int kk = 0; kk < TK; kk++) {
      float a[4], b[4];
      for (int r = 0; r < 4; r++) a[r] = As[kk][ty + 16 * r];
      for (int c = 0; c < 4; c++) b[c] = Bs[kk][tx + 16 * c];
      for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) acc[r][c] += a[r] * b[c];
    }
    __syncthreads();
  }
  for (int r = 0; r < 4; r++) {
    const i64 i = i0 + ty + 16 * r;
    if (i >= M) continue;
    for (int c = 0; c < 4; c++) {
      const i64 j = j0 + tx + 16 * c;
      if (j >= N) continue;
      if (gridDim.z > 1) {
        part[(i64)blockIdx.z * M * N + i * N + j] = acc[r][c];
      } else {
        const float v = (float)alpha * acc[r][c];
        C[i * N + j] = beta == 0 ? v : v + (float)beta * C[i * N + j];
      }
    }
  }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    sgemm_nn(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, float* __restrict__ part,
             i64 M, i64 N, i64 K, i64 kc, double alpha, double beta) {
  sgemm_body<false, false>(A, B, C, part, M, N, K, kc, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    sgemm_nt(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, float* __restrict__ part,
             i64 M, i64 N, i64 K, i64 kc, double alpha, double beta) {
  sgemm_body<false, true>(A, B, C, part, M, N, K, kc, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    sgemm_tn(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, float* __restrict__ part,
             i64 M, i64 N, i64 K, i64 kc, double alpha, double beta) {
  sgemm_body<true, false>(A, B, C, part, M, N, K, kc, alpha, beta);
}

// sgemm_reduce adds the split-K slices in slice order into C.
extern "C" __global__ void __launch_bounds__(BLOCK)
    sgemm_reduce(const float* __restrict__ part, float* __restrict__ C, i64 mn, i64 splits, double alpha,
                 double beta) {
  for (i64 i = (i64)blockIdx.x * BLOCK + threadIdx.x; i < mn; i += (i64)gridDim.x * BLOCK) {
    float s = 0.f;
    for (i64 z = 0; z < splits; z++) s += part[z * mn + i];
    const float v = (float)alpha * s;
    C[i] = beta == 0 ? v : v + (float)beta * C[i];
  }
}

// ---- elementwise ----
#define FOR_EACH(i, n) for (i64 i = (i64)blockIdx.x * BLOCK + threadIdx.x; i < (n); i += (i64)gridDim.x * BLOCK)

// out = x + b broadcast over rows (nn.AddBias); out may be x.
extern "C" __global__ void __launch_bounds__(BLOCK)
    bias_add(float* out, const float* x, const float* __restrict__ b, i64 rows, i64 cols) {
  FOR_EACH(i, rows * cols) { out[i] = x[i] + b[i % cols]; }
}

// out = max(x, 0) (nn.ReLU); out may be x.
extern "C" __global__ void __launch_bounds__(BLOCK) relu(float* out, const float* x, i64 n) {
  FOR_EACH(i, n) { out[i] = fmaxf(x[i], 0.f); }
}

// dx (+)= dy where x > 0 (ReLU's backward; x its input).
extern "C" __global__ void __launch_bounds__(BLOCK)
    relu_back(float* __restrict__ dx, const float* __restrict__ dy, const float* __restrict__ x, i64 n, i64 acc) {
  FOR_EACH(i, n) {
    const float v = x[i] > 0.f ? dy[i] : 0.f;
    dx[i] = acc ? dx[i] + v : v;
  }
}

// splitmix64 is templates.Splitmix64.
__device__ __forceinline__ u64 splitmix64(u64 x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// out (+)= x·scale where element i survives (templates.DropKeep: the top 24
// bits of the hash at least thr = ⌈p·2²⁴⌉), else 0. The forward pass
// (skipZero) leaves zeros alone as nn.Dropout does; the backward pass
// runs on the gradient with the same seed.
extern "C" __global__ void __launch_bounds__(BLOCK)
    dropout(float* __restrict__ out, const float* __restrict__ x, i64 n, u64 seed, u64 thr, double scale,
            i64 skipZero, i64 acc) {
  FOR_EACH(i, n) {
    const float xv = x[i];
    float v = 0.f;
    if (!(skipZero && xv == 0.f) && (splitmix64(seed ^ (u64)i * 0xd1342543de82ef95ull) >> 40) >= thr)
      v = xv * (float)scale;
    out[i] = acc ? out[i] + v : v;
  }
}

// out = (acc ? out : 0) + alpha·x: copies, sums of gradients.
extern "C" __global__ void __launch_bounds__(BLOCK)
    axpy(float* __restrict__ out, const float* __restrict__ x, i64 n, double alpha, i64 acc) {
  FOR_EACH(i, n) {
    const float v = alpha == 1 ? x[i] : (float)alpha * x[i];
    out[i] = acc ? out[i] + v : v;
  }
}

// out = v: zeroed gradients.
extern "C" __global__ void __launch_bounds__(BLOCK) fill(float* __restrict__ out, i64 n, double v) {
  FOR_EACH(i, n) { out[i] = (float)v; }
}

// out (cols×rows) (+)= inᵀ (in rows×cols): weights for the sparse products.
extern "C" __global__ void __launch_bounds__(BLOCK)
    transpose(float* __restrict__ out, const float* __restrict__ in, i64 rows, i64 cols, i64 acc) {
  FOR_EACH(i, rows * cols) {
    const i64 r = i / cols, c = i % cols, o = c * rows + r;
    out[o] = acc ? out[o] + in[i] : in[i];
  }
}

// out = (acc ? out : 0) + (1+eps)·x (+ agg when agg is set): GIN's update
// agg + (1+eps)·x (nn.AddScaled) and its gradient for x.
extern "C" __global__ void __launch_bounds__(BLOCK)
    scale_add(float* __restrict__ out, const float* __restrict__ agg, const float* __restrict__ x,
              const float* __restrict__ eps, i64 n, i64 acc) {
  const float s = 1.f + eps[0];
  FOR_EACH(i, n) {
    // Each step rounded on its own, as the CPU's nn.AddScaled: no FMA.
    float v = __fmul_rn(s, x[i]);
    if (agg) v = __fadd_rn(agg[i], v);
    out[i] = acc ? __fadd_rn(out[i], v) : v;
  }
}

// ---- reductions ----
// blockSum returns the block's sum of v (thread 0's value is meaningful),
// in a fixed order.
__device__ __forceinline__ double blockSum(double v, double* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = BLOCK / 2; s > 0; s >>= 1) {
    if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}

// colsum_part: part[chunk][j] = Σ over the chunk's rows of x[i][j] (bias
// gradients); block x is a chunk of rows, y a slice of 256 columns.
extern "C" __global__ void __launch_bounds__(BLOCK)
    colsum_part(double* __restrict__ part, const float* __restrict__ x, i64 rows, i64 cols, i64 chunk) {
  const i64 j = (i64)blockIdx.y * BLOCK + threadIdx.x;
  if (j >= cols) return;
  const i64 r0 = (i64)blockIdx.x * chunk, r1 = min(rows, r0 + chunk);
  double s = 0;
  for (i64 i = r0; i < r1; i++) s += x[i * cols + j];
  part[(i64)blockIdx.x * cols + j] = s;
}

// colsum_final: out[j] (+)= Σ_chunks part[c][j], in chunk order.
extern "C" __global__ void __launch_bounds__(BLOCK)
    colsum_final(float* __restrict__ out, const double* __restrict__ part, i64 chunks, i64 cols, i64 acc) {
  FOR_EACH(j, cols) {
    double s = 0;
    for (i64 c = 0; c < chunks; c++) s += part[c * cols + j];
    out[j] = acc ? out[j] + (float)s : (float)s;
  }
}

// dot_part: part[block] = Σ over the block's elements of float(a·b) (GIN's
// d eps = Σ dout·x, each product rounded as nn.AddScaled's).
extern "C" __global__ void __launch_bounds__(BLOCK)
    dot_part(double* __restrict__ part, const float* __restrict__ a, const float* __restrict__ b, i64 n) {
  __shared__ double sh[BLOCK];
  double s = 0;
  FOR_EACH(i, n) { s += (double)(a[i] * b[i]); }
  s = blockSum(s, sh);
  if (threadIdx.x == 0) part[blockIdx.x] = s;
}

// reduce_parts: column w (block w) of part (nparts×width) summed in a fixed
// order, into outd[w] (double) and/or outf[w] (float, added when acc).
extern "C" __global__ void __launch_bounds__(BLOCK)
    reduce_parts(double* __restrict__ outd, float* __restrict__ outf, const double* __restrict__ part, i64 nparts,
                 i64 width, i64 acc) {
  __shared__ double sh[BLOCK];
  const i64 w = blockIdx.x;
  double s = 0;
  for (i64 p = threadIdx.x; p < nparts; p += BLOCK) s += part[p * width + w];
  s = blockSum(s, sh);
  if (threadIdx.x == 0) {
    if (outd) outd[w] = s;
    if (outf) outf[w] = acc ? outf[w] + (float)s : (float)s;
  }
}

// logSoftmaxRow is nn.LogSoftmax's row: the maximum (NaN if any), the sum
// of exp in double, lse = m + log(sum) in float. Returns lse.
__device__ __forceinline__ float lseRow(const float* __restrict__ r, i64 c) {
  float m = r[0];
  for (i64 j = 1; j < c; j++) m = (r[j] != r[j] || m != m) ? __int_as_float(0x7fc00000) : fmaxf(m, r[j]);
  double s = 0;
  for (i64 j = 0; j < c; j++) s += exp((double)(r[j] - m));
  return m + (float)log(s);
}

// xent: the cross-entropy over the nodes weighted by w (a node's count in
// the index set, 0 for the rest), nn.CrossEntropy: part[block] = Σ
// w·(−logp[label]); dlogits = its gradient for a loss scaled by invN
// (1/|idx|), as NLL's then LogSoftmax's backward compute it.
extern "C" __global__ void __launch_bounds__(BLOCK)
    xent(float* __restrict__ dlogits, double* __restrict__ part, const float* __restrict__ logits,
         const int* __restrict__ labels, const float* __restrict__ w, i64 rows, i64 c, double invN) {
  __shared__ double sh[BLOCK];
  const i64 i = (i64)blockIdx.x * BLOCK + threadIdx.x;
  double loss = 0;
  if (i < rows) {
    const float* r = logits + i * c;
    float* g = dlogits + i * c;
    const float wi = w[i];
    if (wi == 0.f) {
      for (i64 j = 0; j < c; j++) g[j] = 0.f;
    } else {
      const float lse = lseRow(r, c);
      const int lab = labels[i];
      loss = -(double)wi * (double)(r[lab] - lse);
      const float d = -(wi * (float)invN);  // NLL's gradient at the label
      for (i64 j = 0; j < c; j++) {
        const float o = r[j] - lse;
        g[j] = (j == lab ? d : 0.f) - (float)exp((double)o) * d;
      }
    }
  }
  loss = blockSum(loss, sh);
  if (threadIdx.x == 0) part[blockIdx.x] = loss;
}

// argmaxRow is learn.Argmax: the first position of the largest value; with
// a NaN, the running-best scan x > best.
__device__ __forceinline__ i64 argmaxRow(const float* __restrict__ r, i64 c) {
  float bv = r[0];
  for (i64 j = 1; j < c; j++) bv = (r[j] != r[j] || bv != bv) ? __int_as_float(0x7fc00000) : fmaxf(bv, r[j]);
  i64 best = 0;
  if (bv == bv) {
    while (r[best] != bv) best++;
    return best;
  }
  float run = r[0];
  for (i64 j = 0; j < c; j++)
    if (r[j] > run) run = r[j], best = j;
  return best;
}

// eval_part: for each of the k weightings w[m] (rows each), part[block]
// holds Σ w·[argmax = label] then Σ w·(−logp[label]): accuracies and
// losses of the splits in one pass over the logits.
extern "C" __global__ void __launch_bounds__(BLOCK)
    eval_part(double* __restrict__ part, const float* __restrict__ logits, const int* __restrict__ labels,
              const float* __restrict__ w, i64 rows, i64 c, i64 k) {
  __shared__ double sh[BLOCK];
  const i64 i = (i64)blockIdx.x * BLOCK + threadIdx.x;
  bool hit = false;
  double nll = 0;
  bool any = false;
  if (i < rows) {
    for (i64 m = 0; m < k; m++) any = any || w[m * rows + i] != 0.f;
  }
  if (any) {
    const float* r = logits + i * c;
    hit = argmaxRow(r, c) == labels[i];
    nll = -(double)(r[labels[i]] - lseRow(r, c));
  }
  for (i64 m = 0; m < k; m++) {
    const double wi = i < rows ? (double)w[m * rows + i] : 0.;
    const double a = blockSum(hit ? wi : 0., sh);
    const double l = blockSum(wi != 0 ? wi * nll : 0., sh);
    if (threadIdx.x == 0) part[blockIdx.x * 2 * k + 2 * m] = a, part[blockIdx.x * 2 * k + 2 * m + 1] = l;
  }
}

// ---- Adam ----
// adam is learn.Adam's step on a flat array of parameters, the first
// ndecay of which take L2 weight decay: moments in double, the update
// rounded to float last. The hyper-parameters and bias corrections come
// from the host (learn's constants).
extern "C" __global__ void __launch_bounds__(BLOCK)
    adam(float* __restrict__ p, const float* __restrict__ g, double* __restrict__ m, double* __restrict__ v, i64 n,
         i64 ndecay, double lr, double wd, double b1, double omb1, double b2, double omb2, double eps, double bc1,
         double bc2) {
  FOR_EACH(i, n) {
    double gi = (double)g[i];
    if (i < ndecay) gi += wd * (double)p[i];
    const double mi = b1 * m[i] + omb1 * gi;
    const double vi = b2 * v[i] + omb2 * gi * gi;
    m[i] = mi, v[i] = vi;
    p[i] -= (float)(lr * (mi / bc1) / (sqrt(vi / bc2) + eps));
  }
}
