#!/usr/bin/env bash
# Compare qgtc's multilevel partitioner with gpmetis (METIS 5, Debian
# package `metis`: apt-get install -y metis) on the bundled real graphs and
# a 1M-node planted-partition graph, at K=50 and K=1500 (K=1500 only where
# N >= 15·K), ours and gpmetis back to back on the same graph file; then
# time load + partition + batch + pack on the largest real graph and on the
# 1M-node graph.
#
#   bench/partition/run.sh                 # everything
#   GRAPHS="cora citeseer" KS=50 bench/partition/run.sh
#
# Writes a markdown table to stdout and the raw JSON to $OUT/results.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/qgtc-partition-bench}
GRAPHS=${GRAPHS:-"cora citeseer amazon_computers amazon_photo coauthor_cs coauthor_physics planted1m"}
KS=${KS:-"50 1500"}
SEED=${SEED:-1}
PIPELINE=${PIPELINE:-1}
export QGTC_DATA=${QGTC_DATA:-$PWD/testdata}
mkdir -p "$OUT"
Q=$OUT/qgtc
go build -o "$Q" ./cmd/qgtc
command -v gpmetis >/dev/null || { echo "gpmetis not found: apt-get install -y metis" >&2; exit 1; }
command -v jq >/dev/null || { echo "jq not found" >&2; exit 1; }

dataset() { # name -> what --dataset takes
  if [ "$1" = planted1m ]; then
    [ -f "$OUT/planted1m.npz" ] || "$Q" data synth --model planted --nodes 1000000 --communities 1000 \
      --avg-degree 16 --mixing 0.3 --seed 1 -o "$OUT/planted1m.npz" >&2
    echo "$OUT/planted1m.npz"
  else
    echo "$1"
  fi
}

: > "$OUT/results.jsonl"
# gpmetis prints its partitioning time from clock(): CPU seconds. Ours is
# reported both as wall time and as process CPU time (all threads).
echo "| graph | N | edges | K | ours cut | ours wall s | ours CPU s | gpmetis cut | gpmetis CPU s | cut ours/gpmetis | CPU ours/gpmetis | wall ours/gpmetis | ours imbalance | gpmetis imbalance | kept (ours) | 1/K |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for name in $GRAPHS; do
  ds=$(dataset "$name")
  g=$OUT/$name.graph
  [ -f "$g" ] || "$Q" partition --dataset "$ds" --write-metis "$g" >/dev/null
  n=$(awk '!/^%/ {print $1; exit}' "$g")
  for k in $KS; do
    if [ "$n" -lt $((15 * k)) ]; then
      echo "| $name | $n | | $k | skipped: N < 15·K | | | | | | | | | | | |"
      continue
    fi
    ours=$("$Q" partition --dataset "$ds" --parts "$k" --seed "$SEED" --json)
    gp=$(gpmetis -seed="$SEED" "$g" "$k")
    gsec=$(echo "$gp" | sed -n 's/.*Partitioning:[[:space:]]*\([0-9.]*\) sec.*/\1/p')
    # gpmetis's partition, scored by our evaluator (its printed cut must agree).
    gev=$("$Q" partition --dataset "$ds" --parts "$k" --eval "$g.part.$k" --json)
    gcut=$(echo "$gp" | sed -n 's/.*Edgecut:[[:space:]]*\([0-9]*\),.*/\1/p')
    [ "$(echo "$gev" | jq .edge_cut)" = "$gcut" ] || echo "warning: gpmetis says cut $gcut, our count $(echo "$gev" | jq .edge_cut)" >&2
    echo "{\"graph\":\"$name\",\"k\":$k,\"ours\":$ours,\"gpmetis\":$gev,\"gpmetis_seconds\":$gsec}" >> "$OUT/results.jsonl"
    echo "$ours" | jq -r --argjson g "$gev" --arg gs "$gsec" --arg name "$name" \
      '"| \($name) | \(.nodes) | \(.edges) | \(.parts) | \(.edge_cut) | \(.seconds*1000|round/1000) | \(.cpu_seconds*1000|round/1000) | \($g.edge_cut) | \($gs) | \((.edge_cut/$g.edge_cut)*1000|round/1000) | \((.cpu_seconds/($gs|tonumber))*100|round/100) | \((.seconds/($gs|tonumber))*100|round/100) | \(.imbalance*1000|round/1000) | \($g.imbalance*1000|round/1000) | \(.kept_fraction*1000|round/1000) | \(.inv_k*10000|round/10000) |"'
  done
done

if [ "$PIPELINE" = 1 ]; then
  echo
  echo "| graph | K | q | load s | partition wall s | partition CPU s | batch s | pack s | unpack s | batches | mean nodes | packed bytes | dense adjacency bytes | edge-list bytes |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for spec in "coauthor_physics 50 5" "planted1m 1500 20"; do
    set -- $spec
    ds=$(dataset "$1")
    r=$("$Q" partition --dataset "$ds" --parts "$2" --batch "$3" --seed "$SEED" --json)
    echo "{\"pipeline\":$r}" >> "$OUT/results.jsonl"
    echo "$r" | jq -r --arg name "$1" '"| \($name) | \(.parts) | \(.batching.parts_per_batch) | \(.load_seconds*1000|round/1000) | \(.seconds*1000|round/1000) | \(.cpu_seconds*1000|round/1000) | \(.batching.batch_seconds*1000|round/1000) | \(.batching.pack_seconds*1000|round/1000) | \(.batching.unpack_seconds*1000|round/1000) | \(.batching.batches) | \(.batching.mean_nodes|round) | \(.batching.packed_bytes) | \(.batching.dense_adjacency_bytes) | \(.batching.edge_list_bytes) |"'
  done
fi
