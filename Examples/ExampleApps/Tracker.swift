import ChaosKit
public import ChaosPoints
import Foundation

/// Dixie's location example, reborn: a tracker that logs fixes and the distance covered.
public struct LocationTracker: Sendable {
    let provider: any LocationProvider

    /// A tracker reading `provider` (route it through `ChaosLocationProvider` for chaos).
    public init(provider: any LocationProvider) {
        self.provider = provider
    }

    /// What the tracker saw: the fixes, the distance between them, and what went wrong.
    public struct Log: Sendable {
        /// Fixes in the order they came.
        public var fixes: [Location] = []
        /// Metres along the fixes.
        public var distance: Double = 0
        /// The error that ended the stream, if one did.
        public var failure: String?
        /// Jumps between consecutive fixes longer than 100 km (teleports, bad GPS).
        public var jumps = 0
    }

    /// Reads up to `limit` fixes from the provider's updates.
    public func track(limit: Int) async -> Log {
        var log = Log()
        do {
            for try await fix in provider.updates() {
                if let last = log.fixes.last {
                    let step = last.distance(to: fix)
                    log.distance += step
                    if step > 100_000 { log.jumps += 1 }
                }
                log.fixes.append(fix)
                if log.fixes.count >= limit { break }
            }
        } catch {
            log.failure = "\(error)"
        }
        return log
    }
}
