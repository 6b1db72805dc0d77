#!/usr/bin/env python3
"""Ratio table of bench/templates: qgtc's GPU templates against cuSPARSE and PyG.

Reads the TSV lines (graph op f impl us) of fpbench and baselines.py and
prints markdown: per op, one row per graph and width with the three times
and the speedups (baseline time / qgtc time), then the issue's targets:
SpMM (copy_u_sum, u_mul_e_sum) >= 1.5x cuSPARSE, u_dot_v >= 2x PyG.

An _hp op (the same sums, rows visited in the order of the graph's partition)
meets the exact op's baselines, cuSPARSE at the faster of the graph's own
order and its part order (<graph>_porder); its rows say which.
"""
import math
import sys
from collections import defaultdict

TARGETS = {"copy_u_sum": ("cusparse", 1.5), "u_mul_e_sum": ("cusparse", 1.5), "u_dot_v": ("pyg", 2.0),
           "copy_u_sum_hp": ("cusparse", 1.5), "u_mul_e_sum_hp": ("cusparse", 1.5)}


def main(paths):
    t = {}
    graphs, ops, widths = [], [], set()
    for p in paths:
        for line in open(p):
            if line.startswith("#") or not line.strip():
                continue
            g, op, f, impl, us = line.split("\t")
            t[(g, op, int(f), impl)] = float(us)
            if g not in graphs and not g.endswith("_porder"):
                graphs.append(g)
            if op not in ops:
                ops.append(op)
            widths.add(int(f))
    fmt = lambda v: "—" if v is None or math.isnan(v) else f"{v:.1f}"
    ratio = lambda base, ours: None if base is None or ours is None or math.isnan(base) or math.isnan(ours) or ours <= 0 else base / ours
    fr = lambda r: "—" if r is None else f"{r:.2f}x"
    verdict = defaultdict(list)
    for op in ops:
        note = " (ES-SpMM sample, approximate, against the exact baselines)" if op.endswith("_es") else ""
        if op.endswith("_hp"):
            note = " (rows in part order: exact, against the exact baselines in either order)"
        print(f"\n### {op}{note}\n")
        print("| graph | f | qgtc us | cuSPARSE us | PyG us | vs cuSPARSE | vs PyG |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for g in graphs:
            for f in sorted(widths):
                q = t.get((g, op, f, "qgtc"))
                # An _es op (ES-SpMM's sample, approximate) and an _hp op meet
                # the exact op's baselines.
                base = op[:-3] if op.endswith(("_es", "_hp")) else op
                c = t.get((g, base, f, "cusparse"))
                cp = t.get((g + "_porder", base, f, "cusparse"))
                cnote = fmt(c)
                if op.endswith("_hp") and cp is not None and not math.isnan(cp):
                    if c is None or math.isnan(c) or cp < c:
                        c, cnote = cp, f"{fmt(cp)} (part order; own {fmt(c)})"
                    else:
                        cnote = f"{fmt(c)} (own order; part order {fmt(cp)})"
                y = t.get((g, base, f, "pyg"))
                if q is None and c is None and y is None:
                    continue
                rc, ry = ratio(c, q), ratio(y, q)
                print(f"| {g} | {f} | {fmt(q)} | {cnote} | {fmt(y)} | {fr(rc)} | {fr(ry)} |")
                if op in TARGETS:
                    base, need = TARGETS[op]
                    r = rc if base == "cusparse" else ry
                    verdict[op].append((r, g, f, need, base))
    print("\n### Targets\n")
    print("| op | target | cases met | worst (graph, f) |")
    print("|---|---|---:|---|")
    for op, rows in verdict.items():
        base, need = TARGETS[op]
        known = [r for r in rows if r[0] is not None]
        met = sum(1 for r in known if r[0] >= need)
        worst = min(known, default=None)
        w = "—" if worst is None else f"{worst[0]:.2f}x ({worst[1]}, f={worst[2]})"
        print(f"| {op} | >= {need}x {base} | {met}/{len(rows)} | {w} |")


if __name__ == "__main__":
    main(sys.argv[1:])
