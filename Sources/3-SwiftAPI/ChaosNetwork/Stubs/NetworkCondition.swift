public import ChaosKit
public import Foundation
import HTTPTypes
public import Logging

/// A network condition: something a bad network does to a request. Use one as a stub
/// modifier (``StubSet/stub(_:name:conditions:_:)``, ``StubSet/conditions``) or as a
/// provider of the ``ChaosNetwork/send`` point (``provider``).
///
/// Conditions compose in order: `[.latency(.milliseconds(200)), .truncated()]` waits,
/// then truncates what comes back. Every random choice (jitter, corrupted bytes) comes
/// from a seeded source, so a run replays exactly.
public struct NetworkCondition: Sendable, CustomStringConvertible {
    enum Kind: Sendable {
        case latency(Duration, jitter: Duration)
        case bandwidth(bytesPerSecond: Double, latency: Duration)
        case offline
        case timeout(after: Duration)
        case dnsFailure
        case refused
        case status(Int, retryAfter: Int?)
        case truncated(fraction: Double, declaredLength: Bool)
        case reset(fraction: Double)
        case corrupted(bytes: Int)
        case mutatedJSON(JSONMutator, seed: UInt64?, log: JSONMutationLog?, logger: Logger)
        case randomModel(name: String, seed: UInt64?, logger: Logger, make: @Sendable (UInt64) throws -> Data)
    }

    let kind: Kind

    /// Waits `delay` (plus up to ± `jitter`, drawn from the seeded source) before the request goes out.
    public static func latency(_ delay: Duration, jitter: Duration = .zero) -> NetworkCondition {
        NetworkCondition(kind: .latency(max(delay, .zero), jitter: max(jitter, .zero)))
    }

    /// Delivers the body at `bytesPerSecond` after a round trip of `latency`.
    public static func bandwidth(bytesPerSecond: Double, latency: Duration = .zero) -> NetworkCondition {
        NetworkCondition(kind: .bandwidth(bytesPerSecond: max(bytesPerSecond, 1), latency: max(latency, .zero)))
    }

    /// Delivers the body as fast as a typical `preset` link would.
    public static func bandwidth(_ preset: BandwidthPreset) -> NetworkCondition {
        .bandwidth(bytesPerSecond: preset.bytesPerSecond, latency: preset.latency)
    }

    /// Fails at once with ``NetworkError/offline``.
    public static let offline = NetworkCondition(kind: .offline)

    /// Waits `after`, then fails with ``NetworkError/timeout``.
    public static func timeout(after: Duration = .zero) -> NetworkCondition {
        NetworkCondition(kind: .timeout(after: max(after, .zero)))
    }

    /// Fails with ``NetworkError/dnsFailure(host:)`` for the request's host, as an unknown
    /// host name does (`URLError.cannotFindHost`, no response, no data).
    public static let dnsFailure = NetworkCondition(kind: .dnsFailure)

    /// Fails with ``NetworkError/refused(host:)``, as a port nobody listens on does
    /// (`URLError.cannotConnectToHost`, no response, no data).
    public static let refused = NetworkCondition(kind: .refused)

    /// Answers with HTTP status `code` and an empty body, with a `Retry-After` header (seconds) when given.
    public static func status(_ code: Int, retryAfter: Int? = nil) -> NetworkCondition {
        NetworkCondition(kind: .status(code, retryAfter: retryAfter))
    }

    /// 500 Internal Server Error.
    public static let internalServerError = status(500)
    /// 502 Bad Gateway.
    public static let badGateway = status(502)
    /// 503 Service Unavailable.
    public static let serviceUnavailable = status(503)

    /// 429 Too Many Requests with `Retry-After: seconds`.
    public static func tooManyRequests(retryAfter seconds: Int) -> NetworkCondition {
        status(429, retryAfter: seconds)
    }

    /// Cuts the body to `fraction` (0…1) of its length, as a server closing the connection
    /// early does.
    ///
    /// Without `declaredLength` the response looks like one whose body ends with the
    /// connection (no `Content-Length`): the request succeeds with the shorter body, as it
    /// does from a real server. With `declaredLength` the response keeps a `Content-Length`
    /// of the whole body, so the transfer fails after the partial body with
    /// ``NetworkError/shortBodyCode``, as URLSession reports a real short body.
    public static func truncated(keeping fraction: Double = 0.5, declaredLength: Bool = false) -> NetworkCondition {
        NetworkCondition(kind: .truncated(fraction: min(max(fraction, 0), 1), declaredLength: declaredLength))
    }

    /// Resets the connection after `fraction` (0…1) of the body arrived: URLSession delegates
    /// get the head and the partial body, then ``NetworkError/connectionLost``
    /// (`URLError.networkConnectionLost`); `data(for:)` throws it, as with a real reset.
    public static func connectionReset(keeping fraction: Double = 0.5) -> NetworkCondition {
        NetworkCondition(kind: .reset(fraction: min(max(fraction, 0), 1)))
    }

    /// Replaces `bytes` bytes of the body, at seeded positions, with different values.
    public static func corrupted(bytes: Int = 8) -> NetworkCondition {
        NetworkCondition(kind: .corrupted(bytes: max(bytes, 1)))
    }

    /// Changes the JSON body of the response with `mutator` (nulls, missing keys, wrong
    /// types, huge or negative numbers, long strings, unknown enum values). Every change is
    /// logged on `logger` and recorded in `log` with its JSON path and seed; the seed is
    /// `seed` when given (the same changes to every response with the same body), else drawn
    /// from the seeded source. A body that is not JSON is left alone.
    public static func mutatedJSON(
        _ mutator: JSONMutator = JSONMutator(), seed: UInt64? = nil, log: JSONMutationLog? = nil,
        logger: Logger = JSONMutator.logger
    ) -> NetworkCondition {
        NetworkCondition(kind: .mutatedJSON(mutator, seed: seed, log: log, logger: logger))
    }

    /// Replaces the body of the response with a random instance of `type`
    /// (`RandomGenerator/decodable(_:options:)`) written by `encoder`, as JSON:
    /// the status and headers stay. The seed is `seed` when given, else drawn from the
    /// seeded source; it is logged on `logger`, and
    /// `RandomGenerator<T>.decodable(options:)` drawing from `SeededRandom(seed:)` with it
    /// makes the same instance again. A response whose instance does not encode (NaN with
    /// `nonFiniteNumbers`) keeps its body, with an error logged.
    public static func randomModel<T: Codable & SendableMetatype>(
        _ type: T.Type, options: RandomModelOptions = RandomModelOptions(), seed: UInt64? = nil,
        encoder: @escaping @Sendable () -> JSONEncoder = Router.defaultEncoder, logger: Logger = JSONMutator.logger
    ) -> NetworkCondition {
        let generator = RandomGenerator<T>.decodable(type, options: options)
        return NetworkCondition(
            kind: .randomModel(name: "\(T.self)", seed: seed, logger: logger) { seed in
                var source = SeededRandom(seed: seed)
                return try encoder().encode(generator.generate(using: &source))
            })
    }

    /// `latency(200ms)`, `offline`, `status(503, retryAfter: 5)` …
    public var description: String {
        switch kind {
        case .latency(let delay, let jitter): jitter == .zero ? "latency(\(delay))" : "latency(\(delay) ± \(jitter))"
        case .bandwidth(let rate, let latency): "bandwidth(\(Int(rate)) B/s, \(latency))"
        case .offline: "offline"
        case .timeout(let after): "timeout(after: \(after))"
        case .dnsFailure: "dns-failure"
        case .refused: "refused"
        case .reset(let fraction): "connection-reset(\(fraction))"
        case .status(let code, let retry): retry.map { "status(\(code), retryAfter: \($0))" } ?? "status(\(code))"
        case .truncated(let fraction, let declared):
            declared ? "truncated(\(fraction), declared length)" : "truncated(\(fraction))"
        case .corrupted(let count): "corrupted(\(count) bytes)"
        case .mutatedJSON(let mutator, let seed, _, _):
            "mutated-json(\(mutator.count)\(seed.map { ", seed: \($0)" } ?? ""))"
        case .randomModel(let name, let seed, _, _): "random-model(\(name)\(seed.map { ", seed: \($0)" } ?? ""))"
        }
    }

    /// This condition as a provider of the ``ChaosNetwork/send`` point (random choices from
    /// the call's seeded source).
    public var provider: AsyncChaosProvider<NetworkRequest, NetworkResponse, NetworkError> {
        switch kind {
        case .offline: return .throwing(.offline)
        case .timeout(let after) where after == .zero: return .throwing(.timeout)
        default:
            let condition = self
            return .block { env throws(NetworkError) in
                var random = env.random
                return try await condition.apply(to: env.arguments, random: &random) { () async throws(NetworkError) in
                    try await env.callOriginal()
                }
            }
        }
    }

    /// Runs `next` (the rest of the chain) under this condition.
    func apply(
        to request: NetworkRequest, random: inout SeededRandom,
        next: () async throws(NetworkError) -> NetworkResponse
    ) async throws(NetworkError) -> NetworkResponse {
        switch kind {
        case .latency(let delay, let jitter):
            var wait = delay
            if jitter > .zero {
                let span = jitter / .nanoseconds(1)
                let offset = Double.random(in: -span...span, using: &random)
                wait = max(.zero, delay + .nanoseconds(Int64(offset)))
            }
            try await pause(wait)
            return try await next()
        case .bandwidth(let rate, let latency):
            try await pause(latency)
            let response = try await next()
            try await pause(.nanoseconds(Int64(Double(response.body.count) / rate * 1e9)))
            return response
        case .offline:
            throw .offline
        case .timeout(let after):
            try await pause(after)
            throw .timeout
        case .dnsFailure:
            throw .dnsFailure(host: request.host ?? "")
        case .refused:
            throw .refused(host: request.host ?? "")
        case .status(let code, let retryAfter):
            var headers: [String: String] = [:]
            if let retryAfter { headers["Retry-After"] = String(retryAfter) }
            return NetworkResponse(status: code, headers: headers)
        case .truncated(let fraction, let declared):
            var response = try await next()
            let whole = response.body.count
            response.body = response.body.prefix(Int(Double(whole) * fraction))
            if declared {
                response.head.headerFields[.contentLength] = String(whole)
                if response.body.count < whole {
                    response.interruption = .urlError(
                        code: NetworkError.shortBodyCode.rawValue,
                        "the response ended after \(response.body.count) of its \(whole) bytes"
                    )
                }
            } else {
                response.head.headerFields[.contentLength] = nil
            }
            return response
        case .reset(let fraction):
            var response = try await next()
            let whole = response.body.count
            response.body = response.body.prefix(Int(Double(whole) * fraction))
            response.head.headerFields[.contentLength] = String(whole)
            response.interruption = .connectionLost
            return response
        case .corrupted(let count):
            var response = try await next()
            guard !response.body.isEmpty else { return response }
            var bytes = [UInt8](response.body)
            for _ in 0..<count {
                let index = Int.random(in: 0..<bytes.count, using: &random)
                bytes[index] ^= UInt8.random(in: 1...255, using: &random)
            }
            response.body = Data(bytes)
            return response
        case .mutatedJSON(let mutator, let fixedSeed, let log, let logger):
            var response = try await next()
            guard !response.body.isEmpty else { return response }
            let seed = fixedSeed ?? random.next()
            guard let (body, mutations) = mutator.mutate(json: response.body, seed: seed) else {
                logger.debug("mutated-json: the body is not JSON; left alone", metadata: ["request": "\(request)"])
                return response
            }
            response.body = body
            if response.head.headerFields[.contentLength] != nil {
                response.head.headerFields[.contentLength] = String(body.count)
            }
            for mutation in mutations {
                logger.notice(
                    "JSON body mutated: \(mutation)",
                    metadata: [
                        "request": "\(request)", "path": "\(mutation.path)", "kind": "\(mutation.kind.rawValue)",
                        "seed": "\(seed)",
                    ])
            }
            log?.record(JSONMutationLog.Entry(request: request.description, seed: seed, mutations: mutations))
            return response
        case .randomModel(let name, let fixedSeed, let logger, let make):
            var response = try await next()
            let seed = fixedSeed ?? random.next()
            do {
                response.body = try make(seed)
            } catch {
                logger.error(
                    "random-model: a random \(name) does not encode (\(error)); the body is left alone",
                    metadata: ["request": "\(request)", "seed": "\(seed)"])
                return response
            }
            response.head.headerFields[.contentType] = StubResponse.defaultContentType
            if response.head.headerFields[.contentLength] != nil {
                response.head.headerFields[.contentLength] = String(response.body.count)
            }
            logger.notice(
                "body replaced by a random \(name) (seed \(seed))",
                metadata: ["request": "\(request)", "seed": "\(seed)", "model": "\(name)"])
            return response
        }
    }

    /// Runs `conditions` in order around `last`.
    static func run(
        _ conditions: ArraySlice<NetworkCondition>, request: NetworkRequest, random: inout SeededRandom,
        last: () async throws(NetworkError) -> NetworkResponse
    ) async throws(NetworkError) -> NetworkResponse {
        guard let first = conditions.first else { return try await last() }
        let rest = conditions.dropFirst()
        var inner = SeededRandom(seed: random.next())
        return try await first.apply(to: request, random: &random) { () async throws(NetworkError) -> NetworkResponse in
            try await run(rest, request: request, random: &inner, last: last)
        }
    }
}

/// Typical links, after Apple's Network Link Conditioner profiles (downlink rate, round trip).
public enum BandwidthPreset: String, Sendable, CaseIterable {
    /// 50 kbit/s, 500 ms.
    case gprs
    /// 240 kbit/s, 400 ms.
    case edge
    /// 780 kbit/s, 100 ms.
    case threeG = "3g"
    /// 50 Mbit/s, 50 ms.
    case lte
    /// 40 Mbit/s, 2 ms.
    case wifi

    /// Bytes per second downstream.
    public var bytesPerSecond: Double {
        switch self {
        case .gprs: 50_000 / 8
        case .edge: 240_000 / 8
        case .threeG: 780_000 / 8
        case .lte: 50_000_000 / 8
        case .wifi: 40_000_000 / 8
        }
    }

    /// The round trip before the first byte.
    public var latency: Duration {
        switch self {
        case .gprs: .milliseconds(500)
        case .edge: .milliseconds(400)
        case .threeG: .milliseconds(100)
        case .lte: .milliseconds(50)
        case .wifi: .milliseconds(2)
        }
    }
}

/// Sleeps; a cancelled wait fails the request as cancelled.
func pause(_ duration: Duration) async throws(NetworkError) {
    guard duration > .zero else { return }
    do {
        try await Task.sleep(for: duration)
    } catch {
        throw .cancelled
    }
}
