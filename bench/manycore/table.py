"""Turns bench/manycore/run.sh's results.tsv into the markdown table of
issue 19's targets. Rows of results.tsv:
  warm      GRAPH IMPL CORES MS_PER_PASS        (IMPL: new, new-batchwise, old, torch)
  oneshot   GRAPH BIN  CORES COMPUTE_MS PACK_MS TOTAL_MS SHA256
  partition GRAPH BIN  CORES SECONDS EDGE_CUT NODES EDGES
"""
import collections
import statistics
import sys

warm = collections.defaultdict(list)      # (graph, impl, cores) -> ms
oneshot = collections.defaultdict(list)   # (graph, bin, cores) -> compute ms
pack = collections.defaultdict(list)
sha = collections.defaultdict(set)        # (graph, cores) -> hashes
part = {}                                 # (graph, bin, cores) -> (s, cut)
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    try:
        if f[0] == "warm":
            warm[(f[1], f[2], int(f[3]))].append(float(f[4]))
        elif f[0] == "oneshot":
            oneshot[(f[1], f[2], int(f[3]))].append(float(f[4]))
            pack[(f[1], f[2], int(f[3]))].append(float(f[5]))
            sha[f[1]].add(f[7])
        elif f[0] == "partition":
            part[(f[1], f[2], int(f[3]))] = (float(f[4]), int(f[5]))
    except (IndexError, ValueError):
        print("unreadable row: %r" % line, file=sys.stderr)


def med(d, k):
    return statistics.median(d[k]) if d.get(k) else None


def fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


cores = sorted({k[2] for k in list(warm) + list(oneshot)})
graphs = sorted({k[0] for k in list(warm) + list(oneshot)})
out = []
out.append("## 4-bit GCN pass, ms (warm: BenchmarkQGCNSpeed; one-shot: qgtc infer compute_ms)\n")
out.append("| graph | what | " + " | ".join("%d cores" % c for c in cores) + " | 1→max |")
out.append("|---|---|" + "---|" * (len(cores) + 1))
for g in graphs:
    for impl, d, label in [("new", warm, "warm new"), ("new-batchwise", warm, "warm new, never merged"), ("old", warm, "warm old"),
                           ("new", oneshot, "one-shot new"), ("old", oneshot, "one-shot old"),
                           ("torch", warm, "torch fp32")]:
        vals = [med(d, (g, impl, c)) for c in cores]
        if all(v is None for v in vals):
            continue
        first = next((v for v in vals if v is not None), None)
        last = next((v for v in reversed(vals) if v is not None), None)
        speed = "%.2fx" % (first / last) if first and last and vals[0] is not None else "-"
        out.append("| %s | %s | %s | %s |" % (g, label, " | ".join(fmt(v) for v in vals), speed))
out.append("")
out.append("## Targets\n")
out.append("| graph | cores | warm 1→max (≥10x; Physics ≥6x) | one-shot / warm (≤1.3) | torch / qgtc at max cores (≥5) | new vs old warm |")
out.append("|---|---|---|---|---|---|")
for g in graphs:
    mc = max((c for c in cores if med(warm, (g, "new", c))), default=None)
    w1, wm = med(warm, (g, "new", 1)), med(warm, (g, "new", mc)) if mc else None
    ratios = []
    for c in cores:
        o, w = med(oneshot, (g, "new", c)), med(warm, (g, "new", c))
        if o and w:
            ratios.append("%d: %.2f" % (c, o / w))
    t = med(warm, (g, "torch", mc)) if mc else None
    old = med(warm, (g, "old", mc)) if mc else None
    out.append("| %s | %s | %s | %s | %s | %s |" % (
        g, mc, "%.2fx" % (w1 / wm) if w1 and wm else "-", ", ".join(ratios) or "-",
        "%.2fx" % (t / wm) if t and wm else "-", "%.2fx" % (old / wm) if old and wm else "-"))
out.append("")
out.append("One-shot predictions (SHA-256 of every node's class) per graph, over every binary and core count: " +
           ", ".join("%s %s" % (g, "all equal" if len(s) == 1 else "%d DIFFERENT" % len(s)) for g, s in sorted(sha.items())))
out.append("")
out.append("## Partition (qgtc partition, wall seconds and edge cut)\n")
out.append("| graph | binary | cores | seconds | edge cut |")
out.append("|---|---|---|---|---|")
for (g, b, c), (s, cut) in sorted(part.items()):
    out.append("| %s | %s | %d | %.2f | %d |" % (g, b, c, s, cut))
for b in ("new", "old"):
    ks = sorted(c for (g, bb, c) in part if g == "planted1m" and bb == b)
    if len(ks) >= 2:
        (s1, c1), (sm, cm) = part[("planted1m", b, ks[0])], part[("planted1m", b, ks[-1])]
        out.append("\nplanted1m %s: %d→%d cores %.2fx faster, edge cut %+.2f%%" % (b, ks[0], ks[-1], s1 / sm, 100 * (cm - c1) / c1))
print("\n".join(out))
