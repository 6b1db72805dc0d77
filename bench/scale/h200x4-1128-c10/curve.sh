#!/usr/bin/env bash
# call 11 (same warm host as call 10): #16 the widths curve on synth2m (GCN 1, 2, 8 bits; 4 bits in call 10)
cd "$(dirname "$0")/../.."
ls -la /tmp/synth2m.npz /tmp/synth2m.part 2>&1 | tee $OUT/steps.txt
OUT=$OUT/e2e STEPS=speed B=build/c10 DATA=build/c10data SPEED='synth2m:40' CURVE='1 2 8' MODELS=gcn CURVE_MODELS=gcn PASSES=5 \
  VARIANTS='^gpu (resident|cold)$' PYG=0 CUDA_VISIBLE_DEVICES=0 timeout 200 bash bench/e2e/run.sh > $OUT/curve.txt 2>&1
echo "rc=$?" >> $OUT/curve.txt; tail -25 $OUT/curve.txt
