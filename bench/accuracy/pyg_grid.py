#!/usr/bin/env python3
"""A small grid of PyG's GCN and GraphSAGE on qgtc's 20/30-per-class splits
(issue 18, item 2): do tuned settings reach the tuned anchors of Shchur et
al. on the Amazon graphs, and how much of the gap is the largest connected
component (their graphs) against the whole graph (ours)?

  python3 bench/accuracy/pyg_grid.py --out DIR DATA_DIR [more]

DATA_DIR is bench/e2e/export --split-seeds 5 (as pyg_gin.py reads it), raw
bag of words. Every model x hidden {64, 256} x dropout {0.5, 0.8} x weight
decay {5e-4, 5e-3}, Adam lr 0.01, up to 1000 full-graph epochs, early
stopping on validation accuracy (patience 100), seeds 0-4: the
best-validation epoch's test accuracy on every test node, and on the test
nodes of the largest connected component. One JSON line per run in
DIR/pyg_grid.jsonl, a summary per setting in DIR/grid.txt.
"""
import argparse, json, os, sys

import numpy as np
import torch
from torch_geometric.nn.models import GCN, GraphSAGE

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pyg_gin import load, run  # noqa: E402


def lcc_mask(n, e):
    """The nodes of the largest connected component (labels spread by min)."""
    src, dst = e[0].cpu().numpy(), e[1].cpu().numpy()
    lab = np.arange(n)
    while True:
        nxt = lab.copy()
        np.minimum.at(nxt, src, lab[dst])
        np.minimum.at(nxt, dst, lab[src])
        if np.array_equal(nxt, lab):
            break
        lab = nxt
    vals, counts = np.unique(lab, return_counts=True)
    return torch.tensor(lab == vals[counts.argmax()])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--out", default=".")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    os.makedirs(args.out, exist_ok=True)
    log = open(os.path.join(args.out, "pyg_grid.jsonl"), "a")
    summary = open(os.path.join(args.out, "grid.txt"), "a")
    for d in args.dirs:
        meta, x, e, y, splits = load(d, "raw")
        lcc = lcc_mask(x.shape[0], e)
        print(f"# {meta['dataset']}: largest component {int(lcc.sum())} of {x.shape[0]} nodes", file=summary, flush=True)
        x, e, y, lcc = x.to(dev), e.to(dev), y.to(dev), lcc.to(dev)
        for model_name in ("gcn", "sage"):
            for hidden in (64, 256):
                for p in (0.5, 0.8):
                    for wd in (5e-4, 5e-3):
                        alls, lccs = [], []
                        for s in range(min(args.seeds, len(splits))):
                            te = splits[s][2].to(dev)
                            torch.manual_seed(s)
                            cls = GCN if model_name == "gcn" else GraphSAGE
                            model = cls(x.shape[1], hidden, 2, out_channels=meta["classes"], dropout=p).to(dev)
                            best, t_all, pred, epochs, sec = run(model, x, e, y, splits[s], 1000, 0.01, wd, 100, dev)
                            ok = pred == y
                            tl = te[lcc[te]]
                            t_lcc = ok[tl].float().mean().item()
                            alls.append(t_all), lccs.append(t_lcc)
                            rec = dict(dataset=meta["dataset"], model=model_name, hidden=hidden, dropout=p, wd=wd, seed=s,
                                       val=round(100 * best, 2), test=round(100 * t_all, 2), test_lcc=round(100 * t_lcc, 2),
                                       epochs=epochs, seconds=round(sec, 2))
                            print(json.dumps(rec), file=log, flush=True)
                        line = (f"{meta['dataset']:18s} {model_name:5s} hidden {hidden:3d} dropout {p} wd {wd:g}: "
                                f"test {100*np.mean(alls):.2f} ± {100*np.std(alls, ddof=1):.2f}, "
                                f"largest component {100*np.mean(lccs):.2f} ± {100*np.std(lccs, ddof=1):.2f}")
                        print(line, file=summary, flush=True)
                        print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
