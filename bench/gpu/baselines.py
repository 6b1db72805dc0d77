#!/usr/bin/env python3
"""Library baselines for qgtc's GPU bit-matmul benchmarks, on the same shapes
as tcu's Go benchmarks (BenchmarkAggregation, BenchmarkLarge,
BenchmarkBlockDiag): cuBLAS fp16 (torch.matmul), cuBLAS int8 (torch._int_mm)
and cuSPARSE fp32 (torch.sparse.mm on CSR). Timing: CUDA events around
`inner` back-to-back calls, after warm-up, median of `repeats`, as
tcu.Kernel.Bench does. Logical ops = 2*M*K*N.

  python3 bench/gpu/baselines.py --json out.json [--qgtc gobench.txt]

With --qgtc, the Go benchmark output is merged into one side-by-side table.
"""
import argparse
import json
import re
import statistics
import sys

import torch

WGMMA_LIMIT = 15.5e15  # measured wgmma b1 bit-ops/s (shared/GPU.md)


def timeit(fn, repeats=15, inner=20, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(repeats):
        s.record()
        for _ in range(inner):
            fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / inner * 1e3)  # us
    return statistics.median(ts)


def rand_bits(n, m, dev):
    return torch.randint(0, 2, (n, m), device=dev, dtype=torch.int8)


def block_diag(n, bs, dev):
    a = torch.zeros(n, n, device=dev, dtype=torch.int8)
    for q in range(n // bs):
        a[q * bs:(q + 1) * bs, q * bs:(q + 1) * bs] = rand_bits(bs, bs, dev)
    return a


def run_dense(a8, d, dev, with_sparse=True, inner=20, repeats=15):
    """a8: int8 0/1 adjacency (M×K). Returns us per library."""
    n = a8.shape[1]
    x8 = torch.randint(0, 16, (n, d), device=dev, dtype=torch.int8)
    a16, x16 = a8.half(), x8.half()
    out = {}
    out["fp16"] = timeit(lambda: torch.matmul(a16, x16), repeats, inner)
    out["int8"] = timeit(lambda: torch._int_mm(a8, x8), repeats, inner)
    if with_sparse:
        acsr = a8.float().to_sparse_csr()
        x32 = x8.float()
        out["cusparse"] = timeit(lambda: torch.sparse.mm(acsr, x32), repeats, inner)
        del acsr
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--qgtc", default="", help="go test -bench output of ./tcu to merge")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    dev = "cuda"
    torch.manual_seed(0)
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    rows = []  # dicts: bench, key, M, K, N, ops, us per lib
    for n in [1024, 2048, 4096]:
        a8 = rand_bits(n, n, dev)
        for d in [16, 32, 64]:
            r = run_dense(a8, d, dev)
            rows.append(dict(bench="Aggregation", key=f"N={n}/D={d}", M=n, K=n, N=d, **r))
            print(rows[-1], flush=True)
    n, d = 16384, 256
    a8 = rand_bits(n, n, dev)
    r = run_dense(a8, d, dev, inner=5, repeats=9)
    rows.append(dict(bench="Large", key=f"N={n}/D={d}", M=n, K=n, N=d, **r))
    print(rows[-1], flush=True)
    del a8
    for n, bs, d in [(4096, 256, 64), (16384, 512, 64), (16384, 1024, 256)]:
        a8 = block_diag(n, bs, dev)
        r = run_dense(a8, d, dev)
        # batched: N/bs independent bs×bs products, one cuBLAS batched call
        q = n // bs
        ab = torch.randint(0, 2, (q, bs, bs), device=dev, dtype=torch.float16)
        xb = torch.randint(0, 16, (q, bs, d), device=dev, dtype=torch.float16)
        r["fp16_batched"] = timeit(lambda: torch.bmm(ab, xb))
        rows.append(dict(bench="BlockDiag", key=f"N={n}/bs={bs}/D={d}", M=n, K=n, N=d, bs=bs, **r))
        print(rows[-1], flush=True)
        del a8, ab, xb
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.qgtc:
        merge(rows, args.qgtc)


BENCH_RE = re.compile(r"^Benchmark(\w+)/(\S+?)(?:-\d+)?\s+\d+\s+(.*)$")


def parse_go(path):
    res = {}
    for line in open(path):
        m = BENCH_RE.match(line.strip())
        if not m:
            continue
        name, rest = m.group(1), m.group(2)
        metrics = {}
        toks = m.group(3).split()
        for i in range(0, len(toks) - 1, 2):
            try:
                metrics[toks[i + 1]] = float(toks[i])
            except ValueError:
                pass
        res[(name, rest)] = metrics
    return res


def merge(rows, path):
    go = parse_go(path)
    print("\n## qgtc (tcu) vs cuBLAS fp16 / cuBLAS int8 / cuSPARSE fp32; T = 10^12 logical ops/s (2MKN/t)")
    print("| shape | s | impl | qgtc us | qgtc T | P bit-ops/s | % of 15.5P | fp16 us | fp16 T | int8 us | int8 T | csr us | csr T | x fp16 | x int8 |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ops = 2.0 * r["M"] * r["K"] * r["N"]
        T = lambda us: ops / (us * 1e-6) / 1e12
        for (name, rest), m in sorted(go.items(), key=lambda kv: kv[0]):
            if name != r["bench"]:
                continue
            kv = dict(p.split("=", 1) for p in rest.split("/"))
            key = "/".join(f"{k}={kv[k]}" for k in (["N", "bs", "D"] if "bs" in kv else ["N", "D"]))
            if key != r["key"]:
                continue
            if "us/launch" not in m:
                continue
            us = m["us/launch"]
            mode = kv.get("mode", "")
            base16 = r["fp16_batched"] if mode == "batched" else r["fp16"]
            label = f"{r['key']}" + (f" {mode}" if mode else "")
            # MulBit rows (out=b<bits> packed by rows, c<bits> by columns)
            # beside the int32 ones.
            impl = kv["impl"] + (f" {kv['out']}" if "out" in kv else "")
            qT = m.get("Tops/s", 0.0)
            print(f"| {label} | {kv['s']} | {impl} | {us:.2f} | {qT:.1f} | {m.get('Pbitops/s', 0):.3f} | "
                  f"{m.get('%limit', 0):.1f} | {base16:.2f} | {T(base16) if mode != 'batched' else qT * us / base16:.1f} | "
                  f"{r['int8']:.2f} | {T(r['int8']):.1f} | {r.get('cusparse', 0):.2f} | "
                  f"{T(r['cusparse']) if r.get('cusparse') else 0:.1f} | {base16 / us:.2f} | {r['int8'] / us:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
