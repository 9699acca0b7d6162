#!/usr/bin/env bash
# On a lent H200 machine (device tool), after the chunks are stashed (scripts/gpu/README.md):
#   bash scripts/gpu/validate.sh <part> [grid overrides...]
# part `grid`: the gpu_validate experiment through the Ray scheduler (two GPUs: two engines at once);
# part `tp2`: the Llama-8B-shaped dummy at TP=2 on code_complete, levers $TP2_LEVERS (default [van,suffix]);
# part `crosscheck`: harness vs `vllm bench serve` on one engine.
# Everything lands in $OUT (store tables, engine logs, timings).
set -uo pipefail
part=${1:?part: grid, tp2 or crosscheck}; shift
source scripts/gpu/install.sh || exit 1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee $OUT/gpus.csv
python3 -c "from pathlib import Path; from assets import smollm2, dummy_models
m = Path('.cache/models'); smollm2.ensure(m); dummy_models.ensure(m)" || exit 1
store=$HOME/store-$part
start=$(date +%s)
case $part in
  grid) timeout ${STEP_TIMEOUT_S:-470} python3 -m grid run experiment=gpu_validate paths.data_dir=.gpu/data paths.store=$store "$@" ;;
  tp2) timeout ${STEP_TIMEOUT_S:-470} python3 -m grid run experiment=gpu_validate paths.data_dir=.gpu/data paths.store=$store \
         grid.models=[llama31_8b_shaped_tp2] grid.levers=${TP2_LEVERS:-[van,suffix]} grid.corpora=[code_complete] "$@" ;;
  crosscheck) CROSSCHECK_OVERRIDES="experiment=gpu_validate paths.data_dir=.gpu/data grid.levers=[van] \
      grid.corpora=[code_complete] load.num_prompts=160 load.max_tokens=512 load.ignore_eos=true \
      load.token_ids=false $*" python3 -m benchmarks.crosscheck_engine | tee $OUT/crosscheck.txt ;;
esac
echo "rc=$? wall_s=$(( $(date +%s) - start ))" | tee $OUT/rc.txt
[ -d "$store" ] && python3 scripts/gpu/export.py "$store" "$OUT"
