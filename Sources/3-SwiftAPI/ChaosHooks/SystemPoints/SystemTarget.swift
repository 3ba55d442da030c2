import CChaosFaults
public import ChaosKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The operations of `system.files`; every intercepted file function belongs to one.
public enum FileOperationKind: String, Sendable, Hashable, CaseIterable {
    /// `open`, `openat`, `creat`, `fopen`, `fdopen`, `freopen`.
    case open
    /// `read`, `pread`, `readv`, `preadv`, the stdio reads (`fread`, `fgets`, `getc`,
    /// `getline`, `fscanf` …), and the source of a copy.
    case read
    /// `write`, `pwrite`, `writev`, `pwritev`, `fwrite`…`fflush`, and the target of a copy.
    case write
    /// `fsync`, `fdatasync`, `sync_file_range`.
    case sync
    /// `ftruncate`, `truncate`, `fallocate`, `posix_fallocate`.
    case truncate
    /// `rename`, `renameat`, `renameat2`.
    case rename
    /// `unlink`, `unlinkat`, `rmdir`.
    case unlink
    /// `mkdir`, `mkdirat`.
    case mkdir
    /// `close`, and `fclose` with nothing left to write.
    case close
    /// An open that creates or truncates (`O_CREAT`, `O_TRUNC`, `O_TMPFILE`), `creat`,
    /// `link` and `symlink`. Such an open is an `open` call too.
    case create

    var bit: UInt32 { UInt32(1) << UInt32(Self.allCases.firstIndex(of: self)!) }

    static func bits(_ operations: Set<FileOperationKind>) -> UInt32 {
        operations.reduce(0) { $0 | $1.bit }
    }
}

/// What a descriptor is open on, for `system.files` entries that name descriptors rather
/// than paths: standard input from a pipe, a terminal, an inherited descriptor.
public enum DescriptorKind: String, Sendable, Hashable, CaseIterable {
    /// A regular file or a directory.
    case file
    /// A pipe or FIFO.
    case pipe
    /// A terminal.
    case tty
    /// Another device, an eventfd, an anonymous inode…
    case other

    var bit: Int32 {
        switch self {
        case .file: Int32(CHAOS_DESCRIPTOR_FILE)
        case .pipe: Int32(CHAOS_DESCRIPTOR_PIPE)
        case .tty: Int32(CHAOS_DESCRIPTOR_TTY)
        case .other: Int32(CHAOS_DESCRIPTOR_OTHER)
        }
    }
}

/// The calls a system entry aims at, in terms the fault engine matches itself: a path
/// pattern and operations, a peer address and port, a socket family or role, a host name,
/// a variable, a clock.
///
/// Used in code through `ChaosProvider.on(_:_:)` and in profiles as an item's target
/// parameters or a `match` object; both compile to the same plan `case`.
///
/// ```swift
/// let full = SystemPoints.files.entry(.on(try .files(path: "/srv/db", operations: [.write, .sync]),
///                                         .constant(.fail(errno: ENOSPC))))
/// ```
public struct SystemTarget: Sendable, Hashable, CustomStringConvertible {
    /// The point whose calls it names.
    public let point: SystemPointKind
    /// The conditions as a plan's `case` line writes them (`path="/srv/db" ops=write,sync`).
    let planText: String
    /// The socket families it names (an entry then lets those sockets reach it).
    let families: Set<SocketFamily>
    /// The variable it names (`system.getenv`).
    let variableName: String?
    /// What it selects, field by field, for other tools' forms of the same target (a
    /// Chaos Mesh manifest): the plan text stays the one the engine reads.
    let selection: Selection

    /// The fields a target selects by; nil: not selected by that field.
    struct Selection: Sendable, Hashable {
        /// `system.files`: the resolved path or glob.
        var path: String?
        /// `system.files`: the operations.
        var operations: Set<FileOperationKind>?
        /// `system.files`: the descriptor number, and the kinds of descriptor.
        var descriptor: Int?
        var descriptorKinds: Set<DescriptorKind>?
        /// `system.connect`, `system.accept`: the address or CIDR block.
        var host: String?
        /// `system.connect`, `system.accept`: the port.
        var port: Int?
        /// `system.clock`: the clocks.
        var clocks: Set<ClockSource>?
        /// `system.send`, `system.recv`: the roles.
        var roles: Set<SocketRole>?
    }

    /// The conditions, as the plan writes them.
    public var description: String { planText }

    private init(
        _ point: SystemPointKind, _ words: [String], families: Set<SocketFamily> = [], variableName: String? = nil,
        selection: Selection = Selection()
    ) {
        self.point = point
        self.planText = words.joined(separator: " ")
        self.families = families
        self.variableName = variableName
        self.selection = selection
    }

    /// File calls on `path` — a file or directory and everything below it (by whole
    /// components: `/a/io` never matches `/a/io2`), or a glob (`*` and `?` within a
    /// component, `**` across components) — doing one of `operations` (all when nil).
    /// A relative path is taken from the current directory, and the path is resolved the
    /// way the kernel walks it (links followed, `..` after them): it selects a file or
    /// directory, so calls reach it through any name (Docs/FaultPlan.md, "Paths").
    ///
    /// `descriptor` names a descriptor by number (0 is standard input) and `kinds` by what it
    /// is open on, whatever its path: pipes, terminals and inherited descriptors, which no
    /// path names, are reached this way.
    public static func files(
        path: String? = nil, operations: Set<FileOperationKind>? = nil, descriptor: Int? = nil,
        kinds: Set<DescriptorKind>? = nil
    ) throws(ChaosError) -> SystemTarget {
        var words: [String] = []
        var selection = Selection(operations: operations, descriptor: descriptor, descriptorKinds: kinds)
        if let descriptor {
            guard (0...63).contains(descriptor) else {
                throw ChaosError(
                    .invalidProvider, subject: "system.files",
                    "descriptor \(descriptor) is out of reach; name one from 0 to 63")
            }
            words.append("fd=\(descriptor)")
        }
        if let kinds {
            guard !kinds.isEmpty else {
                throw ChaosError(
                    .invalidProvider, subject: "system.files",
                    "no kinds given; name at least one of \(DescriptorKind.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            words.append(
                "kind=" + DescriptorKind.allCases.filter(kinds.contains).map(\.rawValue).joined(separator: ","))
        }
        if let path {
            let resolved = try PathPattern.resolve(path)
            selection.path = resolved
            words.append(PlanText.word("path", resolved))
        }
        if let operations {
            guard !operations.isEmpty else {
                throw ChaosError(
                    .invalidProvider, subject: "system.files",
                    "no operations given; name at least one of \(FileOperationKind.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            words.append(
                "ops=" + FileOperationKind.allCases.filter(operations.contains).map(\.rawValue).joined(separator: ","))
        }
        return SystemTarget(.files, words, selection: selection)
    }

    /// Stat calls (`system.stat`) on `path`: a file or directory and everything below it, or
    /// a glob, as ``files(path:operations:descriptor:kinds:)`` takes it, except that the
    /// name is matched as the program wrote it (folded, links not followed). `fstat` of a
    /// descriptor is matched by the path the descriptor was opened on.
    public static func stat(path: String) throws(ChaosError) -> SystemTarget {
        let resolved = try PathPattern.resolve(path)
        return SystemTarget(.stat, [PlanText.word("path", resolved)], selection: Selection(path: resolved))
    }

    /// Connections (`connect`) to `host` — an IPv4 or IPv6 address, or a CIDR block such as
    /// `10.0.0.0/8` — and `port`, on sockets of `families` (IPv4 and IPv6 when nil).
    public static func connections(to host: String? = nil, port: Int? = nil, families: Set<SocketFamily>? = nil)
        throws(ChaosError) -> SystemTarget
    {
        try addressed(.connect, host: host, port: port, families: families)
    }

    /// Connections accepted (`accept`) on the listening `host` and `port`.
    public static func accepted(on host: String? = nil, port: Int? = nil, families: Set<SocketFamily>? = nil)
        throws(ChaosError) -> SystemTarget
    {
        try addressed(.accept, host: host, port: port, families: families)
    }

    /// Sends or receives (`point`: `.send` or `.recv`) on sockets of `families` (IPv4 and
    /// IPv6 when nil) and `roles` (any when nil), connected with `host` (an address or CIDR
    /// block) and `port`: the far end of a connection this process made, the local
    /// (listening) end of one it accepted.
    public static func sockets(
        _ point: SystemPointKind, families: Set<SocketFamily>? = nil, roles: Set<SocketRole>? = nil,
        host: String? = nil, port: Int? = nil
    ) throws(ChaosError) -> SystemTarget {
        guard point == .send || point == .recv else {
            throw ChaosError(
                .invalidProvider, subject: point.pointName,
                "socket roles are for system.send and system.recv; use connections(to:) or accepted(on:)")
        }
        var words = try addressWords(point, host: host, port: port, families: families)
        if let roles {
            guard !roles.isEmpty else {
                throw ChaosError(
                    .invalidProvider, subject: point.pointName, "no roles given; name client, server or other")
            }
            words.append("role=" + SocketRole.allCases.filter(roles.contains).map(\.rawValue).joined(separator: ","))
        }
        return SystemTarget(
            point, words, families: families ?? [.inet, .inet6],
            selection: Selection(host: host, port: port, roles: roles))
    }

    /// Name lookups of host names matching `pattern` (`*` and `?` wildcards, any case).
    public static func hosts(_ pattern: String) throws(ChaosError) -> SystemTarget {
        guard !pattern.isEmpty, !pattern.utf8.contains(0) else {
            throw ChaosError(
                .invalidProvider, subject: "system.getaddrinfo",
                "the host pattern is empty; give a name such as \"api.example.com\" or \"*.example.com\"")
        }
        return SystemTarget(.dns, [PlanText.word("host", pattern)])
    }

    /// `getenv` of exactly this variable.
    public static func variable(_ name: String) throws(ChaosError) -> SystemTarget {
        guard !name.isEmpty, !name.contains("="), !name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw ChaosError(
                .invalidProvider, subject: "system.getenv",
                "'\(name.prefix(80))' is no variable name; give a name without '=' or control characters, such as \"HOME\""
            )
        }
        return SystemTarget(.getenv, [PlanText.word("name", name)], variableName: name)
    }

    /// Allocations (`system.memory`) of more than `bytes` bytes: smaller ones pass.
    public static func allocations(above bytes: Int) throws(ChaosError) -> SystemTarget {
        guard bytes >= 1 else {
            throw ChaosError(
                .valueTypeMismatch, subject: "system.memory",
                "allocations(above: \(bytes)) names no size; give a number of bytes from 1, e.g. 1048576")
        }
        return SystemTarget(.memory, ["above=\(bytes)"])
    }

    /// Calls on directory `path` (`system.dir`) — the directory and those below it (by whole
    /// components), or a glob (`*`, `?`, `**`) — resolved as ``files(path:operations:descriptor:kinds:)``
    /// resolves a path: a directory is named as the kernel reaches it.
    public static func directories(_ path: String) throws(ChaosError) -> SystemTarget {
        let resolved: String
        do throws(ChaosError) {
            resolved = try PathPattern.resolve(path)
        } catch {
            throw ChaosError(error.kind, subject: "system.dir", error.message)
        }
        return SystemTarget(.dir, [PlanText.word("path", resolved)], selection: Selection(path: resolved))
    }

    /// Readings of these clocks.
    public static func clocks(_ sources: Set<ClockSource>) throws(ChaosError) -> SystemTarget {
        guard !sources.isEmpty else {
            throw ChaosError(
                .invalidProvider, subject: "system.clock",
                "no clocks given; name at least one of \(ClockSource.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return SystemTarget(
            .clock, ["clock=" + ClockSource.allCases.filter(sources.contains).map(\.rawValue).joined(separator: ",")],
            selection: Selection(clocks: sources))
    }

    private static func addressed(_ point: SystemPointKind, host: String?, port: Int?, families: Set<SocketFamily>?)
        throws(ChaosError) -> SystemTarget
    {
        SystemTarget(
            point, try addressWords(point, host: host, port: port, families: families),
            families: families ?? [.inet, .inet6], selection: Selection(host: host, port: port))
    }

    /// The `family=`, `host=` and `port=` words of a socket target.
    private static func addressWords(
        _ point: SystemPointKind, host: String?, port: Int?, families: Set<SocketFamily>?
    ) throws(ChaosError) -> [String] {
        var words = [try familyWord(families, point)]
        if let host {
            guard AddressPattern.isValid(host) else {
                throw ChaosError(
                    .invalidProvider, subject: point.pointName,
                    "'\(host.prefix(80))' is no address; give an IPv4 or IPv6 address or a CIDR block such as \"127.0.0.1\" or \"10.0.0.0/8\" (host names are matched on system.getaddrinfo)"
                )
            }
            words.append(PlanText.word("host", host))
        }
        if let port {
            guard (0...65535).contains(port) else {
                throw ChaosError(.invalidProvider, subject: point.pointName, "port \(port) is outside 0…65535")
            }
            words.append("port=\(port)")
        }
        return words
    }

    private static func familyWord(_ families: Set<SocketFamily>?, _ point: SystemPointKind) throws(ChaosError)
        -> String
    {
        let chosen = families ?? [.inet, .inet6]
        guard !chosen.isEmpty else {
            throw ChaosError(
                .invalidProvider, subject: point.pointName, "no socket families given; name inet, inet6, unix or other")
        }
        return "family=" + SocketFamily.allCases.filter(chosen.contains).map(\.rawValue).joined(separator: ",")
    }

    /// The condition of a composite branch: tagged with this target so the plan compiler
    /// writes it as a `case`, and tested in Swift by the engine's own matcher.
    var condition: ArgumentCondition<SystemCall> {
        let test = CaseTest(point: point, conditions: planText)
        return ArgumentCondition(planText, tag: self) { call in test.holds(call) }
    }
}

extension ChaosProvider where Arguments == SystemCall, Result == SystemOutcome, Failure == Never {
    /// `provider` for the calls `target` names; every other call passes to the point's
    /// next older entry (and, after the last, to the real function).
    public static func on(_ target: SystemTarget, _ provider: Self) -> Self {
        Self(
            node: .composite(
                [ProviderBranch(condition: target.condition, provider: provider.node)],
                otherwise: .leaf(.constant(.pass))))
    }
}

/// The engine's matcher for one `case`, for calls Swift decides (blocks, task scopes).
final class CaseTest: @unchecked Sendable {
    // Unchecked: the C test is immutable once made and only read, from any thread.
    private let test: OpaquePointer?

    init(point: SystemPointKind, conditions: String) {
        var error = chaos_plan_error()
        test = chaos_case_test_make(point.rawValue, conditions, &error)
    }

    deinit { chaos_case_test_free(test) }

    func holds(_ call: SystemCall) -> Bool {
        guard let test else { return false }
        return call.withEngineCall { chaos_case_test_holds(test, &$0) != 0 }
    }
}

/// Path patterns as the engine wants them: absolute, folded, with the existing part
/// resolved (descriptors report physical paths), and able to match something.
enum PathPattern {
    static func resolve(_ given: String) throws(ChaosError) -> String {
        guard !given.isEmpty, !given.utf8.contains(0) else {
            throw ChaosError(
                .invalidProvider, subject: "system.files",
                "the path is empty; give a file or directory such as \"/srv/app/db\", or a glob such as \"/tmp/**/*.log\""
            )
        }
        var folded = [CChar](repeating: 0, count: Int(PATH_MAX) * 2)
        guard chaos_path_resolve(AT_FDCWD, given, &folded, folded.count) >= 0 else {
            throw ChaosError(
                .invalidProvider, subject: "system.files",
                "the path '\(given.prefix(120))' is too long or its directory is unknown")
        }
        // A name the kernel can reach is taken as it reaches it (`lnk/..` is the parent of
        // the link's target, which folding first would miss); globs and deeper names that
        // do not exist yet are folded, then their existing part resolved.
        var reached = [CChar](repeating: 0, count: Int(PATH_MAX) * 2)
        let pattern =
            !given.contains(where: { "*?[".contains($0) })
                && chaos_path_physical(AT_FDCWD, given, 1, &reached, reached.count) >= 0
            ? CText.string(reached) : physical(CText.string(folded))
        var why = [CChar](repeating: 0, count: 320)
        guard chaos_path_pattern_check(pattern, &why, why.count) == 0 else {
            throw ChaosError(
                .invalidProvider, subject: "system.files",
                "the path pattern '\(given.prefix(120))' cannot match: \(CText.string(why))")
        }
        return pattern
    }

    /// `pattern` with its longest existing literal prefix replaced by its real path.
    private static func physical(_ pattern: String) -> String {
        let components = pattern.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let literal = components.prefix { !$0.contains(where: { "*?[".contains($0) }) }
        var count = literal.count
        while count > 0 {
            let prefix = "/" + literal.prefix(count).joined(separator: "/")
            if let resolved = realpath(prefix, nil) {
                defer { free(resolved) }
                let rest = components.dropFirst(count)
                let base = String(cString: resolved)
                return rest.isEmpty ? base : (base == "/" ? "" : base) + "/" + rest.joined(separator: "/")
            }
            count -= 1
        }
        return pattern
    }
}

/// Addresses and CIDR blocks as the engine reads them.
enum AddressPattern {
    static func isValid(_ text: String) -> Bool {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = parts.first else { return false }
        var bytes = [UInt8](repeating: 0, count: 16)
        let bits: Int
        if inet_pton(AF_INET, String(address), &bytes) == 1 {
            bits = 32
        } else if inet_pton(AF_INET6, String(address), &bytes) == 1 {
            bits = 128
        } else {
            return false
        }
        guard parts.count == 2 else { return true }
        guard let prefix = Int(parts[1]), (0...bits).contains(prefix) else { return false }
        return true
    }
}

/// Words of plan text.
enum PlanText {
    /// `key="value"`, with the plan's escapes.
    static func word(_ key: String, _ value: String) -> String {
        "\(key)=\(quoted(value))"
    }

    static func quoted(_ value: String) -> String {
        var bytes: [UInt8] = [UInt8(ascii: "\"")]
        let hex = Array("0123456789abcdef".utf8)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\\"), UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), byte]
            case UInt8(ascii: "\n"): bytes += Array("\\n".utf8)
            case UInt8(ascii: "\t"): bytes += Array("\\t".utf8)
            case 0..<0x20, 0x7F:
                bytes += [UInt8(ascii: "\\"), UInt8(ascii: "x"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
        return String(decoding: bytes, as: UTF8.self)
    }
}
