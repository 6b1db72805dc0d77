#!/usr/bin/env bash
# Tuning run on the GPU host (device tool), from the repository root, after
# `make gpu-test`; logs under $OUT. Steps (STEPS, in order):
#   ptxas: nvcc -Xptxas -v on six wgmma variants (registers, spills, warnings, serialized wgmmas; the s=1 default with uint16 outputs)
#   test:  TestLargeVsGeneric, TestBatch, TestZeroTileJumping, conformance (auto, -short)
#   old:   build/gpu/tcu.old.test (an earlier build, if carried) on the same points, for before/after
#   tune:  BenchmarkTune (pipeline and tile sweep)
#   timing: per-block phase times of the tune=timing variants (after tune)
#   ncu:   Nsight Compute on the default large-shape kernel (NCU_BENCH picks the benchmark,
#          NCU_FLAGS adds options, e.g. --cache-control none to keep the L2 warm)
set -uo pipefail
. "$(dirname "$0")/host.sh"
STEPS=${STEPS:-"ptxas test old tune"}
for step in $STEPS; do
  t0=$(date +%s)
  case $step in
  ptxas)
    K=tcu/kernels
    for v in "-DABITS=1 -DBBITS=1 -DBN=256 -DNP=256 -DWGS=2 -DKS=4 -DSTAGES=4 -DEPI=1" "-DABITS=1 -DBBITS=4 -DBN=64 -DNP=256 -DWGS=2 -DKS=4 -DSTAGES=4" \
      "-DABITS=1 -DBBITS=1 -DBN=256 -DNP=256 -DWGS=2 -DKS=4 -DSTAGES=4 -DEPI=1 -DWS=1" "-DABITS=1 -DBBITS=4 -DBN=64 -DNP=256 -DWGS=2 -DKS=4 -DSTAGES=4 -DWS=2" \
      "-DABITS=1 -DBBITS=1 -DBN=256 -DNP=256 -DWGS=2 -DKS=4 -DSTAGES=4 -DEPI=1 -DBITREG=1 -DWS=1 -DTAIL=3 -DTAILEPI=1 -DONEPROB=1 -DL2HINT=1 -DOUT16=1" \
      "-DABITS=1 -DBBITS=4 -DBN=64 -DNP=256 -DWGS=2 -DKS=4 -DSTAGES=4 -DEPI=0 -DBITREG=1 -DWS=1 -DTAIL=2 -DONEPROB=1"; do
      echo "== $v"
      nvcc -gencode=arch=compute_90a,code=sm_90a -cubin -o /tmp/wg.cubin -Xptxas -v --fmad=false $v -DDESC_LBO=128 -DDESC_SBO=256 -I$K $K/bmm_wgmma.cu 2>&1
      cuobjdump -sass /tmp/wg.cubin | grep -c -E "BGMMA|HGMMA"
    done >"$OUT/ptxas.log" 2>&1
    grep -E "==|registers|spill|arning|rror|C75" "$OUT/ptxas.log"
    ;;
  test)
    $T -test.v -test.run "${TESTRUN:-TestLargeVsGeneric|TestBatch|TestZeroTileJumping|TestConformance/(auto|ws1)}" -test.short -test.timeout 300s >"$OUT/test.log" 2>&1
    echo "test rc=$?"
    grep -E "^(--- |ok|FAIL|PASS|panic)|^    --- FAIL|tcu:|Error" "$OUT/test.log" | head -30
    ;;
  old)
    [ -x ./build/gpu/tcu.old.test ] && timeout 200 ./build/gpu/tcu.old.test -test.run '^$' -test.bench "${OLD_BENCH:-Large|Aggregation/N=4096/D=64/s=[124]/impl=auto}" -test.benchtime 1x -test.v >"$OUT/old.log" 2>&1
    grep -E "^Benchmark.*us/launch" "$OUT/old.log" | awk '{print $1, $5, $6, $(NF-3), $(NF-2)}' | sed 's/-16 / /'
    ;;
  tune)
    timeout 300 ${TUNE_WRAP:-} $T -test.run '^$' -test.bench "${TUNE_BENCH:-Tune}" -test.benchtime 1x -test.v >"$OUT/tune.log" 2>&1
    grep -E "^Benchmark.*us/launch|config:" "$OUT/tune.log" | awk '/config/ {c=$0; sub(/.*config: /, "", c); next} {print $1, $5, $6, $(NF-3), $(NF-2), "|", c}' | sed 's/-16 / /'
    ;;
  timing)
    # Per launch (one TIMING line per block, from tune=timing variants):
    # span = last store issued - first block start, skew = last block start
    # - first, and the per-block means of first data, main loop, epilogue;
    # gap = the shortest time from one launch's last store to the next
    # launch's first block; then the second warpgroup's means (TIMEWG1
    # lines): first data, past the tail's barrier 3 (rel, from first
    # data), its last wgmma (from rel), its rows stored, and entry to that
    # end (all); and, block by block, the first warpgroup's loop-end read
    # minus the second's read past barrier 3 (early: mean, min, max; the
    # barrier should make it <= 0). Microseconds.
    awk '/^BenchmarkTune\// && !/us\/launch/ {name=$1}
      /^TIMEWG1/ {w0=$4; w1=$5; wr=$6; w2=$7; w3=$8
        if (wr>0) {k=$2 ":" c1[$2]++; rel[k]=wr; if (k in end0) early(end0[k]-wr)} else wr=w1
        wf+=w1-w0; wl+=wr-w1; wt+=w2-wr; we+=w3-w2; wa+=w3-w0; wn++}
      function early(d) {es+=d; if (en==0 || d<emn) emn=d; if (en==0 || d>emx) emx=d; en++}
      /^TIMING/ {k=$2 ":" c0[$2]++; end0[k]=$6; if (k in rel) early($6-rel[k])}
      /^TIMING/ {g=$3; t0=$4; t1=$5; t2=$6; t3=$7
        if (n==0) {mn0=t0; mx0=t0; mx3=t3; s1=0; s2=0; s3=0}
        if (t0<mn0) mn0=t0; if (t0>mx0) mx0=t0; if (t3>mx3) mx3=t3
        s1+=t1-t0; s2+=t2-t1; s3+=t3-t2; n++
        if (n==g) { if (prev>0 && mn0>prev && (gm==0 || mn0-prev<gm)) gm=mn0-prev; prev=mx3
          span+=mx3-mn0; skew+=mx0-mn0; f+=s1/g; l+=s2/g; e+=s3/g; nc++; n=0 } }
      /us\/launch/ && nc>0 {printf "%s launches=%d span=%.2f skew=%.2f first=%.2f loop=%.2f epi=%.2f gap=%.2f (%s us/launch)", name, nc, span/nc/1000, skew/nc/1000, f/nc/1000, l/nc/1000, e/nc/1000, gm/1000, $(NF-3)
        if (wn>0) printf " wg1: first=%.2f rel=%.2f tail=%.2f epi=%.2f all=%.2f", wf/wn/1000, wl/wn/1000, wt/wn/1000, we/wn/1000, wa/wn/1000
        if (en>0) printf " early=%.2f (%.2f-%.2f)", es/en/1000, emn/1000, emx/1000
        printf "\n"; nc=0; span=skew=f=l=e=gm=prev=0; wn=wf=wl=wt=we=wa=0; en=es=0; split("", c0); split("", c1); split("", rel); split("", end0)}' "$OUT/tune.log"
    ;;
  ncu)
    # NCU_BENCH: benchmarks to profile, one process each; the 9th wgmma launch of each.
    i=0
    for b in ${NCU_BENCH:-Tune/N=16384/D=256/s=1/tune=default$ Tune/N=16384/D=256/s=4/tune=default$}; do
      i=$((i + 1))
      timeout 200 ncu ${NCU_FLAGS:-} --kernel-name bmm_wgmma --launch-skip 8 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --print-details all \
        --metrics ${NCU_METRICS:-sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,lts__ltcfabric2ltc_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum} \
        $T -test.run '^$' -test.bench "$b" -test.benchtime 1x >"$OUT/ncu$i.txt" 2>&1
      echo "-- $b"
      grep -iE "Duration|Throughput|lts__|gmma|stall|pipe|Issued|Eligible|Active Warps" "$OUT/ncu$i.txt" | grep -v "^ *---" | head -70
    done
    ;;
  esac
  echo "== $step took $(($(date +%s) - t0)) s"
done
host_done
