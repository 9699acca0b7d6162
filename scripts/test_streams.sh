#!/usr/bin/env bash
# `make test` after the setup: the assets, chromium and the whole suite as three pytest runs at
# once on one machine.
#
# Why at once: the real-engine tests (tests/engine, tests/plugins_engine) keep about one core of
# the 2-core CI box busy on average (1.15 cores over tests/engine/test_engine_failure.py, sampled
# from /proc/stat every 2 s on 2026-12-05: an engine start is three Python processes importing
# vLLM one after the other, ~13 s of one core each; a measured load takes 1.5-2.0). The scheduling
# tests mostly wait (on Ray, on stand-in engines, on signals), the unit tests are CPU work
# (~380 CPU-s): run one after the other, they left the engine stream's idle core unused.
#
# How: the engine stream runs in the foreground: the model and the demo's corpora (`python -m
# assets`, all it reads), then its tests. Beside it, each in a session (so an autogroup) of its
# own at nice 10, where both want a core the engine's threads get it first (CFS weights 1024 to
# 110) and its gates (host starvation, event-loop lag) read the engine's own contention, not the
# suite's:
#   - the scheduling stream (tests/scheduling: a fake cluster, a stand-in engine and its own
#     small inputs) from the start;
#   - the unit stream (tests/unit, tests/report): chromium's install beside the study's corpora
#     (`python -m assets experiment=final`, once the model is converted), then its tests.
# The engine tests stay in one stream: they scan the machine for vLLM processes left behind, which
# another stream's engine would look like. The other streams' output is kept in files and printed
# after the engine stream's, each with its slowest tests and its time per directory against
# tests/budgets.toml.
#
# Usage: scripts/test_streams.sh [pytest args for every stream]   (PY: the interpreter)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
HOST_NICE=${HOST_NICE:-10}
ENGINE_DIRS=(tests/engine tests/plugins_engine)
SCHEDULING_DIRS=(tests/scheduling)
UNIT_DIRS=(tests/unit tests/report)
# The unit stream's own exit code when its assets or chromium could not be made (pytest uses 0-5).
PREP_FAILED=6

work=$(mktemp -d "${TMPDIR:-/tmp}/lever-grid-tests.XXXXXX")
start_s=$(date +%s)
pids=()

# beside NAME CMD...: CMD in a session (an autogroup) of its own at nice HOST_NICE, output kept in
# $work/NAME.log. Linux with sched_autogroup_enabled=1 shares CPU fairly between autogroups
# whatever the nice values inside them, and every engine runs in a session, so an autogroup, of its
# own: the autogroup is given the nice too, from inside the session, where the kernel lets it.
beside() {
    local name=$1
    shift
    setsid --wait bash -c '
        if echo "$1" 2>/dev/null >/proc/self/autogroup; then echo "autogroup nice $1" >"$2"; fi
        nice_level=$1; shift 2
        exec nice -n "$nice_level" "$@"' \
        _ "$HOST_NICE" "$work/$name.group" "$@" >"$work/$name.log" 2>&1 &
    pids+=($!)
}

# Each stream leads a process group of its own (setsid): the signal reaches the group, so a
# stream still building its assets stops as well as one running pytest.
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

beside scheduling "$PY" -m pytest "$@" "${SCHEDULING_DIRS[@]}"
scheduling_pid=${pids[-1]}
sleep 1
group=$(cat "$work/scheduling.group" 2>/dev/null)
group=${group:-"their autogroups' nice left as it was"}

echo "== assets for the engine stream: the model and the demo's corpora"
if ! "$PY" -m assets; then
    echo "== the assets could not be built: no engine or unit tests run; stopping the scheduling stream"
    stop_all TERM
    rm -rf "$work"
    exit 2
fi
# The study's corpora need the converted model's tokenizer: they start only now.
beside unit bash -c '
    py=$1 prep_failed=$2; shift 2
    bash scripts/install_chromium.sh & chromium=$!
    "$py" -m assets experiment=final || { echo "== the study corpora could not be built"; exit "$prep_failed"; }
    wait "$chromium" || { echo "== chromium could not be installed (scripts/install_chromium.sh)"; exit "$prep_failed"; }
    exec "$py" -m pytest "$@"' \
    _ "$PY" "$PREP_FAILED" "$@" "${UNIT_DIRS[@]}"
unit_pid=${pids[-1]}

echo "== engine stream: ${ENGINE_DIRS[*]} (beside it at nice $HOST_NICE, $group: ${SCHEDULING_DIRS[*]}; the study corpora, chromium, then ${UNIT_DIRS[*]}; output in $work)"
"$PY" -m pytest "$@" "${ENGINE_DIRS[@]}"
engine_rc=$?
engine_s=$(($(date +%s) - start_s))
wait "$scheduling_pid"
scheduling_rc=$?
wait "$unit_pid"
unit_rc=$?
trap - INT TERM
for name in scheduling unit; do
    echo
    echo "== $name stream (nice $HOST_NICE)"
    cat "$work/$name.log"
done
rm -rf "$work"
echo
echo "== streams: engine ${engine_s} s (exit $engine_rc); all done in $(($(date +%s) - start_s)) s" \
    "(scheduling exit $scheduling_rc, unit exit $unit_rc)"
# pytest's 5 (no tests collected) in one stream is not a failure when `-k` picked tests of another.
all_five=1
for rc in "$engine_rc" "$scheduling_rc" "$unit_rc"; do
    if [[ $rc -ne 0 && $rc -ne 5 ]]; then
        exit "$rc"
    fi
    [[ $rc -eq 5 ]] || all_five=0
done
if [[ $all_five -eq 1 ]]; then
    exit 5
fi
