"""bench/train/run.sh's table: ms per training epoch per dataset and
model for qgtc on the GPU and the CPU and PyG's best configuration, and
PyG's best over qgtc GPU's (the issue's target: at least 2); and the peak
GPU memory of each (a sixth column of runs.tsv, MiB, when measured)."""
import sys
from collections import defaultdict

rows = defaultdict(dict)
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) not in (5, 6):
        continue
    ds, model, system, ms, acc = f[0], f[1], f[2], float(f[3]), float(f[4])
    peak = float(f[5]) if len(f) == 6 and f[5] else None
    key = "pyg" if system.startswith("pyg") else system
    cur = rows[(ds, model)].get(key)
    if cur is None or ms < cur[0]:
        rows[(ds, model)][key] = (ms, acc, system, peak)
print("| dataset | model | qgtc GPU ms | qgtc CPU ms | PyG best ms (config) | PyG / qgtc GPU | accuracy qgtc GPU / PyG | peak MiB qgtc GPU / PyG |")
print("|---|---|---|---|---|---|---|---|")
for (ds, model), r in sorted(rows.items()):
    g, c, p = r.get("qgtc-gpu"), r.get("qgtc-cpu"), r.get("pyg")
    fmt = lambda v: f"{v[0]:.2f}" if v else "-"
    ratio = f"{p[0] / g[0]:.2f}x" if g and p and g[0] > 0 else "-"
    accs = f"{g[1]:.3f} / {p[1]:.3f}" if g and p else "-"
    mib = lambda v: f"{v[3]:.0f}" if v and v[3] is not None else "-"
    print(f"| {ds} | {model} | {fmt(g)} | {fmt(c)} | {fmt(p)} ({p[2][4:] if p else '-'}) | {ratio} | {accs} | {mib(g)} / {mib(p)} |")
