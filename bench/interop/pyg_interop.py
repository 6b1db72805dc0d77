#!/usr/bin/env python3
"""PyG's side of bench/interop (see run.sh), on a dataset that
bench/interop/export wrote (graph, features with rows summing to 1, labels,
split).

  pyg_interop.py check
      exit 3 with one line when numpy, torch, torch_geometric or safetensors
      is missing
  pyg_interop.py train DIR --out MODELDIR [--models gcn,gin,sage]
      trains torch_geometric.nn.models.GCN / GIN / GraphSAGE (2 layers,
      hidden 64, dropout 0.5 between layers, Adam lr 0.01, weight decay 5e-4,
      200 epochs, the best validation epoch kept), saves
      MODELDIR/pyg-<model>.safetensors with safetensors.torch.save_file(
      model.state_dict()) and prints a JSON object of accuracies
  pyg_interop.py logits DIR --models NAME=FILE,...
      loads each qgtc train --out FILE into PyG with load_state_dict
      (strict), runs it on DIR's features and prints, as JSON, the largest
      absolute difference from DIR/logits-NAME.npy (qgtc's fp32 logits),
      the largest per-node relative one (a node's largest |difference| over
      its largest |PyG logit|), the largest |logit|, the fraction of nodes
      whose argmax agrees and both test accuracies. The relative figure is
      the criterion (1e-5): GIN sums its neighbours unnormalized, its
      logits reach hundreds, where one float32 step is 3e-5 to 6e-5, and
      PyG (aggregate, then the MLP) and qgtc (first linear, then
      aggregate) add in different orders
  pyg_interop.py table OUT
      the markdown table of run.sh's results under OUT
"""
import argparse
import copy
import glob
import json
import os
import sys
import time


def need():
    try:
        import numpy  # noqa: F401
        import safetensors.torch  # noqa: F401
        import torch  # noqa: F401
        import torch_geometric  # noqa: F401
    except ImportError as e:
        print(f"pyg_interop: python module {e.name} is missing (needs numpy, torch, torch_geometric, safetensors)")
        sys.exit(3)


def load(d):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import pyg_data  # bench/pyg_data.py
    meta, x, ei, ex = pyg_data.load(d, ("labels", "train", "val", "test"))
    return meta, x, ei, ex["labels"], ex["train"], ex["val"], ex["test"]


def build(kind, fin, hidden, classes, train_eps=False):
    from torch_geometric.nn.models import GCN, GIN, GraphSAGE
    if kind == "gcn":
        return GCN(fin, hidden, 2, out_channels=classes, dropout=0.5)
    if kind == "sage":
        return GraphSAGE(fin, hidden, 2, out_channels=classes, dropout=0.5)
    if kind == "gin":
        # qgtc's GIN is GIN-0 (eps 0, PyG's default train_eps=False).
        return GIN(fin, hidden, 2, out_channels=classes, dropout=0.5, train_eps=train_eps)
    raise SystemExit(f"pyg_interop: unknown model {kind}")


def acc(logits, y, idx):
    return (logits[idx].argmax(-1) == y[idx]).float().mean().item()


def train(args):
    import torch
    from safetensors.torch import save_file
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    meta, x, ei, y, tr, va, te = load(args.dir)
    x, ei, y = x.to(dev), ei.to(dev), y.to(dev)
    os.makedirs(args.out, exist_ok=True)
    res = {"dataset": meta["dataset"], "device": str(dev), "torch": torch.__version__}
    import torch_geometric
    res["torch_geometric"] = torch_geometric.__version__
    for kind in args.models.split(","):
        torch.manual_seed(args.seed)
        m = build(kind, meta["features"], args.hidden, meta["classes"]).to(dev)
        opt = torch.optim.Adam(m.parameters(), lr=0.01, weight_decay=5e-4)
        best, best_val, best_ep = None, -1.0, 0
        t0 = time.time()
        for ep in range(args.epochs):
            m.train()
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(m(x, ei)[tr], y[tr])
            loss.backward()
            opt.step()
            m.eval()
            with torch.no_grad():
                v = acc(m(x, ei), y, va)
            if v > best_val:
                best_val, best_ep, best = v, ep, copy.deepcopy(m.state_dict())
        m.load_state_dict(best)
        m.eval()
        with torch.no_grad():
            out = m(x, ei)
        path = f"{args.out}/pyg-{kind}.safetensors"
        save_file({k: v.detach().cpu().contiguous() for k, v in best.items()}, path)
        res[kind] = {"test_acc": acc(out, y, te), "val_acc": best_val, "best_epoch": best_ep,
                     "seconds": time.time() - t0, "file": path, "tensors": sorted(best.keys())}
    print(json.dumps(res, indent=1))


def logits(args):
    import numpy as np
    import torch
    from safetensors.torch import load_file
    meta, x, ei, y, tr, va, te = load(args.dir)
    res = {"dataset": meta["dataset"]}
    for spec in args.models.split(","):
        name, path = spec.split("=", 1)
        sd = load_file(path)
        kind = name.split("-")[0]
        w0 = {"gcn": "convs.0.lin.weight", "sage": "convs.0.lin_l.weight", "gin": "convs.0.nn.lins.0.weight"}[kind]
        m = build(kind, meta["features"], sd[w0].shape[0], meta["classes"], train_eps=True)
        m.load_state_dict(sd, strict=True)
        m.eval()
        with torch.no_grad():
            out = m(x, ei)
        q = torch.from_numpy(np.load(f"{args.dir}/logits-{name}.npy"))
        diff = (out - q).abs().amax(-1)
        scale = out.abs().amax(-1).clamp_min(torch.finfo(torch.float32).tiny)
        res[name] = {"max_abs_diff": diff.max().item(),
                     "max_rel_diff": (diff / scale).max().item(),
                     "max_abs_logit": out.abs().max().item(),
                     "argmax_agree": (out.argmax(-1) == q.argmax(-1)).float().mean().item(),
                     "pyg_test_acc": acc(out, y, te), "qgtc_test_acc": acc(q, y, te)}
    print(json.dumps(res, indent=1))


def table(args):
    def get(path):
        try:
            return json.load(open(path))
        except (OSError, ValueError):
            return None

    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}"
    tags = ("32", "8", "4-ptq", "4", "2-ptq", "2", "1-ptq", "1")
    cols = {"32": "32 bits", "8": "8 bits", "4-ptq": "4 PTQ", "4": "4 (QAT)", "2-ptq": "2 PTQ", "2": "2 (QAT)",
            "1-ptq": "1 PTQ", "1": "1 (QAT)"}
    runs = glob.glob(f"{args.out}/*/infer-*.json")
    tags = [t for t in tags if any(r.endswith(f"-{t}.json") for r in runs)]
    print("## PyG-trained models in qgtc infer (test accuracy %; the dataset's shipped split, else "
          "infer's random one at seed 0)\n")
    print("`--bits N` as a user runs it: PTQ then the recipe's QAT (distilled, 40 epochs, best validation "
          "epoch kept) at 4 bits and less, PTQ alone above; PTQ: `--qat-epochs 0`.\n")
    print("| dataset | model | PyG fp32 | qgtc fp32 of the same weights | " + " | ".join(cols[t] for t in tags) + " |")
    print("|---|---|---|---|" + "---|" * len(tags))
    logit_rows = []
    for d in sorted(glob.glob(f"{args.out}/*/")):
        ds = os.path.basename(d.rstrip("/"))
        tr = get(f"{d}/pyg-train.json") or {}
        for kind in ("gcn", "gin", "sage"):
            if kind not in tr:
                continue
            cells = []
            fp = None
            for tag in tags:
                r = get(f"{d}/infer-{kind}-{tag}.json")
                cells.append(pct(r and r.get("accuracy")))
                if r and fp is None:
                    fp = r.get("fp32_accuracy")
            print(f"| {ds} | {kind} | {pct(tr[kind]['test_acc'])} | {pct(fp)} | " + " | ".join(cells) + " |")
        lg = get(f"{d}/logits.json") or {}
        for name, r in lg.items():
            if isinstance(r, dict):
                rel = r.get("max_rel_diff")
                rel = "-" if rel is None else f"{rel:.1e}"
                big = r.get("max_abs_logit")
                big = "-" if big is None else f"{big:.3g}"
                logit_rows.append(f"| {ds} | {name} | {r['max_abs_diff']:.2e} | {rel} | {big} | "
                                  f"{100 * r['argmax_agree']:.2f} | {pct(r['qgtc_test_acc'])} | {pct(r['pyg_test_acc'])} |")
    print("\n## qgtc-trained fp32 models loaded in PyG (load_state_dict, strict)\n")
    print("Criterion: max per-node relative diff (a node's max |diff| / its max |PyG logit|) <= 1e-5.\n")
    print("| dataset | model | max abs logit diff | max per-node rel diff | max abs logit | argmax agree % | qgtc test acc | PyG test acc |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(logit_rows))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("check")
    t = sub.add_parser("train")
    t.add_argument("dir")
    t.add_argument("--out", required=True)
    t.add_argument("--models", default="gcn,gin,sage")
    t.add_argument("--hidden", type=int, default=64)
    t.add_argument("--epochs", type=int, default=200)
    t.add_argument("--seed", type=int, default=0)
    lg = sub.add_parser("logits")
    lg.add_argument("dir")
    lg.add_argument("--models", required=True)
    tb = sub.add_parser("table")
    tb.add_argument("out")
    args = p.parse_args()
    if args.cmd != "table":
        need()
    {"check": lambda a: None, "train": train, "logits": logits, "table": table}[args.cmd](args)


if __name__ == "__main__":
    main()
