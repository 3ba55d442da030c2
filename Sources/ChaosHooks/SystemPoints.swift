public import ChaosKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The built-in system points: the wall clock, the environment, sockets, name resolution
/// and files, hooked process-wide through the C library (Linux/glibc; elsewhere applying
/// them throws `.unsupportedPlatform`). `chaos run`'s preload library offers the same
/// names and catalogue items for programs that are not linked with ChaosKit.
///
/// | point | hooks | catalogue items |
/// |---|---|---|
/// | `system.clock` | `clock_gettime` (realtime clocks), `gettimeofday`, `time` | `offset` {by: "-30y", or years … seconds}, `frozen` {date}, `speed` {factor}, `jump` {by, after} |
/// | `system.getenv` | `getenv` | `set` {name, value}, `unset` {name} |
/// | `system.connect` | `connect` (IPv4/IPv6 only) | `refused`, `timeout`, `reset`, `latency` {delay} |
/// | `system.getaddrinfo` | `getaddrinfo` | `dns-failure` (EAI_NONAME) |
/// | `system.send`, `system.recv` | `send`, `recv` | `reset`, `latency` {delay} |
/// | `system.files` | `open`, `open64`, `openat`, `read`, `write`, `fsync` | `eio`, `enospc`, `eacces`, `short-read`, `short-write` {path, operations} |
///
/// Monotonic clocks are never touched, so sleeps and timeouts keep working. The points
/// patch nothing until an entry or scope uses them, and restore every slot after the last.
/// Call ``register()`` once so that profiles can name them before first use.
///
/// What they cannot see: calls the C library makes to itself (e.g. `fopen` opening a
/// file does not go through `open`'s GOT slot, `printf` does not call `write` through it),
/// function pointers fetched with `dlsym` before the hook, inlined calls, direct system
/// calls (`syscall(2)`, Go-style runtimes), the vDSO called directly, and statically
/// linked programs.
public enum SystemPoints {
    /// The wall clock (`Date()`, `clock_gettime`, `gettimeofday`, `time`): see ``ClockRule``.
    public static let clock: InjectionPoint<ClockReading, ClockRule, Never> = makeClock()

    /// `char *getenv(const char *name)`.
    public static let getenv: InjectionPoint<CArguments, CValue, Never> = symbolPoint("system.getenv", [("getenv", false)],
                                           signature(.cString, [.cString])) { SystemPoints.getenv }
    /// `int connect(int, const struct sockaddr *, socklen_t)`.
    public static let connect: InjectionPoint<CArguments, CValue, Never> = symbolPoint("system.connect", [("connect", false)],
                                            signature(.int32, [.int32, .pointer, .uint32])) { SystemPoints.connect }
    /// `int getaddrinfo(const char *, const char *, const struct addrinfo *, struct addrinfo **)`.
    public static let getaddrinfo: InjectionPoint<CArguments, CValue, Never> = symbolPoint("system.getaddrinfo", [("getaddrinfo", false)],
                                                signature(.int32, [.cString, .cString, .pointer, .pointer])) { SystemPoints.getaddrinfo }
    /// `ssize_t send(int, const void *, size_t, int)`.
    public static let send: InjectionPoint<CArguments, CValue, Never> = symbolPoint("system.send", [("send", false)],
                                         signature(.ssize, [.int32, .pointer, .size, .int32])) { SystemPoints.send }
    /// `ssize_t recv(int, void *, size_t, int)`.
    public static let recv: InjectionPoint<CArguments, CValue, Never> = symbolPoint("system.recv", [("recv", false)],
                                         signature(.ssize, [.int32, .pointer, .size, .int32])) { SystemPoints.recv }
    /// `open`/`open64`/`openat`, `read`, `write`, `fsync`: see ``FileOperation``.
    public static let files: InjectionPoint<FileOperation, FileOutcome, Never> = makeFiles()

    /// Creates every system point, so that profiles and `Chaos.catalogue` can name them.
    public static func register() {
        _ = (clock, getenv, connect, getaddrinfo, send, recv, files)
    }

    static func signature(_ returns: CType, _ arguments: [CType], fixed: Int? = nil) -> CSignature {
        do {
            return try CSignature(returns: returns, arguments: arguments, fixedArgumentCount: fixed)
        } catch {
            preconditionFailure("built-in signature is invalid: \(error)")
        }
    }

    /// A point over imported symbols whose closures and rebindings are made on first use.
    static func symbolPoint(
        _ name: String, _ symbols: [(String, Bool)], _ signature: CSignature,
        _ point: @escaping @Sendable () -> InjectionPoint<CArguments, CValue, Never>
    ) -> InjectionPoint<CArguments, CValue, Never> {
        let activation = LazyHookActivation(name: name) { () throws(ChaosError) -> any HookBinder in
            var members: [(binder: any HookBinder, optional: Bool)] = []
            for (symbol, optional) in symbols {
                let closure = try FFIClosure(signature: signature, hookPoint: point())
                members.append((try SymbolRebinding(symbol: symbol, closure: closure), optional))
            }
            return BinderGroup(subject: name, members)
        }
        return InjectionPoint<CArguments, CValue, Never>(
            name, catalogue: CHookProvider.catalogue(name: name, returning: signature.returns, items(name)), activation: activation
        ) { $0.callOriginal() }
    }

    /// The waiting every latency item declares.
    private static let latencyDelay = CatalogueParameter.duration("delay", "how long to wait before the real call")

    private static func items(_ name: String) -> [CatalogueItem<CHookProvider>] {
        switch name {
        case "system.getenv":
            return [
                CatalogueItem("set", "the variable has another value", parameters: [
                    .string("name", "the variable"), .string("value", "what getenv returns for it"),
                ]) { parameters in
                    .environmentVariable(try parameters.string("name"), is: try parameters.string("value"))
                },
                CatalogueItem("unset", "the variable is not set", parameters: [.string("name", "the variable")]) { parameters in
                    .environmentVariable(try parameters.string("name"), is: nil)
                },
            ]
        case "system.connect":
            let failures = [("refused", ECONNREFUSED, "the connection is refused"), ("timeout", ETIMEDOUT, "the connection times out"),
                            ("reset", ECONNRESET, "the connection is reset")]
            return failures.map { item, code, summary in
                CatalogueItem(item, summary) { _ in .failingInternetConnects(errno: code) }
            } + [
                CatalogueItem("latency", "connections are slow to open", parameters: [latencyDelay]) { parameters in
                    .delayingInternetConnects(by: try parameters.duration("delay"))
                },
            ]
        case "system.getaddrinfo":
            return [
                CatalogueItem("dns-failure", "host names do not resolve (EAI_NONAME)") { _ in .failingNameLookups },
            ]
        case "system.send", "system.recv":
            return [
                CatalogueItem("reset", "the connection is reset (ECONNRESET)") { _ in .failing(returning: -1, errno: ECONNRESET) },
                CatalogueItem("latency", "each call waits first", parameters: [latencyDelay]) { parameters in
                    CHookProvider.original.delayed(by: try parameters.duration("delay"))
                },
            ]
        default:
            return []
        }
    }

    /// Whether `getenv`'s argument is `variable` (compared in C, no allocation).
    static func namesVariable(_ variable: String) -> @Sendable (CArguments) -> Bool {
        let wanted = CStrings.intern(variable)
        return { arguments in
            guard let name = try? arguments.argument(0, as: UnsafePointer<CChar>?.self) else { return false }
            return strcmp(name, UnsafePointer(bitPattern: wanted)!) == 0
        }
    }

    /// Whether a `connect` goes to an IPv4 or IPv6 address (Unix sockets are left alone).
    static let isInternetConnect: @Sendable (CArguments) -> Bool = { arguments in
        guard let address = try? arguments.argument(1, as: UnsafeRawPointer?.self) else { return false }
        let family = Int32(address.loadUnaligned(as: sa_family_t.self))
        return family == AF_INET || family == AF_INET6
    }
}

/// Typed providers for the system points over C functions, the same as their catalogue
/// items: `SystemPoints.getenv.entry(.environmentVariable("HOME", is: "/nowhere"))`.
extension ChaosProvider where Arguments == CArguments, Result == CValue, Failure == Never {
    /// `system.getenv`: `getenv(name)` returns `value`, or NULL (unset) when it is nil;
    /// items `set` and `unset`. Other variables are left alone.
    public static func environmentVariable(_ name: String, is value: String?) -> Self {
        let answer: CValue = value.map { .pointer(UnsafeMutableRawPointer(bitPattern: CStrings.intern($0))) } ?? nil
        return .composite([.when(SystemPoints.namesVariable(name), .constant(answer))])
    }

    /// `system.connect`: connections to IPv4 and IPv6 addresses fail with -1 and `errno`
    /// (`ECONNREFUSED`, `ETIMEDOUT`, `ECONNRESET`: items `refused`, `timeout`, `reset`);
    /// Unix sockets are left alone.
    public static func failingInternetConnects(errno: Int32) -> Self {
        .composite([.when(SystemPoints.isInternetConnect, .failing(returning: -1, errno: errno))])
    }

    /// `system.connect`: connections to IPv4 and IPv6 addresses wait `delay` first (item `latency`).
    public static func delayingInternetConnects(by delay: Duration) -> Self {
        .composite([.when(SystemPoints.isInternetConnect, Self.original.delayed(by: delay))])
    }

    /// `system.getaddrinfo`: every named host fails to resolve with `EAI_NONAME` (item `dns-failure`).
    public static var failingNameLookups: Self {
        .composite([.when({ (try? $0.argument(0, as: UnsafePointer<CChar>?.self)) != nil }, .constant(.int32(EAI_NONAME)))])
    }
}

/// C strings handed out by hooks (e.g. `getenv`'s answer): callers may keep the pointer
/// after chaos is reverted, as they may keep `getenv`'s, so they are never freed; each
/// distinct text is made once.
enum CStrings {
    private static let table = Locked<[String: UInt]>([:])

    static func intern(_ text: String) -> UInt {
        table.withLock { table in
            if let existing = table[text] { return existing }
            let made = UInt(bitPattern: strdup(text))
            table[text] = made
            return made
        }
    }
}

/// The activation of the system points: makes the binder on first use (so that merely
/// creating the points costs nothing and cannot fail), then binds and unbinds it.
final class LazyHookActivation: PointActivation {
    private let name: String
    private let make: @Sendable () throws(ChaosError) -> any HookBinder
    private let binder = Locked<(any HookBinder)?>(nil)

    init(name: String, make: @escaping @Sendable () throws(ChaosError) -> any HookBinder) {
        self.name = name
        self.make = make
    }

    /// Hooked calls read the point's newest entry inside hook sections, without a reference.
    var readsEntriesInHookSections: Bool { true }

    func activate() throws(ChaosError) {
        try binder.withLock { (binder: inout (any HookBinder)?) throws(ChaosError) in
            let target: any HookBinder
            if let existing = binder { target = existing } else { target = try make() }
            binder = target
            try target.bind()
        }
    }

    func deactivate() {
        let target = binder.withLock { $0 }
        do throws(ChaosError) {
            try target?.unbind()
        } catch {
            HookActivation.logger.warning("\(name) revert reported a problem", metadata: ["error": "\(error)"])
        }
    }
}
