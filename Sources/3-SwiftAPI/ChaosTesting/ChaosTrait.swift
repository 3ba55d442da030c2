public import ChaosKit
public import Foundation
public import Testing

/// A Swift Testing trait that runs each test case under chaos.
///
/// ```swift
/// @Test(.chaos(ProfileEntry(Points.now, .constant(.distantPast))))
/// func showsExpiredBanner() { … }
///
/// @Suite(.chaos(seed: 7, ProfileEntry(Points.fetch, .throwing(.offline).probability(0.3))))
/// struct OfflineTests { … }
/// ```
///
/// **Task-scoped** (`.chaos(…)`, `.chaos(seed:…)`, `.chaos(entries:)`): every test case —
/// each argument of a parameterized test, each test of a suite — runs in its own
/// `Chaos.with` scope, so tests running in parallel never see each other's chaos. On a
/// suite the trait is recursive: it applies once per test case of every test inside, and
/// not to the suite as a whole. Suite and test traits nest; for a point both set, the
/// innermost (the test's) wins. A trait without a seed inherits the seed of the trait
/// around it, or draws one.
///
/// **Process-wide** (`.chaos(global:…)`, `.processWideChaos`): see ``ProcessWideChaos``.
/// The test case runs while holding the process-wide lock; the entries are applied
/// globally before it and reverted after it, also when it throws or fails.
///
/// **Replay**: every issue the test case records — failed `#expect`s and `#require`s,
/// `Issue.record`, a thrown error — carries a ``ChaosReplay`` comment with the seeds and
/// entries in force, e.g. `ChaosKit replay: task-scoped chaos seed 42, entries: […]`.
/// Swift Testing has no public hook to *read* the issues of a test, so this works through
/// its issue-handling traits (`IssueHandlingTrait`, Swift 6.2+), which this trait applies
/// inside its own scope. An error thrown out of the test case is recorded by the trait
/// itself (as an `.errorCaught` issue, exactly as the runner would) with the comment, and
/// is not rethrown: the runner would record it a second time without the seed.
/// `CancellationError`s, errors of a cancelled test and the errors `#require` throws after
/// recording its own issue pass through untouched.
///
/// Invalid entries fail the test case before its body runs, with a `ChaosError` that
/// names the entry.
///
/// **Armed but never fired**: with `requireFired: true` (or ``failingIfNeverFired()``), a
/// test case in which one of the trait's entries never acted fails with one issue that names
/// every such entry and carries the trait's `ChaosReport` (seen, acted, passed per entry):
/// chaos that silently did nothing is the most common way a fault-injection test passes
/// without testing anything. `chaos run --require-fired` does the same for a program.
public struct ChaosTrait: TestTrait, SuiteTrait, TestScoping {
    enum Mode: Sendable {
        case scoped
        case processWide
    }

    let mode: Mode
    let seed: UInt64?
    let entries: @Sendable () throws -> [ProfileEntry]
    /// Whether a test case fails when one of the trait's entries never acted.
    var requiresFiring = false

    /// This trait, failing each test case in which one of its entries never acted: "armed
    /// but never fired", naming the entries, with the report. The same as passing
    /// `requireFired: true` to the `.chaos(…)` that made the trait; this spelling also fits
    /// a trait made elsewhere (e.g. `.chaos(profile:…)` kept in a constant).
    public func failingIfNeverFired() -> ChaosTrait {
        requiringFired(true)
    }

    /// This trait, failing test cases whose entries never acted when `required` is true.
    func requiringFired(_ required: Bool) -> ChaosTrait {
        var trait = self
        trait.requiresFiring = required
        return trait
    }

    /// Recursive: on a suite, the trait scopes every test case of every test inside it.
    public var isRecursive: Bool { true }

    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        let entries = try self.entries()
        switch mode {
        case .scoped:
            try await Chaos.with(entries, seed: seed) {
                try await Self.annotatingIssues(for: test, testCase: testCase, function)
                if requiresFiring, let scope = Chaos.currentScope {
                    Self.recordUnfired(entries, seed: scope.seed, counters: scope.counters, test: test)
                }
            }
        case .processWide where entries.isEmpty && seed == nil:
            // `.processWideChaos`: only the lock; the test applies what it needs itself.
            try await ProcessWideChaos.withExclusiveAccess(function)
        case .processWide:
            try await ProcessWideChaos.with(entries, seed: seed) {
                try await Self.annotatingIssues(for: test, testCase: testCase, function)
                if requiresFiring, let chaos = ProcessWideChaos.applied {
                    Self.recordUnfired(entries, seed: chaos.seed, counters: chaos.counters, test: test)
                }
            }
        }
    }

    /// Records one issue naming every one of `entries` that never acted (or has no counters:
    /// it was never applied), followed by the report of `entries` from `counters`.
    static func recordUnfired(_ entries: [ProfileEntry], seed: UInt64, counters: [EntryCounters], test: Test) {
        let ids = Set(entries.map(\.id))
        let report = ChaosReport(seed: seed, counters: counters.filter { $0.entry.map(ids.contains) == true })
        let reported = Set(report.entries.map(\.entry))
        let unfired =
            report.neverActed.map { "entry \($0.label) (\(Self.calls($0.seen)) reached it)" }
            + entries.filter { !reported.contains($0.id.number) }.map { "entry \($0.id) \($0) (never applied)" }
        guard !unfired.isEmpty else { return }
        Issue.record(
            "armed but never fired: \(unfired.joined(separator: "; "))\nChaosKit report: \(report)",
            sourceLocation: test.sourceLocation)
    }

    /// `no call`, `1 call`, `3 calls`.
    private static func calls(_ count: Int) -> String {
        count == 0 ? "no call" : count == 1 ? "1 call" : "\(count) calls"
    }

    /// Runs `function` so that every issue it records carries the chaos in force, and
    /// records an error it throws (with that chaos) instead of rethrowing it.
    static func annotatingIssues(
        for test: Test, testCase: Test.Case?,
        _ function: @Sendable () async throws -> Void
    ) async throws {
        // Issue handling needs a running test (outside one there is nothing to annotate).
        guard let replay = ChaosReplay.current, Test.current != nil else {
            return try await function()
        }
        let handler = IssueHandlingTrait.compactMapIssues { issue in
            // Issues are handled in the task that records them: a scope opened inside the
            // test body (e.g. its own `Chaos.with`) is the one to report, when there is one.
            (ChaosReplay.current ?? replay).annotating(issue)
        }
        try await handler.provideScope(for: test, testCase: testCase) {
            do {
                try await function()
            } catch {
                guard shouldRecord(error) else { throw error }
                Issue.record(error, replay.comment, sourceLocation: test.sourceLocation)
            }
        }
    }

    /// Whether an error thrown out of a test case is a failure the trait should record.
    static func shouldRecord(_ error: any Error) -> Bool {
        if error is ExpectationFailedError { return false }  // `#require` recorded it already
        if error is CancellationError { return false }
        // `Test.cancel()` throws an error of a type internal to Swift Testing after
        // cancelling the test case's task.
        if Task.isCancelled { return false }
        return true
    }
}

extension Trait where Self == ChaosTrait {
    /// Runs each test case in its own task scope with `entries` applied; the seed is
    /// inherited from a trait around this one, or drawn. With `requireFired`, a test case in
    /// which one of them never acted fails (see ``ChaosTrait``).
    public static func chaos(_ entries: ProfileEntry..., requireFired: Bool = false) -> Self {
        ChaosTrait(mode: .scoped, seed: nil, entries: { entries }).requiringFired(requireFired)
    }

    /// Runs each test case in its own task scope with `entries` applied and every random
    /// choice derived from `seed` — the way to replay a failure. With `requireFired`, a test
    /// case in which one of them never acted fails.
    public static func chaos(seed: UInt64, _ entries: ProfileEntry..., requireFired: Bool = false) -> Self {
        ChaosTrait(mode: .scoped, seed: seed, entries: { entries }).requiringFired(requireFired)
    }

    /// Runs each test case in its own task scope with the entries `entries` makes;
    /// it is called once per test case, so each case can get fresh entries.
    ///
    /// A trait cannot see a parameterized test's arguments (Swift Testing 6.3 does not
    /// make them public); for chaos that depends on the argument, open a `Chaos.with`
    /// scope in the test body — it inherits this trait's seed when it has none.
    ///
    /// With `requireFired`, a test case in which one of the entries never acted fails.
    public static func chaos(
        seed: UInt64? = nil, requireFired: Bool = false, entries: @escaping @Sendable () throws -> [ProfileEntry]
    ) -> Self {
        ChaosTrait(mode: .scoped, seed: seed, entries: entries).requiringFired(requireFired)
    }

    /// Runs each test case in its own task scope with the enabled entries of the JSON
    /// profile at `path` (relative to the directory of the file that declares the trait,
    /// unless absolute), seeded by `seed`, else the profile's seed.
    ///
    /// Profiles name points, and Swift creates `static let` points lazily: pass the points
    /// the profile names as `points` so they exist when the entries are resolved. A profile
    /// that cannot be read or applied fails each test case with a `ChaosError` giving
    /// file, line, column and JSON path. With `requireFired`, a test case in which one of
    /// the profile's entries never acted fails.
    public static func chaos(
        profile path: String, seed: UInt64? = nil, requireFired: Bool = false, points: any Sendable...,
        relativeTo file: String = #filePath
    ) -> Self {
        _ = points
        let resolved =
            path.hasPrefix("/")
            ? path
            : URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(path).path
        let loaded = Result { () throws(ChaosError) -> ChaosProfile in try ChaosProfile.load(contentsOfFile: resolved) }
        return ChaosTrait(
            mode: .scoped, seed: seed ?? (try? loaded.get())?.seed,
            entries: {
                try loaded.get().profileEntries
            }
        ).requiringFired(requireFired)
    }

    /// Applies `entries` process-wide (`Chaos(seed:).apply()`) for each test case, while
    /// holding the process-wide lock so that no other test using process-wide chaos runs
    /// meanwhile; reverts them afterwards, also when the test throws or fails.
    ///
    /// Use this for chaos a task scope cannot carry: code on threads or detached tasks
    /// that do not inherit the test's task-locals, and (with the hooks module) C symbols.
    /// With `requireFired`, a test case in which one of the entries never acted fails.
    public static func chaos(global entries: ProfileEntry..., seed: UInt64? = nil, requireFired: Bool = false) -> Self {
        ChaosTrait(mode: .processWide, seed: seed, entries: { entries }).requiringFired(requireFired)
    }

    /// Like ``chaos(global:seed:requireFired:)``, with entries made once per test case by `entries`.
    public static func chaos(
        seed: UInt64? = nil, requireFired: Bool = false, global entries: @escaping @Sendable () throws -> [ProfileEntry]
    ) -> Self {
        ChaosTrait(mode: .processWide, seed: seed, entries: entries).requiringFired(requireFired)
    }

    /// Runs each test case on virtual time that starts at `start` (nil: the real time when
    /// the case starts), holding the process-wide lock: every clock of the process reads it,
    /// and sleeps and timers wait until the test moves it with `VirtualTime.advance(by:)`
    /// (ChaosHooks, which must be linked into the test: this is the `system.clock` item
    /// `virtual`, applied globally, and the point is found by name). With `flowing`, it
    /// also runs at real pace between advances. Threads that must keep real time (a
    /// server the test talks to) are exempted with `VirtualTime.exempt(_:)`.
    ///
    /// Virtual time is process-wide: suites that run in parallel and sleep, or read the
    /// clock, see it too. Keep such tests in a suite of their own, or in a process of their
    /// own.
    public static func virtualTime(start: Date? = nil, flowing: Bool = false) -> Self {
        ChaosTrait(
            mode: .processWide, seed: 0,
            entries: {
                var parameters: [String: ProfileValue] = ["flowing": .bool(flowing)]
                if let start { parameters["start"] = .string(ISO8601Date.format(start)) }
                return [ProfileEntry(point: "system.clock", .catalogue("virtual", ProfileParameters(parameters)))]
            })
    }

    /// Holds the process-wide lock for each test case without applying anything: for
    /// tests that apply global chaos (or install hooks) themselves, or that must not run
    /// while another test's process-wide chaos is in force.
    public static var processWideChaos: Self {
        ChaosTrait(mode: .processWide, seed: nil, entries: { [] })
    }
}
