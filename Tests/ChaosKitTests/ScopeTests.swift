import Dispatch
import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

/// Task-scoped chaos with `Chaos.with`: wins over global chaos, nests, ends with its scope,
/// and is invisible to tasks and threads outside it.
@Suite struct ScopeTests {
    static func syncPoint() -> InjectionPoint<Void, String, Never> {
        InjectionPoint(uniqueName()) { "original" }
    }

    static func asyncPoint() -> AsyncInjectionPoint<Void, String, TestFailure> {
        AsyncInjectionPoint(uniqueName()) { () async throws(TestFailure) -> String in "original" }
    }

    struct Boom: Error {}

    // MARK: Sync

    @Test func syncScopeAppliesOnlyInside() throws {
        let point = Self.syncPoint()
        #expect(Chaos.currentScope == nil)
        let entry = ProfileEntry(point, .constant("scoped"))
        let inside = try Chaos.with([entry], seed: 77) { () -> String in
            #expect(Chaos.currentScope?.seed == 77)
            #expect(Chaos.currentScope?.entries == [entry])
            return point()
        }
        #expect(inside == "scoped")
        #expect(point() == "original")
        #expect(Chaos.currentScope == nil)
        #expect(point.core.activity.load(ordering: .relaxed) == 0)
    }

    @Test func variadicSyncScope() throws {
        let a = Self.syncPoint()
        let b = InjectionPoint<Int, Int, TestFailure>(uniqueName()) { (n: Int) throws(TestFailure) -> Int in n }
        try Chaos.with(ProfileEntry(a, .constant("x")), ProfileEntry(b, .throwing(.offline)), seed: 1) {
            #expect(a() == "x")
            #expect(throws: TestFailure.offline) { try b(1) }
        }
        #expect(a() == "original")
        #expect(try b(1) == 1)
    }

    @Test func scopeWinsOverGlobal() throws {
        let point = Self.syncPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant("global"))).apply()
        try Chaos.with([ProfileEntry(point, .constant("scoped"))]) {
            #expect(point() == "scoped")
            // Global chaos applied while the scope is active still loses inside it.
            try chaos.profile(ProfileEntry(point, .constant("global 2"))).apply()
            #expect(point() == "scoped")
        }
        #expect(point() == "global 2")
    }

    @Test func scopeOfOriginalHidesGlobal() throws {
        let point = Self.syncPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant("global"))).apply()
        try Chaos.with([ProfileEntry(point, .original)]) {
            #expect(point() == "original")
        }
        #expect(point() == "global")
    }

    @Test func scopeOnOtherPointDoesNotHideGlobal() throws {
        let point = Self.syncPoint()
        let other = Self.syncPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant("global"))).apply()
        try Chaos.with([ProfileEntry(other, .constant("other"))]) {
            #expect(point() == "global")
            #expect(other() == "other")
        }
    }

    @Test func nestedScopesInnermostWins() throws {
        let point = Self.syncPoint()
        let second = Self.syncPoint()
        let outer = ProfileEntry(point, .constant("outer"))
        let outerSecond = ProfileEntry(second, .constant("outer second"))
        let inner = ProfileEntry(point, .constant("inner"))
        try Chaos.with([outer, outerSecond], seed: 10) {
            #expect(point() == "outer")
            try Chaos.with([inner], seed: 20) {
                #expect(point() == "inner")
                #expect(second() == "outer second", "the outer scope's other entries still apply")
                #expect(Chaos.currentScope?.seed == 20)
                #expect(Chaos.currentScope?.entries == [outer, outerSecond, inner])
            }
            try Chaos.with([ProfileEntry(second, .constant("inner second"))]) {
                #expect(Chaos.currentScope?.seed == 10, "an inner scope without a seed inherits the outer one")
                #expect(second() == "inner second")
            }
            #expect(point() == "outer")
            #expect(Chaos.currentScope?.entries == [outer, outerSecond])
        }
        #expect(point() == "original")
        #expect(second() == "original")
    }

    @Test func scopeEndsWhenOperationThrows() throws {
        let point = Self.syncPoint()
        #expect(throws: Boom.self) {
            try Chaos.with([ProfileEntry(point, .constant("scoped"))]) {
                #expect(point() == "scoped")
                throw Boom()
            }
        }
        #expect(point() == "original")
        #expect(point.core.activity.load(ordering: .relaxed) == 0)
        #expect(point.core.scopes.load(ordering: .relaxed) == 0)
    }

    @Test func invalidScopedEntryThrowsBeforeOperationRuns() throws {
        let point = Self.syncPoint()
        let other = Self.syncPoint()
        var ran = false
        let error = #expect(throws: ChaosError.self) {
            try Chaos.with([ProfileEntry(other, .constant("fine")), ProfileEntry(point, .constant("x").times(0))]) {
                ran = true
            }
        }
        #expect(error?.kind == .invalidProvider)
        #expect(!ran)
        #expect(other() == "original")
        #expect(other.core.activity.load(ordering: .relaxed) == 0)
    }

    @Test func scopedEntryIsInvisibleToAnotherThread() throws {
        let point = Self.syncPoint()
        let entered = DispatchSemaphore(value: 0)
        let checked = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        let seen = Recorder<String>()
        Thread {
            try? Chaos.with([ProfileEntry(point, .constant("scoped"))]) {
                entered.signal()
                checked.wait()  // stay inside the scope while the other thread calls
                seen.record("inside: \(point())")
            }
            done.signal()
        }.start()
        entered.wait()
        let outside = point()
        checked.signal()
        done.wait()
        #expect(outside == "original")
        #expect(seen.values == ["inside: scoped"])
        #expect(point() == "original")
    }

    // MARK: Async

    @Test func asyncScopeAppliesOnlyInside() async throws {
        let point = Self.asyncPoint()
        let entry = ProfileEntry(point, .throwing(.offline))
        try await Chaos.with([entry], seed: 5) {
            await #expect(throws: TestFailure.offline) { try await point() }
            #expect(Chaos.currentScope?.seed == 5)
            #expect(Chaos.currentScope?.entries == [entry])
        }
        #expect(try await point() == "original")
        #expect(Chaos.currentScope == nil)
        let variadic = try await Chaos.with(ProfileEntry(point, .constant("v"))) { try await point() }
        #expect(variadic == "v")
    }

    @Test func asyncScopeWinsOverGlobalAndNests() async throws {
        let point = Self.asyncPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant("global"))).apply()
        try await Chaos.with([ProfileEntry(point, .constant("outer"))]) {
            #expect(try await point() == "outer")
            try await Chaos.with([ProfileEntry(point, .constant("inner"))]) { () async throws in
                #expect(try await point() == "inner")
            }
            #expect(try await point() == "outer")
        }
        #expect(try await point() == "global")
    }

    @Test func childTasksInheritTheScope() async throws {
        let point = Self.asyncPoint()
        let sync = Self.syncPoint()
        try await Chaos.with([ProfileEntry(point, .constant("scoped")), ProfileEntry(sync, .constant("scoped sync"))]) {
            let results = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<4 {
                    group.addTask { try await point() + "/" + sync() }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results == Array(repeating: "scoped/scoped sync", count: 4))
            let unstructured = Task { try await point() }
            #expect(try await unstructured.value == "scoped")
            let detached = Task.detached { try await point() }
            #expect(try await detached.value == "original", "Task.detached does not inherit the scope")
        }
    }

    @Test func scopedEntryIsInvisibleToAParallelTask() async throws {
        let point = Self.asyncPoint()
        let sync = Self.syncPoint()
        let entered = Signal()
        let checked = Signal()
        try await withThrowingTaskGroup(of: (String, String).self) { group in
            group.addTask {
                try await Chaos.with([
                    ProfileEntry(point, .constant("scoped")), ProfileEntry(sync, .constant("scoped")),
                ]) {
                    entered.fire()
                    await checked.wait()  // the other task calls while this scope is live
                    return ("inside", try await point() + "/" + sync())
                }
            }
            group.addTask {
                await entered.wait()
                let seen = try await point() + "/" + sync()
                checked.fire()
                return ("outside", seen)
            }
            var results: [String: String] = [:]
            for try await (side, value) in group { results[side] = value }
            #expect(results["inside"] == "scoped/scoped")
            #expect(results["outside"] == "original/original")
        }
        #expect(try await point() == "original")
        #expect(sync() == "original")
    }

    @Test func parallelScopesDoNotSeeEachOther() async throws {
        let point = Self.asyncPoint()
        let chaos = Chaos(seed: 1)
        defer { chaos.revertAll() }
        try chaos.profile(ProfileEntry(point, .constant("global"))).apply()
        let bothEntered = (Signal(), Signal())
        try await withThrowingTaskGroup(of: (String, String).self) { group in
            group.addTask {
                try await Chaos.with([ProfileEntry(point, .constant("A"))]) {
                    bothEntered.0.fire()
                    await bothEntered.1.wait()
                    return ("A", try await point())
                }
            }
            group.addTask {
                try await Chaos.with([ProfileEntry(point, .constant("B"))]) {
                    bothEntered.1.fire()
                    await bothEntered.0.wait()
                    return ("B", try await point())
                }
            }
            group.addTask {
                await bothEntered.0.wait()
                await bothEntered.1.wait()
                return ("none", try await point())
            }
            var results: [String: String] = [:]
            for try await (side, value) in group { results[side] = value }
            #expect(results == ["A": "A", "B": "B", "none": "global"])
        }
    }
}
