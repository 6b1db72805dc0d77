#!/usr/bin/env bash
# call j5 (1 x H200, 16 cores), tree of this commit (tcu.test built here, carried xz-compressed in
# build/j5x): the final tree's tcu GPU tests of the aggregations, the folds, the chain and the
# replayed plans (the commits after j4 changed comments and how a held launch is built).
set -uo pipefail
cd "$(dirname "$0")/../../.."
. bench/e2e/steps.sh # call_head, el, carried, tcu_run
B=build/fpgpu
call_head
carried build/j5x
tcu_run 100 'TestBackendAgg|TestBackendFolds|TestBackendChain|TestBackendArgmax|TestAggKernelsListed|TestPlanReplayOnDevice' $OUT/tcu-test.log
echo "done $(el)s"
