#!/usr/bin/env python3
"""PyG's fp32 accuracy on qgtc's own splits (issue 18, item 2): is the tuned
anchor reachable on these splits with PyG's models?

  pyg_anchor.py DIR --seed S [--models gcn,sage] [--scales rows,raw]

DIR is what bench/interop/export --seed S wrote (the 20/30-per-class split
qgtc's sweep uses at seed S). For each model and feature scale, PyG trains
torch_geometric.nn.models.GCN / GraphSAGE (2 layers, hidden 64, dropout
0.5, Adam lr 0.01, weight decay 5e-4) for up to 1000 epochs with early
stopping on validation accuracy (patience 100), and prints one JSON line:
the best-validation epoch's test accuracy. "rows" is the export's features
(rows summing to one), "raw" the bag of words they came from (x > 0).
"""
import argparse
import copy
import json
import os
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--models", default="gcn,sage")
    p.add_argument("--scales", default="rows,raw")
    p.add_argument("--epochs", type=int, default=1000)
    p.add_argument("--patience", type=int, default=100)
    a = p.parse_args()
    import torch
    from torch_geometric.nn.models import GCN, GraphSAGE
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import pyg_data
    meta, x, ei, ex = pyg_data.load(a.dir, ("labels", "train", "val", "test"))
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    y, tr, va, te = (ex[k].to(dev) for k in ("labels", "train", "val", "test"))
    ei = ei.to(dev)
    classes = int(y.max()) + 1
    for scale in a.scales.split(","):
        xs = (x > 0).float() if scale == "raw" else x
        xs = xs.to(dev)
        for m in a.models.split(","):
            torch.manual_seed(a.seed)
            if m == "gcn":
                model = GCN(xs.shape[1], 64, 2, out_channels=classes, dropout=0.5)
            else:
                model = GraphSAGE(xs.shape[1], 64, 2, out_channels=classes, dropout=0.5)
            model = model.to(dev)
            opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
            best, best_state, since, epochs = -1.0, None, 0, 0
            for ep in range(a.epochs):
                model.train()
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(xs, ei)[tr], y[tr])
                loss.backward()
                opt.step()
                model.eval()
                with torch.no_grad():
                    pred = model(xs, ei).argmax(1)
                acc = (pred[va] == y[va]).float().mean().item()
                epochs = ep + 1
                if acc > best:
                    best, best_state, since = acc, copy.deepcopy(model.state_dict()), 0
                else:
                    since += 1
                    if since >= a.patience:
                        break
            model.load_state_dict(best_state)
            model.eval()
            with torch.no_grad():
                pred = model(xs, ei).argmax(1)
            test = (pred[te] == y[te]).float().mean().item()
            print(json.dumps({"dataset": meta.get("name", os.path.basename(a.dir)), "model": m, "scale": scale,
                              "seed": a.seed, "val": round(100 * best, 2), "test": round(100 * test, 2),
                              "epochs": epochs}), flush=True)


if __name__ == "__main__":
    main()
