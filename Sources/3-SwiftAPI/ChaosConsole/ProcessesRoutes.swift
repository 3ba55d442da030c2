// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
import ChaosControl
import ChaosKit
import Foundation
import Hummingbird
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every endpoint on the machine (`GET /v1/processes`, and the page `/console/processes`):
/// the endpoint files `chaos ctl list` reads, each asked for its status, with a link to each
/// web console. Behind the same checks as every other route: the links carry the other
/// consoles' tokens, which only this user (who can read the endpoint files) may learn.
extension ChaosConsole {
    /// How long one endpoint may take to answer its status.
    static let listingTimeout: Duration = .seconds(1)

    func processes() async -> Response {
        let directory = configuration.endpointDirectory ?? ControlEndpoint.directory()
        let me = endpoint
        let listing = await withCheckedContinuation { continuation in
            Thread.startWithoutSignals { continuation.resume(returning: Self.listing(in: directory, current: me)) }
        }
        return json(listing)
    }

    /// Reads the endpoint files and asks each process for its status (blocking: on a thread
    /// of its own).
    static func listing(in directory: URL, current: ControlEndpoint) -> ControlAPI.Processes {
        let processes = ControlEndpoint.all(in: directory).map { endpoint -> ControlAPI.Process in
            let isCurrent = endpoint.pid == current.pid && endpoint.token == current.token
            var status: ControlAPI.Status?
            var problem: String?
            do throws(ControlError) {
                let answered = try ControlClient(endpoint, timeout: listingTimeout).status()
                if answered.pid == endpoint.pid {
                    status = answered
                } else {
                    problem = "another process (\(answered.pid)) answers at this address; the file is stale"
                }
            } catch {
                problem = error.description
            }
            return ControlAPI.Process(
                pid: endpoint.pid, runner: endpoint.runner, program: endpoint.program, kind: endpoint.kind,
                url: endpoint.url,
                isCurrent: isCurrent, console: endpoint.consoleURL, status: status, problem: problem)
        }
        return ControlAPI.Processes(
            directory: ControlEndpoint.filesDirectory(for: directory).path,
            processes: processes.sorted { $0.pid < $1.pid })
    }
}
#endif
