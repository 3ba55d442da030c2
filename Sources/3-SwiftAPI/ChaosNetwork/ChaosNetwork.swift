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
/// Catalogue items: `offline`, `refused`, `connection-reset` (`fraction`), `timeout` (`after`), `dns-failure`, `status` (`code`,
/// `retryAfter`), `latency` (`delay`, `jitter`: durations such as `"250ms"`, or
/// milliseconds), `bandwidth` (`preset` gprs/edge/3g/lte/wifi, or `bytesPerSecond`),
/// `truncated` (`fraction`, `declaredLength`), `corrupted` (`bytes`), `mutated-json` (`count`, `kinds`,
/// `paths`, `seed`, `stringLength`). `match` takes `method`, `host`
/// (`*.example.com` matches subdomains) and `path` (a prefix). `chaos list` shows every
/// parameter with its type, unit and default.
///
/// A static point is created on first use: call ``register()`` (or touch ``send``) before
/// applying a profile that names it. Task-scoped chaos (`Chaos.with`) reaches
/// ``ChaosNetworkClient`` calls, but not URLSession tasks, whose loading runs outside the
/// task: give those sessions their own ``StubSet`` instead.
public enum ChaosNetwork {
    /// The point every chaos-aware request passes: `network.send`.
    public static let send = AsyncInjectionPoint<NetworkRequest, NetworkResponse, NetworkError>(
        "network.send", catalogue: catalogue
    ) { (request: NetworkRequest) async throws(NetworkError) -> NetworkResponse in
        try await request.perform()
    }

    /// Makes sure ``send`` exists, so that profiles naming `network.send` find it.
    public static func register() {
        _ = send
    }

    typealias Provider = AsyncChaosProvider<NetworkRequest, NetworkResponse, NetworkError>

    /// `network.send`'s catalogue: the network conditions by name, and its `match` conditions.
    static let catalogue = PointCatalogue<Provider>(
        [
            CatalogueItem("offline", "no network at all") { _ in NetworkCondition.offline.provider },
            CatalogueItem("dns-failure", "the host name does not resolve") { _ in NetworkCondition.dnsFailure.provider
            },
            CatalogueItem("refused", "the connection is refused, as by a closed port") { _ in
                NetworkCondition.refused.provider
            },
            CatalogueItem(
                "connection-reset", "the connection is reset partway through the body",
                parameters: [
                    .number("fraction", "how much of the body arrives before the reset", default: 0.5, range: 0...1)
                ]
            ) { parameters in
                NetworkCondition.connectionReset(keeping: try parameters.double("fraction")).provider
            },
            CatalogueItem(
                "timeout", "the request times out",
                parameters: [
                    .duration("after", "how long the request hangs before it fails", default: .zero)
                ]
            ) { parameters in
                NetworkCondition.timeout(after: try parameters.duration("after")).provider
            },
            CatalogueItem(
                "status", "an HTTP error response",
                parameters: [
                    .integer("code", "the HTTP status", range: 100...599),
                    .integer(
                        "retryAfter", "a Retry-After header", unit: "seconds", range: 0...31_536_000, optional: true),
                ]
            ) { parameters in
                NetworkCondition.status(
                    try parameters.int("code"),
                    retryAfter: parameters.has("retryAfter") ? try parameters.int("retryAfter") : nil
                ).provider
            },
            CatalogueItem(
                "latency", "the response comes late",
                parameters: [
                    .duration("delay", "how long to wait before answering"),
                    .duration("jitter", "a random extra wait of up to this much", default: .zero),
                ]
            ) { parameters in
                NetworkCondition.latency(try parameters.duration("delay"), jitter: try parameters.duration("jitter"))
                    .provider
            },
            CatalogueItem(
                "bandwidth", "a slow link",
                parameters: [
                    .choice(
                        "preset", "a named link (or give bytesPerSecond)", BandwidthPreset.allCases.map(\.rawValue),
                        default: BandwidthPreset.threeG.rawValue),
                    .number(
                        "bytesPerSecond", "the link's speed, instead of a preset", unit: "bytes/s", range: 1...1e12,
                        optional: true),
                    .duration("latency", "extra delay before the first byte, with bytesPerSecond", default: .zero),
                ]
            ) { parameters in
                if parameters.has("bytesPerSecond") {
                    return NetworkCondition.bandwidth(
                        bytesPerSecond: try parameters.double("bytesPerSecond"),
                        latency: try parameters.duration("latency")
                    ).provider
                }
                return NetworkCondition.bandwidth(BandwidthPreset(rawValue: try parameters.string("preset"))!).provider
            },
            CatalogueItem(
                "truncated", "the body stops early",
                parameters: [
                    .number("fraction", "how much of the body arrives", default: 0.5, range: 0...1),
                    .boolean("declaredLength", "whether Content-Length still promises the whole body", default: false),
                ]
            ) { parameters in
                NetworkCondition.truncated(
                    keeping: try parameters.double("fraction"), declaredLength: try parameters.bool("declaredLength")
                ).provider
            },
            CatalogueItem(
                "corrupted", "bytes of the body flipped",
                parameters: [
                    .integer("bytes", "how many bytes are changed", default: 8, range: 1...1_000_000)
                ]
            ) { parameters in
                NetworkCondition.corrupted(bytes: try parameters.int("bytes")).provider
            },
            CatalogueItem(
                "mutated-json", "fields of the JSON body changed: null, missing, wrong type, huge, long, unknown",
                parameters: [
                    .integer("count", "how many values of each body are changed", default: 1, range: 1...10_000),
                    .strings(
                        "kinds",
                        "which changes: \(JSONMutation.Kind.allCases.map(\.rawValue).joined(separator: ", ")) (default: all)"
                    ),
                    .strings("paths", "JSON paths whose values may change, e.g. [\"$.user\"] (default: any)"),
                    .integer(
                        "seed", "the same changes to every body (default: drawn from the chaos seed)",
                        range: 0...9_000_000_000_000_000, optional: true),
                    .integer(
                        "stringLength", "how long a long-string is", unit: "characters", default: 10_000,
                        range: 1...10_000_000),
                ]
            ) { parameters in
                try mutatedJSON(parameters).provider
            },
        ],
        matcher: ArgumentMatcher(conditions: [
            .string("method", "the HTTP method, e.g. GET", optional: true),
            .string("host", "the host; *.example.com matches its subdomains too", optional: true),
            .string("path", "a path prefix, e.g. /v1/users", optional: true),
        ]) { conditions in try profileMatcher(conditions) }
    )

    /// The `mutated-json` condition its (checked) parameters stand for; mutations go to
    /// ``JSONMutationLog/shared`` and the `ChaosKit.JSONMutation` logger.
    static func mutatedJSON(_ parameters: ProfileParameters) throws(ChaosError) -> NetworkCondition {
        var kinds = Set(JSONMutation.Kind.allCases)
        if let names = try parameters.strings("kinds") {
            kinds = []
            for name in names {
                guard let kind = JSONMutation.Kind(rawValue: name) else {
                    throw parameters.invalid(
                        "parameter 'kinds' has '\(InputExcerpt.of(name))', which is not a kind of change; choose from: \(JSONMutation.Kind.allCases.map(\.rawValue).joined(separator: ", "))",
                        parameter: "kinds"
                    )
                }
                kinds.insert(kind)
            }
            guard !kinds.isEmpty else {
                throw parameters.invalid("parameter 'kinds' is empty; leave it out for every kind", parameter: "kinds")
            }
        }
        let paths = try parameters.strings("paths")
        for path in paths ?? [] where !path.hasPrefix("$") {
            throw parameters.invalid(
                "parameter 'paths' has '\(InputExcerpt.of(path))'; a JSON path starts with '$', e.g. \"$.user.name\"",
                parameter: "paths")
        }
        let mutator = JSONMutator(
            kinds: kinds, count: try parameters.int("count"), paths: paths,
            longStringLength: try parameters.int("stringLength"))
        let seed = parameters.has("seed") ? UInt64(try parameters.int("seed")) : nil
        return .mutatedJSON(mutator, seed: seed, log: .shared)
    }

    /// The test a profile's `match` object stands for (its conditions already checked).
    static func profileMatcher(_ conditions: ProfileParameters) throws(ChaosError) -> @Sendable (NetworkRequest) -> Bool
    {
        let method = conditions.has("method") ? try conditions.string("method").uppercased() : nil
        let host = conditions.has("host") ? try conditions.string("host").lowercased() : nil
        let path = conditions.has("path") ? try conditions.string("path") : nil
        if let path, !path.hasPrefix("/") {
            throw conditions.invalid(
                "path '\(path.prefix(80))' must start with '/', e.g. \"/v1/users\"", parameter: "path")
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
    /// Where its requests are journaled.
    public let journal: RequestJournal

    /// A chaos-aware client around `base` (the live URLSession client by default), whose
    /// requests `journal` records (the process's, which the console shows, by default).
    public init(_ base: any NetworkClient = URLSessionNetworkClient.shared, journal: RequestJournal = .shared) {
        self.base = base
        self.journal = journal
    }

    /// Sends `request` through the point; failures are ``NetworkError``s (a response that
    /// broke mid-body throws its ``NetworkResponse/interruption``, as URLSession does).
    ///
    /// The request is journaled in ``journal`` (when it is on) with what answered it.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let plain = NetworkRequest(request, body: body)
        guard let record = journal.start(plain, route: .client) else {
            let response = try await ChaosNetwork.send(NetworkRequest(request, body: body, transport: base))
            return (response.head, try response.completeBody())
        }
        let response: NetworkResponse
        do throws(NetworkError) {
            response = try await ChaosNetwork.send(
                NetworkRequest(request, body: body, transport: JournalingTransport(base: base, record: record)))
        } catch {
            record.finish(.failure(error), client: base)
            throw error
        }
        record.finish(.success(response), client: base)
        return (response.head, try response.completeBody())
    }
}
