#!/usr/bin/env bash
# The C's hygiene, as swift-format and -warnings-as-errors are the Swift's: every C source
# is formatted as .clang-format says (clang-format 14, Debian's), and every C target builds
# with -Wall -Wextra -Werror. The flags are given here (-Xcc), not in Package.swift: there
# they would be unsafeFlags, which stop packages that depend on a tagged ChaosKit, and
# -Werror would break those on a newer compiler's new warnings.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="${1:-.build-c}"

command -v clang-format >/dev/null 2>&1 || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-format
}
echo "check-c: clang-format ($(clang-format --version | sed 's/.*version //'))"
git ls-files '*.c' '*.h' '*.inc' | xargs clang-format --dry-run -Werror

# Every C target of the package, and each one alone, so that no Swift is compiled with the
# C flags.
targets=$(swift package dump-package | python3 -c '
import json, re, sys
package = json.load(sys.stdin)
for target in package["targets"]:
    # The C targets are named C… (CChaosFaults, CSystemProbes), but for the launcher.
    c = re.match(r"C[A-Z]", target["name"]) and target["type"] == "regular"
    if c or target["name"] == "chaos":
        print(target["name"])')
for target in $targets; do
    echo "check-c: $target with -Wall -Wextra -Werror"
    # SwiftPM reads a last -Werror as Swift's `-Werror GROUP`, so it is not given last.
    swift build --scratch-path "$scratch" --target "$target" -Xcc -Wall -Xcc -Werror -Xcc -Wextra
done

# The vDSO wrappers are copied into other processes (Sources/2-Deliveries/chaos/vdso_code.c):
# their section must reach nothing through a relocation, at any optimization level, and in
# the sanitizer builds CI makes (which instrument every function they may).
for level in -O0 -O1 -O2 -O3 -Os "-O0 -fsanitize=thread" "-O2 -fsanitize=thread" "-O0 -fsanitize=address" \
    "-O0 -fsanitize=undefined"; do
    object="$scratch/vdso_code${level// /}.o"
    # shellcheck disable=SC2086 # the level's words are separate options
    clang $level -fPIC -c -o "$object" Sources/2-Deliveries/chaos/vdso_code.c
    if readelf -SW "$object" | grep -q '\.rela *chaos_vdso_code'; then
        echo "check-c: vdso_code.c $level: the section chaos_vdso_code has relocations" >&2
        readelf -rW "$object" >&2
        exit 1
    fi
    echo "check-c: vdso_code.c $level: no relocations in chaos_vdso_code"
done
