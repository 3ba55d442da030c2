#!/usr/bin/env bash
# Runs the Chaos Toolkit example of Integrations/chaostoolkit-chaoskit against two live
# ChaosKit processes, with Chaos Toolkit's own `chaos` command, and the extension's tests.
#
#   Scripts/check-chaostoolkit.sh BUILD_FOLDER      (e.g. .build-console/debug)
#
# BUILD_FOLDER holds ChaosKit's chaos, chaos-tool, libChaosPreload.so, ConsoleClockDemo and
# ConsoleDemo (swift build --traits Console). Chaos Toolkit, pytest and the extension are
# installed with pip when missing (the extension always, from this checkout, without build
# isolation: no network needed for it). PYTHON names the interpreter (default python3);
# CHECK_CHAOSTOOLKIT_KEEP=1 keeps the work folder (journals, logs) for a look afterwards.
#
# 1. compiles the example's refusal profiles to fault plans with `chaos validate --for run
#    --print-plan` (a chaos run program's endpoint takes plans; the extension does not run
#    ChaosKit);
# 2. starts a backend, the example service under `chaos run` with CHAOS_CONTROL=unix, and
#    ConsoleClockDemo, in a private endpoint directory;
# 3. runs examples/experiment.json: status completed, not deviated, both entries fired;
# 4. runs examples/experiment-deviates.json: deviated, and its rollbacks ran and reverted
#    both entries (checked in the processes too);
# 5. runs the extension's pytest suite (its own processes).
# Every process it started is stopped on exit. Exit status 1 on any failure, saying what.
set -euo pipefail

fail() {
    echo "check-chaostoolkit: FAILED: $*" >&2
    exit 1
}
step() { echo "check-chaostoolkit: $*"; }

[ $# -eq 1 ] || fail "usage: $0 BUILD_FOLDER (a ChaosKit build folder, e.g. .build-console/debug)"
[ -d "$1" ] || fail "$1 is not a directory"
BUILD=$(cd "$1" && pwd)
for file in chaos chaos-tool libChaosPreload.so ConsoleClockDemo ConsoleDemo; do
    [ -e "$BUILD/$file" ] || fail "$BUILD has no $file; build it with swift build --traits Console --product ..."
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PACKAGE="$ROOT/Integrations/chaostoolkit-chaoskit"
EXAMPLES="$PACKAGE/examples"
PYTHON=${PYTHON:-python3}
STARTED=$(date +%s)
export PIP_ROOT_USER_ACTION=ignore # CI runs as root; the warning says nothing here

# Short: a Unix socket's path must stay under 104 bytes.
WORK=$(mktemp -d /tmp/ctk-check.XXXXXX)
PIDS=()
finish() {
    local status=$?
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    if [ "$status" -ne 0 ]; then
        for log in "$WORK"/*.log "$WORK"/*.out; do
            [ -s "$log" ] && { echo "--- last lines of $log" >&2; tail -n 15 "$log" >&2; }
        done
    fi
    if [ -n "${CHECK_CHAOSTOOLKIT_KEEP:-}" ]; then
        echo "check-chaostoolkit: kept $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap finish EXIT

# --- Chaos Toolkit, pytest and the extension ---------------------------------------------
if ! "$PYTHON" -c 'import chaostoolkit, chaoslib' 2>/dev/null; then
    step "installing chaostoolkit with pip"
    "$PYTHON" -m pip install --quiet chaostoolkit || fail "pip install chaostoolkit failed"
fi
if ! "$PYTHON" -c 'import pytest' 2>/dev/null; then
    step "installing pytest with pip"
    "$PYTHON" -m pip install --quiet pytest || fail "pip install pytest failed"
fi
step "installing the extension from $PACKAGE"
"$PYTHON" -m pip install --quiet --no-build-isolation --no-deps --no-index --force-reinstall "$PACKAGE" ||
    fail "pip install --no-build-isolation $PACKAGE failed"
rm -rf "$PACKAGE/build"

# Chaos Toolkit's `chaos`, beside the interpreter that has it: ChaosKit's launcher is also
# called chaos, and a PATH may hold either.
CTK="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/chaos"
[ -x "$CTK" ] || fail "Chaos Toolkit's chaos is not at $CTK after pip install chaostoolkit"
"$CTK" --version 2>/dev/null | grep -q '^chaos, version' ||
    fail "$CTK is not Chaos Toolkit's chaos (its --version says: $("$CTK" --version 2>&1 | head -1))"

# --- ChaosKit ------------------------------------------------------------------------------
export CHAOS_CONTROL_DIR="$WORK/ctl"
mkdir -m 700 "$CHAOS_CONTROL_DIR"
# Named, so that the launcher never tries to rebuild them in a checkout's build folder.
export CHAOS_TOOL="$BUILD/chaos-tool" CHAOS_PRELOAD_LIBRARY="$BUILD/libChaosPreload.so"
unset CHAOS_CONTROL CHAOS_PROFILE CHAOS CHAOS_SEED

step "compiling the refusal profiles to fault plans with ChaosKit's chaos"
for name in refused-once refused; do
    "$BUILD/chaos" validate --for run --print-plan "$EXAMPLES/profiles/$name.json" \
        >"$WORK/$name.plan" 2>"$WORK/compile-$name.log" ||
        fail "chaos validate could not compile $EXAMPLES/profiles/$name.json: $(cat "$WORK/compile-$name.log")"
    [ "$(head -n 1 "$WORK/$name.plan")" = "chaos-plan 1" ] ||
        fail "compiling $name.json gave no fault plan: $(head -c 200 "$WORK/$name.plan")"
done

# Waits for `ready PORT …` on the first line of FILE; prints its second word.
ready() {
    local file=$1 pid=$2 what=$3
    for _ in $(seq 300); do
        if [ -s "$file" ] && head -n 1 "$file" | grep -q '^ready '; then
            head -n 1 "$file" | awk '{print $2}'
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || fail "$what ended before it was ready"
        sleep 0.1
    done
    fail "$what was not ready within 30 s"
}

step "starting the backend, the service under chaos run, and ConsoleClockDemo"
"$PYTHON" "$EXAMPLES/service.py" backend 0 >"$WORK/backend.out" 2>"$WORK/backend.log" &
PIDS+=($!)
BACKEND_PORT=$(ready "$WORK/backend.out" "$!" "the backend")
CHAOS_CONTROL=unix "$BUILD/chaos" run --quiet --profile "$EXAMPLES/profiles/none.json" -- \
    "$PYTHON" "$EXAMPLES/service.py" front 0 "$BACKEND_PORT" >"$WORK/service.out" 2>"$WORK/service.log" &
RUNNER=$!
PIDS+=("$RUNNER")
SERVICE_PORT=$(ready "$WORK/service.out" "$RUNNER" "the service under chaos run")
"$BUILD/ConsoleClockDemo" >"$WORK/demo.out" 2>"$WORK/demo.log" &
PIDS+=($!)
ready "$WORK/demo.out" "$!" "ConsoleClockDemo" >/dev/null
# The service's own pid (chaos run stays its parent), to stop it even if chaos run is killed.
SERVICE_PID=$("$PYTHON" - "$RUNNER" <<'EOF'
import sys, time
from chaoskit.endpoints import resolve
for _ in range(100):
    try:
        print(resolve(int(sys.argv[1]))[0].pid)
        break
    except Exception as error:
        problem = error
        time.sleep(0.1)
else:
    sys.exit(f"no endpoint for the program of chaos run {sys.argv[1]}: {problem}")
EOF
) || fail "the service under chaos run has no control endpoint"
PIDS+=("$SERVICE_PID")

export CHAOSKIT_SERVICE_URL="http://127.0.0.1:$SERVICE_PORT/"
export CHAOSKIT_SERVICE_PID="$RUNNER" # the pid of chaos run finds its program
export CHAOSKIT_REFUSAL_ONCE_PLAN="$WORK/refused-once.plan" CHAOSKIT_REFUSAL_PLAN="$WORK/refused.plan"
export CHAOSKIT_CLOCK_PROFILE="$EXAMPLES/profiles/ten-days-on.json"

# --- the experiment that holds -------------------------------------------------------------
step "chaos run experiment.json (Chaos Toolkit)"
cd "$WORK"
"$CTK" --no-version-check --log-file "$WORK/experiment.log" run --journal-path "$WORK/journal.json" \
    "$EXAMPLES/experiment.json" >"$WORK/experiment.out" 2>&1 ||
    fail "Chaos Toolkit's chaos run experiment.json exited $? (see $WORK/experiment.out below)"
"$PYTHON" - "$WORK/journal.json" <<'EOF' || fail "the journal of experiment.json is not what it should be (above)"
import json, sys
journal = json.load(open(sys.argv[1]))
problems = []
if journal["status"] != "completed":
    problems.append(f"status is {journal['status']}, not completed")
if journal["deviated"]:
    problems.append("it deviated")
runs = {run["activity"]["name"]: run for run in journal["run"]}
for name, run in runs.items():
    if run["status"] != "succeeded":
        problems.append(f"{name}: {run['status']}: {run.get('exception', [''])[-1:]}")
for name in ("the-refusal-fired", "the-clock-offset-fired"):
    if runs.get(name, {}).get("output") is not True:
        problems.append(f"{name} says {runs.get(name, {}).get('output')!r}, not true")
if runs.get("a-request-while-refused", {}).get("output", {}).get("status") != 502:
    problems.append("the request while refused was not answered 502")
after = journal["steady_states"]["after"]
if not after or not after["steady_state_met"]:
    problems.append("the steady state did not hold after the method")
rollbacks = journal.get("rollbacks") or []
if [r["status"] for r in rollbacks] != ["succeeded", "succeeded"]:
    problems.append(f"the rollbacks did not both succeed: {[r['status'] for r in rollbacks]}")
for problem in problems:
    print("  " + problem, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
step "experiment.json: completed, not deviated, both entries fired, both reverted"

# --- the experiment that deviates on purpose -----------------------------------------------
step "chaos run experiment-deviates.json (its hypothesis fails on purpose)"
set +e
"$CTK" --no-version-check --log-file "$WORK/experiment-deviates.log" run \
    --journal-path "$WORK/journal-deviates.json" "$EXAMPLES/experiment-deviates.json" \
    >"$WORK/experiment-deviates.out" 2>&1
status=$?
set -e
[ "$status" -ne 0 ] || fail "chaos run experiment-deviates.json exited 0, but its hypothesis must fail"
[ -s "$WORK/journal-deviates.json" ] || fail "chaos run experiment-deviates.json wrote no journal (exit $status)"
"$PYTHON" - "$WORK/journal-deviates.json" "$RUNNER" "$CHAOSKIT_SERVICE_URL" <<'EOF' ||
import json, sys, urllib.request
from chaoskit.probes import entries
journal = json.load(open(sys.argv[1]))
problems = []
if not journal["deviated"]:
    problems.append("the journal does not say it deviated")
after = journal["steady_states"]["after"]
if not after or after["steady_state_met"]:
    problems.append("the hypothesis after the method did not fail")
rollbacks = journal.get("rollbacks") or []
if len(rollbacks) != 2 or any(r["status"] != "succeeded" for r in rollbacks):
    problems.append(f"the rollbacks did not both run and succeed: {[r['status'] for r in rollbacks]}")
elif not all(r["output"] and r["output"][0]["reverted"] for r in rollbacks):
    problems.append(f"a rollback reverted nothing: {[r['output'] for r in rollbacks]}")
# In the processes: nothing is left of the method.
left = entries(sys.argv[2])
if left:
    problems.append(f"the service still has entries: {left}")
offsets = [e for e in entries({"program": "ConsoleClockDemo"}) if "offset" in e["provider"]]
if offsets:
    problems.append(f"ConsoleClockDemo still has the offset: {offsets}")
with urllib.request.urlopen(sys.argv[3], timeout=5) as answer:
    if answer.status != 200:
        problems.append(f"the service answers {answer.status} after the rollbacks")
for problem in problems:
    print("  " + problem, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
    fail "experiment-deviates.json did not deviate and roll back as it should (above)"
step "experiment-deviates.json: deviated, and its rollbacks reverted both entries"

# --- the extension's tests -----------------------------------------------------------------
step "the extension's tests (pytest, against live processes)"
cd "$PACKAGE"
CHAOSKIT_BUILD="$BUILD" "$PYTHON" -m pytest -q -p no:cacheprovider tests >"$WORK/pytest.out" 2>&1 || {
    tail -n 40 "$WORK/pytest.out" >&2
    fail "the extension's tests failed"
}
tail -n 1 "$WORK/pytest.out"

step "passed in $(($(date +%s) - STARTED)) s"
