import CChaosGrace

/// Objects that callers may still be reading without a reference (a point's reverted
/// entries), kept alive until every section that was running when they were retired has
/// ended.
///
/// Retiring never waits: a section can last as long as the call it wraps (a hooked `recv`
/// blocked for minutes), so objects wait in a batch, and every later retirement lets go of
/// the batches whose sections have ended. With no call in flight — the usual case — the
/// object goes at once.
package final class RetiredObjects: Sendable {
    /// Which readers an object may still have.
    package enum Readers: Sendable {
        /// Only point sections: Swift calls of an injection point.
        case pointSections
        /// Hook sections too: hooked C calls read the entry without a reference.
        case hookSections
    }

    package static let shared = RetiredObjects()

    private struct Batch: @unchecked Sendable {
        // The grace record is owned by the batch and only touched under `batches`' lock.
        let grace: OpaquePointer
        let objects: [AnyObject]
    }

    private let batches = Locked<[Batch]>([])

    /// Keeps `object` until the sections running now have ended (or lets it go now when
    /// none is), and lets go of earlier objects whose sections have ended.
    package func retire(_ object: AnyObject, readers: Readers) {
        let grace = readers == .hookSections ? chaos_grace_start() : chaos_grace_start_points()
        // Released after the lock is dropped: an object's deinit may retire others.
        let ended: [Batch] = batches.withLock { batches in
            if let grace { batches.append(Batch(grace: grace, objects: [object])) }
            return batches.isEmpty ? [] : Self.takeEnded(&batches)
        }
        for batch in ended { chaos_grace_free(batch.grace) }
    }

    /// Lets go of every batch whose sections have ended.
    package func collect() {
        let ended = batches.withLock { Self.takeEnded(&$0) }
        for batch in ended { chaos_grace_free(batch.grace) }
    }

    /// How many objects are waiting for a grace period.
    package var waitingCount: Int {
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
