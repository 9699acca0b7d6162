#!/usr/bin/env bash
# On the device: start `validate.sh <part> [args...]` in its own process session, so that one step
# runs across several device calls while the machine stays warm. The device ends what a call leaves
# running when the call returns, except a new session's; a step cut at each call's 600 s lost the
# cell in flight and an export every call (2026-12-01). Then call `bash scripts/gpu/poll.sh` back
# to back (each within the machine's 30 s idle) until it says done: it brings the outputs back.
# DETACHED_LIMIT_S (default 1500) stands for the call limit in validate.sh's step timeout: set it
# to what is left of the session's device time less a minute for the last poll.
set -u
run=$HOME/detached
if [ -f $run/pid ] && kill -0 "$(cat $run/pid)" 2>/dev/null; then
  echo "a detached run is going (pid $(cat $run/pid)): poll it with bash scripts/gpu/poll.sh"; exit 1
fi
rm -rf $run && mkdir -p $run/out
# Its own copy of the tree: a later call re-syncs the working tree, which would change it under the step.
cp -a "$PWD" $run/tree && cd $run/tree || exit 1
DETACHED_DIR=$run OUT=$run/out CALL_LIMIT_S=${DETACHED_LIMIT_S:-1500} setsid nohup \
  bash -c 'bash scripts/gpu/validate.sh "$@"; echo $? > "$DETACHED_DIR/done"' _ "$@" \
  > $run/run.log 2>&1 < /dev/null &
echo $! > $run/pid
echo "started validate.sh $* (pid $!, limit ${DETACHED_LIMIT_S:-1500} s); poll: bash scripts/gpu/poll.sh"
