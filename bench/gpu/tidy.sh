#!/usr/bin/env bash
# Session 9 (tcu tidy) validation, on the GPU host from the repository root,
# carrying build/tidy: tcu.test built from the tidied tree, old.test from the
# tree before it (CGO_ENABLED=0 go test -c). Conformance (auto, mma, ws1,
# out32; -short), TestLargeVsGeneric (five processes), the zero-tile, batch
# and uint16 tests, then BenchmarkLarge old, new, old, new. TT and BT cut
# each test and benchmark process (seconds). Logs under $OUT.
OUT=$(realpath -m "${OUT:-out}")
mkdir -p "$OUT"
cd tcu
export QGTC_CACHE_DIR=/tmp/qk PYTHONUNBUFFERED=1
T=../build/tidy/tcu.test O=../build/tidy/old.test
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/env.txt 2>&1
t0=$(date +%s)
for c in auto mma ws1 out32; do timeout ${TT:-240} $T -test.v -test.short -test.run "TestConformance/^$c\$" > /tmp/c-$c.log 2>&1 & done
for i in 0 1 2 3 4; do timeout ${TT:-240} $T -test.v -test.run "TestLargeVsGeneric/^(.{$i}|.{$((i+5))}|.{$((i+10))}|.{$((i+15))}|.{$((i+20))})\$" > /tmp/l-$i.log 2>&1 & done
timeout ${TT:-240} $T -test.v -test.run 'TestZeroTileJumping|TestBatch|TestOut16|TestDeviceResources|TestCompileError' > /tmp/z.log 2>&1 &
wait
cat /tmp/c-*.log /tmp/l-*.log /tmp/z.log > $OUT/t.log
echo "tests took $(( $(date +%s) - t0 )) s"
grep -E "^(--- FAIL|FAIL|ok|panic)|^    --- FAIL|wgmma on|timed out" $OUT/t.log | sort | uniq -c | head -30
echo "PASS lines: $(grep -c -- '--- PASS' $OUT/t.log), FAIL lines: $(grep -c -- '--- FAIL' $OUT/t.log), SKIP lines: $(grep -c -- '--- SKIP' $OUT/t.log)"
echo "TestLargeVsGeneric kernels passed: $(grep -c -- '^    --- PASS: TestLargeVsGeneric/' $OUT/t.log)"
B='Large/N=16384/D=256/s=[14]/(impl|out)=(auto|b4)$'
for b in old new old new; do
  [ $b = old ] && X=$O || X=$T
  echo "== $b" >> $OUT/bench.log
  timeout ${BT:-90} $X -test.run '^$' -test.bench "$B" -test.benchtime 1x -test.v >> $OUT/bench.log 2>&1
done
awk '/^== /{w=$2} /us\/launch/{for(i=1;i<=NF;i++) if($(i)=="us/launch") print w, $1, $(i-1)} /config:/{sub(/.*config: /,""); print "   ", w, $0}' $OUT/bench.log | sed 's/-16 / /'
echo "total $(( $(date +%s) - t0 )) s"
