"""One full-batch training epoch (forward, loss on the training nodes,
backward, Adam step) of PyG's GCN / GraphSAGE / GIN / GAT on the GPU, the
way its users run it: data already on the GPU, hidden 64, 2 layers,
dropout 0.5, Adam lr 0.01 with weight decay 5e-4 (GAT: 8 heads of 8, ELU,
dropout 0.6 on features and attention, the output layer's 8 heads
averaged, lr 0.005: qgtc train's GAT with --out-heads 8), synchronised
before the clock is read. Each configuration (edge_index; a transposed
sparse adjacency; GCN also with its normalisation cached) is timed; one
TSV line per configuration: dataset, model, system, ms/epoch, test
accuracy, peak GPU MiB over the timed epochs
(torch.cuda.max_memory_allocated)."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import pyg_data  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--model", default="gcn")
    ap.add_argument("--epochs", type=int, default=50)
    a = ap.parse_args()
    import torch
    import torch.nn.functional as F
    import torch_geometric.nn.models as M
    from torch_geometric.utils import to_torch_csr_tensor

    meta, x, ei, extra = pyg_data.load(a.data, extra=("labels",))
    dev = torch.device("cuda")
    x, ei, y = x.to(dev), ei.to(dev), extra["labels"].to(dev)
    n, c = meta["nodes"], int(y.max()) + 1
    g = torch.Generator().manual_seed(0)
    perm = torch.randperm(n, generator=g).to(dev)
    train, test = perm[: 20 * c], perm[20 * c + 30 * c:]
    adj_t = to_torch_csr_tensor(ei.flip(0), size=(n, n))  # row v: v's sources
    configs = [("edge_index", ei, {}), ("adj_t", adj_t, {})]
    if a.model == "gcn":
        configs.append(("edge_index,cached", ei, {"cached": True}))
    for label, edges, kw in configs:
        torch.manual_seed(0)
        if a.model == "gcn":
            model = M.GCN(x.size(1), 64, 2, c, dropout=0.5, **kw)
        elif a.model == "sage":
            model = M.GraphSAGE(x.size(1), 64, 2, c, dropout=0.5)
        elif a.model == "gat":
            # models.GAT gives each GATConv the feature dropout as its
            # attention dropout, and averages the heads of the last layer.
            model = M.GAT(x.size(1), 64, 2, c, dropout=0.6, heads=8, act="elu")
            print(f"{label}: {model}", file=sys.stderr)
        else:
            model = M.GIN(x.size(1), 64, 2, c, dropout=0.5, train_eps=True)
        model = model.to(dev)
        lr = 0.005 if a.model == "gat" else 0.01
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=5e-4)

        def step():
            model.train()
            opt.zero_grad()
            loss = F.cross_entropy(model(x, edges)[train], y[train])
            loss.backward()
            opt.step()
            return loss

        try:
            for _ in range(3):  # warm-up: allocator, kernels, the cache
                step()
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            times = []
            for _ in range(a.epochs):
                t0 = time.perf_counter()
                step().item()
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
            model.eval()
            with torch.inference_mode():
                acc = (model(x, edges)[test].argmax(1) == y[test]).float().mean().item()
            ms = 1000 * sum(times) / len(times)
            peak = torch.cuda.max_memory_allocated() / 2**20
            print(f"{a.name}\t{a.model}\tpyg {label}\t{ms:.4f}\t{acc:.4f}\t{peak:.1f}", flush=True)
        except Exception as e:  # one configuration failing leaves the others
            print(f"{label}: {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
