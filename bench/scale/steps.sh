# Sourced by the device calls' scripts (bench/scale/*/call.sh), from the
# repository root; they set OUT and LIMIT (seconds).
#   call_setup NAME    $R (raw) and $L (logs) under $OUT, $W=/tmp/NAME with the
#                      model and kernel caches, the host's line in $OUT/steps.txt
#   gen100 QGTC FILE   the 100M-node, 1.6B-edge, 128-feature planted graph (seed
#                      1, 2,000 parts) written by QGTC straight into the packed FILE,
#                      as step gen100 (150 s at most)
#   el                 seconds since the script began
#   unxz IN OUT        a carried xz-compressed binary, unpacked and executable
#   run NAME MAXS CMD  CMD under a timeout of MAXS, cut to what LIMIT leaves;
#                      stdout to $L/NAME.json, stderr to $L/NAME.err; its
#                      status, wall time and peak RSS appended to $OUT/steps.txt
T0=$SECONDS
gen100() {
  run gen100 150 "$1" data synth --model planted --nodes 100000000 --communities 100000 --avg-degree 16 --features 128 \
    --feature-nnz 16 --classes 10 --seed 1 --pack-out "$2" --parts 2000 --quiet
}
call_setup() {
  R=$OUT/raw; mkdir -p $R; L=$OUT/logs; mkdir -p $L; W=/tmp/$1; mkdir -p $W
  export QGTC_CACHE=$W/cache QGTC_CACHE_DIR=$W/kernels
  echo "# $(date -u +%FT%TZ) $(nvidia-smi -L | wc -l) GPUs $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores" | tee $OUT/steps.txt
}
el() { echo $((SECONDS - T0)); }
unxz() { python3 -c 'import lzma,sys; open(sys.argv[2],"wb").write(lzma.open(sys.argv[1]).read())' "$1" "$2" && chmod +x "$2"; }
run() {
  local name=$1 max=$2; shift 2
  local left=$((LIMIT - $(el)))
  if ((left < 10)); then echo "$name: skipped at $(el)s" | tee -a $OUT/steps.txt; return 99; fi
  ((max > left)) && max=$left
  local t=$SECONDS
  python3 - "$L/$name.rss" timeout -k 5 $max "$@" > $L/$name.json 2> $L/$name.err <<'PY'
import resource, subprocess, sys
rc = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(rc)
PY
  local rc=$?
  echo "$name: rc $rc, $((SECONDS - t)) s, peak RSS $(( $(tail -1 $L/$name.rss 2>/dev/null || echo 0) / 1024 )) MiB, at $(el)s" | tee -a $OUT/steps.txt
  return $rc
}
#   passes_table NAME...  the runs' infer --packed JSON reports as one
#                      markdown table, into $OUT/table.md and stdout
passes_table() {
  python3 - $L "$@" > $OUT/table.md <<'PY'
import json, os, sys
L = sys.argv[1]
print("| run | passes ms | median ms | nodes/s | workers | read/prepare/run ms summed | devices (batches, run ms, wait ms) | preds |")
print("|---|---|---|---|---|---|---|---|")
for n in sys.argv[2:]:
    try: r = json.load(open(os.path.join(L, n + ".json")))
    except Exception: print(f"| {n} | failed | | | | | | |"); continue
    med = r.get("pass_median_ms") or r.get("pass_ms") or 0
    nodes = r.get("batch_nodes", r.get("nodes", 0))
    devs = "; ".join("%s %d %.0f %.0f" % (d["device"], d["batches"], d.get("run_ms", 0), d.get("wait_ms", 0)) for d in r.get("devices") or [])
    ps = ", ".join("%.0f" % p for p in [r.get("pass_ms", 0)] + (r.get("more_pass_ms") or []))
    print(f"| {n} | {ps} | {med:.1f} | {nodes/med*1e3:,.0f} | {r.get('workers')} | {r.get('read_ms',0):.0f}/{r.get('pack_ms',0):.0f}/{r.get('compute_ms',0):.0f} | {devs} | {r['predictions_sha256'][:12]} |")
PY
  cat $OUT/table.md
}
#   resident_table NAME...  the --resident runs' later passes, each device's
#                      own median and peak memory, into $OUT/resident.md and stdout
resident_table() {
  python3 - $L "$@" > $OUT/resident.md <<'PY'
import json, os, statistics, sys
L = sys.argv[1]
print("| run | sparse input | later passes ms | median | median of passes 3.. | device: later passes, median ms | device peak GiB | host peak GiB |")
print("|---|---|---|---|---|---|---|---|")
for n in sys.argv[2:]:
    try: r = json.load(open(os.path.join(L, n + ".json")))
    except Exception: print(f"| {n} | failed | | | | | | |"); continue
    m = r.get("more_pass_ms") or []
    print(f"| {n} | {r.get('sparse_input')} | {', '.join('%.0f' % x for x in m)} | {r.get('pass_median_ms', 0):.1f} | {statistics.median(m[1:]) if len(m) > 1 else 0:.1f} | " +
          "; ".join("%s %.1f" % (d["device"], d.get("resident_median_ms", 0)) for d in r["devices"]) +
          " | " + "; ".join("%.1f" % (d.get("device_peak_bytes", 0) / 2**30) for d in r["devices"]) + f" | {r['peak_bytes']/2**30:.1f} |")
PY
  cat $OUT/resident.md
}
