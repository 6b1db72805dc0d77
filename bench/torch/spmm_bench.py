#!/usr/bin/python3
"""PyTorch CPU baseline for the qgtc sparse template benchmarks.

Reads the pull CSR written by bench/torch/export (int32: rows, nnz, indptr,
indices; row v lists the sources of the edges into v) and times, on the
same graph and widths as the Go benchmark:

  copy_u_sum   out = A @ X          torch.sparse.mm, CSR and COO (best kept)
  u_mul_e_sum  out = A_w @ X        same, with one weight per edge
  copy_u_max   out[v] = max over in-edges of X[u]   scatter_reduce(amax)
  u_dot_v      out[e] = <X[u], Y[v]> index_select + mul + sum

Each line: op f impl ns_per_op (the fastest timed run).
"""
import argparse
import time

import numpy as np
import torch


def load(path):
    raw = np.fromfile(path, dtype="<i4")
    rows, nnz = int(raw[0]), int(raw[1])
    indptr = raw[2:3 + rows].astype(np.int64)
    indices = raw[3 + rows:3 + rows + nnz].astype(np.int64)
    assert len(indices) == nnz and indptr[-1] == nnz
    return rows, nnz, torch.from_numpy(indptr), torch.from_numpy(indices)


def timeit(fn, min_time):
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < min_time and len(times) < 200):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graph", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--widths", default="16,32,64,128,256")
    ap.add_argument("--min-time", type=float, default=1.0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows, nnz, indptr, indices = load(args.graph)
    gen = torch.Generator().manual_seed(1)
    ones = torch.ones(nnz)
    w = torch.rand(nnz, generator=gen)
    dst = torch.repeat_interleave(torch.arange(rows), indptr[1:] - indptr[:-1])
    a_csr = torch.sparse_csr_tensor(indptr, indices, ones, (rows, rows))
    w_csr = torch.sparse_csr_tensor(indptr, indices, w, (rows, rows))
    coo_idx = torch.stack([dst, indices])
    a_coo = torch.sparse_coo_tensor(coo_idx, ones, (rows, rows)).coalesce()
    w_coo = torch.sparse_coo_tensor(coo_idx, w, (rows, rows)).coalesce()
    print(f"# torch {torch.__version__} threads={torch.get_num_threads()} rows={rows} nnz={nnz}")
    for f in [int(s) for s in args.widths.split(",")]:
        x = torch.randn(rows, f, generator=gen)
        y = torch.randn(rows, f, generator=gen)
        # Check the baselines agree before timing them.
        ref = torch.zeros(rows, f).index_add_(0, dst, x[indices])
        for m in (a_csr, a_coo):
            assert torch.allclose(torch.sparse.mm(m, x), ref, atol=1e-3)
        for name, m in (("csr", a_csr), ("coo", a_coo)):
            print("copy_u_sum", f, "torch-" + name, timeit(lambda: torch.sparse.mm(m, x), args.min_time), flush=True)
        for name, m in (("csr", w_csr), ("coo", w_coo)):
            print("u_mul_e_sum", f, "torch-" + name, timeit(lambda: torch.sparse.mm(m, x), args.min_time), flush=True)
        dst_f = dst.unsqueeze(1).expand(-1, f)
        amax = lambda: torch.zeros(rows, f).scatter_reduce_(0, dst_f, x.index_select(0, indices), reduce="amax", include_self=False)
        print("copy_u_max", f, "torch-scatter", timeit(amax, args.min_time), flush=True)
        sddmm = lambda: (x.index_select(0, indices) * y.index_select(0, dst)).sum(1)
        print("u_dot_v", f, "torch-gather", timeit(sddmm, args.min_time), flush=True)


if __name__ == "__main__":
    main()
