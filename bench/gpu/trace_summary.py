#!/usr/bin/env python3
"""Summarizes an `nsys stats --report cuda_gpu_trace --format csv` table:
per kernel launch shape (name, grid, block), the median kernel duration
and the median gap from the previous kernel's end to this one's start when
the two ran back to back (gap under 5 us), in microseconds. Used to see a
launch's time without the TIMING build's instrumentation (bench/gpu/RESULTS.md)."""
import csv
import statistics
import sys


def main(path):
    rows = list(csv.DictReader(open(path)))
    if not rows:
        print("no rows")
        return
    keys = rows[0].keys()

    def col(*names):
        for n in names:
            for k in keys:
                if k.strip().lower().startswith(n.lower()):
                    return k
        return None

    start, dur, name = col("Start"), col("Duration"), col("Name")
    gx, bx = col("GrdX"), col("BlkX")
    groups, prev_end = {}, None
    for r in rows:
        try:
            t0, d = float(r[start]), float(r[dur])
        except (TypeError, ValueError):
            continue
        n = r.get(name, "")
        if "bmm_" not in n:
            prev_end = None if "memcpy" in n.lower() else prev_end
            continue
        key = (n.split("(")[0], r.get(gx, ""), r.get(bx, ""))
        g = groups.setdefault(key, {"dur": [], "gap": []})
        g["dur"].append(d / 1000)
        if prev_end is not None and 0 <= t0 - prev_end < 5000:
            g["gap"].append((t0 - prev_end) / 1000)
        prev_end = t0 + d
    for key, g in groups.items():
        gaps = g["gap"]
        print("%s grid=%s block=%s launches=%d median_us=%.2f min_us=%.2f back_to_back=%d median_gap_us=%s" % (
            key[0], key[1], key[2], len(g["dur"]), statistics.median(g["dur"]), min(g["dur"]), len(gaps),
            "%.2f" % statistics.median(gaps) if gaps else "-"))


if __name__ == "__main__":
    main(sys.argv[1])
