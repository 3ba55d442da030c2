@_spi(Hooks) public import ChaosKit
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Typed providers for the system points: ``SystemPoints/files`` and its siblings.
public typealias SystemProvider = ChaosProvider<SystemCall, SystemOutcome, Never>

/// The catalogue of every system point: its items, its `match` conditions and the
/// outcomes it accepts. Declared once; in-process entries, `chaos run`, `chaos list`,
/// `chaos validate` and the schema all read it from here.
enum SystemCatalogues {
    static func catalogue(_ point: SystemPointKind) -> PointCatalogue<SystemProvider> {
        PointCatalogue(
            items(point),
            matcher: ArgumentMatcher(conditions: targetParameters(point, defaultOperations: nil)) { parameters in
                guard let target = try target(point, parameters) else {
                    throw parameters.invalid(
                        "give at least one condition: \(targetParameters(point, defaultOperations: nil).map(\.name).joined(separator: ", "))"
                    )
                }
                return target.condition
            },
            resultValidator: { outcome in
                if let problem = outcome.problem(on: point) {
                    throw ChaosError(.valueTypeMismatch, subject: point.pointName, problem)
                }
                if point == .memory, let problem = inProcessMemoryProblem(outcome) {
                    throw ChaosError(.invalidProvider, subject: point.pointName, problem)
                }
                if case .powerLoss = outcome {
                    throw ChaosError(
                        .invalidProvider, subject: point.pointName,
                        "an entry cannot lose this process's power: the process would have to die with it; record with FileSystemPowerLoss and call losePower() instead, or run the program under `chaos run`"
                    )
                }
            },
            typicalFaults: typicalFaults(point)
        )
    }

    /// What an exploration of every point places on `point` (`chaos explore --every`).
    private static func typicalFaults(_ point: SystemPointKind) -> [String] {
        switch point {
        case .files: ["enospc", "eio"]  // power-loss is tried when a space names it
        case .connect: ["refused", "reset"]
        case .accept: ["aborted"]
        case .send, .recv: ["reset"]
        case .dns: ["dns-failure"]
        case .process: ["eagain"]
        case .dir: ["enoent"]
        // A failed allocation ends most programs (every Swift one): never tried unasked.
        case .getenv, .clock, .stat, .memory: []
        }
    }

    // MARK: Items

    private static func items(_ point: SystemPointKind) -> [CatalogueItem<SystemProvider>] {
        switch point {
        case .files:
            return [
                failure("eio", "an input/output error (EIO)", EIO, point, operations: [.write, .sync]),
                failure("enospc", "the disk is full (ENOSPC)", ENOSPC, point, operations: [.write, .sync, .truncate]),
                failure("eacces", "permission denied (EACCES)", EACCES, point, operations: [.open]),
                anyFailure(point),
                short("short-read", "reads return fewer bytes than asked", point, operations: [.read]),
                short("short-write", "writes take fewer bytes than given", point, operations: [.write]),
                corrupt("reads return, and writes store, some bytes changed", point, operations: [.read, .write]),
                latency(point),
                CatalogueItem(
                    "power-loss",
                    "power is lost at a call that changes a file under path: the program's tree is killed and every change not made durable (fsync of the file; of its directory for names) is rolled back (chaos run only)",
                    parameters: [
                        .string(
                            "path",
                            "a file or directory (and what is below it, by whole components) or a glob; every file when not given",
                            optional: true),
                        .boolean(
                            "torn",
                            "the last unsynced write of each file keeps a seeded prefix of its 512-byte sectors",
                            default: false),
                    ]
                ) { parameters in
                    let path = parameters.has("path") ? try parameters.string("path") : nil
                    let changes: Set<FileOperationKind> = [.write, .truncate, .rename, .unlink, .mkdir, .create]
                    let target: SystemTarget
                    do throws(ChaosError) {
                        target = try .files(path: path, operations: changes)
                    } catch {
                        throw parameters.invalid(error.message, parameter: "path")
                    }
                    return .on(target, .constant(.powerLoss(torn: try parameters.bool("torn"))))
                },
            ]
        case .connect:
            return [
                failure("refused", "the connection is refused (ECONNREFUSED)", ECONNREFUSED, point),
                CatalogueItem(
                    "timeout", "the connection times out (ETIMEDOUT) after waiting",
                    parameters: [
                        .duration("after", "how long connect waits before it fails", default: .seconds(3))
                    ] + targetParameters(point)
                ) { parameters in
                    let wait = try delay(parameters, "after")
                    return try targeted(
                        point, parameters, SystemProvider.constant(.fail(errno: ETIMEDOUT)).delayed(by: wait))
                },
                failure("reset", "the connection is reset (ECONNRESET)", ECONNRESET, point),
                failure("unreachable", "the network is unreachable (ENETUNREACH)", ENETUNREACH, point),
                anyFailure(point),
                latency(point),
            ]
        case .accept:
            return [
                failure("aborted", "the incoming connection was aborted (ECONNABORTED)", ECONNABORTED, point),
                anyFailure(point),
                latency(point),
            ]
        case .send:
            return [
                failure("reset", "the connection is reset (ECONNRESET)", ECONNRESET, point),
                failure("broken-pipe", "the peer has gone (EPIPE)", EPIPE, point),
                anyFailure(point),
                short("short", "sends take fewer bytes than given", point),
                corrupt("sends carry some bytes changed", point),
                latency(point),
            ] + streamItems(point)
        case .recv:
            return [
                failure("reset", "the connection is reset (ECONNRESET)", ECONNRESET, point),
                anyFailure(point),
                short("short", "receives return fewer bytes than asked", point),
                corrupt("receives return some bytes changed", point),
                latency(point),
            ] + streamItems(point)
        case .dns:
            return [
                CatalogueItem(
                    "dns-failure", "host names do not resolve (EAI_NONAME)", parameters: targetParameters(point)
                ) { parameters in
                    try targeted(point, parameters, .constant(.resolverFailure(code: EAI_NONAME)))
                },
                CatalogueItem(
                    "temporary-failure", "the resolver fails for now (EAI_AGAIN)", parameters: targetParameters(point)
                ) { parameters in
                    try targeted(point, parameters, .constant(.resolverFailure(code: EAI_AGAIN)))
                },
                CatalogueItem(
                    "fail", "lookups fail with a chosen EAI code",
                    parameters: [
                        .string("code", "the EAI code, e.g. \"EAI_FAIL\"")
                    ] + targetParameters(point)
                ) { parameters in
                    let name = try parameters.string("code")
                    guard let code = SystemErrno.value(name), SystemFunctions.allows(code, on: .dns) else {
                        throw parameters.invalid(
                            "'\(name.prefix(40))' is no EAI code getaddrinfo returns; choose one of: \(SystemFunctions.errnoNames(of: .dns).joined(separator: ", "))",
                            parameter: "code")
                    }
                    return try targeted(point, parameters, .constant(.resolverFailure(code: code)))
                },
                latency(point),
            ]
        case .getenv:
            return [
                CatalogueItem(
                    "set", "the variable has another value",
                    parameters: [
                        .string("name", "the variable"), .string("value", "what getenv returns for it"),
                    ]
                ) { parameters in
                    let value = try parameters.string("value")
                    guard !value.utf8.contains(0) else {
                        throw parameters.invalid(
                            "the value contains a NUL byte, which getenv cannot return", parameter: "value")
                    }
                    return try targeted(point, parameters, .constant(.set(value)))
                },
                CatalogueItem("unset", "the variable is not set", parameters: [.string("name", "the variable")]) {
                    parameters in
                    try targeted(point, parameters, .constant(.unset))
                },
            ]
        case .process:
            return [
                failure(
                    "eagain",
                    "creating a process fails for want of processes (EAGAIN; bash says \"fork: retry: Resource temporarily unavailable\"); threads are never failed",
                    EAGAIN, point),
                failure("enomem", "creating a process fails for want of memory (ENOMEM)", ENOMEM, point),
                anyFailure(point),
                latency(point),
            ]
        case .memory:
            return [
                CatalogueItem(
                    "enomem",
                    "allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc, anonymous mmap) fail with ENOMEM, after some succeed; for C code (a Swift program traps on a failed allocation by design)",
                    parameters: [
                        .strings(
                            "images",
                            "the C images whose allocations fail in-process, by file name or path, e.g. [\"libsqlite3.so.0\"]; required in-process (never the Swift runtime, Foundation or the engine), not read by chaos run, where the whole program's fail"
                        ),
                        .integer(
                            "after", "how many allocations succeed first (each as asked)", default: 0,
                            range: 0...1_000_000_000),
                    ] + targetParameters(point)
                ) { parameters in
                    let failing = SystemProvider.constant(.outOfMemory(images: try parameters.strings("images") ?? []))
                    let after = try parameters.int("after")
                    return try targeted(
                        point, parameters, after == 0 ? failing : .sequential([.original.times(after), failing]))
                }
            ]
        case .dir:
            return [
                failure("eacces", "directories cannot be opened (EACCES)", EACCES, point),
                failure("enoent", "the directory is gone (ENOENT) when it is opened or read", ENOENT, point),
                anyFailure(point),
                CatalogueItem(
                    "omit",
                    "reads of the directory leave entries out, as if they were not there: those whose name matches name, or one name in every, chosen by the name and the seed (a name left out once is left out of every listing); never . and ..",
                    parameters: [
                        .string("name", "a glob of entry names (* and ?), e.g. \"*.tmp\"", optional: true),
                        .integer(
                            "every", "leave out one name in this many (1: every entry)", range: 1...1_000_000,
                            optional: true),
                    ] + targetParameters(point)
                ) { parameters in
                    let entries: OmittedEntries
                    switch (parameters.has("name"), parameters.has("every")) {
                    case (true, false): entries = .named(try parameters.string("name"))
                    case (false, true): entries = .oneIn(try parameters.int("every"))
                    default:
                        throw parameters.invalid(
                            "give name (a glob such as \"*.tmp\") or every (one entry in N), one of the two",
                            parameter: "name")
                    }
                    if let problem = SystemOutcome.omit(entries).problem(on: point) {
                        throw parameters.invalid(problem, parameter: parameters.has("name") ? "name" : "every")
                    }
                    return try targeted(point, parameters, .constant(.omit(entries)))
                },
                latency(point),
            ]
        case .clock:
            return [
                CatalogueItem(
                    "offset", "the real time, moved", parameters: ClockOffset.catalogueParameters + clockParameters
                ) { parameters in
                    let seconds = try ClockOffset(parameters: parameters).seconds(from: Date())
                    return try targeted(
                        point, parameters, .constant(.offset(seconds: seconds, scope: try clockScope(parameters))))
                },
                CatalogueItem(
                    "frozen", "time stands still",
                    parameters: [.date("date", "the instant the clock shows")] + clockParameters
                ) { parameters in
                    let instant = Int64((try parameters.date("date").timeIntervalSince1970 * 1e9).rounded())
                    return try targeted(
                        point, parameters,
                        .constant(.frozen(nanosecondsSince1970: instant, scope: try clockScope(parameters))))
                },
                CatalogueItem(
                    "speed", "time runs faster or slower from the apply instant (chaos run: from the program's start)",
                    parameters: [
                        .number(
                            "factor", "how many times as fast as real time (0 stops it, negative runs it back)",
                            range: -1e6...1e6)
                    ] + clockParameters
                ) { parameters in
                    try targeted(
                        point, parameters,
                        .constant(.speed(try parameters.double("factor"), scope: try clockScope(parameters))))
                },
                CatalogueItem(
                    "virtual",
                    "every clock, monotonic ones too, reads virtual time that moves only when advanced (VirtualTime, chaos ctl advance); sleeps and timers wait for it",
                    parameters: [
                        .date(
                            "start", "the instant virtual time starts at (the real time at apply when not given)",
                            optional: true),
                        .boolean("flowing", "virtual time also runs at real pace between advances", default: false),
                    ]
                ) { parameters in
                    let start =
                        parameters.has("start")
                        ? Int64((try parameters.date("start").timeIntervalSince1970 * 1e9).rounded()) : nil
                    return .constant(
                        .virtual(startNanosecondsSince1970: start, flowing: try parameters.bool("flowing")))
                },
                CatalogueItem(
                    "jump", "the real time, then a jump after some readings",
                    parameters: [
                        .offset("by", "how far the clock jumps, e.g. \"+2h\""),
                        .integer("after", "how many readings stay real first", default: 1, range: 0...100_000),
                    ] + clockParameters
                ) { parameters in
                    let seconds = try parameters.offset("by").seconds(from: Date())
                    let jumped = SystemProvider.constant(.offset(seconds: seconds, scope: try clockScope(parameters)))
                    let real = Array(repeating: SystemProvider.original, count: try parameters.int("after"))
                    return try targeted(point, parameters, real.isEmpty ? jumped : .sequential(real + [jumped]))
                },
            ]
        case .stat:
            return [
                CatalogueItem(
                    "attributes",
                    "stat answers these attributes instead of the file's own (the ones not given stay the file's; a given mtime wins over a clock entry's shift)",
                    parameters: [
                        .integer("size", "the size in bytes", range: 0...Int.max, optional: true),
                        .date("mtime", "the modification time", optional: true),
                        .string(
                            "mode", "the permission bits in octal, e.g. \"600\" (the file type stays)", optional: true),
                        .integer("nlink", "the number of hard links", range: 0...Int(Int32.max), optional: true),
                    ] + targetParameters(point)
                ) { parameters in
                    let attributes = FileAttributes(
                        size: parameters.has("size") ? Int64(try parameters.int("size")) : nil,
                        modified: parameters.has("mtime") ? try parameters.date("mtime") : nil,
                        permissions: parameters.has("mode") ? try permissionBits(parameters) : nil,
                        links: parameters.has("nlink") ? UInt64(try parameters.int("nlink")) : nil)
                    if let problem = attributes.problem { throw parameters.invalid(problem) }
                    return try targeted(point, parameters, .constant(.attributes(attributes)))
                },
                failure("enoent", "the file seems not to exist (ENOENT)", ENOENT, point),
                failure("eacces", "permission to look at the file is denied (EACCES)", EACCES, point),
                anyFailure(point),
                latency(point),
            ]
        }
    }

    /// The `mode` parameter: permission bits written in octal ("600", "0644", "0o755").
    private static func permissionBits(_ parameters: ProfileParameters) throws(ChaosError) -> UInt16 {
        let text = try parameters.string("mode")
        var digits = Substring(text)
        if digits.hasPrefix("0o") { digits = digits.dropFirst(2) }
        guard !digits.isEmpty, digits.count <= 5, let bits = UInt16(digits, radix: 8), bits <= 0o7777 else {
            throw parameters.invalid(
                "'\(text.prefix(40))' is not permission bits; write them in octal, from 0 to 7777, e.g. \"644\"",
                parameter: "mode")
        }
        return bits
    }

    /// An item failing the calls it aims at with `code`.
    private static func failure(
        _ name: String, _ summary: String, _ code: Int32, _ point: SystemPointKind,
        operations: [FileOperationKind]? = nil
    ) -> CatalogueItem<SystemProvider> {
        CatalogueItem(name, summary, parameters: targetParameters(point, defaultOperations: operations)) { parameters in
            try targeted(point, parameters, .constant(.fail(errno: code)))
        }
    }

    /// `fail`: the calls aimed at fail with the errno given, which some of them must be
    /// able to return.
    private static func anyFailure(_ point: SystemPointKind, operations: [FileOperationKind]? = nil) -> CatalogueItem<
        SystemProvider
    > {
        CatalogueItem(
            "fail", "calls fail with a chosen errno (one the call can return)",
            parameters: [
                .string(
                    "errno",
                    "the errno, e.g. \"EROFS\", or \"any\": drawn per call, from the seed, among those the call can return"
                )
            ] + targetParameters(point, defaultOperations: operations)
        ) { parameters in
            let name = try parameters.string("errno")
            if name == "any" {
                guard point != .dns else {
                    throw parameters.invalid(
                        "errno \"any\" is for system calls; getaddrinfo fails with an EAI code: use the item \"fail\" with \"code\"",
                        parameter: "errno")
                }
                return try targeted(point, parameters, .constant(.failWithAnyErrno))
            }
            let narrowed =
                try point == .files
                ? FileOperationKind.bits(fileOperations(parameters) ?? Set(FileOperationKind.allCases)) : nil
            guard let code = SystemErrno.value(name), code > 0 else {
                throw parameters.invalid(
                    "'\(name.prefix(40))' is no errno name; write one such as \"EIO\" or \"ENOSPC\"", parameter: "errno"
                )
            }
            guard SystemFunctions.allows(code, on: point, operations: narrowed) else {
                throw parameters.invalid(
                    "no \(point == .files ? "operation given" : "call of \(point.pointName)") can return \(SystemErrno.name(code)); choose one of: \(SystemFunctions.errnoNames(of: point, operations: narrowed).joined(separator: ", "))",
                    parameter: "errno"
                )
            }
            return try targeted(point, parameters, .constant(.fail(errno: code)))
        }
    }

    private static func short(
        _ name: String, _ summary: String, _ point: SystemPointKind, operations: [FileOperationKind]? = nil
    ) -> CatalogueItem<SystemProvider> {
        CatalogueItem(
            name, summary,
            parameters: [
                .integer(
                    "maxBytes", "the most bytes a call moves (half of what was asked when not given)",
                    range: 1...Int(Int32.max), optional: true)
            ] + targetParameters(point, defaultOperations: operations)
        ) { parameters in
            let maxBytes = parameters.has("maxBytes") ? try parameters.int("maxBytes") : nil
            return try targeted(point, parameters, .constant(.short(maxBytes: maxBytes)))
        }
    }

    /// toxiproxy's stream toxics, per connection, in the direction of `point`.
    private static func streamItems(_ point: SystemPointKind) -> [CatalogueItem<SystemProvider>] {
        let direction = point == .send ? "sent" : "received"
        let end = CatalogueParameter.string(
            "then",
            "how the connection ends: close (a receive reads the end of the stream, a send fails with EPIPE) or reset (ECONNRESET)",
            default: "close")
        return [
            CatalogueItem(
                "bandwidth", "each connection moves at most this many bytes a second \(point == .send ? "out" : "in")",
                parameters: [.integer("rate", "bytes a second", range: 1...(1 << 40))] + targetParameters(point)
            ) { parameters in
                try targeted(point, parameters, .constant(.pace(bytesPerSecond: try parameters.int("rate"))))
            },
            CatalogueItem(
                "slicer", "each call moves a slice of the bytes, after a wait: data arrives in small pieces",
                parameters: [
                    .integer("size", "bytes a slice holds on average", range: 1...Int(Int32.max)),
                    .integer(
                        "variation", "how many bytes a slice may hold more or fewer, drawn from the seed", default: 0,
                        range: 0...Int(Int32.max)),
                    .duration("delay", "the wait before each slice", default: .milliseconds(10)),
                ] + targetParameters(point)
            ) { parameters in
                let size = try parameters.int("size")
                let variation = try parameters.int("variation")
                guard variation < size else {
                    throw parameters.invalid(
                        "variation \(variation) must be less than size \(size)", parameter: "variation")
                }
                let slice = SystemProvider.constant(.slice(bytes: size, variation: variation))
                let wait = try delay(parameters, "delay")
                return try targeted(point, parameters, wait == .zero ? slice : slice.delayed(by: wait))
            },
            CatalogueItem(
                "limit-data", "after this many bytes \(direction) on a connection, the connection ends",
                parameters: [.integer("bytes", "bytes \(direction) before it ends", range: 0...Int.max), end]
                    + targetParameters(point)
            ) { parameters in
                try targeted(
                    point, parameters,
                    .constant(.limit(bytes: try parameters.int("bytes"), then: try streamEnd(parameters))))
            },
            CatalogueItem(
                "stall", "data stops; after a while the connection ends (toxiproxy's timeout)",
                parameters: [.duration("for", "how long data stops before the connection ends"), end]
                    + targetParameters(point)
            ) { parameters in
                try targeted(
                    point, parameters, .constant(.stall(try delay(parameters, "for"), then: try streamEnd(parameters))))
            },
        ]
            + (point == .send
                ? [
                    CatalogueItem(
                        "slow-close", "closing a socket waits first (toxiproxy's slow_close)",
                        parameters: [.duration("delay", "how long a close waits")] + targetParameters(point)
                    ) { parameters in
                        try targeted(point, parameters, .constant(.slowClose(try delay(parameters, "delay"))))
                    }
                ] : [])
    }

    private static func streamEnd(_ parameters: ProfileParameters) throws(ChaosError) -> StreamEnd {
        let text = try parameters.string("then")
        guard let end = StreamEnd(rawValue: text) else {
            throw parameters.invalid(
                "'\(text.prefix(40))' is not close or reset\(Suggestions.hint(for: text, in: StreamEnd.allCases.map(\.rawValue)))",
                parameter: "then")
        }
        return end
    }

    /// `corrupt`: bytes of each call changed, from the seed.
    private static func corrupt(
        _ summary: String, _ point: SystemPointKind, operations: [FileOperationKind]? = nil
    ) -> CatalogueItem<SystemProvider> {
        CatalogueItem(
            "corrupt", summary,
            parameters: [
                .integer("bytes", "how many bytes of each call change", default: 1, range: 1...65536),
                .integer(
                    "offset",
                    "where in each call's bytes the change starts (positions drawn from the seed when not given)",
                    range: 0...Int(Int32.max), optional: true),
                .string(
                    "with", "what a changed byte becomes: flip (every bit inverted), zero or random", default: "flip"),
            ] + targetParameters(point, defaultOperations: operations)
        ) { parameters in
            let way = try parameters.string("with")
            guard let with = Corruption(rawValue: way) else {
                throw parameters.invalid(
                    "'\(way.prefix(40))' is not one of flip, zero, random\(Suggestions.hint(for: way, in: Corruption.allCases.map(\.rawValue)))",
                    parameter: "with")
            }
            let offset = parameters.has("offset") ? try parameters.int("offset") : nil
            return try targeted(
                point, parameters, .constant(.corrupt(bytes: try parameters.int("bytes"), offset: offset, with: with)))
        }
    }

    private static func latency(_ point: SystemPointKind, operations: [FileOperationKind]? = nil) -> CatalogueItem<
        SystemProvider
    > {
        CatalogueItem(
            "latency", "each call waits first, then runs",
            parameters: [
                .duration("delay", "how long to wait before the real call")
            ] + targetParameters(point, defaultOperations: operations)
        ) { parameters in
            try targeted(point, parameters, SystemProvider.original.delayed(by: try delay(parameters, "delay")))
        }
    }

    /// A duration the engine can wait (up to a day).
    private static func delay(_ parameters: ProfileParameters, _ name: String) throws(ChaosError) -> Duration {
        let duration = try parameters.duration(name)
        guard duration <= .seconds(86_400) else {
            throw parameters.invalid(
                "'\(name)' is \(DurationText.format(duration)); a system call waits at most a day (\"24h\")",
                parameter: name)
        }
        return duration
    }

    // MARK: Targets

    /// `leaf` for the calls the target parameters aim at; other calls pass on.
    private static func targeted(_ point: SystemPointKind, _ parameters: ProfileParameters, _ provider: SystemProvider)
        throws(ChaosError) -> SystemProvider
    {
        guard let target = try target(point, parameters) else { return provider }
        return .on(target, provider)
    }

    private static let clockParameters: [CatalogueParameter] = [
        .strings(
            "clocks",
            "which clocks: realtime, realtime_coarse, tai, realtime_alarm, monotonic (every realtime clock when not given)"
        ),
        .boolean("monotonic", "also move the monotonic and boot-time clocks", default: false),
        .boolean("fileTimes", "shift file times seen through stat by the same amount", default: true),
        .boolean("sleeps", "under speed, scale relative sleeps too", default: true),
    ]

    private static func clockScope(_ parameters: ProfileParameters) throws(ChaosError) -> ClockScope {
        ClockScope(
            monotonic: try parameters.bool("monotonic"), fileTimes: try parameters.bool("fileTimes"),
            sleeps: try parameters.bool("sleeps"))
    }

    /// The parameters that aim an item (or a `match` object) at some calls of `point`.
    static func targetParameters(_ point: SystemPointKind, defaultOperations: [FileOperationKind]? = nil)
        -> [CatalogueParameter]
    {
        switch point {
        case .files:
            let operations = "operations: \(FileOperationKind.allCases.map(\.rawValue).joined(separator: ", ")), or any"
            return [
                .string(
                    "path",
                    "a file or directory (and what is below it, by whole components) or a glob (*, ?, **); every file when not given",
                    optional: true),
                defaultOperations.map { defaults in
                    CatalogueParameter(
                        "operations", .strings, "which \(operations)",
                        requirement: .defaulted(.array(defaults.map { .string($0.rawValue) })))
                } ?? .strings("operations", "which \(operations) (all when not given)"),
                .integer(
                    "descriptor", "a descriptor by number (0: standard input), whatever it is open on", range: 0...63,
                    optional: true),
                .strings(
                    "kinds",
                    "descriptors by what they are open on: \(DescriptorKind.allCases.map(\.rawValue).joined(separator: ", ")) (pipes and terminals have no path to name)"
                ),
            ]
        case .connect, .accept:
            return [
                .string(
                    "host",
                    point == .connect
                        ? "the peer address or CIDR block, e.g. \"127.0.0.1\" or \"10.0.0.0/8\""
                        : "the listening address or CIDR block", optional: true),
                .integer(
                    "port", point == .connect ? "the peer port" : "the listening port", range: 0...65535, optional: true
                ),
                .strings("families", "socket families: inet, inet6, unix, other (inet and inet6 when not given)"),
            ]
        case .send, .recv:
            return [
                .strings("families", "socket families: inet, inet6, unix, other (inet and inet6 when not given)"),
                .strings("roles", "which sockets: client (connected here), server (accepted here), other"),
                .string(
                    "host",
                    "the address or CIDR block at the far end of a connection made here, or the listening address of one accepted here",
                    optional: true),
                .integer(
                    "port",
                    "the port at the far end of a connection made here, or the listening port of one accepted here",
                    range: 0...65535, optional: true),
            ]
        case .dns:
            return [
                .string(
                    "host", "host names matching this pattern (* and ?, any case); every name when not given",
                    optional: true)
            ]
        case .getenv:
            return [.string("name", "the variable", optional: true)]
        case .dir:
            return [
                .string(
                    "path",
                    "a directory (and those below it, by whole components) or a glob (*, ?, **); every directory when not given",
                    optional: true)
            ]
        case .clock, .process:
            return []
        case .memory:
            return [
                .integer(
                    "above",
                    "only allocations of more bytes than this fail (smaller ones pass); every size when not given",
                    unit: "bytes", range: 1...Int.max, optional: true)
            ]
        case .stat:
            return [
                .string(
                    "path",
                    "a file or directory (and what is below it, by whole components) or a glob (*, ?, **), as the program names it; every file when not given",
                    optional: true)
            ]
        }
    }

    /// The target the parameters name, or nil when they name none (every call).
    static func target(_ point: SystemPointKind, _ parameters: ProfileParameters) throws(ChaosError) -> SystemTarget? {
        func located<T>(_ parameter: String, _ make: () throws(ChaosError) -> T) throws(ChaosError) -> T {
            do throws(ChaosError) {
                return try make()
            } catch {
                throw parameters.invalid(error.message, parameter: parameter)
            }
        }
        switch point {
        case .files:
            let operations = try fileOperations(parameters)
            let descriptor = parameters.has("descriptor") ? try parameters.int("descriptor") : nil
            let kinds = try choices(parameters, "kinds", DescriptorKind.self)
            guard parameters.has("path") || operations != nil || descriptor != nil || kinds != nil else { return nil }
            let path = parameters.has("path") ? try parameters.string("path") : nil
            return try located(path != nil ? "path" : descriptor != nil ? "descriptor" : "operations") {
                () throws(ChaosError) in
                try .files(path: path, operations: operations, descriptor: descriptor, kinds: kinds)
            }
        case .connect, .accept:
            let families = try choices(parameters, "families", SocketFamily.self)
            let host = parameters.has("host") ? try parameters.string("host") : nil
            let port = parameters.has("port") ? try parameters.int("port") : nil
            return try located(host != nil ? "host" : "families") { () throws(ChaosError) in
                point == .connect
                    ? try .connections(to: host, port: port, families: families)
                    : try .accepted(on: host, port: port, families: families)
            }
        case .send, .recv:
            let families = try choices(parameters, "families", SocketFamily.self)
            let roles = try choices(parameters, "roles", SocketRole.self)
            let host = parameters.has("host") ? try parameters.string("host") : nil
            let port = parameters.has("port") ? try parameters.int("port") : nil
            return try located(host != nil ? "host" : "families") { () throws(ChaosError) in
                try .sockets(point, families: families, roles: roles, host: host, port: port)
            }
        case .dns:
            guard parameters.has("host") else { return nil }
            let host = try parameters.string("host")
            return try located("host") { () throws(ChaosError) in try .hosts(host) }
        case .getenv:
            guard parameters.has("name") else { return nil }
            let name = try parameters.string("name")
            return try located("name") { () throws(ChaosError) in try .variable(name) }
        case .clock:
            guard let clocks = try choices(parameters, "clocks", ClockSource.self) else { return nil }
            return try located("clocks") { () throws(ChaosError) in try .clocks(clocks) }
        case .stat:
            guard parameters.has("path") else { return nil }
            let path = try parameters.string("path")
            return try located("path") { () throws(ChaosError) in try .stat(path: path) }
        case .dir:
            guard parameters.has("path") else { return nil }
            let path = try parameters.string("path")
            return try located("path") { () throws(ChaosError) in try .directories(path) }
        case .process:
            return nil
        case .memory:
            guard parameters.has("above") else { return nil }
            let bytes = try parameters.int("above")
            return try located("above") { () throws(ChaosError) in try .allocations(above: bytes) }
        }
    }

    /// The `operations` list (nil when absent; `any` stands for all of them).
    private static func fileOperations(_ parameters: ProfileParameters) throws(ChaosError) -> Set<FileOperationKind>? {
        guard let names = try parameters.strings("operations") else { return nil }
        if names == ["any"] { return Set(FileOperationKind.allCases) }
        return try choices(parameters, "operations", FileOperationKind.self)
    }

    /// A list parameter of names from `T`, checked (nil when absent).
    private static func choices<T: RawRepresentable & CaseIterable & Hashable>(
        _ parameters: ProfileParameters, _ name: String, _: T.Type
    ) throws(ChaosError) -> Set<T>? where T.RawValue == String {
        guard let names = try parameters.strings(name) else { return nil }
        let known = T.allCases.map(\.rawValue)
        var chosen = Set<T>()
        for text in names {
            guard let value = T(rawValue: text) else {
                throw parameters.invalid(
                    "'\(text.prefix(40))' is not one of \(known.joined(separator: ", "))\(Suggestions.hint(for: text, in: known))",
                    parameter: name)
            }
            chosen.insert(value)
        }
        guard !chosen.isEmpty else {
            throw parameters.invalid(
                "'\(name)' is empty; name at least one of \(known.joined(separator: ", "))", parameter: name)
        }
        return chosen
    }

    /// Why an outcome cannot fail allocations in this process, or nil: in-process a memory
    /// entry acts only on the C images it names (their GOT slots are the ones rebound); one
    /// that names none would never fire.
    static func inProcessMemoryProblem(_ outcome: SystemOutcome) -> String? {
        let images: [String]
        switch outcome {
        case .real, .pass: return nil
        case .outOfMemory(let named): images = named
        default: images = []
        }
        guard !images.isEmpty else {
            return
                "in this process a memory entry acts only on the C images it names, never on the Swift runtime, Foundation or the engine (Swift traps on a failed allocation by design); add images, e.g. \"images\": [\"libsqlite3.so.0\"] (in code .outOfMemory(images: [\"libsqlite3.so.0\"])), or run the program under chaos run"
        }
        return nil
    }

}
