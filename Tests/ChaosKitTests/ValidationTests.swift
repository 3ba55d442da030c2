import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Bad input: each mistake is a typed `ChaosError` of the right kind, the message names the
/// entry and the fix, and nothing of the failed `apply()` takes effect.
@Suite struct ValidationTests {
    /// Applies a valid entry and then `bad` in one `apply()`, and checks that it fails with
    /// `kind`, names `bad`, says `mentions`, and leaves the valid entry unapplied.
    @discardableResult
    static func expectRejected(
        _ bad: ProfileEntry, _ kind: ChaosError.Kind, mentioning mentions: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) -> ChaosError? {
        let bystander = InjectionPoint<Void, String, Never>(uniqueName("bystander")) { "original" }
        let valid = ProfileEntry(bystander, .constant("applied"))
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        let error = expectChaosError(kind, sourceLocation: sourceLocation) {
            try chaos.profile(valid, bad).apply()
        }
        if let error {
            #expect(
                error.subject?.contains("entry \(bad.id)") == true, "subject names the entry: \(error)",
                sourceLocation: sourceLocation)
            #expect(
                error.description.contains(bad.pointName), "names the point: \(error)", sourceLocation: sourceLocation)
            for text in mentions {
                let note = "message should mention '\(text)': \(error.message)"
                #expect(error.message.contains(text), Comment(rawValue: note), sourceLocation: sourceLocation)
            }
        }
        // All or nothing: the valid entry of the same apply() did not take effect.
        #expect(bystander() == "original", "a failed apply() must change nothing", sourceLocation: sourceLocation)
        #expect(chaos.appliedEntries.isEmpty, sourceLocation: sourceLocation)
        #expect(bystander.core.activity.load(ordering: .relaxed) == 0, sourceLocation: sourceLocation)
        // The profiled list was emptied: applying again applies nothing.
        #expect(throws: Never.self, sourceLocation: sourceLocation) { try chaos.apply() }
        #expect(bystander() == "original", sourceLocation: sourceLocation)
        return error
    }

    static func datePoint() -> InjectionPoint<Void, Date, Never> {
        InjectionPoint(uniqueName("date")) { Date(timeIntervalSince1970: 0) }
    }

    // MARK: Name-based entries

    @Test func unknownPointName() {
        Self.expectRejected(
            ProfileEntry(point: "no.such", .original), .unknownPoint, mentioning: ["no live injection point"])
    }

    @Test func unknownPointNameSuggestsCloseNames() {
        let prefix = "suggest\(UUID().uuidString.prefix(8))"
        let point = InjectionPoint<Void, Int, Never>("\(prefix).clock") { 0 }
        let error = Self.expectRejected(
            ProfileEntry(point: "\(prefix).clok", .original), .unknownPoint, mentioning: ["did you mean"])
        #expect(error?.message.contains(point.name) == true)
    }

    @Test func constantOfWrongType() {
        let point = Self.datePoint()
        let error = Self.expectRejected(
            ProfileEntry(point: point.name, .constant("text")), .valueTypeMismatch, mentioning: ["Date", "String"])
        #expect(point() == Date(timeIntervalSince1970: 0))
        _ = error
    }

    @Test func nilOnNonOptionalPoint() {
        let point = Self.datePoint()
        Self.expectRejected(
            ProfileEntry(point: point.name, .nil), .valueTypeMismatch, mentioning: ["Date", "cannot be nil"])
        #expect(point() == Date(timeIntervalSince1970: 0))
    }

    @Test func randomOnTypeWithoutRandomChaosValue() {
        let point = InjectionPoint<Void, Opaque, Never>(uniqueName()) { Opaque(value: 1) }
        Self.expectRejected(
            ProfileEntry(point: point.name, .random), .valueTypeMismatch, mentioning: ["Opaque", "RandomChaosValue"])
        #expect(point() == Opaque(value: 1))
    }

    @Test func throwingErrorOfWrongType() throws {
        let point = InjectionPoint<Void, Int, TestFailure>(uniqueName()) { () throws(TestFailure) -> Int in 1 }
        Self.expectRejected(
            ProfileEntry(point: point.name, .throwing(OtherError())), .valueTypeMismatch,
            mentioning: ["OtherError", "TestFailure"])
        #expect(try point() == 1)
    }

    @Test func throwingOnNonThrowingPoint() {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        Self.expectRejected(
            ProfileEntry(point: point.name, .throwing(TestFailure.offline)), .valueTypeMismatch,
            mentioning: ["cannot throw"])
        #expect(point() == 1)
    }

    @Test func badValueInsideNameBasedSequential() {
        let point = Self.datePoint()
        Self.expectRejected(
            ProfileEntry(point: point.name, .sequential([.original, .times(2, .constant(42))])),
            .valueTypeMismatch, mentioning: ["Date", "Int"]
        )
    }

    @Test func nameBasedModifierProblems() {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        Self.expectRejected(
            ProfileEntry(point: point.name, .probability(1.5, .constant(2))), .invalidProvider,
            mentioning: ["probability(1.5)", "0…1"])
        Self.expectRejected(
            ProfileEntry(point: point.name, .sequential([])), .invalidProvider, mentioning: ["sequential([])"])
        Self.expectRejected(
            ProfileEntry(point: point.name, .times(0, .constant(2))), .invalidProvider, mentioning: ["times(0)"])
        Self.expectRejected(
            ProfileEntry(point: point.name, .delayed(.milliseconds(-1), .constant(2))), .invalidProvider,
            mentioning: ["negative"])
        #expect(point() == 1)
    }

    // MARK: Typed entries with out-of-range parameters

    @Test(arguments: [1.5, -0.1, Double.nan, Double.infinity])
    func probabilityOutsideZeroOne(p: Double) {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        Self.expectRejected(
            ProfileEntry(point, .constant(2).probability(p)), .invalidProvider, mentioning: ["probability(", "0…1"])
        #expect(point() == 1)
    }

    @Test func probabilityOutsideZeroOneOnAsyncThrowingPoint() async throws {
        let point = AsyncInjectionPoint<Void, Int, TestFailure>(uniqueName()) { () async throws(TestFailure) -> Int in 1
        }
        Self.expectRejected(
            ProfileEntry(point, .throwing(.offline).probability(1.5)), .invalidProvider,
            mentioning: ["probability(1.5)"])
        Self.expectRejected(
            ProfileEntry(point, .throwing(.offline).probability(-0.1)), .invalidProvider,
            mentioning: ["probability(-0.1)"])
        #expect(try await point() == 1)
    }

    @Test func emptySequential() {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        Self.expectRejected(
            ProfileEntry(point, .sequential([])), .invalidProvider, mentioning: ["sequential([])", "at least one"])
        // Also when nested.
        Self.expectRejected(
            ProfileEntry(point, .composite([], otherwise: .sequential([]).times(2))),
            .invalidProvider, mentioning: ["sequential([])"]
        )
        #expect(point() == 1)
    }

    @Test func timesZeroOrNegative() {
        let point = AsyncInjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        Self.expectRejected(
            ProfileEntry(point, .constant(2).times(0)), .invalidProvider, mentioning: ["times(0)", "times(1)"])
        Self.expectRejected(ProfileEntry(point, .constant(2).times(-3)), .invalidProvider, mentioning: ["times(-3)"])
    }

    @Test func negativeDelay() {
        let point = InjectionPoint<Void, Int, TestFailure>(uniqueName()) { () throws(TestFailure) -> Int in 1 }
        Self.expectRejected(
            ProfileEntry(point, .throwing(.offline).delayed(by: .milliseconds(-5))),
            .invalidProvider, mentioning: ["negative", "zero or more"]
        )
    }

    @Test func problemInsideCompositeCase() {
        typealias P = ChaosProvider<Int, Int, Never>
        let point = InjectionPoint<Int, Int, Never>(uniqueName()) { $0 }
        Self.expectRejected(
            ProfileEntry(point, .composite([P.when({ $0 > 0 }, .constant(1).probability(2))])),
            .invalidProvider, mentioning: ["probability(2.0)"]
        )
    }

    // MARK: Duplicate names

    @Test func duplicatePointName() {
        let name = uniqueName()
        let first = InjectionPoint<Void, Int, Never>(name) { 1 }
        let second = InjectionPoint<Void, Int, Never>(name) { 2 }
        Self.expectRejected(
            ProfileEntry(first, .constant(3)), .duplicatePointName, mentioning: ["2 live injection points", "own name"])
        Self.expectRejected(
            ProfileEntry(second, .constant(3)), .duplicatePointName, mentioning: ["2 live injection points"])
        Self.expectRejected(ProfileEntry(point: name, .constant(3)), .duplicatePointName, mentioning: ["own name"])
        #expect(first() == 1)
        #expect(second() == 2)
    }

    @Test func duplicateNameAcrossSyncAndAsyncPoints() async {
        let name = uniqueName()
        let sync = InjectionPoint<Void, Int, Never>(name) { 1 }
        let async = AsyncInjectionPoint<Void, Int, Never>(name) { 2 }
        Self.expectRejected(
            ProfileEntry(async, .constant(3)), .duplicatePointName, mentioning: ["2 live injection points"])
        #expect(sync() == 1)
        #expect(await async() == 2)
    }

    @Test func duplicateNameInScope() {
        let name = uniqueName()
        let first = InjectionPoint<Void, Int, Never>(name) { 1 }
        let second = InjectionPoint<Void, Int, Never>(name) { 2 }
        let error = #expect(throws: ChaosError.self) {
            try Chaos.with([ProfileEntry(first, .constant(3))]) {}
        }
        #expect(error?.kind == .duplicatePointName)
        withExtendedLifetime(second) {}
    }

    // MARK: Applying and reverting twice

    @Test func applyingTheSameEntryTwice() throws {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        let entry = ProfileEntry(point, .constant(2))
        try chaos.profile(entry).apply()
        let error = expectChaosError(.alreadyApplied) { try chaos.profile(entry).apply() }
        #expect(error?.subject?.contains("entry \(entry.id)") == true)
        #expect(error?.message.contains("revert it first") == true)
        #expect(chaos.appliedEntries == [entry])
        try chaos.revert(entry)
        #expect(point() == 1, "one revert undoes the one application")
    }

    @Test func sameEntryTwiceInOneApply() {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        let entry = ProfileEntry(point, .constant(2))
        let bystander = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        expectChaosError(.alreadyApplied) {
            try chaos.profile(ProfileEntry(bystander, .constant(5)), entry, entry).apply()
        }
        #expect(point() == 1)
        #expect(bystander() == 1)
        #expect(chaos.appliedEntries.isEmpty)
    }

    @Test func copiesOfAnEntryShareItsIdentity() throws {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        let entry = ProfileEntry(point, .constant(2))
        let copy = entry
        let lookalike = ProfileEntry(point, .constant(2))
        #expect(copy == entry && copy.id == entry.id)
        #expect(lookalike != entry)
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(entry).apply()
        expectChaosError(.alreadyApplied) { try chaos.profile(copy).apply() }
        try chaos.revert(copy)
        #expect(point() == 1)
    }

    @Test func revertingAnEntryNotApplied() throws {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        let entry = ProfileEntry(point, .constant(2))
        let chaos = Chaos(seed: 1)
        let error = expectChaosError(.notApplied) { try chaos.revert(entry) }
        #expect(error?.subject?.contains("entry \(entry.id)") == true)
        #expect(error?.message.contains("Chaos that applied it") == true)

        // Reverting twice, or with another Chaos, is the same mistake.
        try chaos.profile(entry).apply()
        expectChaosError(.notApplied) { try Chaos(seed: 2).revert(entry) }
        #expect(point() == 2, "a failed revert changes nothing")
        try chaos.revert(entry)
        expectChaosError(.notApplied) { try chaos.revert(entry) }
        #expect(point() == 1)
    }

    @Test func profiledButNotAppliedIsNotApplied() {
        let point = InjectionPoint<Void, Int, Never>(uniqueName()) { 1 }
        let entry = ProfileEntry(point, .constant(2))
        let chaos = Chaos(seed: 1)
        chaos.profile(entry)
        #expect(point() == 1, "profile() alone applies nothing")
        expectChaosError(.notApplied) { try chaos.revert(entry) }
    }
}
