import CChaosFaults

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The Swift faces of the engine's table of names (names.c). Their cases are Swift's own:
// a public enum's cases are compile-time API, which no C table can declare. What each case
// stands for in the engine — its bits, its plan and profile names — is read from the
// engine, and SharedNameTableTests holds the case lists to the table's order and spelling.

/// The kinds of system call the fault engine decides, one system point each.
public enum SystemPointKind: Int32, Sendable, Hashable, CaseIterable {
    /// `system.files`: opening, reading, writing, syncing, truncating, renaming, removing files.
    case files = 0
    /// `system.connect`: `connect(2)`.
    case connect = 1
    /// `system.accept`: `accept`, `accept4`.
    case accept = 2
    /// `system.send`: `send`, `sendto`, `sendmsg`, and writes on sockets.
    case send = 3
    /// `system.recv`: `recv`, `recvfrom`, `recvmsg`, and reads on sockets.
    case recv = 4
    /// `system.getaddrinfo`: `getaddrinfo` and `gethostbyname*`.
    case dns = 5
    /// `system.getenv`: `getenv`, `secure_getenv`.
    case getenv = 6
    /// `system.clock`: realtime clock readings, file times and sleeps.
    case clock = 7
    /// `system.stat`: `stat`, `lstat`, `fstat`, `fstatat`, `statx`: the attributes a file
    /// seems to have (size, modification time, permissions, links), or a failure.
    case stat = 8
    /// `system.process`: creating processes (`fork`, `vfork`, `clone`, `posix_spawn`,
    /// `system`, `popen`); threads are never failed.
    case process = 9
    /// `system.dir`: opening and reading directories (`opendir`, `fdopendir`, `readdir`).
    case dir = 10
    /// `system.memory`: allocations (`malloc`, `calloc`, `realloc`, the aligned allocators,
    /// anonymous `mmap`). For C code: a Swift program traps when an allocation fails.
    case memory = 11

    /// The profile name of the point, e.g. `"system.files"`.
    public var pointName: String { String(cString: chaos_fault_point_public_name(rawValue)) }

    /// The point's name in fault plans (`files`, `dns` …).
    var planName: String { String(cString: chaos_fault_point_name(rawValue)) }

    /// Whether the point is about sockets (its entries leave Unix sockets alone unless a
    /// condition names them).
    var isSocketPoint: Bool { self == .connect || self == .accept || self == .send || self == .recv }
}

/// The family of a socket, as a system call sees it.
public enum SocketFamily: String, Sendable, Hashable, CaseIterable {
    /// IPv4.
    case inet
    /// IPv6.
    case inet6
    /// Unix domain sockets (syslog, D-Bus, nscd …).
    case unix
    /// Anything else (netlink, packet …).
    case other

    var bit: Int32 {
        switch self {
        case .inet: Int32(CHAOS_FAMILY_INET)
        case .inet6: Int32(CHAOS_FAMILY_INET6)
        case .unix: Int32(CHAOS_FAMILY_UNIX)
        case .other: Int32(CHAOS_FAMILY_OTHER)
        }
    }

    init?(bit: Int32) {
        guard let family = Self.allCases.first(where: { $0.bit == bit }) else { return nil }
        self = family
    }
}

/// Which side of a connection a socket is.
public enum SocketRole: String, Sendable, Hashable, CaseIterable {
    /// This process connected it.
    case client
    /// It came from `accept`.
    case server
    /// Anything else (a socket pair, an inherited socket).
    case other

    var bit: Int32 {
        switch self {
        case .client: Int32(CHAOS_ROLE_CLIENT)
        case .server: Int32(CHAOS_ROLE_SERVER)
        case .other: Int32(CHAOS_ROLE_OTHER)
        }
    }

    init?(bit: Int32) {
        guard let role = Self.allCases.first(where: { $0.bit == bit }) else { return nil }
        self = role
    }
}

/// Which clock a reading comes from.
public enum ClockSource: String, Sendable, Hashable, CaseIterable {
    /// `CLOCK_REALTIME`, `gettimeofday`, `time`, `timespec_get`, `ftime`, file times.
    case realtime
    /// `CLOCK_REALTIME_COARSE`.
    case realtimeCoarse = "realtime_coarse"
    /// `CLOCK_TAI`.
    case tai
    /// `CLOCK_REALTIME_ALARM`.
    case realtimeAlarm = "realtime_alarm"
    /// The monotonic and boot-time clocks (only when an entry opts in).
    case monotonic

    var bit: Int32 {
        switch self {
        case .realtime: Int32(CHAOS_CLOCKSRC_REALTIME)
        case .realtimeCoarse: Int32(CHAOS_CLOCKSRC_REALTIME_COARSE)
        case .tai: Int32(CHAOS_CLOCKSRC_TAI)
        case .realtimeAlarm: Int32(CHAOS_CLOCKSRC_REALTIME_ALARM)
        case .monotonic: Int32(CHAOS_CLOCKSRC_MONOTONIC)
        }
    }

    init?(bit: Int32) {
        guard let source = Self.allCases.first(where: { $0.bit == bit }) else { return nil }
        self = source
    }
}

/// One intercepted system call, as the fault engine describes it to the system points:
/// what a block provider or a `match` condition sees.
public struct SystemCall: Sendable, Hashable, CustomStringConvertible {
    /// The point the call belongs to.
    public let point: SystemPointKind
    /// The C function as the engine's table names it: `"pwrite"` stands for `pwrite` and
    /// `pwrite64`, `"socket-write"` for a `write` on a socket (see Docs/FaultPlan.md).
    public let function: String
    /// The descriptor the call works on (files, sockets), or nil.
    public let fileDescriptor: Int32?
    /// The file's absolute path (files), or nil: physical, as the kernel reaches it, while a
    /// path selector is applied; else folded lexically.
    public let path: String?
    /// `rename`'s second path.
    public let secondPath: String?
    /// Whether the target is one a fault must name to touch: a descriptor 0–2 the process
    /// inherited, or a path under `/dev`, `/proc` or `/sys`.
    public let isProtected: Bool
    /// The socket's family (socket points).
    public let family: SocketFamily?
    /// The socket's role (`send`/`recv`).
    public let role: SocketRole?
    /// The peer address (`connect`), or the listening address (`accept`), as text.
    public let address: String?
    /// The peer port (`connect`) or the listening port (`accept`).
    public let port: Int?
    /// The variable (`getenv`) or the host name (`getaddrinfo`).
    public let name: String?
    /// The clock read (`system.clock`).
    public let clock: ClockSource?
    /// The bytes an allocation asks for (`system.memory`).
    public let size: UInt64?

    let functionCode: Int32

    /// A call of `function` (a name from the engine's table, e.g. `"write"`, `"connect"`,
    /// `"getenv"`, `"clock_gettime"`) on `point`: for testing providers without a real call.
    public init(
        _ point: SystemPointKind, function: String, fileDescriptor: Int32? = nil, path: String? = nil,
        secondPath: String? = nil,
        isProtected: Bool = false, family: SocketFamily? = nil, role: SocketRole? = nil, address: String? = nil,
        port: Int? = nil,
        name: String? = nil, clock: ClockSource? = nil, size: UInt64? = nil
    ) {
        self.point = point
        self.function = function
        self.fileDescriptor = fileDescriptor
        self.path = path
        self.secondPath = secondPath
        self.isProtected = isProtected
        self.family = family
        self.role = role
        self.address = address
        self.port = port
        self.name = name
        self.clock = clock
        self.size = size
        self.functionCode = SystemFunctions.code(of: function) ?? -1
    }

    /// The call the engine described.
    init(_ call: chaos_call) {
        let kind = SystemPointKind(rawValue: call.point) ?? .files
        var address: String?
        if let bytes = call.address, call.address_length == 4 || call.address_length == 16 {
            var text = [CChar](repeating: 0, count: 64)
            let family = call.address_length == 4 ? AF_INET : AF_INET6
            if inet_ntop(family, bytes, &text, socklen_t(text.count)) != nil { address = CText.string(text) }
        }
        self.init(
            kind, function: SystemFunctions.name(of: call.fn),
            fileDescriptor: call.fd >= 0 && Self.hasDescriptor(kind) ? call.fd : nil,
            path: call.path.map { String(cString: $0) }, secondPath: call.path2.map { String(cString: $0) },
            isProtected: call.special != 0, family: SocketFamily(bit: call.family), role: SocketRole(bit: call.role),
            address: address, port: call.port >= 0 && (kind == .connect || kind == .accept) ? Int(call.port) : nil,
            name: call.name.map { String(cString: $0) }, clock: ClockSource(bit: call.clock_source),
            size: kind == .memory ? call.size : nil
        )
    }

    private static func hasDescriptor(_ kind: SystemPointKind) -> Bool {
        switch kind {
        case .files, .connect, .accept, .send, .recv, .stat, .dir: true
        case .dns, .getenv, .clock, .process, .memory: false
        }
    }

    /// Calls `body` with this call as the engine's `chaos_call` (strings alive meanwhile).
    func withEngineCall<T>(_ body: (inout chaos_call) -> T) -> T {
        var call = chaos_call()
        call.point = point.rawValue
        call.fn = functionCode
        call.fd = fileDescriptor ?? -1
        call.special = isProtected ? 1 : 0
        call.family = family?.bit ?? 0
        call.role = role?.bit ?? 0
        call.port = Int32(port ?? -1)
        call.clock_source = clock?.bit ?? 0
        call.size = size ?? 0
        var bytes = [UInt8](repeating: 0, count: 16)
        var length: Int32 = 0
        if let address {
            if inet_pton(AF_INET, address, &bytes) == 1 {
                length = 4
            } else if inet_pton(AF_INET6, address, &bytes) == 1 {
                length = 16
            }
        }
        call.address_length = length
        return bytes.withUnsafeBufferPointer { addressBytes in
            call.address = length > 0 ? addressBytes.baseAddress : nil
            return Self.withOptionalCString(path) { path in
                call.path = path
                return Self.withOptionalCString(secondPath) { secondPath in
                    call.path2 = secondPath
                    return Self.withOptionalCString(name) { name in
                        call.name = name
                        return body(&call)
                    }
                }
            }
        }
    }

    private static func withOptionalCString<T>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
        guard let text else { return body(nil) }
        return text.withCString { body($0) }
    }

    /// E.g. `pwrite on /srv/db/shop.db`, `connect to 127.0.0.1:8080`.
    public var description: String {
        var parts = [function]
        if let path {
            parts.append("on \(path)")
        } else if let fileDescriptor {
            parts.append("on fd \(fileDescriptor)")
        }
        if let address { parts.append("to \(address)\(port.map { ":\($0)" } ?? "")") }
        if let name { parts.append("of \(name)") }
        if let clock { parts.append("(\(clock.rawValue))") }
        return parts.joined(separator: " ")
    }
}

/// The engine's table of functions (names, points, operations, errnos), read once.
enum SystemFunctions {
    struct Function {
        let code: Int32
        let name: String
        let covers: [String]
        let point: SystemPointKind
        let operation: UInt32
        let transfers: Bool
    }

    static let all: [Function] = (0..<Int32(CHAOS_FN_COUNT.rawValue)).compactMap { code in
        guard let info = chaos_fault_fn_info(code)?.pointee, let point = SystemPointKind(rawValue: info.point) else {
            return nil
        }
        return Function(
            code: code, name: String(cString: info.name),
            covers: String(cString: info.covers).split(separator: " ").map(String.init),
            point: point, operation: info.op, transfers: info.transfers != 0
        )
    }

    private static let codes: [String: Int32] = Dictionary(
        all.map { ($0.name, $0.code) }, uniquingKeysWith: { first, _ in first })

    static func code(of name: String) -> Int32? { codes[name] }

    static func name(of code: Int32) -> String {
        chaos_fault_fn_info(code).map { String(cString: $0.pointee.name) } ?? "unknown"
    }

    /// The functions of `point`, narrowed to `operations` (files; nil: all of them).
    static func functions(of point: SystemPointKind, operations: UInt32? = nil) -> [Function] {
        all.filter { function in function.point == point && (operations.map { function.operation & $0 != 0 } ?? true) }
    }

    /// The errnos (or EAI codes, for DNS) some function of `point` (narrowed to
    /// `operations`) can return, by name.
    static func errnoNames(of point: SystemPointKind, operations: UInt32? = nil) -> [String] {
        var values = Set<Int32>()
        for function in functions(of: point, operations: operations) {
            var buffer = [Int32](repeating: 0, count: 64)
            let count = Int(chaos_fault_errnos(function.code, &buffer, Int32(buffer.count)))
            values.formUnion(buffer.prefix(min(count, buffer.count)))
        }
        return values.sorted().compactMap { value in chaos_fault_errno_name(value).map { String(cString: $0) } }
    }

    /// Whether some function of `point` (narrowed to `operations`) can return `code`.
    static func allows(_ code: Int32, on point: SystemPointKind, operations: UInt32? = nil) -> Bool {
        functions(of: point, operations: operations).contains { chaos_fault_errno_allowed($0.code, code) != 0 }
    }
}

/// Text from NUL-terminated C buffers.
enum CText {
    static func string(_ buffer: [CChar]) -> String {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
