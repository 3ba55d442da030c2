import Foundation
import TestHelpers
import Testing

@testable import ChaosKit

#if canImport(Glibc)
import Glibc
#endif

/// The ring behind the call journal and ChaosNetwork's request journal.
@Suite struct BoundedRingTests {
    @Test func keepsTheNewestInOrderAndWraps() {
        var ring = BoundedRing<Int>(capacity: 3)
        #expect(ring.elements.isEmpty)
        for value in 1...2 { ring.append { _ in value } }
        #expect(ring.elements == [1, 2])
        for value in 3...7 { ring.append { _ in value } }
        #expect(ring.elements == [5, 6, 7], "the oldest go first, the rest stay in order")
        #expect(ring.count == 3 && ring.recorded == 7)
        ring.resize(to: 2)
        #expect(ring.elements == [6, 7])
        ring.append { _ in 8 }
        #expect(ring.elements == [7, 8])
        ring.removeAll()
        #expect(ring.elements.isEmpty && ring.recorded == 8, "numbers go on")
    }

    @Test func numbersWhatItIsGivenAndCountsBytes() {
        var ring = BoundedRing<String>(capacity: 2, size: { $0.utf8.count })
        for _ in 0..<5 { ring.append { "call \($0)" } }
        #expect(ring.elements == ["call 4", "call 5"])
        #expect(ring.byteCount == 12, "only the kept elements count")
        var off = BoundedRing<String>(capacity: 0)
        #expect(off.append { _ in "x" } == nil && off.recorded == 0)
        var numbered = BoundedRing<Int>(capacity: 1)
        #expect(numbered.append { $0 } == 1 && numbered.append { $0 } == 2, "append gives the number")
    }
}

/// A plain value with a rendering of its own making, for the journal's two ways of keeping
/// values.
struct GridCell: Sendable, CustomStringConvertible {
    var row: Int
    var column: Int
    var description: String { "R\(row)C\(column)" }
}

/// An object the journal must not keep alive.
final class Parcel: Sendable, CustomStringConvertible {
    let label: String
    init(label: String) { self.label = label }
    var description: String { "parcel \(label)" }
}

/// A value whose rendering redacts what it holds, as network requests do.
struct SecretArguments: CallJournalRendering, Sendable {
    var user: String
    var password: String
    var journalText: String { "user=\(user) password=[redacted]" }
    static var journalMayHoldSecrets: Bool { true }
}

/// The call journal: off by default, per point, with what each call received. Serialized:
/// the journal and its selection are process-wide.
@Suite(.serialized, .processWideCallJournal) struct CallJournalTests {
    /// Runs `body` with the journal recording `selection`, then turns it off and clears it.
    func journaling<T>(_ selection: CallJournal.Selection, _ body: () throws -> T) rethrows -> T {
        CallJournal.shared.clear()
        CallJournal.shared.selection = selection
        defer {
            CallJournal.shared.selection = .none
            CallJournal.shared.clear()
        }
        return try body()
    }

    func isJournaled<A, R, F>(_ point: InjectionPoint<A, R, F>) -> Bool {
        point.core.journaled.load(ordering: .relaxed)
    }

    func activity<A, R, F>(_ point: InjectionPoint<A, R, F>) -> Int {
        point.core.activity.load(ordering: .relaxed)
    }

    func calls(of point: String) -> [JournaledCall] {
        CallJournal.shared.calls.filter { $0.pointName == point }
    }

    @Test func isOffByDefault() throws {
        #expect(CallJournal.shared.selection == .none)
        let name = uniqueName("quiet")
        let point = InjectionPoint<Int, Int, Never>(name) { $0 + 1 }
        #expect(!isJournaled(point))
        #expect(activity(point) == 0, "nothing to make calls take a longer path")
        let chaos = Chaos(seed: 1)
        try chaos.profile(point.entry(.constant(9))).apply()
        defer { chaos.revertAll() }
        _ = point(1)
        #expect(calls(of: name).isEmpty)
    }

    @Test func recordsWhatTheCallerReceived() throws {
        let name = uniqueName("recorded")
        let point = InjectionPoint<Int, Int, TestFailure>(name) { $0 * 10 }
        try journaling(.init(points: [name])) {
            #expect(isJournaled(point))
            #expect(try point(1) == 10, "with nothing applied, the original")
            let chaos = Chaos(seed: 77)
            let entry = point.entry(.sequential([.constant(-1), .original, .throwing(.offline)]))
            try chaos.profile(entry).apply()
            defer { chaos.revertAll() }
            #expect(try point(2) == -1)
            #expect(try point(3) == 30)
            #expect(throws: TestFailure.offline) { try point(4) }
            let recorded = calls(of: name)
            try #require(recorded.count == 4)
            #expect(recorded.map(\.arguments) == ["1", "2", "3", "4"])
            #expect(recorded[0].entry == nil && recorded[0].callIndex == nil && !recorded[0].acted)
            #expect(recorded[0].returned == "10")
            #expect(recorded[1].entry == entry.id && recorded[1].callIndex == 0 && recorded[1].acted)
            #expect(recorded[1].returned == "-1" && recorded[1].error == nil)
            #expect(recorded[2].callIndex == 1 && !recorded[2].acted && recorded[2].returned == "30")
            #expect(recorded[3].callIndex == 2 && recorded[3].acted && recorded[3].returned == nil)
            #expect(recorded[3].error == "offline")
            let seed = try #require(chaos.counters.first?.lastAct?.entrySeed)
            #expect(recorded[1...].allSatisfy { $0.entrySeed == seed })
            #expect(zip(recorded, recorded.dropFirst()).allSatisfy { $0.number + 1 == $1.number })
        }
        #expect(!isJournaled(point))
        #expect(activity(point) == 0, "turning it off gives the count back")
    }

    @Test func aGlobalConstantIsJournaledToo() async throws {
        let name = uniqueName("constant")
        let point = InjectionPoint<Int, Int, Never>(name) { $0 }
        let asyncName = uniqueName("async")
        let asyncPoint = AsyncInjectionPoint<Int, Int, Never>(asyncName) { $0 }
        let chaos = Chaos(seed: 5)
        try chaos.profile(point.entry(.constant(7)), asyncPoint.entry(.constant(8))).apply()
        defer { chaos.revertAll() }
        CallJournal.shared.selection = .init(points: [name, asyncName])
        defer { CallJournal.shared.selection = .none }
        #expect(point(1) == 7)
        #expect(await asyncPoint(2) == 8)
        #expect(calls(of: name).map(\.returned) == ["7"])
        #expect(calls(of: asyncName).map(\.returned) == ["8"])
        #expect(calls(of: asyncName).first?.acted == true)
    }

    @Test func pointsMadeLaterFollowTheSelection() {
        let name = uniqueName("later")
        journaling(.init(points: [name])) {
            let point = InjectionPoint<Void, String, Never>(name) { "hello" }
            #expect(point() == "hello")
            #expect(calls(of: name).map(\.arguments) == [""])
            #expect(calls(of: name).map(\.returned) == ["hello"])
        }
    }

    @Test func secretsAreLeftOutUnlessNamedAndRedacted() {
        let plain = InjectionPoint<Int, Int, Never>(uniqueName("plain")) { $0 }
        let login = InjectionPoint<SecretArguments, Bool, Never>(uniqueName("login")) { _ in true }
        #expect(login.core.argumentsMayHoldSecrets && !plain.core.argumentsMayHoldSecrets)
        journaling(.init(everyPoint: true)) {
            _ = plain(1)
            _ = login(SecretArguments(user: "ann", password: "hunter2"))
            #expect(calls(of: plain.name).count == 1)
            #expect(calls(of: login.name).isEmpty, "every point means every point without secrets")
        }
        journaling(.init(everyPoint: true, points: [login.name])) {
            _ = login(SecretArguments(user: "ann", password: "hunter2"))
            let recorded = calls(of: login.name)
            #expect(recorded.map(\.arguments) == ["user=ann password=[redacted]"])
            #expect(!CallJournal.shared.calls.contains { $0.arguments.contains("hunter2") })
        }
    }

    @Test func longTextsAreCut() {
        let name = uniqueName("long")
        let point = InjectionPoint<String, Int, Never>(name) { $0.count }
        journaling(.init(points: [name])) {
            _ = point(String(repeating: "é", count: 5_000))
            let text = calls(of: name).first?.arguments ?? ""
            #expect(text.count == CallJournal.maximumTextLength + 1 && text.hasSuffix("…"))
        }
    }

    @Test func followersSeeEachCall() async throws {
        let name = uniqueName("followed")
        let point = InjectionPoint<Int, Int, Never>(name) { $0 }
        CallJournal.shared.selection = .init(points: [name])
        defer { CallJournal.shared.selection = .none }
        let stream = CallJournal.shared.follow()
        for index in 0..<3 { _ = point(index) }
        var seen: [String] = []
        for await call in stream where call.pointName == name {
            seen.append(call.arguments)
            if seen.count == 3 { break }
        }
        #expect(seen == ["0", "1", "2"])
    }

    @Test func plainValuesAreKeptAsTheyAreAndEverythingElseIsRendered() {
        #expect(RawJournalValues<Int, Int, Never>.isKeptRaw)
        #expect(RawJournalValues<GridCell, Date, TestFailure>.isKeptRaw)
        #expect(RawJournalValues<Void, Bool, Never>.isKeptRaw)
        #expect(!RawJournalValues<String, Int, Never>.isKeptRaw, "a string may own any amount of memory")
        #expect(!RawJournalValues<Int, Int, any Error>.isKeptRaw, "an existential error holds a reference")
        #expect(!RawJournalValues<Parcel, Int, Never>.isKeptRaw)
        #expect(!RawJournalValues<GridCell, GridCell, TestFailure>.isKeptRaw, "over 32 bytes: rendered")
    }

    @Test func aPlainValueReadsTheSameWhenRenderedLater() throws {
        let name = uniqueName("grid")
        let point = InjectionPoint<GridCell, Date, TestFailure>(name) { cell throws(TestFailure) in
            guard cell.row >= 0 else { throw .timeout(seconds: 3) }
            return Date(timeIntervalSinceReferenceDate: Double(cell.row * 86_400 + cell.column))
        }
        try journaling(.init(points: [name])) {
            let date = try point(GridCell(row: 1, column: 2))
            #expect(date.timeIntervalSinceReferenceDate == 86_402)
            #expect(throws: TestFailure.timeout(seconds: 3)) { try point(GridCell(row: -1, column: 0)) }
            let recorded = calls(of: name)
            #expect(recorded.map(\.arguments) == ["R1C2", "R-1C0"])
            #expect(recorded.map(\.returned) == ["2001-01-02 00:00:02 +0000", nil])
            #expect(recorded.map(\.error) == [nil, "timeout(seconds: 3)"])
            let bytes = CallJournal.shared.byteCount
            #expect(bytes == 2 * MemoryLayout<JournalRecord>.stride, "kept as bytes, no texts: \(bytes) bytes")
        }
    }

    @Test func theJournalKeepsNoObjectAlive() {
        let name = uniqueName("parcel")
        let point = InjectionPoint<Parcel, Int, Never>(name) { $0.label.count }
        journaling(.init(points: [name])) {
            weak var sent: Parcel?
            do {
                let parcel = Parcel(label: "books")
                sent = parcel
                #expect(point(parcel) == 5)
            }
            #expect(sent == nil, "rendered when recorded, not kept")
            #expect(calls(of: name).map(\.arguments) == ["parcel books"])
            let bytes = CallJournal.shared.byteCount
            #expect(bytes > MemoryLayout<JournalRecord>.stride + "parcel books".utf8.count, "texts are counted")
        }
    }

    /// A million journaled calls, half kept as they are and half rendered: the journal keeps
    /// its capacity, its byte count stays under its bound, and the process's resident memory
    /// does not grow with the calls.
    @Test func memoryStaysBounded() throws {
        let name = uniqueName("memory")
        let point = InjectionPoint<Int, Int, Never>(name) { $0 }
        let textName = uniqueName("memory-text")
        let textPoint = InjectionPoint<String, String, Never>(textName) { $0 + "!" }
        let chaos = Chaos(seed: 3)
        try chaos.profile(point.entry(ChaosProvider.constant(-1).probability(0.5))).apply()
        defer { chaos.revertAll() }
        func call(_ index: Int) {
            if index.isMultiple(of: 2) { _ = point(index) } else { _ = textPoint("call \(index)") }
        }
        try journaling(.init(points: [name, textName])) {
            let capacity = CallJournal.shared.capacity
            #expect(capacity == CallJournal.defaultCapacity)
            for index in 0..<(2 * capacity) { call(index) }  // the ring full, once round
            let residentBefore = try residentBytes()
            let bytesBefore = CallJournal.shared.byteCount
            for index in 0..<1_000_000 { call(index) }
            let residentAfter = try residentBytes()
            let bytes = CallJournal.shared.byteCount
            #expect(CallJournal.shared.calls.count == capacity)
            #expect(CallJournal.shared.recordedCount >= 1_000_000 + 2 * capacity)
            // Each rendered call: the object holding its texts (under 128 bytes) and texts
            // of at most 500 characters (and the `…`).
            let bound = capacity * (MemoryLayout<JournalRecord>.stride + 128 + 3 * 502)
            #expect(bytes <= bound, "\(bytes) bytes kept, bound \(bound)")
            #expect(abs(bytes - bytesBefore) < bytesBefore / 10, "\(bytesBefore) → \(bytes) bytes")
            // A journal that kept every call would grow by at least a million records'
            // fixed parts; other suites allocate in this process meanwhile, so the bound is
            // half of that rather than a few pages.
            let growth = residentAfter - residentBefore
            let unbounded = 1_000_000 * MemoryLayout<JournalRecord>.stride
            #expect(growth < unbounded / 2, "resident memory grew by \(growth) bytes over 1M calls")
        }
    }

    /// The process's resident memory, from /proc/self/statm (0 elsewhere).
    func residentBytes() throws -> Int {
        #if os(Linux)
        let text = try String(contentsOfFile: "/proc/self/statm", encoding: .utf8)
        let pages = try #require(Int(text.split(separator: " ")[1]))
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return 0
        #endif
    }
}
