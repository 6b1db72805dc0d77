#!/usr/bin/env python3
"""PyTorch fp32 on the CPU, issue 19's reference for the many-core pass: a
2-layer GCN (hidden 64) over the whole graph that bench/e2e/export wrote,
at a given thread count, inference mode, each pass ending with every node's
predicted class. Two forms, both reported:

  pyg     torch_geometric's GCN (GCNConv, normalization cached after the
          first pass), dense features;
  sparse  torch.sparse.mm with the normalized adjacency (self-loops,
          D^-1/2 (A+I) D^-1/2) made once, and the features kept sparse
          (CSR) for the first product, as qgtc reads them.

  python3 bench/manycore/torch_cpu.py DIR --threads 16 --reps 5
prints one JSON line: the median ms per pass of each form after a warm-up
pass, the thread count torch used, and the versions.
"""
import argparse
import json
import warnings
import statistics
import sys
import time

import numpy as np
import torch


def load(d):
    meta = json.load(open(f"{d}/meta.json"))
    a = {k: np.load(f"{d}/{k}.npy") for k in ("indptr", "indices", "x_indptr", "x_indices", "x_values")}
    return meta, a


def timed(fn, reps):
    fn()  # warm-up: allocations, the cached normalization
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--forms", default="sparse,pyg")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    meta, a = load(args.dir)
    n, f, c = meta["nodes"], meta["features"], meta["classes"]
    res = {"dataset": meta["dataset"], "nodes": n, "features": f, "threads": torch.get_num_threads(),
           "torch": torch.__version__}
    indptr = torch.from_numpy(a["indptr"].astype(np.int64))
    indices = torch.from_numpy(a["indices"].astype(np.int64))
    xptr = torch.from_numpy(a["x_indptr"].astype(np.int64))
    xidx = torch.from_numpy(a["x_indices"].astype(np.int64))
    xval = torch.from_numpy(a["x_values"].astype(np.float32))
    w1, b1 = torch.randn(f, args.hidden) / f ** 0.5, torch.zeros(args.hidden)
    w2, b2 = torch.randn(args.hidden, c) / args.hidden ** 0.5, torch.zeros(c)
    forms = args.forms.split(",")
    with torch.inference_mode():
        if "sparse" in forms:
            rows = torch.repeat_interleave(torch.arange(n), indptr[1:] - indptr[:-1])
            loops = torch.arange(n)
            r = torch.cat([rows, loops])
            cidx = torch.cat([indices, loops])
            deg = torch.bincount(r, minlength=n).float()
            dinv = deg.pow(-0.5)
            vals = dinv[r] * dinv[cidx]
            adj = torch.sparse_coo_tensor(torch.stack([r, cidx]), vals, (n, n)).coalesce().to_sparse_csr()
            x = torch.sparse_csr_tensor(xptr, xidx, xval, (n, f))

            def sparse_pass():
                h = torch.relu(torch.sparse.mm(adj, torch.sparse.mm(x, w1)) + b1)
                return (torch.sparse.mm(adj, h @ w2) + b2).argmax(-1)

            res["sparse_ms"] = round(timed(sparse_pass, args.reps), 3)
            print(json.dumps(res), file=sys.stderr, flush=True)
        if "pyg" in forms:
            try:
                import torch_geometric
                from torch_geometric.nn import GCNConv
            except ImportError as e:
                res["pyg_error"] = str(e)
                forms = [f for f in forms if f != "pyg"]
        if "pyg" in forms:
            res["torch_geometric"] = torch_geometric.__version__
            rows = torch.repeat_interleave(torch.arange(n), indptr[1:] - indptr[:-1])
            ei = torch.stack([indices, rows])  # messages from row v's neighbours to v
            xd = torch.sparse_csr_tensor(xptr, xidx, xval, (n, f)).to_dense()
            c1, c2 = GCNConv(f, args.hidden, cached=True), GCNConv(args.hidden, c, cached=True)

            def pyg_pass():
                return c2(torch.relu(c1(xd, ei)), ei).argmax(-1)

            res["pyg_ms"] = round(timed(pyg_pass, args.reps), 3)
    res["ms_per_pass"] = min((v for k, v in res.items() if k in ("sparse_ms", "pyg_ms")), default=None)
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
