#!/usr/bin/env bash
# CI: installs chaoskit into a temporary prefix with Scripts/install, then uses it the way
# someone without a checkout or Swift would: from /, with a PATH of only that prefix and the
# system's folders and no library path. It must say its version, run a Debian program under
# a profile, list a running program's endpoint with `ctl list`, and explore a program's
# faults; `chaos` must not be on that PATH (Chaos Toolkit's command has that name).
set -euo pipefail
cd "$(dirname "$0")/.."
checkout="$(pwd)"
work="$(mktemp -d)"
trap 'kill "${sleeper:-}" 2>/dev/null || true; rm -rf "$work"' EXIT
prefix="$work/prefix"
bash Scripts/install "$prefix"

fail() {
    echo "check-install: $*" >&2
    exit 1
}
# A clean environment: no toolchain on PATH, no LD_LIBRARY_PATH, a HOME of its own.
mkdir -p "$work/home" "$work/control"
plain=(env -i "PATH=$prefix/bin:/usr/bin:/bin" "HOME=$work/home" "CHAOS_CONTROL_DIR=$work/control")

for binary in chaos chaos-tool libChaosPreload.so; do
    if ldd "$prefix/lib/chaoskit/$binary" | grep -E "not found|swift|\.build" >&2; then
        fail "$binary needs libraries a machine without Swift lacks (above)"
    fi
done
echo "check-install: run-time libraries of chaos-tool: $(ldd "$prefix/lib/chaoskit/chaos-tool" | awk '{print $1}' | tr '\n' ' ')"

cd /
version="$("${plain[@]}" chaoskit --version)"
[[ "$version" == "chaoskit $(cat "$checkout/VERSION") (commit "* ]] || fail "chaoskit --version said '$version'"
if "${plain[@]}" sh -c 'command -v chaos' >/dev/null; then fail "an install without --with-chaos-name put chaos on the PATH"; fi
usage="$("${plain[@]}" chaoskit --help 2>&1 | grep -m1 "USAGE:" || true)"
[[ "$usage" == *"USAGE: chaoskit"* ]] || fail "chaoskit --help does not say its own name: $usage"

year="$("${plain[@]}" chaoskit run --quiet --profile "$checkout/Examples/Profiles/thirty-years-ago.json" -- date -u +%Y)"
[ "$year" = "$(($(date -u +%Y) - 30))" ] || fail "date under thirty-years-ago.json said $year"

# A program with its control endpoint on, found by ctl list.
"${plain[@]}" CHAOS_CONTROL=unix chaoskit run --quiet \
    --profile "$checkout/Examples/Profiles/thirty-years-ago.json" -- sleep 30 &
sleeper=$!
listed=""
for _ in $(seq 1 100); do
    listed="$("${plain[@]}" chaoskit ctl list 2>&1 || true)"
    grep -q "sleep" <<<"$listed" && break
    sleep 0.1
done
grep -q "sleep" <<<"$listed" || fail "chaoskit ctl list did not list the program under chaos run: $listed"
kill "$sleeper" 2>/dev/null || true
wait "$sleeper" 2>/dev/null || true
sleeper=""

# explore finds the writes whose failure loses the copy.
mkdir -p "$work/explore"
cd "$work/explore"
status=0
explored="$("${plain[@]}" chaoskit explore --every system.files --budget 20 --setup 'echo hi > a' \
    --check 'cmp -s a b' -- cp a b 2>&1)" || status=$?
[ "$status" = 1 ] && grep -q "replay: chaoskit run --profile" <<<"$explored" ||
    fail "chaoskit explore found no failing placement of cp (status $status): $explored"
echo "check-install: $version runs from / without Swift: run, ctl list and explore"
