#!/usr/bin/env bash
# On the device: wait up to $1 s (default 540) for the step detach.sh started, print the end of its
# output, and once it has ended copy what comes back into $OUT. The device returns at most 8 files:
# the store's tarball (every table and log; scripts/gpu/export.py reads it here too), the step's
# log, rc.txt, gpus.csv, engine_logs.txt, the noise part's launch-noise.json and .md, the compile
# caches (compile-cache.tgz) and a tune's outputs (tune-out.tgz).
run=$HOME/detached
limit=${1:-540}
t0=$(date +%s)
[ -f $run/pid ] || { echo "no detached run on this machine (a fresh one? start it with detach.sh)"; exit 1; }
while [ ! -f $run/done ] && [ $(( $(date +%s) - t0 )) -lt "$limit" ]; do sleep 5; done
tail -c 8000 $run/run.log
if [ -f $run/done ]; then
  for f in rc.txt gpus.csv engine_logs.txt launch-noise.json launch-noise.md compile-cache.tgz; do
    [ -f $run/out/$f ] && cp $run/out/$f $OUT/
  done
  cp $run/out/store-*.tgz $run/out/*.log $OUT/ 2>/dev/null
  # A tune's outputs as one file (the device returns at most 8): final.yaml, serve.sh, decisions.md, sizing.json.
  [ -d $run/out/tune-out/tiny ] && tar czf $OUT/tune-out.tgz -C $run/out/tune-out/tiny .
  echo "done: rc $(cat $run/done); $(ls $OUT | tr '\n' ' ')"
else
  # What a noise run has so far (its JSON is rewritten after each launch): a machine taken back
  # mid-run (2026-12-07) then loses only the launch in flight, not the whole run.
  for f in launch-noise.json launch-noise.md; do [ -f $run/out/$f ] && cp $run/out/$f $OUT/; done
  # And the rest of what a lapse would lose (2026-12-07: an API error between two polls let the machine
  # go and took a tune's first cells with it): the store's finished files under the name validate.sh
  # resumes from (.gpu/store-<part>.tgz; writes are atomic, store/atomic.py, so .tmp-* is all a cell in
  # flight leaves, and leases are left out so the resuming machine takes none over), a tune's sizing
  # (tune-out.tgz) and the compile caches an engine has filled so far.
  for s in $HOME/store-*; do
    [ -d "$s" ] && tar czf $OUT/$(basename $s).tgz --warning=no-file-changed --exclude='.tmp-*' \
      --exclude='.lock-*' --exclude="$(basename $s)/leases" -C $HOME $(basename $s)
  done
  [ -d $HOME/tune-out/tiny ] && tar czf $OUT/tune-out.tgz --warning=no-file-changed -C $HOME/tune-out/tiny .
  dirs=$(cd $run/tree/.cache 2>/dev/null && ls -d vllm inductor triton 2>/dev/null | tr '\n' ' ')
  [ -n "$dirs" ] && tar czf $OUT/compile-cache.tgz --warning=no-file-changed -C $run/tree/.cache $dirs
  echo "still running after $(( $(date +%s) - t0 )) s of polling (so far: $(ls $OUT | tr '\n' ' ')): poll again now (the machine idles out in 30 s)"
fi
