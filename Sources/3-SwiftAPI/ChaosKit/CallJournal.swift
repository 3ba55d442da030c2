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
/// the entry that decided it, the entry's call index and seed, its arguments and its result
/// (see ``CallJournalRendering``). Each text is cut to ``maximumTextLength`` characters, and
/// the journal keeps the newest ``capacity`` calls (10,000 unless set), so its memory is
/// bounded (``byteCount``).
///
/// Plain values (numbers, flags, dates, enums and small structs of them: trivially copied,
/// no references, at most 64 bytes for a call) are kept as they are and rendered when the journal
/// is read, which keeps a journaled call cheap. Anything else, and every type that adopts
/// ``CallJournalRendering``, is rendered when the call returns: such a value may own any
/// amount of memory, change later, or hold a secret only its own rendering redacts.
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
        var ring: BoundedRing<JournalRecord>
        var selection = Selection.none
        /// The names of the points it has recorded, by their ``PointState/journalNameIndex``:
        /// a record keeps an index, which costs no reference count to copy and drop.
        var pointNames: [String] = []

        /// The index of `point`'s name in `pointNames`, given on its first record.
        mutating func nameIndex(of point: PointState) -> Int {
            if point.journalNameIndex < 0 {
                point.journalNameIndex = pointNames.count
                pointNames.append(point.name)
            }
            return point.journalNameIndex
        }
    }

    private let state: Locked<State>
    /// Who follows the journal: the recording path makes a call to hand out only when
    /// someone does.
    private let followers = Subscribers<JournaledCall>()

    /// A journal keeping the newest `capacity` calls (one of your own, for tests; points
    /// write to ``shared``).
    public init(capacity: Int = CallJournal.defaultCapacity) {
        state = Locked(State(ring: BoundedRing(capacity: capacity, size: { $0.byteCount })))
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
    public var calls: [JournaledCall] {
        // Rendered outside the lock: rendering 10,000 calls must not hold up the points.
        let (records, names) = state.withLock { ($0.ring.elements, $0.pointNames) }
        return records.map { $0.call(pointName: names[$0.pointNameIndex]) }
    }

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
        // The journal's followers are never closed, so a subscription is always made.
        followers.subscribe(bufferingNewest: limit)?.stream ?? AsyncStream { $0.finish() }
    }

    /// Whether a point of this name and kind is journaled now: called when it registers,
    /// under the journal's lock, so that a selection set meanwhile is not missed.
    func pointAppeared(_ point: PointState) {
        state.withLock { state in
            point.setJournaled(state.selection.covers(point.name, mayHoldSecrets: point.argumentsMayHoldSecrets))
        }
    }

    /// Records one call of `point`, decided as `note` tells (call index -1: no entry
    /// applied). Inlinable, so that it is specialized for the point's types where the point
    /// is called: that is what lets plain values be kept as they are, and rendered only when
    /// someone reads the journal.
    @inlinable func record<Arguments, Value, Failure>(
        _ point: PointState, _ arguments: Arguments, _ outcome: Result<Value, Failure>, note: CallNote
    ) {
        let types = point.journalTypes
        if RawJournalValues<Arguments, Value, Failure>.isKeptRaw, let plain = types.plain {
            let values = JournalValues(plain: RawJournalValues(arguments: arguments, outcome: outcome), type: plain)
            append(point, values, note: note)
            return
        }
        let argumentsText = Self.render(arguments, itself: types.arguments).text
        let values: RenderedJournalValues
        switch outcome {
        case .success(let value):
            let rendered = Self.render(value, itself: types.result)
            values = RenderedJournalValues(
                arguments: argumentsText, returned: rendered.text, error: nil, status: rendered.status,
                bytes: rendered.bytes)
        case .failure(let failure):
            let rendered = Self.render(failure, itself: types.failure)
            values = RenderedJournalValues(
                arguments: argumentsText, returned: nil, error: rendered.text, status: rendered.status,
                bytes: rendered.bytes)
        }
        append(point, JournalValues(rendered: values), note: note)
    }

    /// Keeps one call and hands it, rendered, to the followers. Only ``shared`` records
    /// (points name it), which is what lets a point keep its name's index.
    @usableFromInline func append(
        _ point: PointState, _ values: JournalValues, note: CallNote
    ) {
        let entered = note.callIndex >= 0
        let nanoseconds = ChaosObservation.realNanoseconds()
        func make(_ number: Int, _ nameIndex: Int) -> JournalRecord {
            JournalRecord(
                number: number, nanoseconds: nanoseconds, pointNameIndex: nameIndex, entry: entered ? note.entry : nil,
                callIndex: note.callIndex, entrySeed: note.entrySeed, acted: entered && note.acted, values: values)
        }
        guard !followers.isEmpty else {
            _ = state.withLock { state in
                let nameIndex = state.nameIndex(of: point)
                return state.ring.append { make($0, nameIndex) }
            }
            return
        }
        let number = state.withLock { state in
            let nameIndex = state.nameIndex(of: point)
            return state.ring.append { make($0, nameIndex) }
        }
        guard let number else { return }
        followers.yield(make(number, -1).call(pointName: point.name))
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

    /// The point's calls as plain values, when they are kept as bytes (none of its types
    /// renders itself, and ``RawJournalValues/isKeptRaw``); nil when they are rendered.
    @usableFromInline let plain: (any PlainJournalValues.Type)?

    init<Arguments, Value, Failure: Error>(_: Arguments.Type, _: Value.Type, _: Failure.Type) {
        let rendering = Arguments.self as? any CallJournalRendering.Type
        arguments = rendering != nil
        result = Value.self is any CallJournalRendering.Type
        failure = Failure.self is any CallJournalRendering.Type
        secrets = rendering?.journalMayHoldSecrets ?? false
        typealias Plain = RawJournalValues<Arguments, Value, Failure>
        plain = Plain.isKeptRaw && !arguments && !result && !failure ? Plain.self : nil
    }
}

/// What a point's driver learns of one call while deciding it, for the journal: the
/// entry's index of the call (-1: no entry counted it) and whether chaos acted.
@usableFromInline struct CallNote {
    @usableFromInline var callIndex = -1
    @usableFromInline var acted = false
    /// The entry that counted the call, and its seed.
    @usableFromInline var entry: ProfileEntry.ID?
    @usableFromInline var entrySeed: UInt64 = 0

    @inlinable init() {}

    /// Notes that `installed` counted the call as its call `callIndex`.
    @inlinable @inline(__always) mutating func decided(by installed: InstalledEntry, call callIndex: Int, acted: Bool) {
        self.callIndex = callIndex
        self.acted = acted
        entry = installed.entryID
        entrySeed = installed.seed
    }
}

/// One call as the journal's ring keeps it: what the call path knows, with its values kept
/// either as they are or rendered (``JournalValues``). Made into a ``JournaledCall`` when
/// read.
struct JournalRecord: Sendable {
    let number: Int
    let nanoseconds: Int64
    /// Where the point's name is in the journal's names.
    let pointNameIndex: Int
    let entry: ProfileEntry.ID?
    /// -1 when no entry applied to the call.
    let callIndex: Int
    let entrySeed: UInt64
    let acted: Bool
    let values: JournalValues

    /// The bytes it holds, for the journal's memory bound: its fixed part and the texts of
    /// rendered values.
    var byteCount: Int { MemoryLayout<JournalRecord>.stride + (values.rendered?.byteCount ?? 0) }

    /// The call as readers see it: its values rendered now if they were kept as they are.
    func call(pointName: String) -> JournaledCall {
        let rendered = values.rendering
        return JournaledCall(
            number: number, date: Date(timeIntervalSince1970: Double(nanoseconds) / 1e9), pointName: pointName,
            entry: entry, callIndex: callIndex < 0 ? nil : callIndex, entrySeed: callIndex < 0 ? nil : entrySeed,
            acted: acted, arguments: rendered.arguments, returned: rendered.returned, error: rendered.error,
            status: rendered.status, bytes: rendered.bytes)
    }
}

/// A call's arguments and outcome as the journal keeps them, one of two ways, so that the
/// common call costs little and memory stays bounded:
/// - plain values (no references, at most ``PlainBytes/size`` bytes in all) are kept as they
///   are, their bytes copied into the record, and rendered when read. Such values own no
///   memory beyond their bytes and read the same later as now.
/// - anything else is rendered when the call is recorded (``RenderedJournalValues``), each
///   text cut to ``CallJournal/maximumTextLength``: a value with references (a string, an
///   array, an object) may own any amount of memory, change later, or hold a secret only
///   its own rendering redacts.
///
/// Kept plain, a record holds no reference for its values: writing it into the ring is a
/// copy of bytes.
@usableFromInline struct JournalValues: Sendable {
    /// The bytes of plain values.
    @usableFromInline typealias PlainBytes = (UInt64, UInt64, UInt64, UInt64)

    @usableFromInline let bytes: PlainBytes
    /// The type of the plain values in `bytes`, which renders them; nil when rendered.
    @usableFromInline let plainType: (any PlainJournalValues.Type)?
    /// The values rendered when recorded; nil when kept plain.
    @usableFromInline let rendered: RenderedJournalValues?

    /// Plain values, kept as they are; `type` is `Plain.self`, looked up once per point
    /// (``JournalTypes/plain``): here, the generic type's conformance would be looked up
    /// on every call.
    @inlinable init<Plain: PlainJournalValues>(plain: Plain, type: any PlainJournalValues.Type) {
        var bytes: PlainBytes = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { $0.storeBytes(of: plain, as: Plain.self) }
        self.bytes = bytes
        plainType = type
        rendered = nil
    }

    /// Values rendered when recorded.
    @usableFromInline init(rendered: RenderedJournalValues) {
        bytes = (0, 0, 0, 0)
        plainType = nil
        self.rendered = rendered
    }

    /// The texts and figures a ``JournaledCall`` shows.
    var rendering: RenderedJournalValues {
        if let rendered { return rendered }
        guard let plainType else { return RenderedJournalValues(arguments: "", returned: nil, error: nil) }
        return withUnsafeBytes(of: bytes) { plainType.render($0) }
    }
}

/// Plain arguments and outcome of one type of point, which the journal keeps as bytes (see
/// ``JournalValues``).
@usableFromInline protocol PlainJournalValues: SendableMetatype {
    /// Renders the values whose bytes `bytes` begins with.
    static func render(_ bytes: UnsafeRawBufferPointer) -> RenderedJournalValues
}

/// A call's plain arguments and outcome (see ``JournalValues``).
@usableFromInline struct RawJournalValues<Arguments, Value, Failure: Error>: PlainJournalValues {
    @usableFromInline let arguments: Arguments
    @usableFromInline let outcome: Result<Value, Failure>

    @inlinable init(arguments: Arguments, outcome: Result<Value, Failure>) {
        self.arguments = arguments
        self.outcome = outcome
    }

    /// Whether a call of these types is kept as bytes: its values are plain (trivially
    /// copied, holding no references) and fit ``JournalValues/PlainBytes``. Known when the
    /// record is specialized.
    @inlinable static var isKeptRaw: Bool {
        _isPOD(Self.self) && MemoryLayout<Self>.size <= MemoryLayout<JournalValues.PlainBytes>.size
            && MemoryLayout<Self>.alignment <= MemoryLayout<JournalValues.PlainBytes>.alignment
    }

    @usableFromInline static func render(_ bytes: UnsafeRawBufferPointer) -> RenderedJournalValues {
        let values = bytes.load(as: Self.self)
        let arguments = CallJournal.render(values.arguments, itself: false).text
        switch values.outcome {
        case .success(let value):
            return RenderedJournalValues(
                arguments: arguments, returned: CallJournal.render(value, itself: false).text, error: nil)
        case .failure(let failure):
            return RenderedJournalValues(
                arguments: arguments, returned: nil, error: CallJournal.render(failure, itself: false).text)
        }
    }
}

/// Arguments and outcome rendered when the call was recorded (see ``JournalValues``).
@usableFromInline final class RenderedJournalValues: Sendable {
    let arguments: String
    let returned: String?
    let error: String?
    let status: Int?
    let bytes: Int?
    /// The bytes it holds: the object (header and fields) and its texts.
    let byteCount: Int

    @usableFromInline init(arguments: String, returned: String?, error: String?, status: Int? = nil, bytes: Int? = nil)
    {
        self.arguments = arguments
        self.returned = returned
        self.error = error
        self.status = status
        self.bytes = bytes
        byteCount =
            16 + 3 * MemoryLayout<String?>.stride + 3 * MemoryLayout<Int?>.stride + arguments.utf8.count
            + (returned?.utf8.count ?? 0) + (error?.utf8.count ?? 0)
    }
}
