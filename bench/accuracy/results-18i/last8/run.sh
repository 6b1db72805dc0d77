#!/bin/bash
# 2 bits with the last layer at 8 bits against 2 bits throughout, 5 seeds, same fp32 models (shared cache).
export QGTC_DATA=/work/main/testdata QGTC_CACHE=/work/main/build/acc/cache GOMAXPROCS=1
Q=/work/main/build/acc/qgtc
one() { # name flags...
  local n=$1; shift
  /usr/bin/time -f '%e s wall %U s user' $Q sweep "$@" --seeds 5 --out /work/vmrun/l8/$n --quiet > /work/vmrun/l8/$n.txt 2>&1
}
export -f one; export Q
cat <<'J' | xargs -P 2 -L 1 bash -c 'one "$@"' _
cora-gcn-2 --dataset cora --model gcn --bits 2
cora-gcn-2l8 --dataset cora --model gcn --bits 2 --last-bits 8
citeseer-gcn-2 --dataset citeseer --model gcn --bits 2
citeseer-gcn-2l8 --dataset citeseer --model gcn --bits 2 --last-bits 8
amazon_computers-sage-2l8 --dataset amazon_computers --model sage --bits 2 --last-bits 8
amazon_photo-sage-2l8 --dataset amazon_photo --model sage --bits 2 --last-bits 8
cora-sage-2 --dataset cora --model sage --bits 2
cora-sage-2l8 --dataset cora --model sage --bits 2 --last-bits 8
citeseer-sage-2 --dataset citeseer --model sage --bits 2
citeseer-sage-2l8 --dataset citeseer --model sage --bits 2 --last-bits 8
cora-gin-2 --dataset cora --model gin --bits 2
cora-gin-2l8 --dataset cora --model gin --bits 2 --last-bits 8
citeseer-gin-2 --dataset citeseer --model gin --bits 2
citeseer-gin-2l8 --dataset citeseer --model gin --bits 2 --last-bits 8
J
