import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fault-injection session switched on from the environment: the applied profile, its
/// entries, and (for a profile file) a watcher that re-applies it when the file changes or
/// the process gets SIGHUP.
public final class ChaosSession: Sendable {
    /// An entry of the session as tools show it.
    public struct EntryInfo: Sendable, CustomStringConvertible {
        /// Position in the session's list, from 0 (what `setEnabled(_:at:)` takes).
        public let index: Int
        /// The point's name.
        public let pointName: String
        /// The provider, rendered.
        public let provider: String
        /// Whether the entry is applied now.
        public let enabled: Bool
        /// Where the entry was written.
        public let location: String
        /// Whether it waits for its point to be created (an app's `static let` point that
        /// nothing has touched yet); it applies the moment the point exists.
        public let isPending: Bool
        /// Why it never acts: its point appeared and the provider did not fit it (located).
        public let problem: ChaosError?

        /// `#index point ← provider` plus `(disabled)`, `(pending)` or the problem.
        public var description: String {
            let state =
                problem.map { " (not applied: \($0))" } ?? (isPending ? " (pending: no such point yet)" : "")
            return "#\(index) \(pointName) ← \(provider)\(enabled ? "" : " (disabled)")\(state)"
        }
    }

    private struct State {
        var entries: [ChaosProfile.Entry]
        var chaos: Chaos?
        var fileStamp: FileStamp?
        var watchers: Watchers?
    }

    /// The watching timer. Dispatch sources may be cancelled from any thread; this one is
    /// only stored and cancelled under the session's lock.
    private struct Watchers: @unchecked Sendable {
        let timer: any DispatchSourceTimer

        func cancel() {
            timer.cancel()
        }
    }

    /// The seed every entry's random choices derive from.
    public let seed: UInt64
    /// The profile file the session re-reads, if it came from one.
    public let profilePath: String?
    private let inline: [ChaosProfile.Entry]
    private let state: Locked<State>
    private let logger: Logger

    init(
        seed: UInt64, profilePath: String?, fileEntries: [ChaosProfile.Entry], inline: [ChaosProfile.Entry],
        logger: Logger = Logger(label: "ChaosKit.session")
    ) throws(ChaosError) {
        self.seed = seed
        self.profilePath = profilePath
        self.inline = inline
        self.logger = logger
        self.state = Locked(State(entries: fileEntries + inline, fileStamp: profilePath.flatMap(FileStamp.init(path:))))
        try state.withLock { state throws(ChaosError) in
            state.chaos = try Self.applied(state.entries, seed: seed)
        }
        for entry in entries where entry.enabled {
            logger.info(
                "chaos entry applied",
                metadata: [
                    "entry": "\(InputExcerpt.of(entry.description, limit: 300))", "seed": "\(seed)",
                    "at": "\(entry.location)",
                ])
        }
        warnMisspeltWaiting()
    }

    /// Says at once, not only when the session ends, which waiting entries name a point a
    /// couple of letters off a live one's.
    private func warnMisspeltWaiting() {
        state.withLock { $0.chaos }?.warnMisspeltWaiting(logger: logger)
    }

    deinit {
        stop()
    }

    /// Entries of points the app has not created yet wait for them: a session comes from
    /// the environment, and names the app's lazily made points.
    private static func applied(_ entries: [ChaosProfile.Entry], seed: UInt64) throws(ChaosError) -> Chaos {
        try ChaosProfile(seed: seed, entries: entries).apply(missingPoints: .wait)
    }

    /// Every entry, enabled or not.
    public var entries: [EntryInfo] {
        state.withLock { state in
            // The Chaos holds the enabled entries, in order.
            let waiting = state.chaos?.waitingEntries ?? []
            let problems = state.chaos?.waitingProblems ?? [:]
            var applied = ((state.chaos?.appliedEntries ?? []) + waiting).sorted { $0.id.number < $1.id.number }
                .makeIterator()
            return state.entries.enumerated().map { index, entry in
                let live = entry.enabled ? applied.next() : nil
                let problem = live.flatMap { problems[$0.id] }
                return EntryInfo(
                    index: index, pointName: entry.pointName, provider: entry.provider.summary, enabled: entry.enabled,
                    location: entry.location, isPending: problem == nil && live.map { waiting.contains($0) } == true,
                    problem: problem)
            }
        }
    }

    /// What each applied (enabled) entry of the session did so far (see ``EntryCounters``).
    public var counters: [EntryCounters] {
        state.withLock { $0.chaos?.counters ?? [] }
    }

    /// What each applied (enabled) entry of the session did so far, with the entries that
    /// never acted flagged (waiting ones included): what `chaos run` reports at exit.
    public var report: ChaosReport {
        state.withLock { $0.chaos?.report } ?? ChaosReport(seed: seed, counters: [])
    }

    /// Enables or disables the entry at `index`; the session is re-applied all or nothing.
    public func setEnabled(_ enabled: Bool, at index: Int) throws(ChaosError) {
        try state.withLock { state throws(ChaosError) in
            guard state.entries.indices.contains(index) else {
                throw ChaosError(
                    .notApplied, subject: "entry #\(index)",
                    "the session has entries #0…#\(state.entries.count - 1); pick one of those")
            }
            var changed = state.entries
            changed[index].enabled = enabled
            try Self.replace(&state, with: changed, seed: seed)
        }
        logger.info("chaos entry \(enabled ? "enabled" : "disabled")", metadata: ["index": "\(index)"])
    }

    /// Re-reads the profile file and re-applies it. A bad file changes nothing and throws.
    public func reload() throws(ChaosError) {
        guard let profilePath else { return }
        let profile = try ChaosProfile.load(contentsOfFile: profilePath)
        try state.withLock { state throws(ChaosError) in
            try Self.replace(&state, with: profile.entries + inline, seed: seed)
            state.fileStamp = FileStamp(path: profilePath)
        }
        logger.info(
            "chaos profile reloaded", metadata: ["path": "\(profilePath)", "entries": "\(profile.entries.count)"])
        warnMisspeltWaiting()
    }

    /// Swaps the applied entries; on error the old ones stay applied.
    private static func replace(_ state: inout State, with entries: [ChaosProfile.Entry], seed: UInt64)
        throws(ChaosError)
    {
        state.chaos?.revertAll()
        do {
            state.chaos = try applied(entries, seed: seed)
            state.entries = entries
        } catch {
            state.chaos = try? applied(state.entries, seed: seed)
            throw error
        }
    }

    /// Re-applies the profile when its file changes (checked every `interval`) or on SIGHUP
    /// (noticed within a quarter of a second).
    public func watch(every interval: Duration = .seconds(1)) {
        guard profilePath != nil else { return }
        HangUpSignal.install()
        let queue = DispatchQueue(label: "ChaosKit.session.watch")
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let tick = min(interval, .milliseconds(250))
        let tickNanoseconds = max(
            1_000_000, Int(tick.components.seconds) * 1_000_000_000 + Int(tick.components.attoseconds / 1_000_000_000))
        let checksPerFileLook = max(1, Int((interval / tick).rounded(.down)))
        var ticks = 0
        var hangUpsSeen = HangUpSignal.count
        timer.schedule(deadline: .now() + .nanoseconds(tickNanoseconds), repeating: .nanoseconds(tickNanoseconds))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            let hangUps = HangUpSignal.count
            if hangUps != hangUpsSeen {
                hangUpsSeen = hangUps
                self.reloadLogged()
                return
            }
            ticks += 1
            if ticks % checksPerFileLook == 0 { self.reloadIfChanged() }
        }
        timer.resume()
        state.withLock { state in
            state.watchers?.cancel()
            state.watchers = Watchers(timer: timer)
        }
    }

    private func reloadIfChanged() {
        guard let profilePath else { return }
        let current = FileStamp(path: profilePath)
        let known = state.withLock { $0.fileStamp }
        if current != known { reloadLogged() }
    }

    private func reloadLogged() {
        do {
            try reload()
        } catch {
            if let profilePath { state.withLock { $0.fileStamp = FileStamp(path: profilePath) } }
            logger.error("chaos profile not reloaded; the previous one stays applied", metadata: ["error": "\(error)"])
        }
    }

    /// Stops watching and reverts every entry of the session. An entry that waited for its
    /// point all along is logged as a warning with the nearest point names (a typo, most
    /// likely).
    public func stop() {
        state.withLock { state in
            state.watchers?.cancel()
            state.watchers = nil
            state.chaos?.reportWaiting("the session ended", logger: logger)
            state.chaos?.revertAll()
            state.chaos = nil
        }
    }
}

/// Counts SIGHUPs. The handler only increments an atomic (async-signal-safe); the session
/// timers notice the change. (A Dispatch signal source does not receive the signal on Linux
/// once it is ignored, and a handler must exist or SIGHUP ends the process.)
enum HangUpSignal {
    private static let received = Atomic<Int>(0)
    private static let installed = Atomic<Bool>(false)

    static var count: Int { received.load(ordering: .acquiring) }

    static func install() {
        _ = received.load(ordering: .relaxed)  // initialise the global before a signal can read it
        guard installed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        signal(SIGHUP) { _ in HangUpSignal.received.wrappingAdd(1, ordering: .releasing) }
    }
}

/// What tells a changed file from an unchanged one without reading it.
private struct FileStamp: Equatable {
    let modified: Date
    let size: Int

    init?(path: String) {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let modified = attributes[.modificationDate] as? Date
        else { return nil }
        self.modified = modified
        self.size = (attributes[.size] as? NSNumber)?.intValue ?? -1
    }
}
