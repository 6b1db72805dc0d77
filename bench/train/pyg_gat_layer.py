"""One GAT layer on the GPU, forward and backward, PyG's GATConv(64, 8,
heads=8, dropout=0.6) with self-loops on a random graph of 2^18 nodes and
16 in-edges each: the shapes of tcu's BenchmarkFPGATLayer. Prints ms per
pass and the peak GPU memory (torch.cuda.max_memory_allocated, MiB) of
the inputs, the layer and one pass, as one TSV line: system, ms, MiB."""
import sys
import time


def main():
    import torch
    from torch_geometric.nn import GATConv

    n, deg, fin, heads, hd = 1 << 18, 16, 64, 8, 8
    dev = torch.device("cuda")
    torch.manual_seed(0)
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    src = torch.randint(0, n, (n * deg,), device=dev)
    dst = torch.arange(n, device=dev).repeat_interleave(deg)
    ei = torch.stack([src, dst])
    x = torch.randn(n, fin, device=dev, requires_grad=True)
    conv = GATConv(fin, hd, heads=heads, dropout=0.6).to(dev).train()
    dout = torch.randn(n, heads * hd, device=dev)

    def step():
        x.grad = None
        conv.zero_grad(set_to_none=True)
        conv(x, ei).backward(dout)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    t0 = time.perf_counter()
    for _ in range(reps):
        step()
    torch.cuda.synchronize()
    ms = 1000 * (time.perf_counter() - t0) / reps
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20
    print(f"pyg GATConv\t{ms:.4f}\t{peak:.1f}", flush=True)


if __name__ == "__main__":
    main()
