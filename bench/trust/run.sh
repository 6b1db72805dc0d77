#!/usr/bin/env bash
# The demonstration behind each row of bench/trust/RESULTS.md (issue #17),
# run as a user would: a fresh binary, cache and working folder. Prints
# each command, the lines of its output that make the point, and its exit
# status. About 4 minutes on 2 cores:
#   bash bench/trust/run.sh > run.txt
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$repo" || exit 1
go build -o "$work/bin/qgtc" ./cmd/qgtc || exit 1
files() { (cd "$repo" && go run bench/trust/files.go "$@"); }
export PATH="$work/bin:$PATH" QGTC_CACHE="$work/cache"
unset QGTC_DATA
cd "$work" || exit 1

# show PATTERN COMMAND: runs COMMAND (bash), prints it, the lines of its
# stdout and stderr that match PATTERN (grep -E) and its exit status.
show() {
	echo "\$ $2"
	bash -c "$2" >out.txt 2>&1
	local code=$?
	grep -E -- "$1" out.txt | cut -c 1-400
	echo "[exit $code]"
}
item() { printf '\n## item %s\n' "$1"; }

item "1: stale cached models"
show 'accuracy|training' 'qgtc infer --dataset cora --quiet'
show 'accuracy|training' 'qgtc infer --dataset cora --quiet'
# The gnn-benchmark cora.npz in folders named cora (a folder ./cora
# would be what --dataset cora names, so they live one level down).
mkdir -p gb/cora gb2/cora
cp "$repo/datasets/cora/cora.npz" gb/cora/
cp "$repo/datasets/cora/cora.npz" gb2/cora/
show 'accuracy|training' 'qgtc infer --dataset gb/cora --quiet  # gnn-benchmark cora.npz in a folder named cora'
files relabel "$work/gb/cora/cora.npz"
show 'accuracy|training' 'qgtc infer --dataset gb/cora --quiet  # its labels edited in place'
show 'accuracy|training' 'qgtc infer --dataset cora --epochs 1 --qat-epochs 0 --quiet'

item "2: corrupt cached weights"
show 'accuracy' 'QGTC_CACHE=cache2 qgtc infer --dataset cora --quiet'
files flip "$(ls "$work"/cache2/models/*-a4w4.safetensors)"
show 'warning|accuracy|training' 'QGTC_CACHE=cache2 qgtc infer --dataset cora --quiet  # high bytes of 64 weights flipped'
show 'warning|accuracy|training' 'QGTC_CACHE=cache2 qgtc infer --dataset cora --quiet'

item "3: --weights and the other flags"
cp "$(ls "$work"/cache2/models/*-a4w4.safetensors)" w44.safetensors
show . 'qgtc infer --dataset cora --bits 8 --weights w44.safetensors'
show . 'qgtc infer --dataset cora --model gin --weights w44.safetensors'
show . 'qgtc infer --dataset cora --epochs 1 --weights w44.safetensors'
show 'infer:|accuracy' 'qgtc infer --dataset cora --weights w44.safetensors --quiet'
show 'warning|accuracy' 'qgtc infer --dataset gb2/cora --weights w44.safetensors --quiet  # Planetoid model, gnn-benchmark data'

item "4: bad feature values"
files npzset datasets/cora/cora.npz "$work/nan.npz" attr_data 100 NaN
files npzset datasets/cora/cora.npz "$work/inf.npz" attr_data 7 -Inf
files npzset datasets/cora/cora.npz "$work/big.npz" attr_data 100 1e30
files npzset datasets/cora/cora.npz "$work/neg.npz" attr_data 100 -1
show . 'qgtc infer --dataset nan.npz --quiet'
show . 'qgtc train --dataset inf.npz --quiet'
show 'warning|accuracy' 'qgtc infer --dataset big.npz --quiet'
qgtc infer --dataset gb2/cora --quiet >/dev/null # train and cache both models first:
qgtc infer --dataset neg.npz --quiet >/dev/null   # the runs below measure inference alone
show 'infer:|latency|peak' 'qgtc infer --dataset gb2/cora --quiet'
show 'infer:|latency|peak' 'qgtc infer --dataset neg.npz --quiet  # one value of -1 in binary features'

item "5: a Planetoid folder without allx"
mkdir -p nox/cora
for e in x y tx ty ally graph test.index; do cp "$repo/datasets/cora/ind.cora.$e" nox/cora/; done
cp -r nox/cora nox/cora_partial
show . 'qgtc infer --dataset nox/cora --quiet'
show 'warning|accuracy' 'qgtc infer --dataset nox/cora_partial --quiet'

item "6: edge-list lines"
printf -- '-1 2\n0 1\n' >neg-first.txt
printf '0 1\n-1 2\n' >neg-second.txt
printf '+1 2\n' >plus.txt
printf '\xef\xbb\xbf0 1\n1 2\n' >bom-edge.txt
printf '\xef\xbb\xbf# nodes: 10\n0 1\n' >bom-nodes.txt
printf 'src,dst\n0,1\n1,2\n' >header.txt
printf '0 1\nsrc dst\n' >header-late.txt
for f in neg-first neg-second plus bom-edge bom-nodes header header-late; do
	show '^(nodes|edges) |qgtc' "qgtc data info $f.txt --quiet"
done

item "7: shape and label bombs, data synth"
files crafted "$work/crafted" >/dev/null
for f in crafted-attr-shape-1e9.npz cora-attr-shape-1e9.npz cora-attr-cols-396k.npz crafted-attr-cols-3e8.npz cora-label-1e6.npz crafted-mat-classes-1e6.mat; do
	show . "ulimit -v 4000000; /usr/bin/time -f '%e s, %M KB' qgtc infer --dataset crafted/$f --quiet"
done
show . "ulimit -v 4000000; qgtc data synth --scale 26 --edge-factor 16 -o big.txt"
show . "ulimit -v 4000000; qgtc data synth --scale 20 --edge-factor 16 -o g20.npz --quiet"

item "8: decompression bombs (every crafted file: crafted.sh)"
for f in bomb-1.5MB.npz bomb-lying-1.5MB.npz bomb-1MB.mat crafted-zip-bomb.npz crafted-mat-declares-1gb.mat; do
	show . "ulimit -v 4000000; ls -l crafted/$f | cut -d' ' -f5; /usr/bin/time -f '%e s, %M KB' qgtc data info crafted/$f --quiet"
done

item "9: interrupted writes"
mkdir -p syn
set -m
qgtc data synth --scale 21 -o syn/g.txt --quiet &
pid=$!
for _ in $(seq 1 600); do
	if ls -A syn | grep -q tmp && [ "$(stat -c %s syn/.g.txt.tmp* 2>/dev/null || echo 0)" -gt 0 ]; then break; fi
	sleep 0.05
done
echo "\$ qgtc data synth --scale 21 -o syn/g.txt &  # SIGINT while it writes"
echo "while writing: $(ls -A syn)"
kill -INT "$pid"
wait "$pid"
echo "[exit $?] left in syn/: '$(ls -A syn)'"
set +m
show . 'qgtc data synth --scale 14 -o s.txt --quiet && head -c 300000 s.txt >cut.txt && qgtc data info cut.txt --quiet'

item "10: outputs checked before the work"
for c in 'qgtc sweep --dataset cora --bits 4 --out /dev/null/x' 'qgtc train --dataset cora --out missing/m.safetensors' \
	'qgtc partition --dataset cora --parts 4 --out missing/p.part' 'qgtc data synth --scale 22 -o missing/g.txt'; do
	show . "/usr/bin/time -f '%e s' $c"
done

item "11: a go-installed binary outside the repository"
(cd "$repo" && GOBIN="$work/gobin" go install ./cmd/qgtc)
mkdir -p empty home
q="env HOME=$work/home QGTC_CACHE=$work/home/cache $work/gobin/qgtc"
show 'cora|accuracy|training|empty' "cd empty && $q data list | grep cora && $q infer --dataset cora --bits 4 --quiet; echo \"empty/ holds: \$(ls -A)\""
show 'go install|QGTC_DATA' "grep -n 'go install\\|QGTC_DATA=' $repo/README.md"

item "12: progress off a terminal, --quiet"
show 'qgtc:' "QGTC_DATA=$repo/testdata qgtc infer --dataset coauthor_cs --epochs 100 --qat-epochs 10 2>&1 >/dev/null | cat"
show 'partition:' "QGTC_DATA=$repo/testdata qgtc partition --dataset coauthor_physics --parts 64 2>&1 >/dev/null | head -6"
for c in 'info' 'version' 'bmm demo --n 64 --d 8' 'bench bmm --n 64 --d 8 --bits 1 --time 0s --no-fp32' 'data list' 'data info cora' \
	'data synth --scale 8 -o q.txt' 'partition --dataset cora --parts 4' 'train --dataset cora --epochs 2' 'infer --dataset cora --seed 9 --epochs 2 --qat-epochs 0' \
	'sweep --dataset cora --bits 4 --epochs 2 --qat-epochs 0 --out sw'; do
	echo "\$ qgtc $c --quiet: exit $(qgtc $c --quiet >/dev/null 2>err.txt; echo $?), $(wc -l <err.txt) lines on stderr"
done

item "13: flags validated"
for c in 'infer --dataset cora --parts -5' 'infer --dataset cora extra' 'train --dataset cora --lcc maybe' 'train --dataset cora --dropout -0.5' \
	'train --dataset cora --model gat --heads 0' 'train --dataset cora --clusters -1' 'train --dataset cora --clusters 4 --clusters-per-batch 0' \
	'train --dataset cora --norm batch' 'infer --dataset cora --norm batch' 'partition --dataset cora --parts 4 --threads -1' \
	'partition --dataset cora --parts 4 --batch -1' 'bench bmm --time -1s' 'bmm demo --bits 32' 'bmm demo --bits 21 --n 2048'; do
	show . "qgtc $c"
done
show 'A \(' 'qgtc bmm demo --bits 24 --quiet'

item "14: output polish"
show 'unavailable' 'QGTC_CUDA_DRIVER=/nonexistent/libcuda.so.1 qgtc info --quiet'
show 'latency' 'qgtc infer --dataset cora --quiet'
show 'latency' 'qgtc infer --dataset cora --sparse-input off --quiet'
show 'wrote|seeds' 'qgtc sweep --dataset cora --bits 2,4 --seeds 3 --epochs 20 --qat-epochs 2 --out sw/ --quiet'
show . "grep -o 'qgtc sweep: [^<]*' sw/sweep.svg; grep -c 'class=\"band\"' sw/sweep.svg; tail -1 sw/sweep.csv"
show 'between layers' 'qgtc infer --dataset cora --bits 32 --epochs 5 --qat-epochs 1 --quiet'
show 'ones' 'qgtc bmm demo --n 1 --d 1 --quiet'
show 'note|training' 'QGTC_CACHE=/dev/null/x qgtc infer --dataset cora --seed 5 --epochs 5 --qat-epochs 1 --quiet'
show . 'qgtc partition --dataset cora --parts 4 --out p.part --quiet >/dev/null; stat -c "%a %n" p.part; echo "temporary files: $(ls -A | grep -c tmp)"'
show . 'qgtc data info crafted/crafted-edges-binary.txt --quiet'
show . 'qgtc infer --dataset cora --feature-scale foo'
show 'split|classes|data list' 'qgtc data info gb2/cora --quiet; QGTC_DATA='"$repo"'/testdata qgtc data info proteins --quiet; echo "data list lines naming RandomSplit: $(qgtc data list | grep -c RandomSplit)"'
