import ChaosConsole
import ChaosControl
import ChaosKit
import Foundation

/// The points the console profile targets; kept alive for the whole run.
@MainActor let consolePoints: [InjectionPoint<Int, Int, Never>] = (0..<3).map { index in
    InjectionPoint(
        "bench.console.\(index)",
        catalogue: [
            CatalogueItem("plus", "adds a number", parameters: [.integer("value", "how much to add", default: 1)]) {
                parameters in
                let amount = try parameters.int("value")
                return .block { $0.arguments &+ amount }
            }
        ]
    ) { $0 }
}

/// A three-entry profile: a catalogue item with a parameter, a constant with a modifier and a lease.
@MainActor func consoleProfile() -> Data {
    _ = consolePoints
    return Data(
        #"""
        {"entries": [
          {"point": "bench.console.0", "provider": {"item": "plus", "parameters": {"value": 2}}},
          {"point": "bench.console.1", "provider": {"constant": 7, "probability": 0.5}},
          {"point": "bench.console.2", "provider": {"item": "plus", "lease": "30s"}}
        ]}
        """#.utf8)
}

/// Starts an endpoint in this process (no endpoint file) and waits until it listens; a
/// release build, so it opts in.
func startConsole() throws -> ChaosConsole {
    final class Box: @unchecked Sendable {
        // Written by the task before it signals `done`, read after the wait: the semaphore orders them.
        var result: Result<ChaosConsole?, ChaosError> = .success(nil)
    }
    let box = Box()
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        do throws(ChaosError) {
            box.result = .success(
                try await ChaosConsole.start(
                    .init(publishesEndpointFile: false, program: "chaos-bench", allowInReleaseBuilds: true)))
        } catch {
            box.result = .failure(error)
        }
        done.signal()
    }
    done.wait()
    guard let console = try box.result.get() else {
        throw ChaosError(.unsupportedPlatform, "the console does not start in this build")
    }
    return console
}

/// The point `journal_call_ns` calls, journaled, with the `Chaos` that applies its constant.
enum JournalPoints {
    static let constant = InjectionPoint<Int, Int, Never>("bench.console.journal") { $0 &+ 1 }
    static let chaos = Chaos(seed: 1)
}

/// `console_apply_ms`: a profile applied over the control API on loopback, end to end — a
/// new connection, the request, parsing, checking and applying the profile, the answer —
/// as `chaos ctl apply` or a UI-test runner does it. Each repetition takes the median of
/// 15 applies (each reverted, untimed, before the next).
@MainActor func consoleGroup() throws -> Group? {
    let console = try startConsole()
    let client = ControlClient(url: console.url, token: console.token)
    let profile = consoleProfile()
    try JournalPoints.chaos.profile(ProfileEntry(JournalPoints.constant, .constant(7))).apply()
    // Only this point: every other group's points stay unjournaled.
    CallJournal.shared.selection = .init(points: [JournalPoints.constant.name])
    return Group(
        name: "console",
        metrics: [
            Metric(name: "console_apply_ms", unit: .milliseconds, iterations: 15) { n in
                var samples: [Double] = []
                for _ in 0..<n {
                    let start = now()
                    let applied = try! client.apply(profile: profile)
                    samples.append(Double(now() - start))
                    for id in applied.entries { try! client.revert(entry: id) }
                }
                return UInt64(median(samples) * Double(n))
            },
            // One call of a point with a global `.constant` while the call journal records
            // it: the decision, the rendering of arguments and result, and the ring's lock.
            Metric(name: "journal_call_ns", unit: .nanoseconds, iterations: 200_000) { n in
                var sum = 0
                let elapsed = timed(n) { sum &+= JournalPoints.constant(sum & 0xFFFF) }
                blackHole(sum)
                return elapsed
            },
        ], keepAlive: [console])
}
