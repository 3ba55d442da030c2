// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
public import ChaosControl
public import ChaosKit
public import ChaosNetwork
public import Foundation
import Hummingbird
import Logging
import ServiceLifecycle
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The control endpoint of a running program, and the web console it serves.
///
/// ```swift
/// // At start, in a debug build (or with CHAOS_CONTROL=127.0.0.1:0 and Chaos.bootstrap(control: .environment)):
/// if let console = try await ChaosConsole.start() {
///     print("chaos console: \(console.consoleURL ?? console.url)")
/// }
/// ```
/// It listens on loopback (a random port unless told otherwise), answers the control
/// protocol's routes (`/v1/status`, `/v1/points`, `/v1/entries`, `/v1/profile`, `/v1/response-sets`,
/// `/v1/events`, `/v1/go`; Docs/Console.md writes them down) and the web console at
/// `/console`, and writes its address and token into a file only the user can read, where
/// `chaos ctl` finds it (see `ControlEndpoint` in ChaosControl).
///
/// Every request must carry the per-session ``token`` (`Authorization: Bearer …`, or
/// `?token=` on a `GET`), a `Host` naming this endpoint, and no foreign `Origin`: a web page
/// in the user's browser cannot flip chaos. In release builds nothing listens unless the
/// app opts in (``Configuration/allowInReleaseBuilds``).
public final class ChaosConsole: Sendable {
    /// How the endpoint is set up.
    public struct Configuration: Sendable {
        /// Where to listen.
        public enum Address: Sendable, Hashable, CustomStringConvertible {
            /// 127.0.0.1 on `port` (0: a free port): the default.
            case loopback(port: Int = 0)
            /// Any other address, named explicitly; a warning is logged, since anyone who can
            /// reach it and learn the token can change the program.
            case host(String, port: Int)
            /// A Unix domain socket at an absolute path (made private to the user).
            case unixSocket(path: String)

            /// `127.0.0.1:0`, `[::1]:8080`, `unix:/path`.
            public var description: String {
                switch self {
                case .loopback(let port): "127.0.0.1:\(port)"
                case .host(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
                case .unixSocket(let path): "unix:\(path)"
                }
            }

            /// Reads `CHAOS_CONTROL`'s forms: `1` or `loopback` (127.0.0.1, a free port),
            /// `PORT`, `HOST:PORT`, `[IPv6]:PORT`, `unix:/path`. Loopback hosts
            /// (`127.0.0.1`, `localhost`, `::1`) give ``loopback(port:)``; others ``host(_:port:)``.
            public static func parse(_ text: String) throws(ChaosError) -> Address {
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                func invalid(_ why: String) -> ChaosError {
                    ChaosError(
                        .invalidProfile, subject: "CHAOS_CONTROL",
                        "'\(InputExcerpt.of(trimmed))' \(why); give 127.0.0.1:0 (loopback, a free port), a PORT, HOST:PORT or unix:/absolute/path"
                    )
                }
                if trimmed == "1" || trimmed.lowercased() == "loopback" || trimmed.lowercased() == "true" {
                    return .loopback()
                }
                if trimmed.hasPrefix("unix:") {
                    let path = String(trimmed.dropFirst(5))
                    guard path.hasPrefix("/") else { throw invalid("names a Unix socket without an absolute path") }
                    guard path.utf8.count < 104 else { throw invalid("names a Unix socket path longer than 103 bytes") }
                    return .unixSocket(path: path)
                }
                if let port = Int(trimmed) {
                    guard (0...65_535).contains(port) else { throw invalid("is not a port (0…65535)") }
                    return .loopback(port: port)
                }
                let host: Substring
                let portText: Substring
                if trimmed.hasPrefix("[") {
                    guard let close = trimmed.firstIndex(of: "]"),
                        trimmed[trimmed.index(after: close)...].hasPrefix(":")
                    else {
                        throw invalid("is not [IPv6]:PORT")
                    }
                    host = trimmed[trimmed.index(after: trimmed.startIndex)..<close]
                    portText = trimmed[trimmed.index(close, offsetBy: 2)...]
                } else {
                    guard let colon = trimmed.lastIndex(of: ":") else { throw invalid("has no port") }
                    host = trimmed[..<colon]
                    portText = trimmed[trimmed.index(after: colon)...]
                }
                guard let port = Int(portText), (0...65_535).contains(port) else {
                    throw invalid("does not end in a port (0…65535)")
                }
                guard !host.isEmpty, host.allSatisfy({ $0.isLetter || $0.isNumber || ".-:".contains($0) }) else {
                    throw invalid("does not name a host")
                }
                if ["127.0.0.1", "localhost", "::1"].contains(host.lowercased()) {
                    return host == "::1" ? .host("::1", port: port) : .loopback(port: port)
                }
                return .host(String(host), port: port)
            }

            /// Whether only this machine can connect.
            var isLocal: Bool {
                switch self {
                case .loopback, .unixSocket: true
                case .host(let host, _): host == "::1" || host.hasPrefix("127.") || host.lowercased() == "localhost"
                }
            }
        }

        /// Where to listen; loopback on a free port by default.
        public var address: Address
        /// The response sets the console lists and selects in.
        public var responseSets: [ResponseSetStore]
        /// The token; nil draws 32 random bytes (what you want outside tests).
        public var token: String?
        /// Where the endpoint file goes: nil for `ControlEndpoint.directory(environment:)` (ChaosControl).
        public var endpointDirectory: URL?
        /// Whether to write the endpoint file `chaos ctl` finds processes by.
        public var publishesEndpointFile: Bool
        /// The program's name in the endpoint file and status.
        public var program: String
        /// Listen in a release build too. Off by default: chaos must never be controllable
        /// in production by accident.
        public var allowInReleaseBuilds: Bool
        /// How this code was compiled (tests pass `.release` to check the refusal).
        public var buildConfiguration: Chaos.BuildConfiguration

        /// A configuration; the defaults listen on 127.0.0.1 on a free port, in debug builds.
        public init(
            address: Address = .loopback(), responseSets: [ResponseSetStore] = [], token: String? = nil,
            endpointDirectory: URL? = nil, publishesEndpointFile: Bool = true,
            program: String = ProcessInfo.processInfo.processName,
            allowInReleaseBuilds: Bool = false, buildConfiguration: Chaos.BuildConfiguration = .current
        ) {
            self.address = address
            self.responseSets = responseSets
            self.token = token
            self.endpointDirectory = endpointDirectory
            self.publishesEndpointFile = publishesEndpointFile
            self.program = program
            self.allowInReleaseBuilds = allowInReleaseBuilds
            self.buildConfiguration = buildConfiguration
        }
    }

    private struct State {
        /// The `Chaos` builders of profiles applied through the endpoint (kept alive here).
        var applied: [Chaos] = []
        var stores: [ResponseSetStore]
        var goSaid = false
        /// The waits for go under way (``waitForGo(timeout:)``).
        var goWaiters: [GoWaiter] = []
    }

    /// Where it listens: `http://127.0.0.1:PORT` or `unix:/path`.
    public let url: String
    /// The TCP port, when it listens on one.
    public let port: Int?
    /// The per-session token every request must carry.
    public let token: String
    /// The endpoint file's record (also written to disk unless turned off).
    public let endpoint: ControlEndpoint
    let configuration: Configuration
    /// `Host` values that name this endpoint (lower-cased); empty for a Unix socket.
    let allowedHosts: Set<String>
    private let state: Locked<State>
    /// The Server-Sent Events clients, each with its stream of text; closed when it stops.
    private let streams = Subscribers<String>()
    private let running: Locked<Running?>
    private let endpointFileDirectory: URL?
    static let logger = Logger(label: "ChaosConsole")

    /// The web console's address, token included (TCP endpoints only): open it in a browser.
    public var consoleURL: String? { endpoint.consoleURL }

    /// Whether `POST /v1/go` was received.
    public var goReceived: Bool { state.withLock { $0.goSaid } }

    private init(
        configuration: Configuration, url: String, port: Int?, token: String, allowedHosts: Set<String>,
        endpoint: ControlEndpoint, endpointFileDirectory: URL?
    ) {
        self.configuration = configuration
        self.url = url
        self.port = port
        self.token = token
        self.allowedHosts = allowedHosts
        self.endpoint = endpoint
        self.endpointFileDirectory = endpointFileDirectory
        self.state = Locked(State(stores: configuration.responseSets))
        self.running = Locked(nil)
    }

    /// Starts an endpoint; nil in a release build that did not opt in (a warning is logged).
    /// A port in use, an address that cannot be bound or an endpoint file that cannot be
    /// written is a `ChaosError` of kind `systemFailure` that says what to change.
    public static func start(_ configuration: Configuration = Configuration()) async throws(ChaosError) -> ChaosConsole?
    {
        guard configuration.buildConfiguration == .debug || configuration.allowInReleaseBuilds else {
            logger.warning(
                "chaos control endpoint not started: this is a release build; set allowInReleaseBuilds to opt in")
            return nil
        }
        if !configuration.address.isLocal {
            logger.warning(
                "chaos control endpoint listens on a non-loopback address; anyone who reaches it and learns the token can change this program",
                metadata: ["address": "\(configuration.address)"]
            )
        }
        let token = configuration.token ?? Self.randomToken()
        let bind: BindAddress
        switch configuration.address {
        case .loopback(let port): bind = .hostname("127.0.0.1", port: port)
        case .host(let host, let port): bind = .hostname(host, port: port)
        case .unixSocket(let path):
            unlinkStaleSocket(path)
            bind = .unixDomainSocket(path: path)
        }
        let started = StartSignal()
        let holder = ResponderHolder()
        var quiet = Logger(label: "ChaosConsole.server")
        quiet.logLevel = .warning
        let application = Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in
                guard let console = holder.console else {
                    return Response(status: .serviceUnavailable)
                }
                return await console.respond(to: request)
            },
            configuration: ApplicationConfiguration(address: bind, serverName: nil),
            onServerRunning: { channel in started.resolve(.success(channel.localAddress?.port)) },
            logger: quiet
        )
        let group = ServiceGroup(configuration: .init(services: [application], logger: quiet))
        let task = Task.detached {
            do {
                try await group.run()
                started.resolve(
                    .failure(
                        ChaosError(
                            .systemFailure, subject: "\(configuration.address)",
                            "the control endpoint stopped before it listened")))
            } catch {
                started.resolve(
                    .failure(
                        ChaosError(
                            .systemFailure, subject: "\(configuration.address)",
                            "cannot listen there (\(error)); choose a free port, or 127.0.0.1:0 for any free one"
                        )))
            }
        }
        let port: Int?
        switch await started.value() {
        case .success(let bound): port = bound
        case .failure(let error):
            task.cancel()
            throw error
        }
        let url: String
        var hosts: Set<String> = []
        switch configuration.address {
        case .unixSocket(let path):
            url = "unix:\(path)"
            chmod(path, 0o600)
        case .loopback:
            let bound = port ?? 0
            url = "http://127.0.0.1:\(bound)"
            hosts = ["127.0.0.1:\(bound)", "localhost:\(bound)"]
        case .host(let host, _):
            let bound = port ?? 0
            let named = host.contains(":") ? "[\(host.lowercased())]:\(bound)" : "\(host.lowercased()):\(bound)"
            url = "http://\(named)"
            hosts = [named, "127.0.0.1:\(bound)", "localhost:\(bound)"]
        }
        let endpoint = ControlEndpoint(pid: getpid(), program: configuration.program, url: url, token: token)
        let directory =
            configuration.publishesEndpointFile ? (configuration.endpointDirectory ?? ControlEndpoint.directory()) : nil
        let console = ChaosConsole(
            configuration: configuration, url: url, port: port, token: token, allowedHosts: hosts,
            endpoint: endpoint, endpointFileDirectory: directory
        )
        console.running.withLock { $0 = Running(task: task, group: group) }
        holder.console = console
        if let directory {
            do throws(ControlError) {
                let file = try endpoint.publish(in: directory)
                logger.info(
                    "chaos control endpoint listening",
                    metadata: [
                        "url": "\(url)", "console": "\(console.consoleURL ?? "-")", "endpoint file": "\(file.path)",
                    ])
            } catch {
                await console.stop()
                throw ChaosError(.systemFailure, subject: error.subject, "\(error.message)")
            }
        } else {
            logger.info(
                "chaos control endpoint listening",
                metadata: ["url": "\(url)", "console": "\(console.consoleURL ?? "-")"])
        }
        return console
    }

    /// Stops listening, ends every event stream and removes the endpoint file. The chaos
    /// applied through the endpoint stays applied (revert it first if it should not).
    public func stop() async {
        streams.close()
        if let directory = endpointFileDirectory { endpoint.withdraw(from: directory) }
        guard
            let running = running.withLock({ running -> Running? in
                defer { running = nil }
                return running
            })
        else { return }
        // Graceful: requests in flight are answered, then the server closes. A connection
        // that does not close within a second is cut.
        await running.group.triggerGracefulShutdown()
        let watchdog = Task {
            try await Task.sleep(for: .seconds(1))
            running.task.cancel()
        }
        await running.task.value
        watchdog.cancel()
        if case .unixSocket(let path) = configuration.address { unlink(path) }
    }

    /// Adds a store whose response sets the console lists and selects in.
    public func register(_ store: ResponseSetStore) {
        state.withLock { state in
            if !state.stores.contains(where: { $0 === store }) { state.stores.append(store) }
        }
    }

    /// Waits until a controller sends `POST /v1/go`, at most `timeout` of real time; true
    /// when it did. How a UI-test runner in another process sets chaos before the app goes
    /// on.
    ///
    /// Neither the wait nor its bound depends on the program's clocks: a profile that puts
    /// the program on virtual time (which holds every sleep until advanced) or moves its
    /// clock still gets its go, or its timeout, on time.
    public func waitForGo(timeout: Duration = .seconds(30)) async -> Bool {
        let waiter = GoWaiter()
        let said = state.withLock { state -> Bool in
            if !state.goSaid { state.goWaiters.append(waiter) }
            return state.goSaid
        }
        if said { return true }
        defer { state.withLock { $0.goWaiters.removeAll { $0 === waiter } } }
        // The bound, on a thread of its own counting real time in slices, so that it ends
        // soon after the wait does.
        Thread.startWithoutSignals {
            let slice = Duration.milliseconds(20)
            var left = timeout
            while left > .zero, !waiter.isFinished {
                let step = min(slice, left)
                Chaos.sleepInRealTime(step)
                left -= step
            }
            waiter.finish(false)
        }
        return await withTaskCancellationHandler {
            await waiter.result()
        } onCancel: {
            waiter.finish(false)
        }
    }

    // MARK: Shared with the responder

    var isWaiting: Bool { state.withLock { !$0.goWaiters.isEmpty } }
    var stores: [ResponseSetStore] { state.withLock { $0.stores } }

    func sayGo() {
        let waiters = state.withLock { state in
            state.goSaid = true
            return state.goWaiters
        }
        for waiter in waiters { waiter.finish(true) }
    }

    /// Keeps a `Chaos` applied through the endpoint alive; drops ones with nothing applied.
    func keep(_ chaos: Chaos) {
        state.withLock { state in
            state.applied.removeAll { $0.appliedEntries.isEmpty && $0.waitingEntries.isEmpty }
            state.applied.append(chaos)
        }
    }

    func pruneApplied() {
        state.withLock { $0.applied.removeAll { $0.appliedEntries.isEmpty && $0.waitingEntries.isEmpty } }
    }

    /// A stream of SSE text for one client; nil once the console stopped.
    func openStream() -> (stream: AsyncStream<String>, continuation: AsyncStream<String>.Continuation)? {
        streams.subscribe(bufferingNewest: 4_096)
    }

    // MARK: Helpers

    /// 32 random bytes from the system's secure generator, as hex.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let word = generator.next() as UInt64
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// Removes a socket file left by a process that died (never a regular file).
    private static func unlinkStaleSocket(_ path: String) {
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
    }
}

/// The server's task and the service group it runs, for stopping.
private struct Running: Sendable {
    let task: Task<Void, Never>
    let group: ServiceGroup
}

/// The console a responder serves, set once the server listens. Written once before any
/// request can reach the responder (the port is unknown until then) and read after:
/// `Locked` guards it.
private final class ResponderHolder: Sendable {
    private let value = Locked<ChaosConsole?>(nil)
    var console: ChaosConsole? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// The outcome of starting the server, resolved once by whichever comes first: the server
/// listening, or its task ending.
private final class StartSignal: Sendable {
    private struct State {
        var result: Result<Int?, ChaosError>?
        var waiter: CheckedContinuation<Result<Int?, ChaosError>, Never>?
    }

    private let state = Locked(State())

    func resolve(_ result: Result<Int?, ChaosError>) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<Int?, ChaosError>, Never>? in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: result)
    }

    func value() async -> Result<Int?, ChaosError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<Int?, ChaosError>? in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}

/// One wait for a controller's go: ended once, by the go, its bound or cancellation,
/// whichever comes first.
final class GoWaiter: Sendable {
    private struct State {
        var outcome: Bool?
        var continuation: CheckedContinuation<Bool, Never>?
    }

    private let state = Locked(State())

    var isFinished: Bool { state.withLock { $0.outcome != nil } }

    /// Ends the wait with `outcome`, unless it has ended already.
    func finish(_ outcome: Bool) {
        let continuation = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: outcome)
    }

    /// How the wait ended, once it has.
    func result() async -> Bool {
        await withCheckedContinuation { continuation in
            let ended = state.withLock { state -> Bool? in
                if state.outcome == nil { state.continuation = continuation }
                return state.outcome
            }
            if let ended { continuation.resume(returning: ended) }
        }
    }
}
#endif
