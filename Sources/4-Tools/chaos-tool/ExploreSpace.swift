import ChaosHooks
import ChaosKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The candidate faults of `chaos explore`, compiled once: each enabled entry of the
/// space's profile, placed with an `at` node whose call list is the only text a run
/// changes. A run's plan is the compiled text with those lists filled in, so a placement
/// costs a run, never a compile.
struct ExploreSpace {
    /// One candidate fault: an enabled entry of the space.
    struct Candidate {
        /// The entry's number in the profile, from 1 (as `chaos run` reports it).
        let number: Int
        let entry: ChaosProfile.Entry
        /// The compiled plan's line that holds the entry's call list.
        let placementLine: Int
        /// Whether it loses power: it is also placed one change past the last, which means
        /// when the program has ended (a program that says "saved" after its last change).
        let losesPower: Bool
    }

    let candidates: [Candidate]
    /// The profile's seed, if it fixes one.
    let seed: UInt64?
    /// The compiled plan file (`chaoskit-run 1`, directives, `plan`, the plan), one line
    /// per element.
    private let lines: [String]

    /// The directory relative paths of the space were resolved from: each run's plan
    /// names its own scratch directory there instead.
    let scratchTemplate: String

    /// Compiles `profile`, resolving its relative paths from `scratchTemplate` (an existing
    /// directory): in every run they name files of that run's scratch directory. An error
    /// (located in the profile) says which entry cannot be explored and why.
    init(_ profile: ChaosProfile, scratchTemplate: String) throws(ChaosError) {
        self.scratchTemplate = scratchTemplate
        var placed = profile
        var numbers: [Int] = []
        for (index, entry) in profile.entries.enumerated() where entry.enabled {
            if entry.provider.isPlaced {
                throw entry.located(
                    ChaosError(
                        .invalidProvider, subject: entry.pointName,
                        "explore places each entry at each call itself; remove \"at\" from this entry"))
            }
            placed.entries[index].provider = entry.provider.placed(at: [1])
            numbers.append(index + 1)
        }
        guard !numbers.isEmpty else {
            throw ChaosError(
                .invalidProfile, subject: "explore",
                "the space has no enabled entry; give it the faults to try, e.g. {\"point\": \"system.files\", \"provider\": \"enospc\"}"
            )
        }
        let started = FileManager.default.currentDirectoryPath
        guard chdir(scratchTemplate) == 0 else {
            throw ChaosError(
                .invalidProfile, subject: "explore", "cannot enter the scratch template \(scratchTemplate)")
        }
        defer { _ = chdir(started) }
        let plan = try SystemRunPlan.compile(placed)
        losesPower = plan.losesPower
        lines = RunPlanFile.text(of: plan).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var placementLines: [Int: Int] = [:]
        var powerEntries: Set<Int> = []
        var current: Int?
        for (index, line) in lines.enumerated() {
            if line.hasPrefix("entry ") {
                current = Self.profileNumber(inEntryLine: line)
            } else if let number = current, line.hasPrefix("node "), line.contains(" at calls=1 child=") {
                placementLines[number] = index
            } else if let number = current, SystemRunPlan.isPowerLossNode(line) {
                powerEntries.insert(number)
            }
        }
        var candidates: [Candidate] = []
        for number in numbers {
            guard let line = placementLines[number] else {
                // The compiler dropped or merged the placement: explore would miss it silently.
                throw profile.entries[number - 1].located(
                    ChaosError(
                        .invalidProvider, subject: profile.entries[number - 1].pointName,
                        "explore cannot place this entry at one call (its compiled plan has no placement)"))
            }
            candidates.append(
                Candidate(
                    number: number, entry: profile.entries[number - 1], placementLine: line,
                    losesPower: powerEntries.contains(number)))
        }
        self.candidates = candidates
        self.seed = profile.seed
    }

    /// The plan file of a run in `scratch` in which each candidate (by index in
    /// ``candidates``) in `placements` acts at its listed calls and every other one only
    /// counts.
    func planFile(placements: [Int: [Int]], scratch: String) -> String {
        template(scratch: scratch).text(placements: placements)
    }

    /// The plan of runs in `scratch`, ready to take placements: made once per worker, so
    /// that a run only fills in its call lists.
    func template(scratch: String) -> PlanTemplate {
        let lines = self.lines.map { $0.replacingOccurrences(of: scratchTemplate, with: scratch) }
        return PlanTemplate(
            lines: lines,
            placements: candidates.map { candidate in
                let line = lines[candidate.placementLine]
                let split = line.range(of: " at calls=1 child=")!
                return (
                    candidate.placementLine, String(line[..<split.lowerBound]) + " at calls=",
                    " child=" + line[split.upperBound...]
                )
            })
    }

    /// Whether some candidate loses power: only a check can judge its runs.
    let losesPower: Bool

    /// A run's plan with its call lists left open.
    struct PlanTemplate: Sendable {
        let lines: [String]
        /// Per candidate: its line, and the text before and after its call list.
        let placements: [(line: Int, before: String, after: String)]

        func text(placements chosen: [Int: [Int]]) -> String {
            var lines = self.lines
            for (index, placement) in placements.enumerated() {
                let calls = chosen[index].map { $0.sorted().map(String.init).joined(separator: ",") } ?? "none"
                lines[placement.line] = placement.before + calls + placement.after
            }
            return lines.joined(separator: "\n")
        }
    }

    /// The profile that replays `placements` under `chaos run`: the placed entries alone,
    /// with the seed the runs used.
    func replayProfile(_ placements: [(candidate: Int, call: Int)], seed: UInt64) -> ChaosProfile {
        var byCandidate: [Int: [Int]] = [:]
        for placement in placements { byCandidate[placement.candidate, default: []].append(placement.call) }
        let entries = byCandidate.keys.sorted().map { index in
            var entry = candidates[index].entry
            entry.provider = entry.provider.placed(at: byCandidate[index]!.sorted())
            entry.location = ""
            return entry
        }
        return ChaosProfile(seed: seed, entries: entries)
    }

    /// N of a label `"#N point ← provider"` in an `entry` line.
    private static func profileNumber(inEntryLine line: String) -> Int? {
        guard let label = line.range(of: "label=\"#") else { return nil }
        let digits = line[label.upperBound...].prefix { $0.isNumber }
        return Int(digits)
    }
}
