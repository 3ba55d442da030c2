import ChaosKit
import Dependencies
import Foundation

/// Holds a closure where the optimizer cannot see which one it is, like any injected dependency.
final class ClosureBox: @unchecked Sendable {
    // Written once in init, only read after: nothing mutates it concurrently.
    var body: (Int) -> Int
    init(_ body: @escaping (Int) -> Int) { self.body = body }
}

@inline(never) func makeIncrement() -> (Int) -> Int { { $0 &+ 1 } }

enum CorePoints {
    static let passthrough = InjectionPoint<Int, Int, Never>("bench.core.passthrough") { $0 &+ 1 }
    static let constant = InjectionPoint<Int, Int, Never>("bench.core.constant") { $0 &+ 1 }
    static let scoped = InjectionPoint<Int, Int, Never>("bench.core.scoped") { $0 &+ 1 }
    static let applyRevert = InjectionPoint<Int, Int, Never>("bench.core.apply-revert") { $0 &+ 1 }
}

func coreGroup() throws -> Group {
    let direct = ClosureBox(makeIncrement())
    let chaos = Chaos(seed: 1)
    try chaos.profile(ProfileEntry(CorePoints.constant, .constant(7))).apply()
    let scopedEntry = ProfileEntry(CorePoints.scoped, .constant(7))
    let applyRevertEntry = ProfileEntry(CorePoints.applyRevert, .constant(7))
    let fixedDate = Date(timeIntervalSince1970: 0)

    return Group(
        name: "core",
        metrics: [
            Metric(name: "direct_call_ns", unit: .nanoseconds, iterations: 20_000_000) { n in
                var sum = 0
                let elapsed = timed(n) { sum &+= direct.body(sum) }
                blackHole(sum)
                return elapsed
            },
            Metric(name: "point_passthrough_ns", unit: .nanoseconds, iterations: 20_000_000) { n in
                var sum = 0
                let elapsed = timed(n) { sum &+= CorePoints.passthrough(sum) }
                blackHole(sum)
                return elapsed
            },
            Metric(name: "point_constant_ns", unit: .nanoseconds, iterations: 2_000_000) { n in
                var sum = 0
                let elapsed = timed(n) { sum &+= CorePoints.constant(sum) }
                blackHole(sum)
                return elapsed
            },
            Metric(name: "point_scoped_ns", unit: .nanoseconds, iterations: 1_000_000) { n in
                var sum = 0
                let elapsed = try! Chaos.with(scopedEntry, seed: 1) {
                    timed(n) { sum &+= CorePoints.scoped(sum) }
                }
                blackHole(sum)
                return elapsed
            },
            Metric(name: "swift_dependencies_date_ns", unit: .nanoseconds, iterations: 100_000) { n in
                withDependencies {
                    $0.date.now = fixedDate
                } operation: {
                    @Dependency(\.date.now) var current
                    var last = Date.distantPast
                    let elapsed = timed(n) { last = current }
                    blackHole(last)
                    return elapsed
                }
            },
            Metric(name: "deps_stored_read_ns", unit: .nanoseconds, iterations: 100_000) { n in
                withDependencies {
                    $0.date.now = fixedDate
                } operation: {
                    var last = Date.distantPast
                    let elapsed = timed(n) {
                        @Dependency(\.date.now) var current
                        last = current
                    }
                    blackHole(last)
                    return elapsed
                }
            },
            Metric(name: "apply_revert_ns", unit: .nanoseconds, iterations: 200_000) { n in
                let builder = Chaos(seed: 1)
                return timed(n) {
                    try! builder.profile(applyRevertEntry).apply()
                    try! builder.revert(applyRevertEntry)
                }
            },
        ])
}

/// `chaos-bench --core-loop NAME N`: one core metric's body, N times.
func coreLoop(_ name: String, _ count: Int) throws {
    var sum = 0
    switch name {
    case "constant":
        let chaos = Chaos(seed: 1)
        try chaos.profile(ProfileEntry(CorePoints.constant, .constant(7))).apply()
        for _ in 0..<count { sum &+= CorePoints.constant(sum) }
        chaos.revertAll()
    case "scoped":
        try Chaos.with(ProfileEntry(CorePoints.scoped, .constant(7)), seed: 1) {
            for _ in 0..<count { sum &+= CorePoints.scoped(sum) }
        }
    case "apply-revert":
        let entry = ProfileEntry(CorePoints.applyRevert, .constant(7))
        let builder = Chaos(seed: 1)
        for _ in 0..<count {
            try builder.profile(entry).apply()
            try builder.revert(entry)
        }
    default:
        throw ChaosError(.invalidProvider, "no core loop named '\(name)'; use constant, scoped or apply-revert")
    }
    blackHole(sum)
}
