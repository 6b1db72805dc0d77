#!/usr/bin/env python3
"""PyG's side of bench/e2e: inference passes of torch_geometric's GCN, GIN
and GraphSAGE (2 layers, hidden 64) over a graph that bench/e2e/export
wrote with the partition qgtc infer uses, timed as PyG users run them:
torch.inference_mode(), a synchronize before each clock read, the median
of the passes after warm-up. Each pass ends with the predicted class of
every node on the host, as a qgtc pass does.

Configurations: batched (one forward per part, on the part's induced
subgraph: qgtc's batches) and full graph; fp32 and fp16 autocast; resident
(inputs already on the GPU) and cold (inputs copied from pinned host
memory every pass).

  python3 bench/e2e/pyg.py DIR --models gcn,gin,sage --reps 20 --json out.json
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch_geometric
from torch_geometric.nn.models import GCN, GIN, GraphSAGE
from torch_geometric.utils import subgraph

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyg_data  # noqa: E402 (bench/pyg_data.py)

MODELS = {"gcn": GCN, "gin": GIN, "sage": GraphSAGE}


def load(d):
    meta, x, ei, ex = pyg_data.load(d, ("parts",))
    return meta, x, ei, ex["parts"]


def batches(x, ei, parts, k):
    # On the device: a 40M-edge graph's 40 induced subgraphs take minutes on
    # the host (each call scans every edge), under a second here.
    out = []
    for p in range(k):
        nodes = (parts == p).nonzero().flatten()
        if nodes.numel() == 0:
            continue
        sub, _ = subgraph(nodes, ei, relabel_nodes=True, num_nodes=x.shape[0])
        out.append((nodes, x[nodes].contiguous(), sub.contiguous()))
    return out


def timed(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--models", default="gcn,gin,sage")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    dev = torch.device("cuda")
    meta, x, ei, parts = load(args.dir)
    xg, eig = x.to(dev), ei.to(dev)
    bg = batches(xg, eig, parts.to(dev), meta["parts"])
    xp, eip = x.pin_memory(), ei.pin_memory()
    bp = [tuple(t.cpu().pin_memory() for t in b) for b in bg]
    n = meta["nodes"]
    results = []
    for name in args.models.split(","):
        torch.manual_seed(0)
        model = MODELS[name](meta["features"], args.hidden, 2, meta["classes"]).to(dev).eval()

        def full(xs, es, cold):
            if cold:
                xs, es = xs.to(dev, non_blocking=True), es.to(dev, non_blocking=True)
            return model(xs, es).argmax(-1).cpu()

        def batched(bl, cold):
            pred = torch.empty(n, dtype=torch.long, device=dev)
            for nodes, xb, eb in bl:
                if cold:
                    nodes, xb, eb = (t.to(dev, non_blocking=True) for t in (nodes, xb, eb))
                pred[nodes] = model(xb, eb).argmax(-1)
            return pred.cpu()

        for mode, fn in (("full", lambda cold: full(*( (xp, eip) if cold else (xg, eig)), cold)),
                         ("batched", lambda cold: batched(bp if cold else bg, cold))):
            for prec in ("fp32", "fp16"):
                for cold in (False, True):
                    def run():
                        with torch.inference_mode():
                            if prec == "fp16":
                                with torch.autocast("cuda", dtype=torch.float16):
                                    return fn(cold)
                            return fn(cold)
                    med, best = timed(run, args.reps)
                    r = {"model": name, "graph": mode, "precision": prec, "inputs": "cold" if cold else "resident",
                         "ms_median": round(med, 4), "ms_min": round(best, 4)}
                    results.append(r)
                    print(json.dumps(r), flush=True)
    info = {"dataset": meta["dataset"], "nodes": n, "edges": int(ei.shape[1]), "features": meta["features"],
            "parts": meta["parts"], "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
            "gpu": torch.cuda.get_device_name(0), "results": results}
    if args.json:
        json.dump(info, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
