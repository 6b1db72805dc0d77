#!/usr/bin/env bash
# Every crafted file of issue #17 through `qgtc data info`, `infer` and
# `train` under `ulimit -v 4000000`: exit code, wall time, peak RSS
# (/usr/bin/time -v) and the first line of stderr, as a markdown table.
# The files are subgraph's fuzz corpora (crafted-*) and the issue's
# full-size ones built from Cora (bench/trust/files.go). Run from anywhere:
#   bash bench/trust/crafted.sh > crafted.md
set -u
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/qgtc" ./cmd/qgtc
go run bench/trust/files.go crafted "$work/files"
export QGTC_CACHE="$work/cache"
timer=/usr/bin/time
[ -x "$timer" ] || { echo "crafted.sh: needs GNU time at $timer for the peak RSS" >&2; exit 1; }

echo "| file | bytes | command | exit | wall s | peak RSS MiB | stderr lines | first line of stderr |"
echo "|---|---|---|---|---|---|---|---|"
worst_wall=0 worst_rss=0 bad=0
for f in "$work"/files/*; do
	name=$(basename "$f")
	size=$(stat -c %s "$f")
	for cmd in "data info" "infer --dataset" "train --epochs 1 --dataset"; do
		(
			cd "$work/files" || exit 99
			ulimit -v 4000000
			# shellcheck disable=SC2086 # cmd is words
			exec "$timer" -v -o "$work/time" "$work/qgtc" $cmd "$name" --quiet >/dev/null 2>"$work/err"
		)
		code=$?
		wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s}' "$work/time")
		rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$work/time")
		lines=$(wc -l <"$work/err")
		first=$(head -n 1 "$work/err" | cut -c 1-150 | sed 's/|/\\|/g')
		echo "| $name | $size | ${cmd%% --*} | $code | $wall | $rss | $lines | $first |"
		worst_wall=$(awk -v a="$worst_wall" -v b="$wall" 'BEGIN {print (b > a) ? b : a}')
		worst_rss=$(awk -v a="$worst_rss" -v b="$rss" 'BEGIN {print (b > a) ? b : a}')
		if [ "$code" != 1 ] || [ "$lines" != 1 ]; then bad=$((bad + 1)); fi
	done
done
echo
echo "slowest ${worst_wall} s, largest peak RSS ${worst_rss} MiB; runs without exactly one line and exit 1: $bad"
