import ChaosKit
import Foundation

/// A point name no other test uses: all test targets share one process and one registry.
func uniqueName(_ label: String = #function) -> String {
    "chaostesting.\(label.prefix { $0 != "(" }).\(UUID().uuidString)"
}

/// A value behind a lock. `NSLock` rather than `Synchronization.Mutex`: ThreadSanitizer
/// (Swift 6.3.1, Linux) does not see Mutex's futex-based locking and reports false races.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// A thread-safe list of observations.
final class Recorder<Value: Sendable>: Sendable {
    private let storage = Locked<[Value]>([])

    func record(_ value: Value) {
        storage.withLock { $0.append(value) }
    }

    var values: [Value] { storage.withLock { $0 } }
}

/// The error the failing bodies throw.
struct Boom: Error, CustomStringConvertible {
    var description: String { "boom" }
}

/// Day `n` after the epoch: distinct, recognisable clock values far from today.
func day(_ n: Int) -> Date {
    Date(timeIntervalSince1970: Double(n) * 86_400)
}

/// Any date after 2001-09-09 is the real clock, not one of the chaos dates above.
let realClockThreshold = Date(timeIntervalSince1970: 1_000_000_000)
