#!/usr/bin/env python3
"""PyG's GCN and GIN on qgtc's random 20/30-per-class splits (issue 18).

Does GIN-0 with a batch norm in its MLP (qgtc's quantized GIN, fp32) reach
GCN's accuracy on the Amazon graphs at all, with qgtc's recipe? Inputs are
the arrays of bench/e2e/export (--split-seeds N); outputs one JSON line per
model and seed plus a summary in $OUT (or --out).

  go run ./bench/e2e/export --dataset amazon_photo --split-seeds 5 --out bench/accuracy/pyg-data/amazon_photo
  python3 bench/accuracy/pyg_gin.py [--scale raw] bench/accuracy/pyg-data/amazon_photo [more dirs]

--scale: rows (each row sums to 1, qgtc's recipe on Coauthor CS) or raw (the
bag of words as stored; qgtc's sqrt scale on the other graphs is a constant
factor of it, which batch norm and Adam absorb).
"""
import argparse, json, os, sys, time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv, GINConv


def load(d, scale):
    meta = json.load(open(os.path.join(d, "meta.json")))
    a = lambda n: np.load(os.path.join(d, n + ".npy"))
    n, f = meta["nodes"], meta["features"]
    indptr, indices = a("indptr"), a("indices")
    src = np.repeat(np.arange(n), np.diff(indptr))
    edge_index = torch.tensor(np.stack([src, indices]), dtype=torch.long)
    xi, xj, xv = a("x_indptr"), a("x_indices"), a("x_values")
    x = torch.zeros(n, f)
    rows = torch.tensor(np.repeat(np.arange(n), np.diff(xi)), dtype=torch.long)
    x[rows, torch.tensor(xj, dtype=torch.long)] = torch.tensor(xv)
    if scale == "rows":
        x = x / x.sum(1, keepdim=True).clamp(min=1e-12)  # rows sum to 1, as qgtc's NormRows
    y = torch.tensor(a("labels"), dtype=torch.long)
    splits = [tuple(torch.tensor(a(f"{s}_{k}"), dtype=torch.long) for s in ("train", "val", "test"))
              for k in range(meta["split_seeds"])]
    return meta, x, edge_index, y, splits


class GCN(nn.Module):
    def __init__(s, i, h, o, p):
        super().__init__()
        s.c1, s.c2, s.p = GCNConv(i, h), GCNConv(h, o), p

    def forward(s, x, e):
        x = F.dropout(x, s.p, s.training)
        x = F.relu(s.c1(x, e))
        return s.c2(F.dropout(x, s.p, s.training), e)


class GIN(nn.Module):
    """qgtc's GIN: per layer GINConv(eps 0) of Linear, BatchNorm, ReLU,
    Linear; ReLU between layers; dropout on each layer's input."""

    def __init__(s, i, h, o, p, eps):
        super().__init__()
        mlp = lambda a, b: nn.Sequential(nn.Linear(a, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, b))
        s.c1, s.c2, s.p = GINConv(mlp(i, h), train_eps=eps), GINConv(mlp(h, o), train_eps=eps), p

    def forward(s, x, e):
        x = F.relu(s.c1(F.dropout(x, s.p, s.training), e))
        return s.c2(F.dropout(x, s.p, s.training), e)


def run(model, x, e, y, split, epochs, lr, wd, patience, dev):
    """Full-graph training with early stopping on validation accuracy: the
    best validation accuracy, the test accuracy and every node's prediction
    at that epoch, the epochs run and the seconds."""
    tr, va, te = (t.to(dev) for t in split)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=wd)
    best, best_test, best_pred, stale, t0 = -1.0, 0.0, None, 0, time.time()
    for ep in range(epochs):
        model.train()
        opt.zero_grad()
        F.cross_entropy(model(x, e)[tr], y[tr]).backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(x, e).argmax(1)
        v = (pred[va] == y[va]).float().mean().item()
        if v > best:
            best, best_test, best_pred, stale = v, (pred[te] == y[te]).float().mean().item(), pred, 0
        else:
            stale += 1
            if patience and stale >= patience:
                break
    return best, best_test, best_pred, ep + 1, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--scale", choices=["rows", "raw"], default="rows")
    args = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    os.makedirs(args.out, exist_ok=True)
    log = open(os.path.join(args.out, "pyg_gin.jsonl"), "a")
    # qgtc's recipe (pipeline/recipe.go): lr 0.01, wd 5e-4, dropout 0.5,
    # patience 50; GCN 200 epochs, GIN 300.
    variants = [("gcn", 200, lambda i, o: GCN(i, 64, o, 0.5)),
                ("gin-bn", 300, lambda i, o: GIN(i, 64, o, 0.5, False)),
                ("gin-bn-eps", 300, lambda i, o: GIN(i, 64, o, 0.5, True)),
                ("gin-bn-p100", 500, lambda i, o: GIN(i, 64, o, 0.5, False))]
    summary = []
    for d in args.dirs:
        meta, x, e, y, splits = load(d, args.scale)
        x, e, y = x.to(dev), e.to(dev), y.to(dev)
        for name, epochs, make in variants:
            accs = []
            for s in range(min(args.seeds, len(splits))):
                torch.manual_seed(s)
                model = make(x.shape[1], meta["classes"]).to(dev)
                pat = 100 if name.endswith("p100") else 50
                val, test, _, eps, sec = run(model, x, e, y, splits[s], epochs, 0.01, 5e-4, pat, dev)
                rec = dict(dataset=meta["dataset"], model=name, scale=args.scale, seed=s, val=val, test=test, epochs=eps, seconds=round(sec, 2))
                print(json.dumps(rec), file=log, flush=True)
                print(json.dumps(rec), flush=True)
                accs.append(test)
            summary.append(f"{meta['dataset']:18s} {args.scale:4s} {name:12s} test {100*np.mean(accs):.2f} ± {100*np.std(accs, ddof=1) if len(accs) > 1 else 0:.2f} ({len(accs)} seeds)")
    open(os.path.join(args.out, "summary.txt"), "a").write("\n".join(summary) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    sys.exit(main())
