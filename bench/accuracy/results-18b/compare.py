#!/usr/bin/env python3
"""The issue-18 table of results-18b (new defaults) beside results-18 (old defaults).

python3 bench/accuracy/results-18b/compare.py  -> markdown on stdout.
Per cell and width: QAT mean ± sample std over the seeds, delta = mean(QAT) - mean(fp32)
in points, the issue-18 target, met or not; "seeds 0-2" is the same delta over the first
three seeds only (the seeds the old run used, same fp32 models), "old" the results-18 delta."""
import json, os, statistics as st

HERE = os.path.dirname(os.path.abspath(__file__))
OLD = os.path.join(HERE, "..", "results-18")
TARGET = {8: 0.3, 4: 1.0, 2: 3.0, 1: 6.0}
CELLS = [(d, m) for d in ("cora", "citeseer") for m in ("gcn", "gin", "sage")] + [("amazon_photo", "gcn"), ("amazon_computers", "gcn")]

def load(root, d, m):
    f = os.path.join(root, f"{d}-{m}", "sweep.json")
    return json.load(open(f)) if os.path.exists(f) else None

def pm(xs):
    return f"{100*st.mean(xs):.2f} ± {100*st.stdev(xs):.2f}" if len(xs) > 1 else f"{100*xs[0]:.2f}"

def wall(root, d, m):
    f = os.path.join(root, f"{d}-{m}", "table.txt")
    if not os.path.exists(f):
        return None
    for line in open(f):
        if "Elapsed" in line:
            return line.split(")")[-1].split(": ", 1)[-1].strip()
        if line.startswith("real"):
            return line.split()[1]
    return None

for d in sorted({d for d, _ in CELLS}, key=[c[0] for c in CELLS].index):
    print(f"\n#### {d}\n")
    print("| model | seeds | fp32 % | bits | QAT % | PTQ % | delta | target | met | seeds below target | delta, seeds 0-2 | old fp32 % | old QAT % | old delta | old met |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for dd, m in CELLS:
        if dd != d:
            continue
        new, old = load(HERE, d, m), load(OLD, d, m)
        if new is None:
            continue
        fp = new["rows"][0]["accuracies"]
        ofp = {r["bits"]: r for r in old["rows"]} if old else {}
        for r in new["rows"][1:]:
            b, q = r["bits"], r["accuracies"]
            delta = 100 * (st.mean(q) - st.mean(fp))
            ok = delta >= -TARGET[b]
            below = sum(100 * (a - f) < -TARGET[b] for a, f in zip(q, fp))
            d3 = 100 * (st.mean(q[:3]) - st.mean(fp[:3])) if len(q) >= 3 else None
            ofs = oq = od = om = "-"
            if old and b in ofp:
                ov = 100 * (ofp[b]["accuracy"] - ofp[0]["accuracy"])
                od, om = f"{ov:+.2f}", ("yes" if ov >= -TARGET[b] else "**no**")
                ofs, oq = pm(ofp[0]["accuracies"]), pm(ofp[b]["accuracies"])
            print(f"| {m} | {len(q)} | {pm(fp)} | {b} | {pm(q)} | {100*r['ptq_accuracy']:.2f} | {delta:+.2f} | ≥ {-TARGET[b]:+.1f} | "
                  f"{'yes' if ok else '**no**'} | {below} of {len(q)} | {'' if d3 is None else f'{d3:+.2f}'} | {ofs} | {oq} | {od} | {om} |")
    print()
    for dd, m in CELLS:
        if dd == d and load(HERE, d, m):
            ow = wall(OLD, d, m)
            print(f"- {d} {m}: wall {wall(HERE, d, m)}" + (f" (old run: {ow})" if ow else ""))
