import ChaosKit
import Foundation

/// What `chaos explore` tells: the failure table on standard output, a replay profile per
/// failure under --out, and the --report JSON (its schema is in Docs/Explore.md).
struct ExploreOutput {
    let space: ExploreSpace
    let program: [String]
    let seed: UInt64
    let setup: String?
    let outDirectory: String
    let results: Exploration.Results

    /// The replay profile of failure `index` (from 0).
    func replayPath(_ index: Int) -> String {
        (outDirectory as NSString).appendingPathComponent("failure-\(index + 1).json")
    }

    /// The command that replays failure `index`, with absolute paths: a replay runs in a
    /// fresh directory set up as the run's was (relative paths of the space name files there).
    func replayCommand(_ index: Int) -> String {
        let program = [Explore.resolvedProgram(self.program[0])] + self.program.dropFirst()
        return ([ToolName.typed, "run", "--profile", Explore.absolute(replayPath(index)), "--"] + program)
            .map(Self.shellWord).joined(separator: " ")
    }

    /// Writes each failure's replay profile, after removing those of an earlier exploration.
    func writeReplays() throws {
        let manager = FileManager.default
        try manager.createDirectory(atPath: outDirectory, withIntermediateDirectories: true)
        for name in (try? manager.contentsOfDirectory(atPath: outDirectory)) ?? []
        where name.hasPrefix("failure-") && name.hasSuffix(".json") {
            try manager.removeItem(atPath: (outDirectory as NSString).appendingPathComponent(name))
        }
        for (index, failure) in results.failures.enumerated() {
            let placements = failure.placement.faults.map { (candidate: $0.candidate, call: $0.call) }
            let text = try space.replayProfile(placements, seed: seed).jsonText()
            try (text + "\n").write(toFile: replayPath(index), atomically: true, encoding: .utf8)
        }
    }

    /// A fault as a table cell: `#1 system.files enospc(…) call 3 of 7`.
    func describe(_ fault: PlacedFault, in result: ExploreRunResult) -> String {
        let candidate = space.candidates[fault.candidate]
        let call = result.lastActs[candidate.number].map { ": \($0)" } ?? ""
        return
            "#\(candidate.number) \(candidate.entry.pointName) \(candidate.entry.provider.summary.prefix(100)), call \(fault.call) of \(fault.of)\(call)"
    }

    /// The summary and the failing placements, grouped by outcome.
    func table() -> String {
        var lines: [String] = []
        let calls = zip(space.candidates, results.counts).map { "#\($0.number) \($1)" }.joined(separator: ", ")
        lines.append(
            "chaos explore: baseline passed in \(ExploreRunner.seconds(results.baseline.seconds)); calls targeted: \(calls)"
        )
        let flaky = results.failures.filter(\.flaky).count
        var summary =
            "chaos explore: \(results.placements) placements in \(results.runs) runs (\(ExploreRunner.seconds(results.seconds))), \(results.failures.count - flaky) failing"
        if flaky > 0 { summary += ", \(flaky) flaky (failed once, then passed)" }
        lines.append(summary)
        if results.notReached > 0 {
            lines.append(
                "chaos explore: in \(results.notReached) placements the fault never acted: the run ended, or went another way, before its call"
            )
        }
        if results.pairsSkipped > 0 {
            lines.append("chaos explore: \(results.pairsSkipped) pairs left out: one of their faults fails alone")
        }
        var groups: [String: [Int]] = [:]
        var order: [String] = []
        for (index, failure) in results.failures.enumerated() {
            let outcome = failure.result.outcome(timeout: results.timeout)
            if groups[outcome] == nil { order.append(outcome) }
            groups[outcome, default: []].append(index)
        }
        for outcome in order {
            lines.append("")
            lines.append(outcome)
            for index in groups[outcome]! {
                let failure = results.failures[index]
                let faults = failure.placement.faults.map { describe($0, in: failure.result) }.joined(
                    separator: " + ")
                lines.append("  \(faults)\(failure.flaky ? "  (flaky)" : "")")
                lines.append("    replay: \(replayCommand(index))")
            }
        }
        if setup != nil, !results.failures.isEmpty {
            lines.append("")
            lines.append("(replay in a fresh directory after running --setup there, as each run did)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The --report JSON.
    func writeReport(to path: String) throws {
        func fault(_ fault: PlacedFault, _ result: ExploreRunResult? = nil) -> [String: Any] {
            let candidate = space.candidates[fault.candidate]
            var object: [String: Any] = [
                "entry": candidate.number, "point": candidate.entry.pointName,
                "provider": candidate.entry.provider.summary, "call": fault.call, "of": fault.of,
            ]
            // What the call was, where the engine noted it (a single placement: its act).
            if let act = result?.lastActs[candidate.number] { object["what"] = act }
            return object
        }
        let baseline: [String: Any] = [
            "seconds": results.baseline.seconds,
            "calls": zip(space.candidates, results.counts).map { candidate, count in
                [
                    "entry": candidate.number, "point": candidate.entry.pointName,
                    "provider": candidate.entry.provider.summary, "calls": count,
                ] as [String: Any]
            },
        ]
        let failures: [[String: Any]] = results.failures.enumerated().map { index, failure in
            // Each entry notes its last act: one per entry is what the call was.
            let distinct = Set(failure.placement.faults.map(\.candidate)).count == failure.placement.faults.count
            var object = fault(failure.placement.faults[0], distinct ? failure.result : nil)
            object["outcome"] = failure.result.outcome(timeout: results.timeout)
            object["exitStatus"] = failure.result.exitStatus.map { Int($0) as Any } ?? NSNull()
            object["signal"] = failure.result.signal.map { Int($0) as Any } ?? NSNull()
            object["timedOut"] = failure.result.timedOut
            object["flaky"] = failure.flaky
            object["replayProfile"] = replayPath(index)
            object["replay"] = replayCommand(index)
            if failure.placement.faults.count > 1 {
                object["placements"] = failure.placement.faults.map { fault($0, distinct ? failure.result : nil) }
            }
            return object
        }
        let report: [String: Any] = [
            "program": program, "seed": seed, "baseline": baseline, "runs": results.runs,
            "placements": results.placements, "notReached": results.notReached, "timeoutSeconds": results.timeout,
            "failures": failures,
        ]
        let data = try JSONSerialization.data(withJSONObject: report, options: [.prettyPrinted, .sortedKeys])
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// `word`, quoted for a POSIX shell when it needs to be.
    static func shellWord(_ word: String) -> String {
        let plain = word.allSatisfy { $0.isLetter || $0.isNumber || "-_./=:,+@%".contains($0) }
        if plain, !word.isEmpty { return word }
        return "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
