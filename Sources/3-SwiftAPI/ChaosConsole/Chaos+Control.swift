// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
public import ChaosKit
public import Foundation

extension ChaosConsole {
    /// When `Chaos.bootstrap(control:…)` starts the endpoint.
    public enum Activation: Sendable {
        /// Only when `CHAOS_CONTROL` is set (`127.0.0.1:0`, `PORT`, `HOST:PORT`, `unix:/path`),
        /// with this configuration; the variable's address replaces its address.
        case whenRequested(Configuration)
        /// Always, with this configuration; a `CHAOS_CONTROL` address replaces its address.
        case always(Configuration)

        /// Only when `CHAOS_CONTROL` is set, with the default configuration.
        public static var environment: Activation { .whenRequested(Configuration()) }

        /// Only when `CHAOS_CONTROL` is set, with `configuration` (response sets, a token,
        /// an endpoint directory …): the same configuration `always(_:)` takes.
        public static func environment(_ configuration: Configuration) -> Activation { .whenRequested(configuration) }

        /// Always, on loopback on a free port.
        public static var loopback: Activation { .always(Configuration()) }
    }
}

/// What `Chaos.bootstrap(control:…)` started.
public struct ChaosBootstrap: Sendable {
    /// The session of `CHAOS_PROFILE` / `CHAOS`, when one was asked for.
    public let session: ChaosSession?
    /// The control endpoint, when one was asked for (and the build allows it).
    public let console: ChaosConsole?
}

extension Chaos {
    /// Switches chaos on from the environment, as `Chaos.bootstrap(environment:…)` does
    /// (`CHAOS_PROFILE`, `CHAOS`, `CHAOS_SEED`), and starts the control endpoint as
    /// `control` says (`CHAOS_CONTROL=127.0.0.1:0` with `.environment` or `.environment(configuration)`).
    ///
    /// With `CHAOS_CONTROL_WAIT=1` it then waits until a controller sends `POST /v1/go`
    /// (`chaos ctl go PID`), at most `CHAOS_CONTROL_WAIT_TIMEOUT` (a duration such as `30s`,
    /// the default) — how a UI-test runner in another process sets chaos before the app
    /// touches the network. When the wait runs out, a warning is logged and the app goes on.
    ///
    /// Debug builds only, unless `allowInReleaseBuilds` is true; in a release build nothing
    /// listens and a warning is logged.
    @discardableResult
    public static func bootstrap(
        control: ChaosConsole.Activation,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        allowInReleaseBuilds: Bool = false,
        buildConfiguration: BuildConfiguration = .current,
        watchProfile: Bool = true
    ) async throws(ChaosError) -> ChaosBootstrap {
        let session = try bootstrap(
            environment: environment, allowInReleaseBuilds: allowInReleaseBuilds,
            buildConfiguration: buildConfiguration, watchProfile: watchProfile
        )
        let requested = environment["CHAOS_CONTROL"].flatMap { $0.isEmpty ? nil : $0 }
        var configuration: ChaosConsole.Configuration
        switch control {
        case .whenRequested(let given):
            guard requested != nil else { return ChaosBootstrap(session: session, console: nil) }
            configuration = given
        case .always(let given):
            configuration = given
        }
        if let requested { configuration.address = try ChaosConsole.Configuration.Address.parse(requested) }
        if allowInReleaseBuilds { configuration.allowInReleaseBuilds = true }
        configuration.buildConfiguration = buildConfiguration
        if let directory = environment["CHAOS_CONTROL_DIR"], !directory.isEmpty, configuration.endpointDirectory == nil
        {
            configuration.endpointDirectory = URL(fileURLWithPath: directory, isDirectory: true)
        }
        let wait = ["1", "true", "yes"].contains(environment["CHAOS_CONTROL_WAIT"]?.lowercased() ?? "")
        var bound = Duration.seconds(30)
        if let text = environment["CHAOS_CONTROL_WAIT_TIMEOUT"], !text.isEmpty {
            do throws(ChaosError) {
                bound = try DurationText.duration(text)
            } catch {
                throw ChaosError(
                    .invalidProfile, subject: "CHAOS_CONTROL_WAIT_TIMEOUT",
                    "\(error.message); give a duration such as 30s or 2m")
            }
        }
        guard let console = try await ChaosConsole.start(configuration) else {
            return ChaosBootstrap(session: session, console: nil)
        }
        if wait {
            ChaosConsole.logger.info(
                "waiting for a controller to say go (POST /v1/go, chaos ctl go \(getpid()))",
                metadata: ["up to": "\(DurationText.format(bound))"])
            if await console.waitForGo(timeout: bound) {
                ChaosConsole.logger.info("controller said go")
            } else {
                ChaosConsole.logger.warning(
                    "no controller said go in time; going on", metadata: ["waited": "\(DurationText.format(bound))"])
            }
        }
        return ChaosBootstrap(session: session, console: console)
    }

    /// The blocking form of the async `bootstrap(control:…)`, for a synchronous start
    /// (an app's `init`, or `main` before anything else): it blocks the calling thread while
    /// the endpoint starts and, with `CHAOS_CONTROL_WAIT=1`, until a controller says go.
    /// Do not call it from a task of the concurrency pool; use the async form there.
    @discardableResult
    public static func bootstrapSynchronously(
        control: ChaosConsole.Activation,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        allowInReleaseBuilds: Bool = false,
        buildConfiguration: BuildConfiguration = .current,
        watchProfile: Bool = true
    ) throws(ChaosError) -> ChaosBootstrap {
        let outcome = Locked<Result<ChaosBootstrap, ChaosError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let result: Result<ChaosBootstrap, ChaosError>
            do throws(ChaosError) {
                result = .success(
                    try await bootstrap(
                        control: control, environment: environment, allowInReleaseBuilds: allowInReleaseBuilds,
                        buildConfiguration: buildConfiguration, watchProfile: watchProfile
                    ))
            } catch {
                result = .failure(error)
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        switch outcome.withLock({ $0 }) {
        case .success(let started): return started
        case .failure(let error): throw error
        case nil: throw ChaosError(.systemFailure, "the control endpoint's start did not finish")
        }
    }
}
#endif
