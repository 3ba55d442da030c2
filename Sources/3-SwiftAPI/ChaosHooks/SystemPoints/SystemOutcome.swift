import CChaosFaults
@_spi(Hooks) public import ChaosKit
public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a system point answers for a call: the result type of every system point.
///
/// Providers made of these (constants, `sequential`, `composite` over the points' own
/// conditions, `probability`, `times`, `delayed(by:)`) are compiled into the C fault
/// engine's plan and decided there, without Swift on the call path; blocks and task
/// scopes are answered by Swift when the engine asks.
public enum SystemOutcome: Sendable, Hashable, CustomStringConvertible {
    /// Make the real call.
    case real
    /// This entry does not act on the call: the point's next older entry decides, and
    /// after the last one the real call is made. Catalogue items answer `pass` for calls
    /// they do not aim at, so entries on different files, hosts or variables stack.
    case pass
    /// Fail with -1 (NULL for `fopen`, an error flag for stdio) and this `errno`, without
    /// making the call. A function that cannot return this errno is left alone.
    case fail(errno: Int32)
    /// Fail with -1 and an errno drawn for each call, from the entry's seed and the call's
    /// index, among those the function can really return (libfiu's default): the same seed
    /// replays the same errnos.
    case failWithAnyErrno
    /// Name resolution fails with this `EAI_*` code (`system.getaddrinfo`).
    case resolverFailure(code: Int32)
    /// Reads and writes move at most this many bytes (nil: half of what was asked, at
    /// least one): a short transfer callers must handle.
    case short(maxBytes: Int?)
    /// The bytes the call moves are changed: `bytes` of each read's result or each write's
    /// data, from `offset` in the call's transfer (nil: at positions drawn from the seed),
    /// each changed as `with` says. Replays exactly from the seed.
    case corrupt(bytes: Int, offset: Int?, with: Corruption)
    /// The clock reads the real time plus this many nanoseconds (negative: the past).
    case offset(nanoseconds: Int64, scope: ClockScope = .default)
    /// The clock reads this instant (nanoseconds since 1970).
    case frozen(nanosecondsSince1970: Int64, scope: ClockScope = .default)
    /// Time runs `factor` times as fast from the real instant `since` (ns since 1970).
    /// Under `chaos run` it runs from the start of the process tree.
    case speed(factor: Double, since: Int64, scope: ClockScope = .default)
    /// Every clock, monotonic ones too, reads the process's virtual time, and sleeps and
    /// kernel timers wait for it (``VirtualTime``): it starts at `startNanosecondsSince1970`
    /// (nil: the real time at apply) and moves only when advanced, or also at real pace
    /// when `flowing`.
    case virtual(startNanosecondsSince1970: Int64?, flowing: Bool)
    /// `getenv` answers this value.
    case set(String)
    /// `getenv` answers NULL: the variable is not set.
    case unset
    /// Power is lost at this call, which changes a file (`system.files`, under `chaos run`):
    /// the call does not complete, the program's whole tree is killed, and every change
    /// that was not durable (fsync of the file, of its directory for names) is rolled
    /// back. With `torn`, the last unsynced write of each file keeps a seeded prefix of its
    /// 512-byte sectors.
    case powerLoss(torn: Bool)
    /// A stat call answers what `attributes` names instead of the file's own (`system.stat`):
    /// a size, a modification time, permission bits, a link count. The fields it does not
    /// name stay the file's, and a named time wins over a clock entry's shift of file times.
    case attributes(FileAttributes)
    /// Each connection moves at most this many bytes a second in the point's direction
    /// (`system.send`, `system.recv`): calls move a hundredth of a second's bytes at a time,
    /// after waiting for their turn.
    case pace(bytesPerSecond: Int)
    /// Each call moves at most `bytes` ± `variation` bytes (drawn from the seed): a slice.
    case slice(bytes: Int, variation: Int)
    /// Once a connection has moved `bytes` in the point's direction, it ends: `then` says
    /// how. The call that reaches the limit moves only the bytes up to it.
    case limit(bytes: Int, then: StreamEnd)
    /// Data stops: each call on the connection waits until `duration` after the first one
    /// did, then the connection ends as `then` says.
    case stall(Duration, then: StreamEnd)
    /// Closing a socket (`system.send`) waits this long first, as toxiproxy's slow_close.
    case slowClose(Duration)
    /// A directory read (`system.dir`) leaves these entries out, as if they were not there;
    /// `.` and `..` are never left out.
    case omit(OmittedEntries)
    /// An allocation (`system.memory`) fails with `ENOMEM`: `NULL` from the malloc family,
    /// `ENOMEM` from `posix_memalign`, `MAP_FAILED` from an anonymous `mmap`. In-process only
    /// the allocations of the C images named in `images` fail (by file name, e.g.
    /// `"libsqlite3.so.0"`, or by path); an entry that names none is refused, since the
    /// Swift runtime traps on a failed allocation by design. Under `chaos run` the whole
    /// program's allocations fail, whatever `images` says.
    case outOfMemory(images: [String])

    /// Time runs `factor` times as fast from now on.
    public static func speed(_ factor: Double, scope: ClockScope = .default) -> SystemOutcome {
        .speed(factor: factor, since: SystemClockReading.realNanoseconds(), scope: scope)
    }

    /// The clock reads `date`.
    public static func frozen(at date: Date, scope: ClockScope = .default) -> SystemOutcome {
        .frozen(nanosecondsSince1970: Int64((date.timeIntervalSince1970 * 1e9).rounded()), scope: scope)
    }

    /// The clock reads the real time moved by `seconds`.
    public static func offset(seconds: Double, scope: ClockScope = .default) -> SystemOutcome {
        .offset(nanoseconds: Int64((seconds * 1e9).rounded()), scope: scope)
    }

    /// E.g. `fail(ENOSPC)`, `offset(-946080000.0s)`.
    public var description: String {
        switch self {
        case .real: "real"
        case .pass: "pass"
        case .fail(let code): "fail(\(SystemErrno.name(code)))"
        case .failWithAnyErrno: "fail(any errno)"
        case .resolverFailure(let code): "fail(\(SystemErrno.name(code)))"
        case .short(let max): max.map { "short(\($0) bytes)" } ?? "short"
        case .corrupt(let bytes, let offset, let with):
            "corrupt(\(bytes) byte\(bytes == 1 ? "" : "s")\(offset.map { " at \($0)" } ?? ""), \(with.rawValue))"
        case .offset(let ns, _): "offset(\(DurationText.format(.nanoseconds(ns))))"
        case .frozen(let ns, _): "frozen(\(ISO8601Date.format(Date(timeIntervalSince1970: Double(ns) / 1e9))))"
        case .speed(let factor, _, _): "speed(×\(factor))"
        case .virtual(let start, let flowing):
            "virtual(" + (start.map { ISO8601Date.format(Date(timeIntervalSince1970: Double($0) / 1e9)) } ?? "now")
                + (flowing ? ", flowing)" : ")")
        case .set(let value): "set(\(value.debugDescription))"
        case .unset: "unset"
        case .powerLoss(let torn): torn ? "power-loss(torn)" : "power-loss"
        case .attributes(let attributes): "attributes(\(attributes))"
        case .pace(let rate): "bandwidth(\(rate) B/s)"
        case .slice(let bytes, let variation): "slice(\(bytes)\(variation > 0 ? " ± \(variation)" : "") bytes)"
        case .limit(let bytes, let end): "limit(\(bytes) bytes, then \(end.rawValue))"
        case .stall(let duration, let end): "stall(\(DurationText.format(duration)), then \(end.rawValue))"
        case .slowClose(let duration): "slow-close(\(DurationText.format(duration)))"
        case .omit(.named(let pattern)): "omit(\(pattern.debugDescription))"
        case .omit(.oneIn(let count)): "omit(1 in \(count))"
        case .outOfMemory(let images): "out-of-memory(\(images.joined(separator: ", ")))"
        }
    }

    /// The clock options of a clock outcome.
    var clockScope: ClockScope? {
        switch self {
        case .offset(_, let scope), .frozen(_, let scope), .speed(_, _, let scope): scope
        case .virtual: ClockScope(monotonic: true, fileTimes: true, sleeps: true)
        default: nil
        }
    }

    /// Why `point` cannot answer this, or nil when it can.
    func problem(on point: SystemPointKind) -> String? {
        switch self {
        case .real, .pass:
            return nil
        case .fail(let code):
            guard point != .dns, point != .getenv, point != .clock else {
                return point == .dns
                    ? "\(point.pointName) fails with an EAI code: use .resolverFailure(code: EAI_AGAIN)"
                    : "\(point.pointName) cannot fail a call; use its own outcomes"
            }
            guard chaos_fault_errno_name(code) != nil, SystemFunctions.allows(code, on: point) else {
                return
                    "no function of \(point.pointName) returns errno \(SystemErrno.name(code)); choose one of: \(SystemFunctions.errnoNames(of: point).joined(separator: ", "))"
            }
            return nil
        case .failWithAnyErrno:
            guard point != .dns, point != .getenv, point != .clock else {
                return point == .dns
                    ? "\(point.pointName) fails with an EAI code: use .resolverFailure(code: EAI_AGAIN)"
                    : "\(point.pointName) cannot fail a call; use its own outcomes"
            }
            return nil
        case .resolverFailure(let code):
            guard point == .dns else { return "only system.getaddrinfo answers an EAI code" }
            guard SystemFunctions.allows(code, on: .dns) else {
                return
                    "\(SystemErrno.name(code)) is no EAI code getaddrinfo returns; choose one of: \(SystemFunctions.errnoNames(of: .dns).joined(separator: ", "))"
            }
            return nil
        case .short(let max):
            guard point == .files || point == .send || point == .recv else {
                return "only reads and writes can be short"
            }
            if let max, max < 1 { return "short(maxBytes: \(max)) moves nothing; give 1 or more, or nil for half" }
            return nil
        case .corrupt(let bytes, let offset, _):
            guard point == .files || point == .send || point == .recv else {
                return "only reads and writes (system.files, system.send, system.recv) move bytes to corrupt"
            }
            guard (1...65536).contains(bytes) else { return "corrupt(bytes: \(bytes)) changes 1 to 65536 bytes a call" }
            if let offset, offset < 0 { return "corrupt(offset: \(offset)) is before the call's first byte" }
            return nil
        case .offset, .frozen, .virtual:
            return point == .clock ? nil : "only system.clock answers a time"
        case .speed(let factor, _, _):
            guard point == .clock else { return "only system.clock answers a time" }
            return factor.isFinite ? nil : "speed(\(factor)) is not a finite factor"
        case .set(let value):
            guard point == .getenv else { return "only system.getenv answers a value" }
            return value.utf8.contains(0) ? "a getenv answer cannot contain a NUL byte" : nil
        case .unset:
            return point == .getenv ? nil : "only system.getenv answers unset"
        case .powerLoss:
            return point == .files ? nil : "power is lost at a call that changes a file: only system.files loses it"
        case .omit(let entries):
            guard point == .dir else { return "only directory reads (system.dir) leave entries out" }
            switch entries {
            case .named(let pattern):
                guard !pattern.isEmpty, pattern.utf8.count <= 255, !pattern.contains("/"), !pattern.utf8.contains(0)
                else {
                    return
                        "omit(.named(\(pattern.prefix(40).debugDescription))) is no glob of entry names; give one such as \"*.tmp\" (no '/')"
                }
            case .oneIn(let count):
                guard (1...1_000_000).contains(count) else {
                    return "omit(.oneIn(\(count))) leaves out one entry in 1 to 1000000"
                }
            }
            return nil
        case .outOfMemory(let images):
            guard point == .memory else { return "only allocations (system.memory) run out of memory" }
            if let bad = images.first(where: { $0.isEmpty || $0.utf8.contains(0) }) {
                return
                    "outOfMemory(images:) names an image \(bad.debugDescription); give file names such as \"libsqlite3.so.0\""
            }
            return nil
        case .attributes(let attributes):
            guard point == .stat else { return "only system.stat answers attributes" }
            return attributes.problem
        case .pace(let rate):
            guard point == .send || point == .recv else { return "only system.send and system.recv have a bandwidth" }
            return (1...(1 << 40)).contains(rate) ? nil : "a bandwidth of \(rate) bytes a second is outside 1…2^40"
        case .slice(let bytes, let variation):
            guard point == .send || point == .recv else { return "only system.send and system.recv slice their bytes" }
            if bytes < 1 { return "a slice of \(bytes) bytes moves nothing; give 1 or more" }
            return (0..<bytes).contains(variation) ? nil : "a slice's variation \(variation) must be 0 up to its size"
        case .limit(let bytes, _):
            guard point == .send || point == .recv else { return "only system.send and system.recv limit a connection" }
            return bytes >= 0 ? nil : "a limit of \(bytes) bytes is below zero"
        case .stall(let duration, _):
            guard point == .send || point == .recv else { return "only system.send and system.recv stall a connection" }
            return duration >= .zero && duration <= .seconds(86400) ? nil : "a stall lasts 0 to 1 day"
        case .slowClose(let duration):
            guard point == .send else { return "only system.send slows a socket's close" }
            return duration >= .zero && duration <= .seconds(86400) ? nil : "a slow close waits 0 to 1 day"
        }
    }
}

/// What a stat call answers instead of a file's own attributes (`system.stat`); nil fields
/// stay the file's.
public struct FileAttributes: Sendable, Hashable, CustomStringConvertible {
    /// The size in bytes.
    public var size: Int64?
    /// The modification time, in nanoseconds since 1970.
    public var modifiedNanosecondsSince1970: Int64?
    /// The permission bits (`0o644`); the file's type stays its own.
    public var permissions: UInt16?
    /// The number of hard links.
    public var links: UInt64?

    /// Attributes naming the given fields.
    public init(
        size: Int64? = nil, modified: Date? = nil, permissions: UInt16? = nil, links: UInt64? = nil
    ) {
        self.size = size
        self.modifiedNanosecondsSince1970 = modified.map { Int64(($0.timeIntervalSince1970 * 1e9).rounded()) }
        self.permissions = permissions
        self.links = links
    }

    /// `size 0, mtime 2001-01-01T00:00:00Z, mode 0600, nlink 2`.
    public var description: String {
        var parts: [String] = []
        if let size { parts.append("size \(size)") }
        if let modifiedNanosecondsSince1970 {
            let date = Date(timeIntervalSince1970: Double(modifiedNanosecondsSince1970) / 1e9)
            parts.append("mtime \(ISO8601Date.format(date))")
        }
        if let permissions { parts.append("mode 0" + String(permissions, radix: 8)) }
        if let links { parts.append("nlink \(links)") }
        return parts.joined(separator: ", ")
    }

    /// Why the engine cannot answer these, or nil.
    var problem: String? {
        if size == nil, modifiedNanosecondsSince1970 == nil, permissions == nil, links == nil {
            return "attributes name nothing; give at least one of size, modified, permissions, links"
        }
        if let size, size < 0 { return "a size of \(size) bytes is below zero" }
        if let permissions, permissions > 0o7777 {
            return "permissions 0\(String(permissions, radix: 8)) are more than permission bits (0 to 07777)"
        }
        return nil
    }

    /// The `attributes` node's words.
    var planWords: String {
        var words = [PlanNodeKind.attributes.rawValue]
        if let size { words.append("size=\(size)") }
        if let modifiedNanosecondsSince1970 { words.append("mtime=\(modifiedNanosecondsSince1970)") }
        if let permissions { words.append("mode=" + String(permissions, radix: 8)) }
        if let links { words.append("nlink=\(links)") }
        return words.joined(separator: " ")
    }
}

/// How a connection ends under `limit-data` and `stall`.
public enum StreamEnd: String, Sendable, Hashable, CaseIterable {
    /// Closed: a receive reads the end of the stream, a send fails with EPIPE.
    case close
    /// Reset: calls fail with ECONNRESET.
    case reset

    /// CHAOS_STREAM_END_* of the engine.
    var engineValue: Int32 {
        switch self {
        case .close: Int32(CHAOS_STREAM_END_CLOSE)
        case .reset: Int32(CHAOS_STREAM_END_RESET)
        }
    }
}

/// The entries a directory read leaves out (``SystemOutcome/omit(_:)``).
public enum OmittedEntries: Sendable, Hashable {
    /// Those whose name matches this glob (`*` and `?`, within the name), e.g. `"*.tmp"`.
    case named(String)
    /// One name in `count`, chosen by the name and the entry's seed: a name left out of one
    /// listing is left out of every listing, and the same seed leaves out the same names.
    case oneIn(Int)
}

/// What a corrupted byte becomes.
public enum Corruption: String, Sendable, Hashable, CaseIterable {
    /// Every bit inverted.
    case flip
    /// Zero.
    case zero
    /// A byte drawn from the seed (never the same byte again).
    case random

    /// CHAOS_CORRUPT_* of the engine.
    var engineValue: Int32 {
        switch self {
        case .flip: Int32(CHAOS_CORRUPT_FLIP)
        case .zero: Int32(CHAOS_CORRUPT_ZERO)
        case .random: Int32(CHAOS_CORRUPT_RANDOM)
        }
    }
}

/// Which readings a clock outcome also changes, besides the realtime clocks.
public struct ClockScope: Sendable, Hashable {
    /// Also move the monotonic and boot-time clocks by the same shift (off by default:
    /// timeouts and Swift's own clocks keep working). Opt in knowingly: an offset of -30
    /// years makes them negative.
    public var monotonic: Bool
    /// Shift file times seen through `stat` and friends by the clock's shift, so
    /// `now - mtime` stays what it really is (on by default).
    public var fileTimes: Bool
    /// Under `speed`, relative sleeps last `1/factor` as long (on by default).
    public var sleeps: Bool

    /// Monotonic clocks real; file times and sleeps follow the clock.
    public static let `default` = ClockScope(monotonic: false, fileTimes: true, sleeps: true)

    /// A scope with these options.
    public init(monotonic: Bool = false, fileTimes: Bool = true, sleeps: Bool = true) {
        self.monotonic = monotonic
        self.fileTimes = fileTimes
        self.sleeps = sleeps
    }
}

/// Names and values of errnos and EAI codes, from the engine's table.
enum SystemErrno {
    /// `"ENOSPC"` for ENOSPC; the number for one the table does not know.
    static func name(_ code: Int32) -> String {
        chaos_fault_errno_name(code).map { String(cString: $0) } ?? String(code)
    }

    /// The value of `"ENOSPC"`, `"enospc"`, `"EAI_AGAIN"`, or nil when unknown.
    static func value(_ name: String) -> Int32? {
        let value = chaos_fault_errno_value(name)
        return value == 0 ? nil : value
    }
}

/// The real time, read without any hook.
enum SystemClockReading {
    static func realNanoseconds() -> Int64 {
        chaos_fault_real_ns(CLOCK_REALTIME)
    }
}

@_spi(Hooks) extension SystemOutcome: CallPassingResult {
    /// `pass` hands the call to the point's next older entry.
    public var passesCallOn: Bool { self == .pass }
}
