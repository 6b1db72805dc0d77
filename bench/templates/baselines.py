#!/usr/bin/env python3
"""cuSPARSE and PyG baselines for qgtc's GPU templates (bench/templates/run.sh).

Reads the pull CSR that fpbench wrote for each graph (DATA/<graph>/indptr.npy,
indices.npy: row v lists the sources u of the edges u->v) and times, on the
GPU, at the same feature widths:

  copy_u_sum   cusparse: torch.sparse.mm(A_csr, x)      pyg: MessagePassing(aggr='sum')
  u_mul_e_sum  cusparse: torch.sparse.mm(W_csr, x)      pyg: message x_j * w, aggr='sum'
  u_dot_v      cusparse: torch.sparse.sampled_addmm     pyg: (x[src] * x[dst]).sum(-1)

Where fpbench wrote DATA/<graph>_porder (the graph renumbered in its
partition's order, what the _hp ops see), cuSPARSE's SpMMs are timed there
too, as graph <graph>_porder.

Timing as fpbench: CUDA events around `per` back-to-back calls, per and
samples picked from a first timing (a sample about 1 ms, a measurement
about 0.3*budget s), the median reported. Output: TSV lines graph op f impl us
(nan where the baseline failed, e.g. out of memory, with the reason on stderr).
"""
import argparse
import math
import os
import sys

import numpy as np
import torch
from torch_geometric.nn import MessagePassing


class CopyU(MessagePassing):
    def __init__(self):
        super().__init__(aggr="sum")

    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=x)

    def message(self, x_j):
        return x_j


class UMulE(MessagePassing):
    def __init__(self):
        super().__init__(aggr="sum")

    def forward(self, x, edge_index, w):
        return self.propagate(edge_index, x=x, w=w)

    def message(self, x_j, w):
        return x_j * w.view(-1, 1)


def csr(indptr, indices, values, n):
    """A CSR matrix with int32 indices (cuSPARSE's own), or int64 where
    this torch refuses int32 in torch.sparse.mm."""
    m = torch.sparse_csr_tensor(indptr.int(), indices.int(), values, (n, n))
    try:
        torch.sparse.mm(m, torch.ones(n, 1, device=values.device))
        return m
    except RuntimeError as e:
        print(f"# int32 CSR refused ({str(e).splitlines()[0]}); int64 indices", file=sys.stderr)
        return torch.sparse_csr_tensor(indptr, indices, values, (n, n))


def time_call(fn, budget):
    """Median per-call time in microseconds (fpbench's method)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def sample(per):
        start.record()
        for _ in range(per):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3 / per  # us

    fn()
    torch.cuda.synchronize()
    t1 = max(sorted(sample(1) for _ in range(3))[1], 1.0)
    per = min(max(int(1000 / t1), 1), 100)
    samples = min(max(int(budget * 0.3e6 / (t1 * per)), 5), 50)
    ts = sorted(sample(per) for _ in range(samples))
    return ts[len(ts) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--graphs", default="cora,citeseer,pubmed_partial,amazon_photo,amazon_computers,coauthor_cs,coauthor_physics,synth")
    ap.add_argument("--widths", default="16,64,128,256")
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--ops", default="copy_u_sum,u_mul_e_sum,u_dot_v", help="ops to time")
    args = ap.parse_args()
    dev = torch.device("cuda")
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name(0)}", file=sys.stderr)
    gen = torch.Generator(device=dev).manual_seed(1)
    names = []
    for name in args.graphs.split(","):
        names.append(name)
        # fpbench's part order (its _hp ops' view of the graph): cuSPARSE there too.
        if os.path.isdir(os.path.join(args.data, name + "_porder")):
            names.append(name + "_porder")
    for name in names:
        porder = name.endswith("_porder")
        d = os.path.join(args.data, name)
        if not os.path.isdir(d):
            print(f"# {name}: no data in {d}, skipped", file=sys.stderr)
            continue
        indptr = torch.from_numpy(np.load(os.path.join(d, "indptr.npy")).astype(np.int64)).to(dev)
        indices = torch.from_numpy(np.load(os.path.join(d, "indices.npy")).astype(np.int64)).to(dev)
        n, nnz = indptr.numel() - 1, indices.numel()
        dst = torch.repeat_interleave(torch.arange(n, device=dev), indptr[1:] - indptr[:-1])
        edge_index = torch.stack([indices, dst])  # source_to_target: messages x_j flow to dst
        w = torch.rand(nnz, device=dev, generator=gen)
        a, aw = csr(indptr, indices, torch.ones(nnz, device=dev), n), csr(indptr, indices, w, n)
        copy_u, u_mul_e = CopyU().to(dev), UMulE().to(dev)
        print(f"# {name}: {n} rows, {nnz} edges", file=sys.stderr)
        for f in [int(s) for s in args.widths.split(",")]:
            x = torch.randn(n, f, device=dev, generator=gen)
            xt = x.t().contiguous()
            with torch.inference_mode():
                if f == 16:  # the baselines agree before they are timed (a disagreement is logged)
                    ref = torch.zeros(n, f, device=dev).index_add_(0, dst, x[indices])
                    refw = torch.zeros(n, f, device=dev).index_add_(0, dst, x[indices] * w.view(-1, 1))
                    for what, got, want in (("cusparse copy_u", torch.sparse.mm(a, x), ref), ("pyg copy_u", copy_u(x, edge_index), ref),
                                            ("cusparse u_mul_e", torch.sparse.mm(aw, x), refw), ("pyg u_mul_e", u_mul_e(x, edge_index, w), refw)):
                        if not torch.allclose(got, want, atol=1e-4, rtol=1e-4):
                            print(f"# {name}: {what} DISAGREES with index_add_ (max diff {(got - want).abs().max().item():.3g})", file=sys.stderr)
                cases = [
                    ("copy_u_sum", "cusparse", lambda: torch.sparse.mm(a, x)),
                    ("copy_u_sum", "pyg", lambda: copy_u(x, edge_index)),
                    ("u_mul_e_sum", "cusparse", lambda: torch.sparse.mm(aw, x)),
                    ("u_mul_e_sum", "pyg", lambda: u_mul_e(x, edge_index, w)),
                    ("u_dot_v", "cusparse", lambda: torch.sparse.sampled_addmm(a, x, xt, beta=0.0)),
                    ("u_dot_v", "pyg", lambda: (x[indices] * x[dst]).sum(-1)),
                ]
                cases = [c for c in cases if c[0] in args.ops.split(",")]
                if porder:
                    cases = [c for c in cases if c[1] == "cusparse" and c[0] != "u_dot_v"]
                for op, impl, fn in cases:
                    try:
                        us = time_call(fn, args.budget)
                    except (torch.cuda.OutOfMemoryError, RuntimeError) as e:
                        print(f"# {name} {op} f={f} {impl}: {type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr)
                        torch.cuda.empty_cache()
                        us = math.nan
                    print(f"{name}\t{op}\t{f}\t{impl}\t{us:.3f}", flush=True)
            del x, xt
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
