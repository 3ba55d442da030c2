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
/// The conformance matrix (issue #22): every tree of `Matrix.cases`, written as code, JSON
/// and a `CHAOS` line, runs through every engine that can run it, and every cell must see
/// the case's one expected act/pass sequence.
///
/// | engine | system.files | the app point |
/// |---|---|---|
/// | Swift evaluator | a task scope (`Chaos.with`): Swift answers the engine's `ask` | a task scope |
/// | applied globally | the C engine in this process (the compiled plan) | the Swift point |
/// | `chaos run` | the probe program under the preload library, and again under the seccomp delivery (JSON and `CHAOS` only) | — |
///
/// Serialized, and one turn of the process-wide system chaos: the global cells install
/// plans and rebind GOT slots.
@Suite(
    .serialized, .processWideSystemChaos, .disabled(if: Sanitizers.thread, Sanitizers.threadReason),
    .enabled(if: Needs.cc, "no C compiler (cc) to build the probe program"))
struct ConformanceMatrixTests {
    @Test func theTableHoldsThirtyTreesEachWithOneExpectedCharacterPerCall() {
        #expect(Matrix.cases.count >= 30)
        #expect(Set(Matrix.cases.map(\.name)).count == Matrix.cases.count, "case names are unique")
        for matrixCase in Matrix.cases {
            #expect(
                matrixCase.expected.count == matrixCase.script.count
                    && matrixCase.expected.allSatisfy { $0 == "A" || $0 == "P" },
                "\(matrixCase.name): \(matrixCase.script.count) calls, expected '\(matrixCase.expected)'")
        }
        // A golden sequence that never acts, or always does, would not show the draws.
        for golden in [
            Matrix.goldenWrites, Matrix.goldenMatch, Matrix.goldenApp, Matrix.goldenAppMatch,
            Matrix.goldenTimesOverProbability, Matrix.goldenTimesOverSequentialProbability,
            Matrix.goldenProbabilityStep, Matrix.goldenAppTimesOverProbability, Matrix.goldenAppProbabilityStep,
        ] {
            // (An empty one is not recorded yet: its cases fail and say so.)
            #expect(
                golden.isEmpty || (golden.contains("A") && golden.contains("P")), "golden '\(golden)' shows no draws")
        }
    }

    @Test(arguments: Matrix.cases)
    func everyCellSeesTheExpectedSequence(_ matrixCase: MatrixCase) throws {
        let cells = MatrixRunner.run(matrixCase)
        // One line per disagreeing cell, to read the whole matrix's state at a glance.
        for cell in cells where !cell.agrees(with: matrixCase.expected) {
            print(
                "MATRIX DIFF \(matrixCase.name) | \(cell.front) × \(cell.engine) | expected \(matrixCase.expected) | got \(cell.got)"
            )
        }
        guard !matrixCase.expected.isEmpty else {
            Issue.record(
                "\(matrixCase.name): no golden sequence recorded; the cells gave \(cells.map { "\($0.front) × \($0.engine): \($0.got)" })"
            )
            return
        }
        for cell in cells {
            #expect(
                cell.got == matrixCase.expected,
                "\(matrixCase.name) — \(cell.front) × \(cell.engine): expected \(matrixCase.expected), got \(cell.got)")
        }
        // Every front end the case has reached every engine that takes it (chaos run reads
        // profiles, not code).
        let fronts = 1 + (matrixCase.json == nil ? 0 : 1) + (matrixCase.chaos == nil ? 0 : 1)
        #expect(cells.count == fronts * 2 + (matrixCase.point == .files ? (fronts - 1) * 2 : 0))
    }
}

/// One cell's answer.
struct MatrixCell {
    let front: String
    let engine: String
    let got: String

    func agrees(with expected: String) -> Bool { !expected.isEmpty && got == expected }
}

/// Runs one case through every front end and engine.
enum MatrixRunner {
    enum Front: String, CaseIterable {
        case code
        case json = "JSON"
        case chaos = "CHAOS"
    }

    static func run(_ matrixCase: MatrixCase) -> [MatrixCell] {
        SystemPoints.register()
        _ = MatrixApp.word
        var cells: [MatrixCell] = []
        for front in Front.allCases {
            switch front {
            case .code: break
            case .json where matrixCase.json == nil: continue
            case .chaos where matrixCase.chaos == nil: continue
            default: break
            }
            switch matrixCase.point {
            case .files:
                cells.append(cell(front, "Swift evaluator (task scope)") { try scopedFiles(matrixCase, front) })
                cells.append(cell(front, "C engine in-process") { try globalFiles(matrixCase, front) })
                if front != .code {
                    cells.append(cell(front, "chaos run") { try program(matrixCase, front, options: ["--quiet"]) })
                    cells.append(
                        cell(front, "chaos run --delivery seccomp") {
                            try program(matrixCase, front, options: ["--delivery", "seccomp", "--quiet"])
                        })
                }
            case .app:
                cells.append(
                    cell(front, "Swift evaluator (task scope)") { try appCalls(matrixCase, front, scoped: true) })
                cells.append(cell(front, "Swift evaluator (global)") { try appCalls(matrixCase, front, scoped: false) })
            }
        }
        return cells
    }

    private static func cell(_ front: Front, _ engine: String, _ body: () throws -> String) -> MatrixCell {
        do {
            return MatrixCell(front: front.rawValue, engine: engine, got: try body())
        } catch {
            return MatrixCell(front: front.rawValue, engine: engine, got: "error: \(error)")
        }
    }

    // MARK: Front ends

    private static func filled(_ text: String, _ dir: String) -> String {
        text.replacingOccurrences(of: "$DIR", with: dir)
    }

    /// The case's profile as its front end `front` writes it (code has none).
    private static func profile(_ matrixCase: MatrixCase, _ front: Front, _ dir: String) throws -> ChaosProfile? {
        switch front {
        case .code:
            return nil
        case .json:
            return try ChaosProfile.decode(
                json: #"{"seed": \#(matrixCase.seed), "entries": [\#(filled(matrixCase.json!, dir))]}"#,
                file: "\(matrixCase.name).json")
        case .chaos:
            return ChaosProfile(seed: matrixCase.seed, entries: try ChaosGrammar.parse(filled(matrixCase.chaos!, dir)))
        }
    }

    private static func entries(_ matrixCase: MatrixCase, _ front: Front, _ dir: String) throws -> [ProfileEntry] {
        try profile(matrixCase, front, dir)?.profileEntries ?? [matrixCase.code(dir)]
    }

    // MARK: system.files

    private static func probeArguments(_ matrixCase: MatrixCase, _ dir: String) -> [String] {
        ["script", dir, String(matrixCase.slowMS)] + matrixCase.script
    }

    private static func probed(_ result: Probe.Result) -> String {
        result.status == 0 ? result.line : "probe failed: \(result.line)"
    }

    /// Entries of a task scope: Swift answers every call of the point.
    private static func scopedFiles(_ matrixCase: MatrixCase, _ front: Front) throws -> String {
        let dir = try workspace(matrixCase.name, folders: ["io", "io2"])
        defer { remove(dir) }
        let entries = try entries(matrixCase, front, dir)
        let arguments = probeArguments(matrixCase, dir)
        return try Chaos.with(entries, seed: matrixCase.seed) { probed(Probe.run(arguments)) }
    }

    /// Entries applied globally: the fault engine decides from the compiled plan.
    private static func globalFiles(_ matrixCase: MatrixCase, _ front: Front) throws -> String {
        let dir = try workspace(matrixCase.name, folders: ["io", "io2"])
        defer { remove(dir) }
        let chaos: Chaos
        if let profile = try profile(matrixCase, front, dir) {
            chaos = try profile.apply(seed: matrixCase.seed)
        } else {
            chaos = Chaos(seed: matrixCase.seed).profile(try matrixCase.code(dir))
            try chaos.apply()
        }
        let result = Probe.run(probeArguments(matrixCase, dir))
        chaos.revertAll()
        return probed(result)
    }

    /// The probe program under `chaos run --seed`, with the profile written as JSON (a
    /// `CHAOS` line as the JSON its parsed entries write back).
    private static func program(_ matrixCase: MatrixCase, _ front: Front, options: [String] = []) throws -> String {
        try Build.requirePreload()
        let probe = try Build.probeProgram.get()
        let dir = try workspace(matrixCase.name, folders: ["io", "io2"])
        defer { remove(dir) }
        let text =
            front == .json
            ? #"{"seed": \#(matrixCase.seed), "entries": [\#(filled(matrixCase.json!, dir))]}"#
            : try profile(matrixCase, front, dir)!.jsonText()
        let file = dir + ".json"
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        defer { remove(file) }
        let outcome = try Command.run(
            [Build.chaos, "run"] + options + ["--profile", file, "--seed", String(matrixCase.seed), "--", probe]
                + probeArguments(matrixCase, dir))
        guard outcome.status == 0, outcome.errors.isEmpty else { return "chaos run: \(outcome)" }
        return outcome.line
    }

    // MARK: The app point

    private static func appCalls(_ matrixCase: MatrixCase, _ front: Front, scoped: Bool) throws -> String {
        let entries = try entries(matrixCase, front, "")
        let slow = Duration.milliseconds(matrixCase.slowMS)
        let calls = {
            matrixCase.script.map { argument -> String in
                let clock = ContinuousClock()
                let start = clock.now
                let answer = MatrixApp.word(argument)
                let took = clock.now - start
                return answer != argument.count || (matrixCase.slowMS > 0 && took >= slow) ? "A" : "P"
            }.joined()
        }
        if scoped { return try Chaos.with(entries, seed: matrixCase.seed, operation: calls) }
        let chaos = Chaos(seed: matrixCase.seed).profile(entries)
        try chaos.apply()
        defer { chaos.revertAll() }
        return calls()
    }
}
#endif
