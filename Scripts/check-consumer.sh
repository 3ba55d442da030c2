#!/usr/bin/env bash
# A new user's package, written from Docs/GettingStarted.md: its `.product` lines are read
# from the document, and its package line points at this checkout instead of the URL (CI
# cannot reach it). Resolves and builds it, and fails when
#   - it pins more than 5 packages (Hummingbird's tree must stay behind the Console trait),
#   - the build prints any warning,
#   - `swift run chaos run` (a clock offset seen by `date`) or `swift run chaos ctl list`
#     fails there,
#   - or the same package with traits: ["Console"] does not pin Hummingbird (resolve only).
# Usage: Scripts/check-consumer.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The package's identity is its folder's name: "chaoskit", as the documented URL's.
ln -s "$root" "$work/chaoskit"

products="$(grep -oE '\.product\(name: "[A-Za-z]+", package: "chaoskit"\)' "$root/Docs/GettingStarted.md" | sort -u)"
names="$(sed -E 's/.*name: "([A-Za-z]+)".*/\1/' <<<"$products")"
for wanted in ChaosKit ChaosPoints ChaosHooks ChaosNetwork ChaosTesting ChaosConsole; do
    grep -qx "$wanted" <<<"$names" || { echo "check-consumer: Docs/GettingStarted.md names no .product line for $wanted" >&2; exit 1; }
done
grep -q 'branch: "main"' "$root/Docs/GettingStarted.md" \
    || { echo "check-consumer: Docs/GettingStarted.md's package line must name the branch main until a version is tagged" >&2; exit 1; }

write_consumer() {  # folder, traits clause, product lines
    mkdir -p "$1/Sources/Consumer"
    cat >"$1/Package.swift" <<EOF
// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "Consumer",
    platforms: [.macOS(.v15)],
    dependencies: [.package(path: "../chaoskit"$2)],
    targets: [.target(name: "Consumer", dependencies: [
$(sed 's/^/        /; s/$/,/' <<<"$3")
    ])]
)
EOF
}

light="$(grep -v ChaosConsole <<<"$products")"
write_consumer "$work/light" "" "$light"
cat >"$work/light/Sources/Consumer/Consumer.swift" <<'EOF'
import ChaosHooks
import ChaosKit
import ChaosNetwork
import ChaosPoints
import ChaosTesting
import Foundation

public enum Points {
    public static let now = InjectionPoint<Void, Date, Never>("consumer.now") { Date() }
}

public func shifted() throws -> Date {
    try Chaos.with(ProfileEntry(Points.now, .constant(.distantPast))) { Points.now() }
}
EOF
# A test target that explores with the trait: one routine handles every fault, the other
# does not retry its third fetch, which the exploration must find at exactly that call.
sed -i 's|^    \])\]$|    ]), .testTarget(name: "ConsumerTests", dependencies: ["Consumer", .product(name: "ChaosKit", package: "chaoskit"), .product(name: "ChaosTesting", package: "chaoskit")])]|' "$work/light/Package.swift"
mkdir -p "$work/light/Tests/ConsumerTests"
cat >"$work/light/Tests/ConsumerTests/ExploreTests.swift" <<'EOF'
import ChaosKit
import ChaosTesting
import Testing

enum FetchError: Error { case offline }
enum Points {
    static let fetch = AsyncInjectionPoint<Int, Int, FetchError>("consumer.fetch") { page in page }
}

@Test(.exploringChaos(ProfileEntry(Points.fetch, .throwing(.offline))))
func robustSyncCountsWhatItGot() async {
    var total = 0
    for page in 1...5 { total += (try? await Points.fetch(page)) ?? 0 }
    #expect(total >= 10)
}

@Test(.exploringChaos(ProfileEntry(Points.fetch, .throwing(.offline)), seed: 3))
func fragileSyncRetriesOnlyTheFirstTwo() async throws {
    for page in 1...2 {
        do { _ = try await Points.fetch(page) } catch { _ = try await Points.fetch(page) }
    }
    for page in 3...5 { _ = try await Points.fetch(page) }
}
EOF
echo "check-consumer: resolving and building a package that depends on $(tr '\n' ' ' <<<"$(grep -v ChaosConsole <<<"$names")")"
(cd "$work/light" && swift package resolve >"$work/resolve.log" 2>&1) || { cat "$work/resolve.log"; exit 1; }
pins="$(grep -c '"identity"' "$work/light/Package.resolved" || true)"
echo "check-consumer: $pins packages pinned: $(grep -o '"identity" : "[^"]*"' "$work/light/Package.resolved" | cut -d'"' -f4 | tr '\n' ' ')"
if [ "$pins" -gt 5 ]; then
    echo "check-consumer: more than 5 packages resolved for a consumer without the console" >&2
    exit 1
fi
(cd "$work/light" && swift build >"$work/build.log" 2>&1) || { cat "$work/build.log"; exit 1; }
if grep -n "warning:" "$work/build.log"; then
    echo "check-consumer: the consumer's build printed warnings (above)" >&2
    exit 1
fi
echo "check-consumer: built with no warnings"
# The explored tests: the robust one passes, the fragile one fails once per placement that
# breaks it (calls 3, 4 and 5 of 5), each issue with its replay line.
(cd "$work/light" && swift test >"$work/test.log" 2>&1) && { cat "$work/test.log"; echo "check-consumer: the fragile explored test passed" >&2; exit 1; }
for expected in "robustSyncCountsWhatItGot() passed" "at call 3 of 5: threw offline" "at call 4 of 5" "at call 5 of 5" ".chaos(seed: 3, ENTRY.placed(at: 3))"; do
    grep -qF "$expected" "$work/test.log" || { cat "$work/test.log"; echo "check-consumer: the explored tests did not say: $expected" >&2; exit 1; }
done
if grep -qF "at call 1 of 5" "$work/test.log" || grep -qF "at call 2 of 5" "$work/test.log"; then
    cat "$work/test.log"; echo "check-consumer: the exploration blamed a call the routine retries" >&2; exit 1
fi
echo "check-consumer: the .exploringChaos trait found calls 3, 4 and 5 of the fragile routine, and nothing in the robust one"

# The launcher as a consumer runs it: it builds the tool and the preload library it needs
# into the consumer's build, and the program sees the fault.
cat >"$work/ten-years.json" <<'EOF'
{"entries": [{"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "+3650d"}}}]}
EOF
(cd "$work/light" && swift run chaos run --profile "$work/ten-years.json" -- date +%Y >"$work/run.out" 2>"$work/run.log") \
    || { cat "$work/run.log" "$work/run.out"; echo "check-consumer: swift run chaos run failed in the consumer" >&2; exit 1; }
year="$(tail -1 "$work/run.out")"
if [ "$year" -lt $(( $(date +%Y) + 9 )) ]; then
    cat "$work/run.log"
    echo "check-consumer: under chaos run in the consumer, date said $year: the offset did not act" >&2
    exit 1
fi
(cd "$work/light" && swift run chaos ctl list >"$work/list.out" 2>&1) \
    || { cat "$work/list.out"; echo "check-consumer: swift run chaos ctl list failed in the consumer" >&2; exit 1; }
echo "check-consumer: swift run chaos run (the program saw $year) and chaos ctl list work in the consumer"

write_consumer "$work/console" ', traits: ["Console"]' "$products"
(cd "$work/console" && swift package resolve >"$work/resolve-console.log" 2>&1) || { cat "$work/resolve-console.log"; exit 1; }
if ! grep -q '"identity" : "hummingbird"' "$work/console/Package.resolved"; then
    echo "check-consumer: with traits: [\"Console\"] the consumer does not resolve Hummingbird" >&2
    exit 1
fi
echo "check-consumer: with the Console trait, $(grep -c '"identity"' "$work/console/Package.resolved") packages pinned (Hummingbird among them)"
