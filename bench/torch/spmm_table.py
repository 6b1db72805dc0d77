#!/usr/bin/python3
"""Merges `go test -bench BenchmarkTemplates` output and spmm_bench.py output
into one table: per op and width the fastest single run of each
implementation (Go: its min-ns/op metric; Python: its printed minimum), and
the ratios (how many times faster qgtc is)."""
import re
import sys
from collections import defaultdict

GO = re.compile(r"^BenchmarkTemplates/graph=\S+?/op=(\S+?)/f=(\d+)/impl=(\w+)(?:-\d+)?\s.*?([\d.e+]+) min-ns/op")


def main(go_path, torch_path):
    best = defaultdict(dict)  # (op, f) -> impl -> ns

    def put(op, f, impl, ns):
        key = (op, int(f))
        best[key][impl] = min(ns, best[key].get(impl, float("inf")))

    for line in open(go_path):
        m = GO.match(line)
        if m:
            put(m.group(1), m.group(2), m.group(3), float(m.group(4)))
    for line in open(torch_path):
        if line.startswith("#") or not line.strip():
            continue
        op, f, impl, ns = line.split()
        put(op, f, impl, float(ns))
    print("# fastest run of each; naive = serial Go CSR loop (1 thread); ratios = how many times faster qgtc is")
    hdr = f"{'op':<12} {'f':>4} {'qgtc ms':>9} {'naive ms':>9} {'torch ms':>9}  {'torch impl':<13} {'vs naive':>8} {'vs torch':>8}"
    print(hdr)
    print("-" * len(hdr))
    for (op, f) in sorted(best, key=lambda k: (k[0], k[1])):
        r = best[(op, f)]
        torch = {k: v for k, v in r.items() if k.startswith("torch")}
        if "qgtc" not in r or not torch:
            continue
        timpl = min(torch, key=torch.get)
        q, n, t = r["qgtc"], r.get("naive", float("nan")), torch[timpl]
        print(f"{op:<12} {f:>4} {q/1e6:>9.3f} {n/1e6:>9.3f} {t/1e6:>9.3f}  {timpl:<13} {n/q:>7.2f}x {t/q:>7.2f}x")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
