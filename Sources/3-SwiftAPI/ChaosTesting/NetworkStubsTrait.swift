public import ChaosNetwork
import Foundation
public import Testing

#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// Per-test network stubs: a fresh `StubSet` for every test case, with a URLSession and a
/// chaos-aware client wired to it, readable in the test body through ``current``.
///
/// Task-scoped chaos (`Chaos.with`, `.chaos(…)`) does not reach `URLProtocol.startLoading`
/// on Linux — URLSession loads on its own threads — so network chaos for one test travels
/// with the test's own `URLSessionConfiguration` instead: each test case's session answers
/// from its own set, and tests running in parallel never see each other's stubs.
///
/// ```swift
/// @Test(.networkStubs { stubs in
///     stubs.stub(try .get("/v1/forecast"), .status(503))
/// })
/// func showsAFriendlyErrorWhenTheServiceIsDown() async throws {
///     let network = try #require(ChaosNetworkTest.current)
///     let (_, response) = try await network.session.data(from: URL(string: "https://api.test/v1/forecast")!)
///     #expect((response as? HTTPURLResponse)?.statusCode == 503)
/// }
/// ```
public struct ChaosNetworkTest: Sendable {
    /// The stubs, session and client of the test case running in this task, if any.
    @TaskLocal public static var current: ChaosNetworkTest?

    /// This test case's stub set (add stubs, routers, response sets, cassettes; read its log).
    public let stubs: StubSet
    /// A session whose requests the stub set answers (ephemeral configuration).
    public let session: URLSession

    /// A client that sends through the `network.send` point and then ``session``: task-scoped
    /// chaos on the point reaches it, as do the stubs.
    public var client: ChaosNetworkClient { ChaosNetworkClient(URLSessionNetworkClient(session: session)) }

    /// A client that answers from ``stubs`` directly, without URLSession.
    public var directClient: ChaosNetworkClient { ChaosNetworkClient(stubs) }

    /// A new configuration (ephemeral unless given) with `stubs` installed.
    public static func configuration(stubs: StubSet, base: URLSessionConfiguration = .ephemeral)
        -> URLSessionConfiguration
    {
        ChaosURLProtocol.install(stubs, into: base)
        return base
    }

    /// A new session whose requests `stubs` answers. Keep a reference to `stubs` while it is used.
    public static func session(stubs: StubSet) -> URLSession {
        URLSession(configuration: configuration(stubs: stubs))
    }

    /// Runs `body` with a fresh stub set (made by `configure`) and a session on it as
    /// ``current``; afterwards the session is invalidated and the set uninstalled, also
    /// when `body` throws.
    public static func with<R>(
        seed: UInt64 = 0, unmatched: StubSet.UnmatchedPolicy = .fail,
        configure: (StubSet) throws -> Void = { _ in },
        _ body: () async throws -> R
    ) async throws -> R {
        let stubs = StubSet(seed: seed, unmatched: unmatched)
        try configure(stubs)
        let session = session(stubs: stubs)
        defer {
            session.invalidateAndCancel()
            ChaosURLProtocol.uninstall(stubs)
        }
        return try await $current.withValue(ChaosNetworkTest(stubs: stubs, session: session)) {
            try await body()
        }
    }
}

/// The trait behind `.networkStubs { … }`: see ``ChaosNetworkTest``.
public struct NetworkStubsTrait: TestTrait, SuiteTrait, TestScoping {
    let seed: UInt64
    let unmatched: StubSet.UnmatchedPolicy
    let configure: @Sendable (StubSet) throws -> Void

    /// Recursive: on a suite, every test case of every test inside gets its own set.
    public var isRecursive: Bool { true }

    /// Runs one test case with its own stub set, session and client as ``ChaosNetworkTest/current``.
    ///
    /// When the set refused requests (no stub matched, and unmatched requests fail), every
    /// issue the test case records carries a comment naming each refused request with the
    /// nearest stubs and what differed; an error thrown out of the test case is recorded
    /// with it (and not rethrown).
    public func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await ChaosNetworkTest.with(seed: seed, unmatched: unmatched, configure: configure) {
            guard let stubs = ChaosNetworkTest.current?.stubs, Test.current != nil else { return try await function() }
            try await Self.reportingRefusals(of: stubs, for: test, testCase: testCase, function)
        }
    }

    /// The marker every refusal comment starts with.
    public static let refusalMarker = "ChaosNetwork: the stub set refused"

    /// Runs `function` so that its issues name the requests `stubs` refused, with their near misses.
    static func reportingRefusals(
        of stubs: StubSet, for test: Test, testCase: Test.Case?, _ function: @Sendable () async throws -> Void
    ) async throws {
        let handler = IssueHandlingTrait.compactMapIssues { issue in
            guard let comment = refusalComment(stubs),
                !issue.comments.contains(where: { $0.rawValue.hasPrefix(refusalMarker) })
            else { return issue }
            var annotated = issue
            annotated.comments.append(comment)
            return annotated
        }
        try await handler.provideScope(for: test, testCase: testCase) {
            do {
                try await function()
            } catch {
                guard ChaosTrait.shouldRecord(error), let comment = refusalComment(stubs) else { throw error }
                Issue.record(error, comment, sourceLocation: test.sourceLocation)
            }
        }
    }

    /// `ChaosNetwork: the stub set refused 1 request: GET https://… → refused; the nearest: …`,
    /// or nil when it refused none.
    static func refusalComment(_ stubs: StubSet) -> Comment? {
        let refused = stubs.requests.filter(\.wasRefused)
        guard !refused.isEmpty else { return nil }
        let lines = refused.map { "- \($0)" }.joined(separator: "\n")
        return Comment(
            rawValue: "\(refusalMarker) \(refused.count) request\(refused.count == 1 ? "" : "s"):\n\(lines)")
    }
}

extension Trait where Self == NetworkStubsTrait {
    /// Gives each test case a fresh `StubSet` set up by `configure`, and a URLSession and
    /// client answering from it, as ``ChaosNetworkTest/current``; uninstalled afterwards.
    /// `seed` seeds the set's conditions (jitter, corruption); `unmatched` says what
    /// happens to requests no stub matches (they fail by default, naming the closest stub).
    public static func networkStubs(
        seed: UInt64 = 0, unmatched: StubSet.UnmatchedPolicy = .fail,
        _ configure: @escaping @Sendable (StubSet) throws -> Void = { _ in }
    ) -> Self {
        NetworkStubsTrait(seed: seed, unmatched: unmatched, configure: configure)
    }
}
