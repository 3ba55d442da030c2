/// The chaos bound to a task tree by `Chaos.with`.
@usableFromInline final class ScopeFrame: Sendable {
    @TaskLocal static var current: ScopeFrame?

    /// The addresses of the point cores this frame has entries for, innermost first, and
    /// at the same positions the addresses of those entries. A point may appear more than
    /// once (entries an inner one hides): the first decides, and a call it passes on goes
    /// to the next. Scopes hold a handful of
    /// entries, where a linear scan of plain words beats hashing; the frame keeps both
    /// alive (`retained`), so callers may use the addresses while the frame is bound.
    private let cores: [UInt]
    private let entries: [UInt]
    /// The innermost entry's point and installation again, outside the arrays: most scopes
    /// have one entry, and this saves the array walk for it.
    private let firstCore: UInt
    private let firstEntry: UInt
    private let retained: [any AnyObject & Sendable]
    let seed: UInt64
    let profileEntries: [ProfileEntry]
    /// The installations of `profileEntries`, in the same order (for their counters).
    let installedEntries: [InstalledEntry]

    init(parent: ScopeFrame?, prepared: [PreparedEntry], seed: UInt64) {
        let mine = prepared.reversed().map(\.prepared)
        var cores = mine.map { Self.address(of: $0.core) }
        var entries = mine.map { Self.address(of: $0.installation) }
        var retained: [any AnyObject & Sendable] = []
        for item in mine {
            retained.append(item.core)
            retained.append(item.installation)
        }
        if let parent {
            for (core, entry) in zip(parent.cores, parent.entries) {
                cores.append(core)
                entries.append(entry)
            }
            retained.append(parent)
        }
        self.cores = cores
        self.entries = entries
        self.firstCore = cores.first ?? 0
        self.firstEntry = entries.first ?? 0
        self.retained = retained
        self.seed = seed
        self.profileEntries = (parent?.profileEntries ?? []) + prepared.map(\.entry)
        self.installedEntries = (parent?.installedEntries ?? []) + prepared.map(\.prepared.installation)
    }

    private static func address(of object: AnyObject) -> UInt {
        UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque())
    }

    /// The key the runtime keeps `current` under: the address of its `TaskLocal` object.
    static var key: UnsafeMutableRawPointer { Unmanaged.passUnretained($current).toOpaque() }

    /// The scoped installation for the point whose core is at `core`, if the current task
    /// has one: its address, valid while the task's scope lasts. `key` is ``key``, which
    /// callers keep so that the call path does not pay for the lazy global.
    ///
    /// `current` is read without `TaskLocal.get()`'s unspecialized generic path (which costs
    /// about 30 ns of metadata look-ups per call on Linux): the runtime hands back a
    /// pointer to the value, for `ScopeFrame?` one object pointer or zero. The frame stays
    /// alive for as long as it is bound, which is longer than this call, so no reference
    /// is taken.
    @usableFromInline static func installation(for core: UInt, key: UnsafeMutableRawPointer) -> UnsafeRawPointer? {
        guard let slot = chaosTaskLocalValueGet(key), let object = slot.load(as: UnsafeRawPointer?.self) else {
            return nil
        }
        return Unmanaged<ScopeFrame>.fromOpaque(object)._withUnsafeGuaranteedRef { frame in
            if frame.firstCore == core { return UnsafeRawPointer(bitPattern: frame.firstEntry) }
            return frame.cores.withUnsafeBufferPointer { cores in
                for index in cores.indices where cores[index] == core {
                    return UnsafeRawPointer(bitPattern: frame.entries[index])
                }
                return nil
            }
        }
    }
}

extension ScopeFrame {
    /// Where a call a scoped entry passed on goes within the task's scopes.
    enum Successor {
        /// The next scoped entry for the point (valid while the task's scope lasts).
        case entry(UnsafeRawPointer)
        /// The entry was the task's last for the point: global entries decide next.
        case outOfScopes
        /// The entry is not one of the task's scoped entries.
        case notScoped
    }

    /// The scoped entry after the one at `entry` for the point whose core is at `core`.
    /// Off the fast path: only calls an entry passes on come here.
    static func successor(of entry: UInt, for core: UInt, key: UnsafeMutableRawPointer) -> Successor {
        guard let slot = chaosTaskLocalValueGet(key), let object = slot.load(as: UnsafeRawPointer?.self) else {
            return .notScoped
        }
        return Unmanaged<ScopeFrame>.fromOpaque(object)._withUnsafeGuaranteedRef { frame in
            guard let position = frame.entries.firstIndex(of: entry), frame.cores[position] == core else {
                return .notScoped
            }
            for index in frame.cores.indices.dropFirst(position + 1) where frame.cores[index] == core {
                return UnsafeRawPointer(bitPattern: frame.entries[index]).map(Successor.entry) ?? .outOfScopes
            }
            return .outOfScopes
        }
    }
}

/// The Swift runtime's task-local look-up, the one `TaskLocal.get()` makes.
@_silgen_name("swift_task_localValueGet")
private func chaosTaskLocalValueGet(_ key: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer?
