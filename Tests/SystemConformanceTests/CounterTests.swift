import CSystemProbes
import ChaosHooks
import ChaosKit
import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
extension SystemConformanceTests {
    /// In this process, applying or reverting any system entry installs a new plan; an entry
    /// that stays applied meanwhile must count every call it decided, under whichever plan.
    @Test func anEntryCountsEveryCallWhileOtherEntriesComeAndGo() throws {
        SystemPoints.register()
        let name = "CHAOS_COUNTED_\(getpid())"
        func profile(_ variable: String) throws -> ChaosProfile {
            try ChaosProfile.decode(
                json: #"""
                    {"entries": [{"point": "system.getenv",
                      "provider": {"item": "set", "parameters": {"name": "\#(variable)", "value": "counted"}}}]}
                    """#,
                file: "\(variable).json")
        }
        let persistent = try profile(name).apply(seed: 1)
        defer { persistent.revertAll() }
        let other = try profile("CHAOS_NOT_COUNTED")
        let stop = SharedCounter()
        let calls = SharedCounter()
        let finished = SharedCounter()
        let wrongAnswers = SharedCounter()
        let batch = Array(repeating: name, count: 100)
        Thread {
            // C from start to end: only the probe's getenv calls reach the entry.
            while stop.current == 0 {
                let answer = Probe.run(["getenv"] + batch)
                let answered = answer.line.split(separator: " ").filter { $0 == "\(name)=counted" }
                if answer.status != 0 || answered.count != batch.count { wrongAnswers.increment() }
                for _ in batch { calls.increment() }
            }
            finished.increment()
        }.start()
        var wrong: [EntryCounters] = []
        for _ in 0..<300 {
            let applied = try other.apply(seed: 2)
            let counters = persistent.counters[0]
            if counters.seen != counters.acted + counters.passed { wrong.append(counters) }
            applied.revertAll()
        }
        stop.increment()
        while finished.current == 0 { usleep(1000) }
        let counters = persistent.counters[0]
        #expect(wrong.isEmpty, "\(wrong.count) reads did not add up, e.g. \(wrong.prefix(3))")
        #expect(calls.current > 0 && wrongAnswers.current == 0)
        // Acted is exact: only the probe's calls name the variable. Seen may be more: the
        // tests share this process, and another test's getenv reaches the entry and passes.
        #expect(
            counters.acted == calls.current && counters.seen >= counters.acted,
            "the probe called getenv \(calls.current) times; the entry counted \(counters)")
    }
}
#endif
