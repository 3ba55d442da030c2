import ChaosKit
import Synchronization
import Testing

/// Records what the core asks of an activation; can be told to refuse.
final class RecordingActivation: PointActivation {
    let events = Mutex<[String]>([])
    let refuse = Atomic<Bool>(false)

    func activate() throws(ChaosError) {
        if refuse.load(ordering: .relaxed) {
            events.withLock { $0.append("refused") }
            throw ChaosError(.alreadyHooked, subject: "test", "refused on purpose")
        }
        events.withLock { $0.append("activate") }
    }

    func deactivate() { events.withLock { $0.append("deactivate") } }
    func changed() { events.withLock { $0.append("changed") } }
    var log: [String] { events.withLock { $0 } }
}

@Suite struct ActivationTests {
    @Test func activatesOnFirstUseAndDeactivatesAfterTheLast() throws {
        let activation = RecordingActivation()
        let point = InjectionPoint<Int, Int, Never>("test.activation.count", activation: activation) { $0 }
        let first = ProfileEntry(point, .constant(1))
        let second = ProfileEntry(point, .constant(2))
        let a = Chaos(seed: 1)
        let b = Chaos(seed: 2)
        try a.profile(first).apply()
        #expect(activation.log == ["activate", "changed"])
        #expect(point(0) == 1)
        guard case .constant(1) = point.currentBehaviour else {
            Issue.record("expected constant(1)")
            return
        }
        try b.profile(second).apply()
        try a.revert(first)
        #expect(activation.log == ["activate", "changed", "changed", "changed"])
        try Chaos.with(ProfileEntry(point, .constant(3))) {
            #expect(point(0) == 3)
            guard case .varying = point.currentBehaviour else {
                Issue.record("a scope makes it varying")
                return
            }
        }
        b.revertAll()
        #expect(activation.log.last == "deactivate")
        #expect(activation.log.filter { $0 == "activate" }.count == 1)
        guard case .original = point.currentBehaviour else {
            Issue.record("expected original")
            return
        }
        // A scope alone activates and deactivates too.
        try Chaos.with(ProfileEntry(point, .constant(4))) { #expect(point(0) == 4) }
        #expect(Array(activation.log.suffix(4)) == ["activate", "changed", "changed", "deactivate"])
    }

    @Test func refusedActivationAppliesNothing() throws {
        let good = RecordingActivation()
        let bad = RecordingActivation()
        bad.refuse.store(true, ordering: .relaxed)
        let okPoint = InjectionPoint<Int, Int, Never>("test.activation.ok", activation: good) { $0 }
        let badPoint = InjectionPoint<Int, Int, Never>("test.activation.bad", activation: bad) { $0 }
        let chaos = Chaos(seed: 1)
        let error = #expect(throws: ChaosError.self) {
            try chaos.profile(ProfileEntry(okPoint, .constant(1)), ProfileEntry(badPoint, .constant(2))).apply()
        }
        #expect(error?.kind == .alreadyHooked)
        #expect(error?.subject?.contains("test.activation.bad") == true)
        #expect(good.log == ["activate", "deactivate"])
        #expect(okPoint(5) == 5 && badPoint(5) == 5)
        #expect(chaos.appliedEntries.isEmpty)
        #expect(throws: ChaosError.self) {
            try Chaos.with(ProfileEntry(okPoint, .constant(1)), ProfileEntry(badPoint, .constant(2))) {}
        }
        #expect(good.log == ["activate", "deactivate", "activate", "deactivate"])
    }
}
