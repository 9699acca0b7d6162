#!/usr/bin/env bash
# On the device: wait up to $1 s (default 540) for the step detach.sh started, print the end of its
# output, and once it has ended copy what comes back into $OUT. The device returns at most 8 files:
# the store's tarball (every table and log; scripts/gpu/export.py reads it here too), the step's
# log, rc.txt, gpus.csv, engine_logs.txt, the noise part's launch-noise.json and .md, and a tune's
# final.yaml, serve.sh and decisions.md.
run=$HOME/detached
limit=${1:-540}
t0=$(date +%s)
[ -f $run/pid ] || { echo "no detached run on this machine (a fresh one? start it with detach.sh)"; exit 1; }
while [ ! -f $run/done ] && [ $(( $(date +%s) - t0 )) -lt "$limit" ]; do sleep 5; done
tail -c 8000 $run/run.log
if [ -f $run/done ]; then
  for f in rc.txt gpus.csv engine_logs.txt launch-noise.json launch-noise.md; do [ -f $run/out/$f ] && cp $run/out/$f $OUT/; done
  cp $run/out/store-*.tgz $run/out/*.log $OUT/ 2>/dev/null
  [ -d $run/out/tune-out ] && find $run/out/tune-out -type f -exec cp {} $OUT/ \;
  echo "done: rc $(cat $run/done); $(ls $OUT | tr '\n' ' ')"
else
  # What a noise run has so far (its JSON is rewritten after each launch): a machine taken back
  # mid-run (2026-12-07) then loses only the launch in flight, not the whole run.
  for f in launch-noise.json launch-noise.md; do [ -f $run/out/$f ] && cp $run/out/$f $OUT/; done
  echo "still running after $(( $(date +%s) - t0 )) s of polling: poll again now (the machine idles out in 30 s)"
fi
