import CChaosGrace
import CHookFixtures
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ChaosHooks
@testable import ChaosKit

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
private let addSignature = try! CSignature(returns: .int32, arguments: [.int32, .int32])

private func addHook(_ name: String) throws -> CFunctionHook {
    let slot = withUnsafeMutablePointer(to: &chaos_fx_table_address().pointee.add) { $0 }
    return try CFunctionHook(name: name, slot: slot, signature: addSignature)
}

/// Counts the ``Tracked`` objects that have been released.
private final class ReleaseCounter: Sendable {
    let count = Atomic<Int>(0)
}

/// Something a block captures, to see when the block (and the entry holding it) is freed.
private final class Tracked: Sendable {
    let counter: ReleaseCounter

    init(_ counter: ReleaseCounter) {
        self.counter = counter
    }

    deinit {
        counter.count.add(1, ordering: .relaxed)
    }
}

/// A weak reference to an applied entry that a block may read.
private final class EntryBox: Sendable {
    private struct Weak: @unchecked Sendable {
        // Only read and written inside `entry`'s lock.
        weak var object: AnyObject?
    }

    private let entry = Mutex(Weak())

    func set(_ object: AnyObject?) {
        entry.withLock { $0.object = object }
    }

    var isAlive: Bool {
        entry.withLock { $0.object != nil }
    }
}

/// Waits on `semaphore` for at most `seconds`; false on timeout, so a bug cannot hang the suite.
private func waited(_ semaphore: DispatchSemaphore, seconds: Int = 5) -> Bool {
    semaphore.wait(timeout: .now() + .seconds(seconds)) == .success
}

/// Whether `condition` holds within about `milliseconds`. Other test targets run in this process and
/// may be inside a hook section of their own at any moment, so a check that "no section
/// runs" or "this record has elapsed" looks again for a while: a section that this suite
/// leaked would hold it forever, while another suite's call ends in microseconds.
/// It counts sleeps rather than reading a clock, because other suites may be moving the
/// process's clocks.
private func settles(milliseconds: Int = 2_000, _ condition: () -> Bool) -> Bool {
    for _ in 0..<milliseconds {
        if condition() { return true }
        usleep(1_000)
    }
    return condition()
}

/// Whether some hook section is running right now, as a writer sees it.
private func sectionRunning() -> Bool {
    guard let grace = chaos_grace_start() else { return false }
    chaos_grace_free(grace)
    return true
}

/// The body of a ``JoinableThread``, handed to pthread_create as an unmanaged reference.
private final class ThreadBody {
    let run: @Sendable () -> Void

    init(_ run: @escaping @Sendable () -> Void) {
        self.run = run
    }
}

/// A pthread that can be joined: after `join()` its thread-exit destructors have run
/// (Foundation's `Thread` cannot tell).
private struct JoinableThread {
    private let thread: pthread_t

    init(_ body: @escaping @Sendable () -> Void) {
        var thread = pthread_t()
        let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
        let status = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
        self.thread = thread
    }

    func join() {
        pthread_join(thread, nil)
    }
}

/// A thread that runs `sectionsBefore` short hook sections, then enters one more and stays
/// inside it until `leave()`, which also joins the thread.
private struct ParkedSection {
    private let thread: JoinableThread
    private let go = DispatchSemaphore(value: 0)

    /// Starts the thread and waits until it is inside its section; nil on timeout.
    init?(sectionsBefore: Int = 0) {
        let inside = DispatchSemaphore(value: 0)
        let go = self.go
        thread = JoinableThread {
            for _ in 0..<sectionsBefore {
                if chaos_hook_enter() != 0 { chaos_hook_leave() }
            }
            let entered = chaos_hook_enter()
            inside.signal()
            _ = go.wait(timeout: .now() + .seconds(5))
            if entered != 0 { chaos_hook_leave() }
        }
        guard waited(inside) else {
            go.signal()
            thread.join()
            return nil
        }
    }

    /// Ends the section and joins the thread (its exit destructors have run).
    func leave() {
        go.signal()
        thread.join()
    }
}

extension ProcessWideHookTests {
    /// Reverted entries are retired, not freed: a hooked call reads its point's newest entry
    /// without a lock or a reference, inside a hook section, so an entry reverted while calls
    /// run must stay alive until the sections running at revert time have ended.
    @Suite(.serialized) struct GracePeriodTests {
        @Test func entriesToggledOverAnAppliedBaseAreFreedOnceTheirCallsEnd() throws {
            let hook = try addHook("test.fx.add.grace.toggle")
            let base = Chaos(seed: 1)
            try base.profile(hook.entry(.constant(7))).apply()
            defer { base.revertAll() }

            let released = ReleaseCounter()
            let stop = Atomic<Bool>(false)
            let bad = Atomic<Int>(0)
            let calls = Atomic<Int>(0)
            let toggled = Atomic<Int>(0)
            let group = DispatchGroup()
            for _ in 0..<3 {
                group.enter()
                Thread {
                    while !stop.load(ordering: .relaxed) {
                        // 7: the base entry; 99 or 42: a toggled block (answer or original).
                        switch chaos_fx_call_add(20, 22) {
                        case 7: break
                        case 99, 42: toggled.add(1, ordering: .relaxed)
                        default: bad.add(1, ordering: .relaxed)
                        }
                        calls.add(1, ordering: .relaxed)
                    }
                    group.leave()
                }.start()
            }
            // On an early exit too: no caller may outlive the test.
            defer {
                stop.store(true, ordering: .relaxed)
                _ = group.wait(timeout: .now() + .seconds(10))
            }
            let warmUp = DispatchTime.now() + .seconds(5)
            while calls.load(ordering: .relaxed) < 100 && DispatchTime.now() < warmUp { usleep(100) }

            // At least 600 rounds, and on a loaded machine more, until the callers have
            // been seen inside toggled entries and some entry had to wait (or 10 s passed).
            var rounds = 0
            var mostWaiting = 0
            let deadline = DispatchTime.now() + .seconds(10)
            while rounds < 600
                || ((toggled.load(ordering: .relaxed) == 0 || mostWaiting == 0) && DispatchTime.now() < deadline)
            {
                let round = rounds
                rounds += 1
                // The block is the only owner of `token` once this iteration ends, and the
                // retired entry is the block's only owner once reverted.
                let token = Tracked(released)
                let provider: CHookProvider =
                    round.isMultiple(of: 2)
                    ? .block { _ in
                        withExtendedLifetime(token) {}
                        return .int32(99)
                    }
                    : .block { env in
                        withExtendedLifetime(token) {}
                        return env.callOriginal()
                    }
                let chaos = Chaos(seed: UInt64(round))
                try chaos.profile(hook.entry(provider)).apply()
                chaos.revertAll()
                mostWaiting = max(mostWaiting, RetiredObjects.shared.waitingCount)
            }
            stop.store(true, ordering: .relaxed)
            let stopped = group.wait(timeout: .now() + .seconds(10)) == .success
            try #require(stopped)

            #expect(bad.load(ordering: .relaxed) == 0)
            // The toggled entries were really called while being reverted…
            #expect(toggled.load(ordering: .relaxed) > 0)
            // …and some had to wait for a grace period instead of being freed at once.
            #expect(mostWaiting > 0)
            // No call of this test runs now: every entry it retired goes, and everything its
            // block captured. Collected until they have (at most 5 s): suites running
            // alongside may be inside sections a while longer, and retire entries of their
            // own, so the process-wide count of waiting entries says nothing of this test's.
            let settled = DispatchTime.now() + .seconds(5)
            RetiredObjects.shared.collect()
            while released.count.load(ordering: .relaxed) < rounds && DispatchTime.now() < settled {
                usleep(1_000)
                RetiredObjects.shared.collect()
            }
            #expect(released.count.load(ordering: .relaxed) == rounds)
            // The base entry kept the point active throughout.
            #expect(hook.isPatched)
            #expect(chaos_fx_call_add(20, 22) == 7)
        }

        @Test func revertDoesNotWaitForACallInFlightWhichKeepsItsEntryAlive() throws {
            let hook = try addHook("test.fx.add.grace.inflight")
            let released = ReleaseCounter()
            let entered = DispatchSemaphore(value: 0)
            let proceed = DispatchSemaphore(value: 0)
            let returned = DispatchSemaphore(value: 0)
            let reverted = DispatchSemaphore(value: 0)
            let hasReturned = Atomic<Bool>(false)
            let answer = Atomic<Int32>(0)
            let chaos = Chaos(seed: 2)
            weak var weakToken: Tracked?
            // The applied entry itself, which the call reads without a reference. A debug
            // build keeps a running block alive even when its entry is freed, so only this
            // reference shows whether revert freed the entry under the call's feet.
            weak var weakEntry: InjectionPoint<CArguments, CValue, Never>.Installed?
            do {
                let token = Tracked(released)
                weakToken = token
                // The token is not touched after "entered": if the entry were freed while
                // the call waits, nothing on this call's stack would keep the token alive.
                try chaos.profile(
                    hook.entry(
                        .block { _ in
                            withExtendedLifetime(token) {}
                            entered.signal()
                            _ = proceed.wait(timeout: .now() + .seconds(10))
                            return .int32(99)
                        })
                ).apply()
            }
            // On an early exit too: nothing stays applied or blocked.
            defer {
                proceed.signal()
                chaos.revertAll()
            }
            weakEntry = hook.point.core.top()
            #expect(weakEntry != nil)
            #expect(weakToken != nil)

            Thread {
                answer.store(chaos_fx_call_add(20, 22), ordering: .relaxed)
                hasReturned.store(true, ordering: .releasing)
                returned.signal()
            }.start()
            try #require(waited(entered))

            // Revert on another thread, so that a revert that waited for the call in
            // flight shows up as a timeout instead of a hung suite.
            Thread {
                chaos.revertAll()
                reverted.signal()
            }.start()
            let revertReturned = waited(reverted, seconds: 2)
            #expect(revertReturned, "revert waited for a hooked call in flight")
            let returnedEarly = hasReturned.load(ordering: .acquiring)
            #expect(!returnedEarly)
            // Retired, not freed: the call in flight may still be reading it.
            #expect(weakEntry != nil)
            #expect(weakToken != nil)
            #expect(RetiredObjects.shared.waitingCount >= 1)
            // New calls (this thread is in no section) see the point reverted.
            #expect(!hook.isPatched)
            #expect(chaos_fx_call_add(20, 22) == 42)
            // Collecting while the call is still in flight keeps the entry.
            RetiredObjects.shared.collect()
            #expect(weakEntry != nil)
            #expect(weakToken != nil)
            #expect(released.count.load(ordering: .relaxed) == 0)

            proceed.signal()
            try #require(waited(returned))
            if !revertReturned { _ = waited(reverted) }
            #expect(answer.load(ordering: .relaxed) == 99)
            // The section has ended: collecting lets the entry and its block go. It may take
            // more than one collect, because another suite's call that was in a section when
            // this entry was retired also holds its batch, for the microseconds it lasts.
            #expect(
                settles {
                    RetiredObjects.shared.collect()
                    return weakEntry == nil && weakToken == nil
                })
            #expect(released.count.load(ordering: .relaxed) == 1)
        }

        @Test func blockThatRevertsItsOwnEntryRunsToTheEnd() throws {
            let hook = try addHook("test.fx.add.grace.self")
            let chaos = Chaos(seed: 4)
            let entryAliveAfterRevert = Atomic<Int>(-1)
            let box = EntryBox()
            try chaos.profile(
                hook.entry(
                    .block { env in
                        chaos.revertAll()
                        // Reverted by this very call: retired, so still alive until the call ends.
                        entryAliveAfterRevert.store(box.isAlive ? 1 : 0, ordering: .relaxed)
                        return .int32(Int32(env.callOriginal().integerValue!) + 1)
                    })
            ).apply()
            box.set(hook.point.core.top())
            #expect(box.isAlive)
            #expect(chaos_fx_call_add(20, 22) == 43)
            #expect(entryAliveAfterRevert.load(ordering: .relaxed) == 1)
            #expect(!hook.isPatched)
            #expect(chaos_fx_call_add(20, 22) == 42)
            // Its own call has ended, so collecting lets it go; as above, another suite's
            // call running at retire time may hold the batch a little longer.
            #expect(
                settles {
                    RetiredObjects.shared.collect()
                    return !box.isAlive
                })
        }

        @Test func graceRecordWaitsForTheSectionsRunningWhenItWasTaken() throws {
            #expect(chaos_hook_in_section() == 0)
            #expect(settles { !sectionRunning() })

            let inside = DispatchSemaphore(value: 0)
            let go = DispatchSemaphore(value: 0)
            let left = DispatchSemaphore(value: 0)
            let outer = Atomic<Int32>(-1)
            let nested = Atomic<Int32>(-1)
            let inSection = Atomic<Int32>(-1)
            let again = Atomic<Int32>(-1)
            let thread = JoinableThread {
                let entered = chaos_hook_enter()
                outer.store(entered, ordering: .relaxed)
                nested.store(chaos_hook_enter(), ordering: .relaxed)  // already inside: 0
                inSection.store(chaos_hook_in_section(), ordering: .relaxed)
                inside.signal()
                _ = go.wait(timeout: .now() + .seconds(5))
                if entered != 0 { chaos_hook_leave() }
                left.signal()
                _ = go.wait(timeout: .now() + .seconds(5))
                let second = chaos_hook_enter()
                again.store(second, ordering: .relaxed)
                inside.signal()
                _ = go.wait(timeout: .now() + .seconds(5))
                if second != 0 { chaos_hook_leave() }
                left.signal()
            }
            defer { thread.join() }

            try #require(waited(inside))
            #expect(outer.load(ordering: .relaxed) == 1)
            #expect(nested.load(ordering: .relaxed) == 0)
            #expect(inSection.load(ordering: .relaxed) != 0)
            #expect(chaos_hook_in_section() == 0)  // sections are per thread
            let first = try #require(chaos_grace_start())
            defer { chaos_grace_free(first) }
            #expect(chaos_grace_elapsed(first) == 0)
            usleep(2_000)
            #expect(chaos_grace_elapsed(first) == 0)  // polling never ends it by itself

            go.signal()
            try #require(waited(left))
            #expect(settles { chaos_grace_elapsed(first) != 0 })
            #expect(settles { !sectionRunning() })  // the thread lives on, outside any section

            // A new section on the same thread does not hold up the older record.
            go.signal()
            try #require(waited(inside))
            #expect(again.load(ordering: .relaxed) == 1)
            let second = try #require(chaos_grace_start())
            defer { chaos_grace_free(second) }
            #expect(settles { chaos_grace_elapsed(first) != 0 })
            #expect(chaos_grace_elapsed(second) == 0)
            go.signal()
            try #require(waited(left))
            #expect(settles { chaos_grace_elapsed(second) != 0 })
        }

        @Test func threadsThatRanSectionsAndExitedHoldUpNothing() throws {
            // Threads register on their first section and are dropped from the registry
            // when they exit; their slots are then reused by later threads.
            for _ in 0..<20 {
                let thread = JoinableThread {
                    if chaos_hook_enter() != 0 { chaos_hook_leave() }
                }
                thread.join()
            }
            #expect(settles { !sectionRunning() })

            // A later thread (probably in a reused slot) is still seen inside its section.
            let parked = try #require(ParkedSection())
            let grace = try #require(chaos_grace_start())
            defer { chaos_grace_free(grace) }
            #expect(chaos_grace_elapsed(grace) == 0)
            parked.leave()
            #expect(settles { chaos_grace_elapsed(grace) != 0 })
            #expect(settles { !sectionRunning() })
        }

        /// glibc gives a new thread the stack, thread pointer and so the TLS block of a
        /// joined one, and the registry gives it the freed slot. A newcomer that has run as
        /// many sections as the recorded thread had, and is inside the next one, then shows
        /// exactly the section counter the record holds: only the slot's owner number tells
        /// that the recorded thread is gone and the record has elapsed.
        @Test func recordOfAnExitedThreadIsNotHeldUpByANewcomerInItsSlot() throws {
            let first = try #require(ParkedSection(sectionsBefore: 3))  // in its fourth section
            let grace = try #require(chaos_grace_start())
            defer { chaos_grace_free(grace) }
            first.leave()  // the recorded section has ended and its thread is gone

            let newcomer = try #require(ParkedSection(sectionsBefore: 3))  // same counter
            defer { newcomer.leave() }
            #expect(sectionRunning())
            // Usually the newcomer reuses the thread block and slot (the case that matters);
            // either way the record has elapsed: the thread it waited for has left and exited.
            #expect(settles { chaos_grace_elapsed(grace) != 0 })
        }

        @Test func hookedCallFromInsideABlockRunsTheOriginal() throws {
            let hook = try addHook("test.fx.add.grace.nested")
            let depth = Atomic<Int>(0)
            let sectionInBlock = Atomic<Int32>(-1)
            let chaos = Chaos(seed: 3)
            try chaos.profile(
                hook.entry(
                    .block { _ in
                        let level = depth.add(1, ordering: .relaxed).newValue
                        defer { depth.subtract(1, ordering: .relaxed) }
                        // Chaos re-entered (the bug this guards against) answers -1 instead of recursing.
                        guard level == 1 else { return .int32(-1) }
                        sectionInBlock.store(chaos_hook_in_section(), ordering: .relaxed)
                        return .int32(chaos_fx_call_add(100, 1) + 1000)
                    })
            ).apply()
            defer { chaos.revertAll() }
            #expect(chaos_fx_call_add(2, 3) == 1101)  // the inner call got the original 101
            #expect(sectionInBlock.load(ordering: .relaxed) != 0)
            #expect(chaos_hook_in_section() == 0)
            #expect(chaos_fx_call_add(2, 3) == 1101)  // and the section ended cleanly
        }
    }
}
#endif
