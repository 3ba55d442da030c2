public import Foundation
import Synchronization

/// One call through an injection point as the ``CallJournal`` keeps it: the point, which
/// call it was, its arguments, what the caller got back, and whether chaos acted on it.
public struct JournaledCall: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Its number in the journal: 1 for the first call the process journaled.
    public let number: Int
    /// When it was decided (the real clock, whatever chaos says the time is).
    public let date: Date
    /// The point it went through.
    public let pointName: String
    /// The entry that decided it; nil when no entry applied to the call.
    public let entry: ProfileEntry.ID?
    /// The entry's index of the call (0-based); nil when no entry applied to it.
    public let callIndex: Int?
    /// The entry's seed: with the call index, what every draw of the call derives from.
    public let entrySeed: UInt64?
    /// Whether chaos acted (answered with anything but the original); false when the call
    /// passed to the original.
    public let acted: Bool
    /// The arguments, rendered (redacted for points whose arguments may hold secrets).
    public let arguments: String
    /// What the caller got back, rendered; nil when the call threw.
    public let returned: String?
    /// The error the caller got, rendered; nil when the call returned.
    public let error: String?
    /// The HTTP status the caller got, for network points.
    public let status: Int?
    /// The size of the response body the caller got, for network points.
    public let bytes: Int?

    /// `#12 app.now() → 2000-01-01 00:00:00 +0000 acted by #3 on call 4 (seed 42)`.
    public var description: String {
        var text = "#\(number) \(pointName)(\(arguments)) → "
        if let error { text += "threw \(error)" } else { text += returned ?? "" }
        if let entry, let callIndex {
            text += " \(acted ? "acted" : "passed") by \(entry) on call \(callIndex)"
            if let entrySeed { text += " (seed \(entrySeed))" }
        } else {
            text += " (no entry)"
        }
        return text
    }

    /// The bytes the record holds, counted for the journal's memory bound: its fixed part
    /// and its texts.
    var byteCount: Int {
        MemoryLayout<JournaledCall>.stride + pointName.utf8.count + arguments.utf8.count
            + (returned?.utf8.count ?? 0) + (error?.utf8.count ?? 0)
    }
}

/// How a value shows itself in the ``CallJournal``: adopt it for argument and result types
/// whose default rendering (`String(describing:)`) says too much or too little.
///
/// Arguments that may hold secrets (credentials in a request's headers, say) set
/// ``journalMayHoldSecrets``: their points are journaled only when named explicitly
/// (``CallJournal/Selection/points``), and ``journalText`` must redact them.
public protocol CallJournalRendering {
    /// The value as the journal shows it, with any secret redacted.
    var journalText: String { get }
    /// An HTTP status the value carries (a response), if any.
    var journalStatus: Int? { get }
    /// A body size in bytes the value carries (a response), if any.
    var journalBytes: Int? { get }
    /// Whether values of this type may hold secrets, so that points taking them as
    /// arguments are left out of ``CallJournal/Selection/everyPoint``.
    static var journalMayHoldSecrets: Bool { get }
}

extension CallJournalRendering {
    /// None by default.
    public var journalStatus: Int? { nil }
    /// None by default.
    public var journalBytes: Int? { nil }
    /// False by default.
    public static var journalMayHoldSecrets: Bool { false }
}

/// The process's call journal: a bounded record of calls through injection points, with
/// what each call received and whether chaos acted on it.
///
/// It is off until you choose points (``selection``): a point's calls cost nothing more
/// while it is not journaled (one relaxed atomic load, on a path that already reads
/// others). A journaled point's every call is recorded, with or without chaos applied:
/// the entry that decided it, the entry's call index and seed, its arguments and its result,
/// rendered when the call returns (see ``CallJournalRendering``). Each text is cut to
/// ``maximumTextLength`` characters, and the journal keeps the newest ``capacity`` calls
/// (10,000 unless set), so its memory is bounded (``byteCount``).
///
/// ```swift
/// CallJournal.shared.selection = .init(everyPoint: true)
/// // … calls …
/// for call in CallJournal.shared.calls { print(call) }
/// ```
///
/// The console shows it live (`GET /v1/journal?follow`), as does `chaos ctl journal PID`.
public final class CallJournal: Sendable {
    /// Which points the journal records.
    public struct Selection: Sendable, Hashable, Codable {
        /// Every point whose arguments hold no secrets (see
        /// ``CallJournalRendering/journalMayHoldSecrets``).
        public var everyPoint: Bool
        /// Points recorded by name, secrets or not.
        public var points: Set<String>

        /// Records `points`, and with `everyPoint` every point that holds no secrets.
        public init(everyPoint: Bool = false, points: Set<String> = []) {
            self.everyPoint = everyPoint
            self.points = points
        }

        /// Nothing: the journal is off.
        public static let none = Selection()

        /// Whether this selection records nothing.
        public var isEmpty: Bool { !everyPoint && points.isEmpty }

        func covers(_ point: String, mayHoldSecrets: Bool) -> Bool {
            points.contains(point) || (everyPoint && !mayHoldSecrets)
        }
    }

    /// The journal every point writes to.
    public static let shared = CallJournal()

    /// The default capacity.
    public static let defaultCapacity = 10_000
    /// The longest text kept for arguments, a result or an error, in characters; longer
    /// ones are cut and end in `…`.
    public static let maximumTextLength = 500

    private struct State {
        var ring: BoundedRing<JournaledCall>
        var selection = Selection.none
        var subscribers: [UInt64: AsyncStream<JournaledCall>.Continuation] = [:]
        var nextSubscriber: UInt64 = 0
    }

    private let state: Locked<State>
    /// Whether anyone follows the journal: the recording path copies subscribers only then.
    private let followed = Atomic<Bool>(false)

    /// A journal keeping the newest `capacity` calls (one of your own, for tests; points
    /// write to ``shared``).
    public init(capacity: Int = CallJournal.defaultCapacity) {
        state = Locked(State(ring: BoundedRing(capacity: capacity, size: \.byteCount)))
    }

    /// Which points it records; ``Selection/none`` (the default) records nothing. Changing
    /// it takes effect on every live point and every point made later.
    public var selection: Selection {
        get { state.withLock { $0.selection } }
        set {
            state.withLock { state in
                state.selection = newValue
                guard self === CallJournal.shared else { return }
                PointRegistry.shared.forEachPoint { point in
                    point.setJournaled(newValue.covers(point.name, mayHoldSecrets: point.argumentsMayHoldSecrets))
                }
            }
        }
    }

    /// How many calls it keeps (the oldest go first). Lowering it drops the oldest at once.
    public var capacity: Int {
        get { state.withLock { $0.ring.capacity } }
        set { state.withLock { $0.ring.resize(to: newValue) } }
    }

    /// The calls it keeps, oldest first.
    public var calls: [JournaledCall] { state.withLock { $0.ring.elements } }

    /// How many calls it has journaled since the process started (kept or not).
    public var recordedCount: Int { state.withLock { $0.ring.recorded } }

    /// The bytes the kept calls hold (their fixed parts and texts): at most ``capacity``
    /// times the size of a call whose texts are all ``maximumTextLength`` long.
    public var byteCount: Int { state.withLock { $0.ring.byteCount } }

    /// Forgets every call kept (numbers go on).
    public func clear() {
        state.withLock { $0.ring.removeAll() }
    }

    /// Every call journaled from now on, as it is recorded; a slow reader keeps the newest
    /// `limit`. The stream ends when the task reading it is cancelled.
    public func follow(bufferingNewest limit: Int = 1_024) -> AsyncStream<JournaledCall> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: JournaledCall.self, bufferingPolicy: .bufferingNewest(limit))
        let id = state.withLock { state -> UInt64 in
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = continuation
            followed.store(true, ordering: .relaxed)
            return state.nextSubscriber
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { state in
                state.subscribers.removeValue(forKey: id)
                self?.followed.store(!state.subscribers.isEmpty, ordering: .relaxed)
            }
        }
        return stream
    }

    /// Whether a point of this name and kind is journaled now: called when it registers,
    /// under the journal's lock, so that a selection set meanwhile is not missed.
    func pointAppeared(_ point: PointState) {
        state.withLock { state in
            point.setJournaled(state.selection.covers(point.name, mayHoldSecrets: point.argumentsMayHoldSecrets))
        }
    }

    /// Records one call of `point`: `installed` decided it (nil: no entry applied), as call
    /// `note.callIndex` of that entry. Inlinable, so that the rendering is specialized for
    /// the point's types where the point is called: unspecialized, rendering an `Int` cost
    /// more than all the rest of the record.
    @inlinable func record<Arguments, Value, Failure>(
        _ point: PointState, _ arguments: Arguments, _ outcome: Result<Value, Failure>, installed: InstalledEntry?,
        note: CallNote
    ) {
        let types = point.journalTypes
        let argumentsText = Self.render(arguments, itself: types.arguments).text
        switch outcome {
        case .success(let value):
            let rendered = Self.render(value, itself: types.result)
            append(
                point, arguments: argumentsText, returned: rendered.text, error: nil, status: rendered.status,
                bytes: rendered.bytes, installed: installed, note: note)
        case .failure(let failure):
            let rendered = Self.render(failure, itself: types.failure)
            append(
                point, arguments: argumentsText, returned: nil, error: rendered.text, status: rendered.status,
                bytes: rendered.bytes, installed: installed, note: note)
        }
    }

    /// Keeps one rendered call and hands it to the followers.
    @usableFromInline func append(
        _ point: PointState, arguments: String, returned: String?, error: String?, status: Int?, bytes: Int?,
        installed: InstalledEntry?, note: CallNote
    ) {
        let date = Date(timeIntervalSince1970: Double(ChaosObservation.realNanoseconds()) / 1e9)
        let entered = note.callIndex >= 0 ? installed : nil
        let pointName = point.name
        let (call, subscribers) = state.withLock { state in
            let call = state.ring.append { number in
                JournaledCall(
                    number: number, date: date, pointName: pointName, entry: entered?.entryID,
                    callIndex: entered == nil ? nil : note.callIndex, entrySeed: entered?.seed,
                    acted: entered != nil && note.acted, arguments: arguments, returned: returned, error: error,
                    status: status, bytes: bytes)
            }
            return (call, followed.load(ordering: .relaxed) ? Array(state.subscribers.values) : [])
        }
        if let call { for subscriber in subscribers { subscriber.yield(call) } }
    }

    /// A value as the journal shows it: its own rendering (when its type has one: `itself`),
    /// or `String(describing:)`, cut. The common scalar types are rendered directly, which
    /// specialized code reduces to their own `description`.
    @inlinable static func render<Value>(_ value: Value, itself: Bool) -> (text: String, status: Int?, bytes: Int?) {
        if Value.self == Void.self { return ("", nil, nil) }
        if let number = value as? Int { return (number.description, nil, nil) }
        if let flag = value as? Bool { return (flag.description, nil, nil) }
        if let number = value as? Double { return (number.description, nil, nil) }
        if let text = value as? String { return (cut(text), nil, nil) }
        if itself, let rendering = value as? any CallJournalRendering {
            return (cut(rendering.journalText), rendering.journalStatus, rendering.journalBytes)
        }
        return (cut(String(describing: value)), nil, nil)
    }

    @usableFromInline static func cut(_ text: String) -> String {
        guard text.utf8.count > maximumTextLength, text.count > maximumTextLength else { return text }
        return String(text.prefix(maximumTextLength)) + "…"
    }
}

/// Which of a point's types render themselves in the journal, looked up once when the point
/// is made (a dynamic cast per call would cost more than the rest of the record).
@usableFromInline struct JournalTypes: Sendable {
    @usableFromInline let arguments: Bool
    @usableFromInline let result: Bool
    @usableFromInline let failure: Bool
    /// Whether the arguments may hold secrets.
    let secrets: Bool

    init(_ arguments: Any.Type, _ result: Any.Type, _ failure: Any.Type) {
        let rendering = arguments as? any CallJournalRendering.Type
        self.arguments = rendering != nil
        self.result = result is any CallJournalRendering.Type
        self.failure = failure is any CallJournalRendering.Type
        secrets = rendering?.journalMayHoldSecrets ?? false
    }
}

/// What a point's driver learns of one call while deciding it, for the journal: the
/// entry's index of the call (-1: no entry counted it) and whether chaos acted.
@usableFromInline struct CallNote {
    @usableFromInline var callIndex = -1
    @usableFromInline var acted = false

    @inlinable init() {}
}
