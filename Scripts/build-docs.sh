#!/usr/bin/env bash
# Builds the DocC catalogue of every library module with warnings as errors, so that every
# ``Symbol`` link in the API docs and articles resolves. Usage: Scripts/build-docs.sh [OUT]
# (Links across modules are written as code spans, and links to another catalogue's guides
# as links to their Docs/ pages on GitHub: each catalogue is built on its own.)
# ChaosConsole documents its API, which exists with the package trait Console.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.build-docs}"
# The command also tries the synthesized test-discovery modules and reports failing on
# them; what matters is the library modules' graphs, which `cp` below insists on.
swift package --traits Console --scratch-path "$out/build" dump-symbol-graph --minimum-access-level public >/dev/null 2>&1 || true
graphs="$(find "$out/build" -type d -name symbolgraph | head -1)"
for module in ChaosKit ChaosPoints ChaosHooks ChaosNetwork ChaosTesting ChaosControl ChaosConsole; do
    # The catalogue documents its own module: its graph and its extensions of others.
    only="$out/graphs-$module"
    rm -rf "$only" "$out/$module.doccarchive"
    mkdir -p "$only"
    cp "$graphs/$module".symbols.json "$only/"
    cp "$graphs/$module"@*.symbols.json "$only/" 2>/dev/null || true
    docc convert Sources/*/"$module/$module.docc" --additional-symbol-graph-dir "$only" \
        --output-path "$out/$module.doccarchive" --warnings-as-errors \
        --fallback-display-name "$module" --fallback-bundle-identifier "chaoskit.$module"
    echo "docs: $module built with no warnings"
done
