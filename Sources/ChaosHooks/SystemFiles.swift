import CChaosGrace
public import ChaosKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file operation, as the `system.files` point sees it.
public struct FileOperation: Sendable {
    /// What is being done.
    public enum Kind: Character, Sendable, Hashable {
        /// `open`, `open64`, `openat`.
        case open = "o"
        /// `read`.
        case read = "r"
        /// `write`.
        case write = "w"
        /// `fsync`.
        case fsync = "f"
    }

    /// What is being done.
    public let kind: Kind
    /// The file descriptor (-1 for `open`).
    public let fileDescriptor: Int32
    /// The bytes asked for (`read`/`write`; 0 otherwise).
    public let byteCount: Int
    let openedPath: String?

    /// The file's path: the path given to `open`, or for a descriptor the path the kernel
    /// reports (`/proc/self/fd`), which is absolute and has symbolic links resolved; nil
    /// for descriptors that are no file (sockets, pipes).
    public var path: String? {
        if kind == .open { return openedPath }
        return Self.path(of: fileDescriptor)
    }

    /// Whether the operation is one of `operations` ("owf" letters: o open, r read,
    /// w write, f fsync) on a regular file under `prefix` (any when nil). Paths under
    /// `/dev`, `/proc` and `/sys`, terminals, pipes and sockets never match.
    public func matches(operations: Set<Kind>, prefix: String?) -> Bool {
        guard operations.contains(kind), let path, path.hasPrefix("/") else { return false }
        if path.hasPrefix("/dev/") || path.hasPrefix("/proc/") || path.hasPrefix("/sys/") { return false }
        return prefix.map { path.hasPrefix($0) } ?? true
    }

    static func path(of descriptor: Int32) -> String? {
        guard descriptor >= 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// What the `system.files` point answers for an operation.
public enum FileOutcome: Sendable, Hashable {
    /// Do the real operation.
    case proceed
    /// Fail with -1 and this `errno`, without doing anything.
    case fail(errno: Int32)
    /// `read`/`write` transfer at most this many bytes (nil: half, at least 1); a short
    /// count callers must handle. Other operations proceed.
    case short(maxBytes: Int?)
}

/// Typed providers for `system.files`, the same as its catalogue items.
public typealias SystemFilesProvider = ChaosProvider<FileOperation, FileOutcome, Never>

extension ChaosProvider where Arguments == FileOperation, Result == FileOutcome, Failure == Never {
    /// Operations for which `condition` holds fail with -1 and `errno`: items `eio`,
    /// `enospc`, `eacces`.
    public static func failing(errno: Int32, condition: @escaping @Sendable (FileOperation) -> Bool) -> Self {
        .composite([.when(condition, .constant(.fail(errno: errno)))])
    }

    /// Writes (and opens, when `operations` says so) under `path` fail with `errno`.
    public static func failing(errno: Int32, under path: String, operations: Set<FileOperation.Kind> = [.write]) -> Self {
        failing(errno: errno) { $0.matches(operations: operations, prefix: path) }
    }
}

extension SystemPoints {
    static func makeFiles() -> InjectionPoint<FileOperation, FileOutcome, Never> {
        let activation = LazyHookActivation(name: "system.files") { () throws(ChaosError) -> any HookBinder in
            let open = signature(.int32, [.cString, .int32, .uint32], fixed: 2)
            let openat = signature(.int32, [.int32, .cString, .int32, .uint32], fixed: 3)
            let transfer = signature(.ssize, [.int32, .pointer, .size])
            let fsync = signature(.int32, [.int32])
            let table: [(String, CSignature, FFIClosure.Handler)] = [
                ("open", open, { call in try fileOpen(&call, pathArgument: 0) }),
                ("open64", open, { call in try fileOpen(&call, pathArgument: 0) }),
                ("openat", openat, { call in try fileOpen(&call, pathArgument: 1) }),
                ("read", transfer, { call in try fileTransfer(&call, .read) }),
                ("write", transfer, { call in try fileTransfer(&call, .write) }),
                ("fsync", fsync, { call in try fileSync(&call) }),
            ]
            var members: [(binder: any HookBinder, optional: Bool)] = []
            for (symbol, signature, handler) in table {
                let closure = try FFIClosure(signature: signature, handler: handler)
                members.append((try SymbolRebinding(symbol: symbol, closure: closure), true))
            }
            return BinderGroup(subject: "system.files", members)
        }
        let failures: [(String, Int32, String)] = [
            ("eio", EIO, "an input/output error (EIO)"), ("enospc", ENOSPC, "the disk is full (ENOSPC)"),
            ("eacces", EACCES, "permission denied (EACCES)"),
        ]
        let items = failures.map { item, code, summary in
            CatalogueItem<SystemFilesProvider>(item, summary, parameters: fileParameters(defaultOperations: "w")) { parameters in
                try SystemFilesProvider.failing(errno: code, condition: fileCondition(parameters))
            }
        } + [
            CatalogueItem("short-read", "reads return fewer bytes than asked", parameters: fileParameters(defaultOperations: "r")) { parameters in
                .composite([.when(try fileCondition(parameters), .constant(.short(maxBytes: nil)))])
            },
            CatalogueItem("short-write", "writes take fewer bytes than given", parameters: fileParameters(defaultOperations: "w")) { parameters in
                .composite([.when(try fileCondition(parameters), .constant(.short(maxBytes: nil)))])
            },
        ]
        return InjectionPoint<FileOperation, FileOutcome, Never>(
            "system.files", catalogue: PointCatalogue(items), activation: activation
        ) { _ in .proceed }
    }

    private static func fileParameters(defaultOperations: String) -> [CatalogueParameter] {
        [
            .string("path", "an absolute path prefix; every file when not given", optional: true),
            .string("operations", "letters of the operations hit: o open, r read, w write, f fsync", default: defaultOperations),
        ]
    }

    private static func fileCondition(_ parameters: ProfileParameters) throws(ChaosError) -> @Sendable (FileOperation) -> Bool {
        let letters = try parameters.string("operations")
        var operations = Set<FileOperation.Kind>()
        for letter in letters {
            guard let kind = FileOperation.Kind(rawValue: letter) else {
                throw parameters.invalid("'operations' is \"\(letters.prefix(80))\"; use letters of \"orwf\" (o open, r read, w write, f fsync)", parameter: "operations")
            }
            operations.insert(kind)
        }
        var prefix: String?
        if parameters.has("path") {
            let given = try parameters.string("path")
            guard given.hasPrefix("/") else {
                throw parameters.invalid("'path' is \"\(given.prefix(80))\"; give an absolute path prefix", parameter: "path")
            }
            // Descriptors report resolved paths: resolve the prefix too when it exists.
            prefix = realpath(given, nil).map { resolved in
                defer { free(resolved) }
                return String(cString: resolved)
            } ?? given
        }
        let chosen = prefix
        let wanted = operations
        return { operation in operation.matches(operations: wanted, prefix: chosen) }
    }

    private static func fileOpen(_ call: inout CCall, pathArgument: Int) throws {
        guard chaos_hook_enter() != 0 else { try call.callOriginal(); return }
        defer { chaos_hook_leave() }
        let operation = FileOperation(kind: .open, fileDescriptor: -1, byteCount: 0, openedPath: try call.string(at: pathArgument))
        if case .fail(let code) = SystemPoints.files(operation) {
            try call.setReturn(Int32(-1))
            call.errno = code
        } else {
            try call.callOriginal()
        }
    }

    private static func fileTransfer(_ call: inout CCall, _ kind: FileOperation.Kind) throws {
        guard chaos_hook_enter() != 0 else { try call.callOriginal(); return }
        defer { chaos_hook_leave() }
        let count = try call.argument(2, as: UInt.self)
        let operation = FileOperation(kind: kind, fileDescriptor: try call.argument(0, as: Int32.self),
                                      byteCount: Int(clamping: count), openedPath: nil)
        switch SystemPoints.files(operation) {
        case .proceed:
            try call.callOriginal()
        case .fail(let code):
            try call.setReturn(Int(-1))
            call.errno = code
        case .short(let maxBytes):
            if count > 1 {
                let limit = UInt(max(1, maxBytes ?? Int(count / 2)))
                try call.setArgument(2, min(count, limit))
            }
            try call.callOriginal()
        }
    }

    private static func fileSync(_ call: inout CCall) throws {
        guard chaos_hook_enter() != 0 else { try call.callOriginal(); return }
        defer { chaos_hook_leave() }
        let operation = FileOperation(kind: .fsync, fileDescriptor: try call.argument(0, as: Int32.self), byteCount: 0, openedPath: nil)
        if case .fail(let code) = SystemPoints.files(operation) {
            try call.setReturn(Int32(-1))
            call.errno = code
        } else {
            try call.callOriginal()
        }
    }
}
