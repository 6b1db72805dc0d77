#!/usr/bin/env python3
"""Tables of bench/e2e's speed step: OUT/runs.jsonl (one qgtc infer --json
per line, with its graph and variant) and OUT/pyg-*.json (bench/e2e/pyg.py).

  python3 bench/e2e/table.py OUT
"""
import collections
import glob
import json
import sys


def load(out):
    runs = [json.loads(l) for l in open(f"{out}/runs.jsonl") if l.strip()]
    pyg = {}
    for f in glob.glob(f"{out}/pyg-*.json"):
        r = json.load(open(f))
        for x in r["results"]:
            pyg.setdefault((r["dataset"], x["model"]), []).append(x)
    return runs, pyg


def best(xs, inputs):
    xs = [x for x in xs if x["inputs"] == inputs]
    if not xs:
        return None
    x = min(xs, key=lambda x: x["ms_median"])
    return x["ms_median"], f'{x["graph"]} {x["precision"]}'


def fmt(v):
    return "-" if v is None else f"{v:.3f}"


def main(out):
    runs, pyg = load(out)
    by = collections.defaultdict(dict)
    for r in runs:
        by[(r["graph"], r["model"], r["bits"])][r["variant"]] = r
    # Every variant of a run predicts the same, bit for bit.
    for k, vs in sorted(by.items()):
        shas = {v["predictions_sha256"] for v in vs.values()}
        if len(shas) != 1:
            print(f"**predictions differ** for {k}: " + ", ".join(f'{n} {v["predictions_sha256"][:8]}' for n, v in vs.items()))

    print("## 4 bits: ms per pass (median of the passes after the first) and ratios\n")
    print("| graph | model | qgtc GPU resident (replayed) | op by op | cold | qgtc CPU best | PyG best resident | PyG best cold | PyG/qgtc resident | PyG/qgtc cold | CPU/GPU | same predictions |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (g, m, b), vs in sorted(by.items()):
        if b != 4:
            continue
        res = vs.get("gpu resident", {}).get("pass_median_ms")
        obo = vs.get("gpu resident op by op", {}).get("pass_median_ms")
        cold = vs.get("gpu cold", {}).get("pass_median_ms")
        cpus = [v["pass_median_ms"] for n, v in vs.items() if n.startswith("cpu")]
        cpu = min(cpus) if cpus else None
        pr, pc = best(pyg.get((g, m), []), "resident"), best(pyg.get((g, m), []), "cold")
        ratio = lambda a, b: "-" if a is None or not b else f"{a / b:.1f}x"
        same = len({v["predictions_sha256"] for v in vs.values()}) == 1
        print(f"| {g} | {m} | {fmt(res)} | {fmt(obo)} | {fmt(cold)} | {fmt(cpu)} | "
              f"{fmt(pr and pr[0])} ({pr and pr[1]}) | {fmt(pc and pc[0])} ({pc and pc[1]}) | "
              f"{ratio(pr and pr[0], res)} | {ratio(pc and pc[0], cold)} | {ratio(cpu, res)} | {'yes' if same else 'NO'} |")

    print("\n## Where a pass goes (GPU; medians of the passes after the first)\n")
    print("| graph | model | bits | variant | pass ms | upload | device | download | host (rest) | launches | kernels | up bytes | merged | device peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (g, m, b), vs in sorted(by.items()):
        for n, v in sorted(vs.items()):
            if not n.startswith("gpu") or (b != 4 and n != "gpu resident"):
                continue
            p = v.get("pass_median_ms", 0)
            parts = [v.get(k, 0) for k in ("pass_upload_ms", "pass_device_ms", "pass_download_ms")]
            print(f"| {g} | {m} | {b} | {n} | {p:.3f} | {parts[0]:.3f} | {parts[1]:.3f} | {parts[2]:.3f} | {p - sum(parts):.3f} | "
                  f"{v.get('pass_launches', 0)} | {v.get('pass_ops', 0)} | {v.get('pass_h2d_bytes', 0)} | {v.get('merged')} | "
                  f"{v.get('device_peak_bytes', 0) / 2**20:.1f} |")

    print("\n## Widths: GPU ms per pass, resident (replayed) / cold\n")
    keys = sorted({(g, m) for (g, m, b) in by})
    bits = sorted({b for (_, _, b) in by})
    print("| graph | model | " + " | ".join(f"{b} bits" for b in bits) + " |")
    print("|---|---|" + "---|" * len(bits))
    for g, m in keys:
        cells = []
        for b in bits:
            vs = by.get((g, m, b), {})
            r, c = vs.get("gpu resident", {}).get("pass_median_ms"), vs.get("gpu cold", {}).get("pass_median_ms")
            cells.append("-" if r is None and c is None else f"{fmt(r)} / {fmt(c)}")
        print(f"| {g} | {m} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1])
