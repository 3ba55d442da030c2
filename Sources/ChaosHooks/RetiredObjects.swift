import CChaosGrace
import ChaosKit
import Synchronization

/// The activation of a point whose calls run through ``hookDispatch(_:_:)``, which reads
/// the newest entry without a reference: reverted entries may still be in use by hooked
/// calls on other threads, so they go to ``RetiredObjects`` until those calls have returned.
protocol HookPointActivation: PointActivation {}

extension HookPointActivation {
    func retire(_ installation: AnyObject) {
        RetiredObjects.shared.retire(installation)
    }
}

/// Objects that hooked calls may still be reading without a reference (a point's reverted
/// entries), kept alive until every hook section that was running when they were retired
/// has ended.
///
/// Retiring never waits: a section can last as long as the hooked call it wraps (a `recv`
/// blocked for minutes), so objects wait in a batch, and every later retirement lets go of
/// the batches whose sections have ended. With no hooked call in flight — the usual case —
/// the object goes at once.
final class RetiredObjects: Sendable {
    static let shared = RetiredObjects()

    private struct Batch: @unchecked Sendable {
        // The grace record is owned by the batch and only touched under `batches`' lock.
        let grace: OpaquePointer
        let objects: [AnyObject]
    }

    private let batches = Mutex<[Batch]>([])

    /// Keeps `object` until the hook sections running now have ended (or lets it go now
    /// when none is), and lets go of earlier objects whose sections have ended.
    func retire(_ object: AnyObject) {
        let grace = chaos_grace_start()
        // Released after the lock is dropped: an object's deinit may retire others.
        let ended: [Batch] = batches.withLock { batches in
            if let grace { batches.append(Batch(grace: grace, objects: [object])) }
            return Self.takeEnded(&batches)
        }
        for batch in ended { chaos_grace_free(batch.grace) }
    }

    /// Lets go of every batch whose sections have ended.
    func collect() {
        let ended = batches.withLock { Self.takeEnded(&$0) }
        for batch in ended { chaos_grace_free(batch.grace) }
    }

    /// How many objects are waiting for a grace period.
    var waitingCount: Int {
        batches.withLock { $0.reduce(0) { $0 + $1.objects.count } }
    }

    private static func takeEnded(_ batches: inout [Batch]) -> [Batch] {
        var ended: [Batch] = []
        batches.removeAll { batch in
            guard chaos_grace_elapsed(batch.grace) != 0 else { return false }
            ended.append(batch)
            return true
        }
        return ended
    }
}
