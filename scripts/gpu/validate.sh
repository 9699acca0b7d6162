#!/usr/bin/env bash
# On a lent H200 machine (device tool), after the chunks are stashed (scripts/gpu/README.md):
#   bash scripts/gpu/validate.sh <part> [grid overrides...]
# part `grid`: the gpu_validate experiment through the Ray scheduler (two GPUs: two engines at once);
# part `tp2`: the Llama-8B-shaped dummy at TP=2 on code_complete, levers $TP2_LEVERS (default [van,suffix]);
# part `crosscheck`: harness vs `vllm bench serve` on one engine;
# part `levers` (issue 37 item 8): the crosscheck's lever mode, suffix and bestkpad K=8 on fresh launches
# (CROSSCHECK_LAUNCHES per lever, 1; CROSSCHECK_ROUNDS pairs each, 2; CROSSCHECK_FIRST_LAUNCH=2 goes on in a
# later call), the gpu_validate load (c=32, 1,024 tokens, greedy, EOS) with 32 warm-up + 4 slices of LEVERS_PROMPTS (144:
# code_complete holds 625 at this cap, 4 x 160 do not fit), $OUT/crosscheck-levers.json;
# part `noise` (issue 44 item 1): benchmarks.launch_noise, SmolLM2 van, suffix and bestkpad K=8 interleaved on fresh
# launches (NOISE_LAUNCHES per lever, 2; NOISE_ROUNDS pairs each, 2; NOISE_SETTING, base), the levers part's load
# with NOISE_PROMPTS (96) a block, $OUT/launch-noise.json and .md;
# part `sessions` (issue 29 item 7): suffix K=8, bestkpad K=8 and dynk (K in {4,6,8}) on shared launches,
# SESSIONS_REPEATS (8) blocks of code_complete over 2 launches, then each lever's repeat-0 cell on a
# launch of its own (a second store, $HOME/store-sessions-fresh) to compare acceptance with the reset engine;
# part `tune`: experiments.tune for SmolLM2 (stages $TUNE_STAGES, $TUNE_REPEATS repeats: unset, it sizes itself); run it again
# to resume (the store in $HOME/store-tune is the only state; carry it back with $OUT).
# Everything lands in $OUT (store tables, engine logs, timings, the step's output in $OUT/<part>.log).
# The step's timeout defaults to what is left of the device call (CALL_LIMIT_S, the call's
# timeout_s, default 600) after install and model set-up, less EXPORT_RESERVE_S for the clean stop
# and the export: a step that outran the call lost all its output (2026-12-01).
set -uo pipefail
part=${1:?part: grid, tp2, crosscheck, levers, noise, sessions or tune}; shift
call_start=$(date +%s)
source scripts/gpu/install.sh || exit 1
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee $OUT/gpus.csv
python3 -c "from pathlib import Path; from assets import smollm2, dummy_models
m = Path('.cache/models'); smollm2.ensure(m); dummy_models.ensure(m)" || exit 1
# A compile cache carried in (.gpu/compile-cache.tgz, an earlier machine's $OUT): vLLM's, inductor's and
# Triton's caches (paths.cache_dir), so a fresh machine's first engine starts warm (~50 s, not ~160 s).
mkdir -p .cache && [ -f .gpu/compile-cache.tgz ] && tar xzf .gpu/compile-cache.tgz -C .cache
store=$HOME/store-$part
# A store carried in from an earlier machine (.gpu/store-<part>.tgz, from $OUT): resume from it.
[ ! -d "$store" ] && [ -f .gpu/store-$part.tgz ] && tar xzf .gpu/store-$part.tgz -C $HOME
start=$(date +%s)
left_s=$(( ${CALL_LIMIT_S:-600} - (start - call_start) - ${EXPORT_RESERVE_S:-75} ))
STEP_TIMEOUT_S=${STEP_TIMEOUT_S:-$left_s}
if [ "$STEP_TIMEOUT_S" -gt "$left_s" ]; then
  echo "STEP_TIMEOUT_S=$STEP_TIMEOUT_S would outrun the call: $left_s s left after set-up; using $left_s"
  STEP_TIMEOUT_S=$left_s
fi
[ "$STEP_TIMEOUT_S" -lt 60 ] && { echo "only $STEP_TIMEOUT_S s left of the call after set-up: raise CALL_LIMIT_S"; exit 1; }
exec > >(tee $OUT/$part.log) 2>&1
case $part in
  grid) timeout $STEP_TIMEOUT_S python3 -m grid run experiment=gpu_validate paths.data_dir=.gpu/data paths.store=$store "$@" ;;
  tp2) timeout $STEP_TIMEOUT_S python3 -m grid run experiment=gpu_validate paths.data_dir=.gpu/data paths.store=$store \
         grid.models=[llama31_8b_shaped_tp2] grid.levers=${TP2_LEVERS:-[van,suffix]} grid.corpora=[code_complete] "$@" ;;
  crosscheck) CROSSCHECK_OVERRIDES="experiment=gpu_validate paths.data_dir=.gpu/data grid.levers=[van] \
      grid.corpora=[code_complete] load.num_prompts=160 load.max_tokens=512 load.ignore_eos=true \
      load.token_ids=false $*" python3 -m benchmarks.crosscheck_engine | tee $OUT/crosscheck.txt ;;
  levers) CROSSCHECK_LEVERS=${CROSSCHECK_LEVERS:-suffix,bestkpad} CROSSCHECK_ROUNDS=${CROSSCHECK_ROUNDS:-2} \
      CROSSCHECK_LAUNCHES=${CROSSCHECK_LAUNCHES:-1} CROSSCHECK_BUDGET_S=${CROSSCHECK_BUDGET_S:-$STEP_TIMEOUT_S} \
      CROSSCHECK_OVERRIDES="experiment=gpu_validate paths.data_dir=.gpu/data grid.corpora=[code_complete] \
      load.num_prompts=${LEVERS_PROMPTS:-144} load.warmup_requests=32 load.max_tokens=1024 load.ignore_eos=false $*" \
      timeout $STEP_TIMEOUT_S python3 -m benchmarks.crosscheck_levers | tee $OUT/crosscheck-levers.txt ;;
  noise) NOISE_BUDGET_S=${NOISE_BUDGET_S:-$STEP_TIMEOUT_S} NOISE_JSON=$OUT/launch-noise.json \
      NOISE_OVERRIDES="experiment=gpu_validate paths.data_dir=.gpu/data grid.corpora=[code_complete] \
      load.num_prompts=${NOISE_PROMPTS:-96} load.warmup_requests=32 load.max_tokens=1024 load.ignore_eos=false $*" \
      timeout $STEP_TIMEOUT_S python3 -m benchmarks.launch_noise ;;
  sessions) shared="experiment=gpu_validate paths.data_dir=.gpu/data grid.levers=[suffix,bestkpad,dynk]
      +grid.ks.bestkpad=[8] +grid.ks.dynk=[8] +lever.dynk.dynamic_ks=[4,6,8] grid.corpora=[code_complete]"
      timeout $STEP_TIMEOUT_S python3 -m grid run $shared paths.store=$store grid.repeats=${SESSIONS_REPEATS:-8} \
        grid.engine_reuse=shared grid.launches_per_argv=2 "$@"
      rc=$?
      left=$(( STEP_TIMEOUT_S - ($(date +%s) - start) ))
      [ $rc -eq 0 ] && [ $left -gt 120 ] && timeout $left python3 -m grid run $shared paths.store=$store-fresh \
        grid.repeats=1 grid.engine_reuse=per_spec "$@"
      rc=$(( rc + $? ))
      [ -d $store-fresh ] && python3 scripts/gpu/export.py $store-fresh $OUT/fresh && tar czf $OUT/store-sessions-fresh.tgz -C $HOME store-sessions-fresh
      (exit $rc) ;;
  # Unset TUNE_STAGES and TUNE_REPEATS: the tune sizes and fits itself (size.*: pass the noise measured
  # after issue 44 item 1, e.g. size.sd_launch=0.039 size.sd_block=0.082, as arguments). Its outputs come
  # back with poll.sh as tune-out.tgz; carried in as .gpu/tune-out.tgz, its sizing.json resumes the tune on
  # a fresh machine at the same design.
  tune) mkdir -p $HOME/tune-out/tiny
       [ -f .gpu/tune-out.tgz ] && [ ! -f $HOME/tune-out/tiny/sizing.json ] && tar xzf .gpu/tune-out.tgz -C $HOME/tune-out/tiny ./sizing.json
       timeout $STEP_TIMEOUT_S python3 -m experiments.tune model=tiny experiment=gpu_validate \
         ${TUNE_STAGES:+"stages=$TUNE_STAGES"} out_dir=$HOME/tune-out \
         "grid_overrides=['cluster=device_h200','paths.data_dir=.gpu/data','paths.store=$store','grid.anchor.enabled=true'${TUNE_REPEATS:+,'grid.repeats=$TUNE_REPEATS'}${TUNE_OVERRIDES:+,$TUNE_OVERRIDES}]" "$@"
       rc=$?; [ -d $HOME/tune-out ] && cp -r $HOME/tune-out $OUT/; (exit $rc) ;;
esac
rc=$?
# A step cut by its timeout may leave an engine behind: none may hold the GPU for the next call.
pkill -9 -f 'vllm.entrypoints' 2>/dev/null; pkill -9 -f 'VLLM::' 2>/dev/null
echo "rc=$rc wall_s=$(( $(date +%s) - start ))" | tee $OUT/rc.txt
[ -d "$store" ] && python3 scripts/gpu/export.py "$store" "$OUT"
# The whole store too: the next run (on this machine or a fresh one) resumes from it.
[ -d "$store" ] && tar czf $OUT/store-$part.tgz -C $HOME store-$part
# The compile caches for the next machine (carry it in as .gpu/compile-cache.tgz).
dirs=$(cd .cache && ls -d vllm inductor triton 2>/dev/null | tr '\n' ' ')
[ -n "$dirs" ] && tar czf $OUT/compile-cache.tgz -C .cache $dirs && du -h $OUT/compile-cache.tgz
