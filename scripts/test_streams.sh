#!/usr/bin/env bash
# `make test` after the setup: the assets, chromium and the whole suite as two pytest streams at
# once on one machine.
#
# Why two: the real-engine tests (tests/engine, tests/plugins_engine) keep about one core of the
# 2-core CI box busy on average (1.15 cores over tests/engine/test_engine_failure.py, sampled from
# /proc/stat every 2 s on 2026-12-05: an engine start is three Python processes importing vLLM one
# after the other, ~13 s of one core each; a measured load takes 1.5-2.0). Run one after the
# other, the host-only tests (scheduling, unit, report) left that second core idle. Not three: with
# the scheduling and the unit tests as streams of their own beside the engine's, the engine stream
# took 1437 s against 1166 s beside one host stream, and the whole run 1644 s against 1593 s
# (fresh clones, 2026-12-05): the box is CPU-bound, and a third stream only takes the engine's.
#
# How: the engine stream runs in the foreground: the model and the two corpora its tests read
# (`python -m assets --only ...`), its tests, then tests/report and tests/unit/assets (no engine;
# they read what is built beside it). The host stream runs beside it from the start, at nice 10 in
# a session (so an autogroup) of its own, so where both want a core the engine's threads get it first (CFS
# weights 1024 to 110) and its gates (host starvation, event-loop lag) read the engine's own
# contention, not the suite's: first tests/scheduling (a fake cluster, a stand-in engine and
# small inputs of its own: nothing built), then the rest of tests/unit once the demo's other
# corpora, the study's (`python -m assets`, then `experiment=final`, started beside both once the
# model is converted) and chromium are there. The engine tests stay in one stream: they scan the
# machine for vLLM processes left behind, which another stream's engine would look like. The host
# stream's output is kept in a file and printed after the engine stream's, each pytest run with its
# slowest tests and its time per directory against tests/budgets.toml.
#
# Usage: scripts/test_streams.sh [pytest args for every pytest run]   (PY: the interpreter)
set -uo pipefail
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
HOST_NICE=${HOST_NICE:-10}
ENGINE_DIRS=(tests/engine tests/plugins_engine)
# All the engine tests read (experiment=smoke's corpora); the demo's other corpora and the mix are
# built beside them (the prep, below): building all eight first kept the engine waiting 25 s longer.
ENGINE_CORPORA=code_complete,chat_bench
# After the engine tests, in the foreground too: tests that read the prep's corpora or chromium
# (made beside the engine tests by then) and no engine. They even the streams out: in a fresh
# clone's run with all of tests/unit and tests/report in the host stream (2026-12-05), the engine
# stream ended at 1267 s and the host one at 1412 s, the last 145 s on one core of two.
ENGINE_THEN_DIRS=(tests/report tests/unit/assets)
HOST_FIRST_DIRS=(tests/scheduling)
HOST_THEN_DIRS=(tests/unit --ignore=tests/unit/assets)
# A stream's exit code when the prep's corpora or chromium could not be made (pytest uses 0-5).
PREP_FAILED=6

# first_failure RC...: the first code that is a failure; pytest's 5 (no tests collected) in one run
# is not one when `-k` picked tests of another; 5 when every run collected nothing.
first_failure() {
    local rc
    for rc in "$@"; do
        if [[ $rc -ne 0 && $rc -ne 5 ]]; then
            return "$rc"
        fi
    done
    for rc in "$@"; do
        [[ $rc -eq 5 ]] || return 0
    done
    return 5
}

# The two jobs that run beside the engine stream, each started by this script as `$SELF __JOB WORK ...`.
if [[ ${1:-} == __prep ]]; then
    work=$2
    bash scripts/install_chromium.sh &
    chromium=$!
    if ! "$PY" -m assets; then
        echo "== the demo's other corpora could not be built (python -m assets)"
        echo "$PREP_FAILED" >"$work/prep.rc"
    elif ! "$PY" -m assets experiment=final; then
        echo "== the study corpora could not be built (python -m assets experiment=final)"
        echo "$PREP_FAILED" >"$work/prep.rc"
    elif ! wait "$chromium"; then
        echo "== chromium could not be installed (scripts/install_chromium.sh)"
        echo "$PREP_FAILED" >"$work/prep.rc"
    else
        echo 0 >"$work/prep.rc"
    fi
    exit 0
fi
if [[ ${1:-} == __host ]]; then
    work=$2
    shift 2
    "$PY" -m pytest "$@" "${HOST_FIRST_DIRS[@]}"
    first_rc=$?
    until [[ -e $work/prep.rc ]]; do sleep 1; done
    prep_rc=$(cat "$work/prep.rc")
    if [[ $prep_rc -ne 0 ]]; then
        echo "== ${HOST_THEN_DIRS[*]} not run: see the prep's output"
        exit "$prep_rc"
    fi
    "$PY" -m pytest "$@" "${HOST_THEN_DIRS[@]}"
    then_rc=$?
    first_failure "$first_rc" "$then_rc"
    exit $?
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/lever-grid-tests.XXXXXX")
start_s=$(date +%s)
pids=()

# beside NAME ARGS...: `$SELF ARGS...` (this script) in a session (an autogroup) of its own at nice
# HOST_NICE, output kept in $work/NAME.log. Linux with sched_autogroup_enabled=1 shares CPU fairly between
# autogroups whatever the nice values inside them, and every engine runs in a session, so an
# autogroup, of its own: the autogroup is given the nice too, from inside the session, where the
# kernel lets it.
beside() {
    local name=$1
    shift
    setsid --wait bash -c '
        if echo "$1" 2>/dev/null >/proc/self/autogroup; then echo "autogroup nice $1" >"$2"; fi
        nice_level=$1; shift 2
        exec nice -n "$nice_level" "$@"' \
        _ "$HOST_NICE" "$work/$name.group" bash "$SELF" "$@" >"$work/$name.log" 2>&1 &
    pids+=($!)
}

# Each job leads a process group of its own (setsid): the signal reaches the group, so a job
# between its steps stops as well as one inside pytest.
stop_all() {
    local pid
    for pid in "${pids[@]}"; do
        kill "-$1" -- "-$pid" 2>/dev/null
    done
    wait "${pids[@]}" 2>/dev/null
}
# Ctrl-C or a CI timeout stops every stream, not only the one in the foreground.
trap 'stop_all INT; rm -rf "$work"; exit 130' INT
trap 'stop_all TERM; rm -rf "$work"; exit 143' TERM

beside host __host "$work" "$@"
host_pid=${pids[-1]}
sleep 1
group=$(cat "$work/host.group" 2>/dev/null)
group=${group:-"its autogroup's nice left as it was"}

echo "== assets for the engine stream: the model and the two corpora its tests read"
if ! "$PY" -m assets --only "$ENGINE_CORPORA"; then
    echo "== the assets could not be built: no engine, unit or report tests run; stopping the host stream"
    stop_all TERM
    rm -rf "$work"
    exit 2
fi
# The other corpora need the converted model's tokenizer: they start only now.
beside prep __prep "$work"
prep_pid=${pids[-1]}

echo "== engine stream: ${ENGINE_DIRS[*]}, then ${ENGINE_THEN_DIRS[*]} (beside it at nice $HOST_NICE, $group:" \
    "${HOST_FIRST_DIRS[*]}, then ${HOST_THEN_DIRS[*]} once the other corpora and chromium are made; output in $work)"
"$PY" -m pytest "$@" "${ENGINE_DIRS[@]}"
engine_rc=$?
wait "$prep_pid"
# A prep that died without saying how (killed) must not leave the host stream waiting for it.
[[ -e $work/prep.rc ]] || echo "$PREP_FAILED" >"$work/prep.rc"
engine_then_rc=$(cat "$work/prep.rc")
if [[ $engine_then_rc -eq 0 ]]; then
    echo
    echo "== engine stream, then: ${ENGINE_THEN_DIRS[*]}"
    "$PY" -m pytest "$@" "${ENGINE_THEN_DIRS[@]}"
    engine_then_rc=$?
else
    echo "== ${ENGINE_THEN_DIRS[*]} not run: the other corpora or chromium could not be made (below)"
fi
engine_s=$(($(date +%s) - start_s))
wait "$host_pid"
host_rc=$?
trap - INT TERM
echo
echo "== the other corpora and chromium (nice $HOST_NICE)"
cat "$work/prep.log"
echo
echo "== host stream: ${HOST_FIRST_DIRS[*]}, then ${HOST_THEN_DIRS[*]} (nice $HOST_NICE)"
cat "$work/host.log"
rm -rf "$work"
echo
echo "== streams: engine ${engine_s} s (exit $engine_rc, then $engine_then_rc); both done in $(($(date +%s) - start_s)) s (host exit $host_rc)"
first_failure "$engine_rc" "$engine_then_rc" "$host_rc"
