// swift-format-ignore-file: AmbiguousTrailingClosureOverload

// (`caught` has a synchronous and an async form on purpose: callers write `caught { … }` either way.)
public import ChaosKit
import Foundation
import Synchronization
public import Testing

#if canImport(Glibc)
import Glibc
#endif

// Helpers every test target shares. Locks are ChaosKit's own `Locked` (a pthread mutex that
// ThreadSanitizer understands), as everywhere in the package.

/// A point name no other test uses: tests run in parallel and the registry is process-wide.
public func uniqueName(_ label: String = #function) -> String {
    let cleaned = label.prefix { $0 != "(" }
    return "test.\(cleaned).\(UUID().uuidString)"
}

/// A thread-safe list of observations made inside providers and originals.
public final class Recorder<Value: Sendable>: Sendable {
    public init() {}

    private let storage = Locked<[Value]>([])

    public func record(_ value: Value) {
        storage.withLock { $0.append(value) }
    }

    public var values: [Value] { storage.withLock { $0 } }
}

/// A one-shot signal between tasks, for barrier-like handshakes: any number of tasks can
/// `wait()`, and all of them (and every later waiter) go on once `fire()` was called.
public final class Signal: Sendable {
    public init() {}

    private struct State {
        var fired = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    public func fire() {
        let waiters = state.withLock { state in
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }
}

/// Calls `body` `count` times and collects the results.
public func collect<T>(_ count: Int, _ body: () throws -> T) rethrows -> [T] {
    var results: [T] = []
    results.reserveCapacity(count)
    for _ in 0..<count { results.append(try body()) }
    return results
}

/// The error a typed-throws call produced, or nil when it returned.
public func caught<T, E: Error>(_ body: () throws(E) -> T) -> E? {
    do {
        _ = try body()
        return nil
    } catch {
        return error
    }
}

/// The error a typed-throws async call produced, or nil when it returned.
public func caught<T, E: Error>(_ body: () async throws(E) -> T) async -> E? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

/// Expects `body` to throw a ``ChaosError`` of `kind`, and returns it for further checks.
/// (`body` is untyped: Swift 6.3 infers `any Error` for closures that call typed-throws APIs.)
@discardableResult
public func expectChaosError(
    _ kind: ChaosError.Kind,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) -> ChaosError? {
    // `body` is untyped: Swift 6.3 infers `any Error` for closures that call typed-throws APIs.
    do {
        try body()
        Issue.record("expected a ChaosError of kind \(kind), but nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as ChaosError {
        #expect(error.kind == kind, "wrong kind; error was: \(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected a ChaosError of kind \(kind), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// An atomic counter tasks can share (a local `Atomic` cannot be captured by escaping closures).
public final class SharedCounter: Sendable {
    public init() {}

    private let value = Atomic<Int>(0)

    public func increment() {
        value.wrappingAdd(1, ordering: .releasing)
    }

    public var current: Int { value.load(ordering: .acquiring) }
}

/// Python modules some tests run against (jsonschema, gpxpy …): tests that need one are
/// skipped by name when it is missing, so `swift test` passes on a bare machine; CI
/// installs them.
public enum PythonModule {
    private static let known = Locked<[String: Bool]>([:])

    /// Whether `python3 -c 'import NAME'` succeeds (asked once per name).
    public static func isInstalled(_ name: String) -> Bool {
        if let answer = known.withLock({ $0[name] }) { return answer }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", "import \(name)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        var installed = false
        if (try? process.runWithSignalsUnblocked()) != nil {
            process.waitUntilExit()
            installed = process.terminationStatus == 0
        }
        known.withLock { $0[name] = installed }
        return installed
    }
}

/// The sanitizers this test process runs under, for tests that cannot run under one. Such a
/// test is skipped with `.disabled(if: Sanitizers.thread, Sanitizers.threadReason)` (or its
/// own named reason), never silently passed.
public enum Sanitizers {
    /// Whether ThreadSanitizer's runtime is in this process (`swift test --sanitize=thread`).
    public static let thread: Bool = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "__tsan_init") != nil

    /// Why hook tests of libc functions are skipped under ThreadSanitizer: its runtime
    /// defines interceptors for them (clock_gettime, open, write, connect …) inside the
    /// test executable, so calls reach the interceptor directly and no GOT slot names the
    /// libc function for a hook to rebind.
    public static let threadReason: Comment =
        "ThreadSanitizer's interceptors (clock_gettime, open, write, connect …) hide libc's GOT slots from hooks"

    /// Why tests that run other programs under `libChaosPreload.so` are skipped under
    /// ThreadSanitizer: SwiftPM builds every target of the run with it, so the preload library
    /// needs TSan's runtime, which programs such as `cp` or `date` do not load (they stop with
    /// "undefined symbol: __tsan_init"). The plain run executes them in full.
    public static let preloadReason: Comment =
        "under --sanitize=thread libChaosPreload.so is built with ThreadSanitizer and cannot be loaded into other programs"

    /// Why sweeps of whole programs over every crash point are skipped under ThreadSanitizer:
    /// dozens of `chaos run`s of sqlite3, redis or PostgreSQL test no Swift thread of this
    /// process, and their load starved the in-process endpoints other suites time; the plain
    /// run executes them in full (the supervisor's own threads run under it elsewhere).
    public static let sweepReason: Comment =
        "a sweep of whole programs over every crash point runs in the plain test run; under ThreadSanitizer it only loads the machine"

    /// Why long single-threaded fuzz loops are skipped under ThreadSanitizer: they find no
    /// races and take minutes there; the plain run executes them in full.
    public static let fuzzReason: Comment =
        "a single-threaded fuzz loop runs in the plain test run; under ThreadSanitizer it only costs minutes"
}

/// Serializes the suites that share one process-wide resource, across test targets: suites
/// in different targets run in the same test process and in parallel, and one that
/// changes such a resource would change it under another in mid-test. Waiting is
/// asynchronous, so a suite queued here never holds one of the cooperative pool's threads,
/// which on a two-core machine are all there is.
public struct ProcessWideTurn: SuiteTrait, TestTrait, TestScoping {
    /// The turn the suites of one resource take.
    let turn: AsyncTurn

    public var isRecursive: Bool { false }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await turn.acquire()
        defer { turn.release() }
        try await function()
    }

    /// The C fault engine's plan and the GOT slots its interceptors occupy.
    static let systemChaos = AsyncTurn()
    /// The call journal's selection (`CallJournal.shared`).
    static let callJournal = AsyncTurn()
}

extension Trait where Self == ProcessWideTurn {
    /// Runs the suite while no other suite marked this way runs: it installs fault-engine
    /// plans or applies system points, which are process-wide.
    public static var processWideSystemChaos: Self { Self(turn: ProcessWideTurn.systemChaos) }

    /// Runs the suite while no other suite marked this way runs: it switches the call
    /// journal, which is process-wide.
    public static var processWideCallJournal: Self { Self(turn: ProcessWideTurn.callJournal) }
}

/// A first-come, first-served lock for tasks: a waiter suspends instead of blocking a thread.
final class AsyncTurn: Sendable {
    private struct State {
        var held = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())

    func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.held {
                    state.waiters.append(continuation)
                    return false
                }
                state.held = true
                return true
            }
            if granted { continuation.resume() }
        }
    }

    func release() {
        // The turn passes straight to the next waiter, so nobody can barge in between.
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.held = false
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}
