public import ChaosKit
public import Foundation
public import HTTPTypes

/// The network's injection point and its profile vocabulary.
///
/// Every request sent through a ``ChaosNetworkClient``, or through a URLSession with
/// ``ChaosURLProtocol`` installed, passes the point ``send``; its original performs the
/// request with the request's ``NetworkRequest/transport``. Chaos on the point applies
/// before stubs are looked at.
///
/// Profiles name the point `network.send`:
/// ```json
/// { "point": "network.send", "match": { "host": "api.example.com", "path": "/v1/" },
///   "provider": { "item": "status", "parameters": { "code": 503, "retryAfter": 5 }, "probability": 0.2 } }
/// ```
/// Catalogue items: `offline`, `timeout` (`after`), `dns-failure`, `status` (`code` or
/// `value`, `retryAfter`), `latency` (`value`/`ms` as milliseconds or `"250ms"`, `jitter`),
/// `bandwidth` (`preset` gprs/edge/3g/lte/wifi, or `bytesPerSecond`), `truncated`
/// (`fraction`), `corrupted` (`bytes`). `match` takes `method`, `host` (`*.example.com`
/// matches subdomains) and `path` (a prefix).
///
/// A static point is created on first use: call ``register()`` (or touch ``send``) before
/// applying a profile that names it. Task-scoped chaos (`Chaos.with`) reaches
/// ``ChaosNetworkClient`` calls, but not URLSession tasks, whose loading runs outside the
/// task: give those sessions their own ``StubSet`` instead.
public enum ChaosNetwork {
    /// The point every chaos-aware request passes: `network.send`.
    public static let send: AsyncInjectionPoint<NetworkRequest, NetworkResponse, NetworkError> = {
        let point = AsyncInjectionPoint<NetworkRequest, NetworkResponse, NetworkError>("network.send") {
            (request: NetworkRequest) async throws(NetworkError) -> NetworkResponse in
            try await request.perform()
        }
        registerCatalogue(point)
        return point
    }()

    /// Makes sure ``send`` exists, so that profiles naming `network.send` find it.
    public static func register() {
        _ = send
    }

    static func registerCatalogue(_ point: AsyncInjectionPoint<NetworkRequest, NetworkResponse, NetworkError>) {
        point.addCatalogueItem("offline") { _ throws(ChaosError) in NetworkCondition.offline.provider }
        point.addCatalogueItem("dns-failure") { _ throws(ChaosError) in NetworkCondition.dnsFailure.provider }
        point.addCatalogueItem("timeout") { parameters throws(ChaosError) in
            NetworkCondition.timeout(after: try duration(parameters, keys: ["after", "value"]) ?? .zero).provider
        }
        point.addCatalogueItem("status") { parameters throws(ChaosError) in
            let code = try parameters.values["code"] != nil ? parameters.int("code") : parameters.int("value")
            guard (100...599).contains(code) else {
                throw ChaosError(.invalidProvider, subject: parameters.context, "status \(code) is not an HTTP status; use 100…599, e.g. 503")
            }
            let retryAfter = try parameters.values["retryAfter"] == nil ? nil : parameters.int("retryAfter")
            return NetworkCondition.status(code, retryAfter: retryAfter).provider
        }
        point.addCatalogueItem("latency") { parameters throws(ChaosError) in
            guard let delay = try duration(parameters, keys: ["value", "ms", "delay"]) else {
                throw ChaosError(.invalidProvider, subject: parameters.context, "latency needs 'value': milliseconds or a string such as \"250ms\"")
            }
            let jitter = try duration(parameters, keys: ["jitter"]) ?? .zero
            return NetworkCondition.latency(delay, jitter: jitter).provider
        }
        point.addCatalogueItem("bandwidth") { parameters throws(ChaosError) in
            if parameters.values["bytesPerSecond"] != nil {
                let rate = try parameters.double("bytesPerSecond")
                guard rate > 0 else { throw ChaosError(.invalidProvider, subject: parameters.context, "bytesPerSecond must be more than 0") }
                return NetworkCondition.bandwidth(bytesPerSecond: rate, latency: try duration(parameters, keys: ["latency"]) ?? .zero).provider
            }
            let name = try parameters.values["preset"] != nil ? parameters.string("preset") : parameters.string("value")
            guard let preset = BandwidthPreset(rawValue: name.lowercased()) else {
                let names = BandwidthPreset.allCases.map(\.rawValue).joined(separator: ", ")
                throw ChaosError(.invalidProvider, subject: parameters.context, "no bandwidth preset '\(name)'; choose one of: \(names), or give bytesPerSecond")
            }
            return NetworkCondition.bandwidth(preset).provider
        }
        point.addCatalogueItem("truncated") { parameters throws(ChaosError) in
            let fraction = try parameters.double("fraction", default: 0.5)
            guard (0...1).contains(fraction) else {
                throw ChaosError(.invalidProvider, subject: parameters.context, "fraction \(fraction) is outside 0…1; 0.5 keeps half the body")
            }
            return NetworkCondition.truncated(keeping: fraction).provider
        }
        point.addCatalogueItem("corrupted") { parameters throws(ChaosError) in
            let count = try parameters.int("bytes", default: 8)
            guard count >= 1 else { throw ChaosError(.invalidProvider, subject: parameters.context, "bytes must be 1 or more") }
            return NetworkCondition.corrupted(bytes: count).provider
        }
        point.setArgumentMatcher { conditions throws(ChaosError) in
            try profileMatcher(conditions)
        }
    }

    /// A duration parameter: milliseconds as a number, or text such as `"250ms"`, `"2s"`.
    static func duration(_ parameters: ProfileParameters, keys: [String]) throws(ChaosError) -> Duration? {
        for key in keys {
            switch parameters.values[key] {
            case nil: continue
            case .number(let milliseconds)? where milliseconds >= 0:
                return .milliseconds(milliseconds)
            case .string(let text)?:
                if let parsed = DurationText.parse(text) { return parsed }
                fallthrough
            default:
                throw ChaosError(
                    .invalidProvider, subject: parameters.context,
                    "parameter '\(key)' must be milliseconds (a number of 0 or more) or a string such as \"250ms\" or \"2s\""
                )
            }
        }
        return nil
    }

    /// The test a profile's `match` object stands for.
    static func profileMatcher(_ conditions: ProfileParameters) throws(ChaosError) -> @Sendable (NetworkRequest) -> Bool {
        let allowed: Set<String> = ["method", "host", "path"]
        if let unknown = conditions.values.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: conditions.context,
                "unknown match condition '\(unknown)'; network.send matches on: method, host, path (a prefix)"
            )
        }
        let method = try conditions.values["method"] == nil ? nil : conditions.string("method").uppercased()
        let host = try conditions.values["host"] == nil ? nil : conditions.string("host").lowercased()
        let path = try conditions.values["path"] == nil ? nil : conditions.string("path")
        if let path, !path.hasPrefix("/") {
            throw ChaosError(.invalidNetworkConfiguration, subject: conditions.context, "path '\(path)' must start with '/', e.g. \"/v1/users\"")
        }
        return { request in
            if let method, request.method.rawValue != method { return false }
            if let host {
                guard let actual = request.host else { return false }
                if host.hasPrefix("*.") {
                    if !(actual.hasSuffix(host.dropFirst(1)) || actual == host.dropFirst(2)) { return false }
                } else if actual != host {
                    return false
                }
            }
            if let path, !request.path.hasPrefix(path) { return false }
            return true
        }
    }
}

/// A ``NetworkClient`` whose requests pass the ``ChaosNetwork/send`` point before `base`
/// sends them. With no chaos applied it costs one atomic load on top of `base`.
public struct ChaosNetworkClient: NetworkClient {
    /// The client that performs requests chaos lets through.
    public let base: any NetworkClient

    /// A chaos-aware client around `base` (the live URLSession client by default).
    public init(_ base: any NetworkClient = URLSessionNetworkClient.shared) {
        self.base = base
    }

    /// Sends `request` through the point; failures are ``NetworkError``s (a response that
    /// broke mid-body throws its ``NetworkResponse/interruption``, as URLSession does).
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let response = try await ChaosNetwork.send(NetworkRequest(request, body: body, transport: base))
        return (response.head, try response.completeBody())
    }
}
