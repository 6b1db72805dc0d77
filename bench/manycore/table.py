"""Turns bench/manycore/run.sh's results.tsv into the markdown tables of
issue 19's targets. Rows of results.tsv:
  warm      GRAPH IMPL CORES MS_PER_PASS        (IMPL: new, new-batchwise, old, old-batchwise)
  oneshot   GRAPH BIN  CORES COMPUTE_MS PACK_MS TOTAL_MS SHA256 [PASS_MEDIAN_MS MERGED [SETUP_MS]]
  torch     GRAPH THREADS MS_PER_PASS SPARSE_MS PYG_MS THREADS_USED VERSION
  partition GRAPH BIN  CORES SECONDS EDGE_CUT NODES EDGES
"""
import collections
import statistics
import sys

warm = collections.defaultdict(list)      # (graph, impl, cores) -> ms
oneshot = collections.defaultdict(list)   # (graph, bin, cores) -> first pass compute ms
later = collections.defaultdict(list)     # (graph, bin, cores) -> median of the later passes, same process
merged = {}                               # (graph, bin, cores) -> "True"/"False"
setup = collections.defaultdict(list)     # (graph, bin, cores) -> setup_ms (Plan.Prepare, before the first pass)
sha = collections.defaultdict(set)        # graph -> hashes
torch = {}                                # graph -> (threads, ms, sparse, pyg)
part = collections.defaultdict(list)      # (graph, bin, cores) -> [(s, cut)]


def num(x):
    try:
        return float(x)
    except ValueError:
        return None


for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    try:
        if f[0] == "warm":
            warm[(f[1], f[2], int(f[3]))].append(float(f[4]))
        elif f[0] == "oneshot":
            k = (f[1], f[2], int(f[3]))
            oneshot[k].append(float(f[4]))
            sha[f[1]].add(f[7])
            if len(f) > 8 and num(f[8]) is not None:
                later[k].append(float(f[8]))
            if len(f) > 9:
                merged[k] = f[9]
            if len(f) > 10 and num(f[10]) is not None:
                setup[k].append(float(f[10]))
        elif f[0] == "torch":
            torch[f[1]] = (int(f[2]), num(f[3]), num(f[4]), num(f[5]))
        elif f[0] == "partition":
            part[(f[1], f[2], int(f[3]))].append((float(f[4]), int(f[5])))
    except (IndexError, ValueError):
        print("unreadable row: %r" % line, file=sys.stderr)


def med(d, k):
    return statistics.median(d[k]) if d.get(k) else None


def fmt(x, spec="%.2f"):
    return "-" if x is None else spec % x


cores = sorted({k[2] for k in list(warm) + list(oneshot)})
graphs = sorted({k[0] for k in list(warm) + list(oneshot)})
out = ["## 4-bit GCN pass, ms (warm: BenchmarkQGCNSpeed; one-shot: qgtc infer, first pass compute_ms; "
       "later passes: the median of the same process's passes 2..P)\n"]
out.append("| graph | what | " + " | ".join("%d cores" % c for c in cores) + " | 1→max |")
out.append("|---|---|" + "---|" * (len(cores) + 1))
for g in graphs:
    for impl, d, label in [("new", warm, "warm, as the plan picks"), ("new-batchwise", warm, "warm, never merged"),
                           ("old", warm, "warm old"),
                           ("new", oneshot, "one-shot first pass"), ("new", later, "one-shot later passes"),
                           ("new", setup, "one-shot setup before the first pass (setup_ms)"),
                           ("old", oneshot, "one-shot old")]:
        vals = [med(d, (g, impl, c)) for c in cores]
        if all(v is None for v in vals):
            continue
        li = max(i for i, v in enumerate(vals) if v is not None)
        speed = "%.2fx" % (vals[0] / vals[li]) if li > 0 and vals[0] else "-"
        out.append("| %s | %s | %s | %s |" % (g, label, " | ".join(fmt(v) for v in vals), speed))
out.append("")
out.append("## Targets\n")
out.append("| graph | max cores | warm 1→max (≥10x; Physics ≥6x) | one-shot / warm benchmark (≤1.3) "
           "| one-shot / later passes (≤1.3) | torch fp32 / qgtc warm at max cores (≥5) |")
out.append("|---|---|---|---|---|---|")
for g in graphs:
    mc = max((c for c in cores if med(warm, (g, "new", c))), default=None)
    w1, wm = med(warm, (g, "new", 1)), med(warm, (g, "new", mc)) if mc else None
    r1, r2 = [], []
    for c in cores:
        o, w, lp = med(oneshot, (g, "new", c)), med(warm, (g, "new", c)), med(later, (g, "new", c))
        if o and w:
            r1.append("%d: %.2f" % (c, o / w))
        if o and lp:
            r2.append("%d: %.2f" % (c, o / lp))
    t = torch.get(g)
    tr = "-"
    if t and t[1] and wm:
        tr = "%.2fx (torch %s threads %.1f ms: sparse %s, pyg %s)" % (t[1] / wm, t[0], t[1], fmt(t[2], "%.1f"), fmt(t[3], "%.1f"))
    out.append("| %s | %s | %s | %s | %s | %s |" % (
        g, mc, "%.2fx" % (w1 / wm) if w1 and wm else "-", ", ".join(r1) or "-", ", ".join(r2) or "-", tr))
out.append("")
out.append("One-shot predictions (SHA-256 of every node's class) per graph, over every binary and core count: " +
           ", ".join("%s %s" % (g, "all equal" if len(s) == 1 else "%d DIFFERENT" % len(s)) for g, s in sorted(sha.items())))
diag = [(k, v) for k, v in sorted(oneshot.items()) if k[1] not in ("new", "old")]
if diag:
    out.append("\n## One-shot variants (where a cold pass loses)\n")
    out.append("| graph | variant | cores | first pass ms | later passes ms | ratio | merged |")
    out.append("|---|---|---|---|---|---|---|")
    for k in [k for k, _ in diag] + [k for k in sorted(oneshot) if k[1] == "new" and k[0] == "physics"]:
        o, lp = med(oneshot, k), med(later, k)
        out.append("| %s | %s | %d | %s | %s | %s | %s |" % (k[0], k[1], k[2], fmt(o), fmt(lp),
                                                          "%.2f" % (o / lp) if o and lp else "-", merged.get(k, "-")))
out.append("")
out.append("## Partition (qgtc partition, wall seconds and edge cut)\n")
out.append("| graph | binary | cores | seconds | edge cut | speed-up over 1 core | cut vs 1 core |")
out.append("|---|---|---|---|---|---|---|")
for (g, b, c), runs in sorted(part.items()):
    s = statistics.median(r[0] for r in runs)
    cut = runs[0][1]
    base = part.get((g, b, 1))
    sp = cv = "-"
    if base:
        s1, c1 = statistics.median(r[0] for r in base), base[0][1]
        sp = "%.2fx" % (s1 / s)
        cv = "%+.3f%%" % (100 * (cut - c1) / c1) if c1 else "-"
    out.append("| %s | %s | %d | %.2f | %d | %s | %s |" % (g, b, c, s, cut, sp, cv))
print("\n".join(out))
