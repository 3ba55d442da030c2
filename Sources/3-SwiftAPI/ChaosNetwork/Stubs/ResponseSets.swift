public import ChaosKit
public import Foundation

/// Several named answers to one kind of request, one of them selected (MMBarricade's
/// response sets): "success", "wrong password", "server down" for `POST /login`, switched
/// at run time by name from a debug menu or a test.
///
/// The first response is the default. Add sets to a ``ResponseSetStore``, which keeps the
/// selections (in a JSON file when given one) and answers requests inside a ``StubSet``.
public struct ResponseSet: Sendable, CustomStringConvertible {
    /// One named answer.
    public struct Response: Sendable {
        /// The name the answer is selected by ("success", "offline" …).
        public let name: String
        /// What it answers with.
        public let response: StubResponse
        /// Conditions applied to this answer (latency …), in order.
        public let conditions: [NetworkCondition]

        /// An answer called `name`.
        public init(_ name: String, _ response: StubResponse, conditions: [NetworkCondition] = []) {
            self.name = name
            self.response = response
            self.conditions = conditions
        }
    }

    /// The set's name, unique in its store ("login").
    public let name: String
    /// The requests the set answers.
    public let matcher: RequestMatcher
    /// The answers, the default first.
    public let responses: [Response]

    /// A set called `name` answering requests that match `matcher`. A set needs at least
    /// one response, and response names must differ.
    public init(_ name: String, matching matcher: RequestMatcher, _ responses: [Response]) throws(ChaosError) {
        guard let first = responses.first else {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "response set '\(name)'",
                "the set has no responses; give it at least one (the first is the default), e.g. Response(\"success\", .status(200))"
            )
        }
        var seen = Set<String>()
        for response in responses where !seen.insert(response.name).inserted {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: "response set '\(name)'",
                "two responses are called '\(response.name)'; give each response its own name"
            )
        }
        _ = first
        self.name = name
        self.matcher = matcher
        self.responses = responses
    }

    /// The default answer's name (the first).
    public var defaultResponseName: String { responses[0].name }

    /// The names of the answers, in order.
    public var responseNames: [String] { responses.map(\.name) }

    /// `'login' (POST any host exact /login): success, wrong password`.
    public var description: String { "'\(name)' (\(matcher)): \(responseNames.joined(separator: ", "))" }

    func response(named name: String) -> Response? {
        responses.first { $0.name == name }
    }
}

/// The response sets of an app or test, with the selected answer of each, optionally
/// persisted to a JSON file so that a debug session keeps its choices across launches.
///
/// ```swift
/// let store = try ResponseSetStore(persistingTo: URL(fileURLWithPath: "/tmp/selections.json"))
/// try store.add(ResponseSet("login", matching: .post("/login"), [
///     .init("success", try .json(["token": "abc"])),
///     .init("wrong password", .status(401)),
///     .init("offline", .error(.offline)),
/// ]))
/// try store.select("offline", for: "login")   // written to the file at once
/// let stubs = StubSet()
/// stubs.add(store)
/// ```
///
/// A selection read from the file applies when a set of that name is added and still has
/// a response of that name; otherwise the set starts at its default. Thread-safe.
public final class ResponseSetStore: Sendable {
    private struct State {
        var sets: [ResponseSet] = []
        /// Selected response per set name, including selections read from the file for
        /// sets not added yet.
        var selections: [String: String] = [:]
    }

    /// The file selections are kept in, if any.
    public let fileURL: URL?
    private let state: Locked<State>

    /// A store; with `fileURL`, selections saved there earlier are read now and every
    /// change is written back. A missing file is fine (nothing selected yet); a file that
    /// is not a selections document is an error.
    public init(persistingTo fileURL: URL? = nil) throws(ChaosError) {
        self.fileURL = fileURL
        var selections: [String: String] = [:]
        if let fileURL, FileManager.default.fileExists(atPath: fileURL.path) {
            selections = try Self.read(fileURL)
        }
        self.state = Locked(State(selections: selections))
    }

    /// Adds `set` (replacing a set of the same name). A selection remembered for its name
    /// applies when the set has a response of that name.
    public func add(_ set: ResponseSet) {
        state.withLock { state in
            state.sets.removeAll { $0.name == set.name }
            state.sets.append(set)
        }
    }

    /// Removes the set called `name`; its remembered selection stays in the file.
    public func remove(_ name: String) {
        state.withLock { $0.sets.removeAll { $0.name == name } }
    }

    /// The sets, in the order they were added.
    public var sets: [ResponseSet] { state.withLock { $0.sets } }

    /// Selects the response called `response` of the set called `set`, and saves the
    /// choice to the file. Unknown set or response names are errors that list the names.
    public func select(_ response: String, for set: String) throws(ChaosError) {
        let snapshot = try state.withLock { state throws(ChaosError) -> [String: String] in
            guard let found = state.sets.first(where: { $0.name == set }) else {
                let names = state.sets.map { "'\($0.name)'" }.joined(separator: ", ")
                throw ChaosError(
                    .invalidNetworkConfiguration, subject: "response set '\(set)'",
                    "there is no response set called '\(set)'; the store has: \(names.isEmpty ? "none (add one first)" : names)"
                )
            }
            guard found.response(named: response) != nil else {
                let names = found.responseNames.map { "'\($0)'" }.joined(separator: ", ")
                throw ChaosError(
                    .invalidNetworkConfiguration, subject: "response set '\(set)'",
                    "the set has no response called '\(response)'; choose one of: \(names)"
                )
            }
            state.selections[set] = response
            return state.selections
        }
        try save(snapshot)
    }

    /// Goes back to the default response of the set called `set` (and saves that).
    public func selectDefault(for set: String) throws(ChaosError) {
        guard let found = sets.first(where: { $0.name == set }) else {
            try select("", for: set)  // throws the unknown-set error
            return
        }
        try select(found.defaultResponseName, for: set)
    }

    /// The name of the selected response of the set called `set` (nil for an unknown set).
    public func selection(for set: String) -> String? {
        state.withLock { state in
            guard let found = state.sets.first(where: { $0.name == set }) else { return nil }
            return Self.selected(in: found, state.selections).name
        }
    }

    private static func selected(in set: ResponseSet, _ selections: [String: String]) -> ResponseSet.Response {
        if let name = selections[set.name], let response = set.response(named: name) { return response }
        return set.responses[0]
    }

    // MARK: The file

    /// `{"version": 1, "selections": {"login": "offline"}}`
    private struct Document: Codable {
        var version: Int
        var selections: [String: String]
    }

    private static func read(_ url: URL) throws(ChaosError) -> [String: String] {
        do {
            let data = try Data(contentsOf: url)
            return try JSONDecoder().decode(Document.self, from: data).selections
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: url.path,
                "the response selections file cannot be read (\(error)); delete it to start from the defaults"
            )
        }
    }

    private func save(_ selections: [String: String]) throws(ChaosError) {
        guard let fileURL else { return }
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(Document(version: 1, selections: selections)).write(to: fileURL, options: .atomic)
        } catch {
            throw ChaosError(
                .invalidNetworkConfiguration, subject: fileURL.path,
                "the response selections cannot be saved (\(error.localizedDescription)); check that the folder exists and is writable"
            )
        }
    }
}

extension ResponseSetStore: StubResponder {
    var name: String { "response sets" }

    func handles(_ facts: inout RequestFacts) -> Bool {
        answer(&facts) != nil
    }

    func journalAnswer(_ facts: inout RequestFacts) -> JournaledRequest.Answer {
        guard let (set, response, _) = answer(&facts) else { return .responder(name) }
        return .responseSet(set.name, response: response.name)
    }

    /// The newest set matching `facts` and its selected response.
    private func answer(_ facts: inout RequestFacts) -> (
        set: ResponseSet, response: ResponseSet.Response, parameters: [String: String]
    )? {
        let (sets, selections) = state.withLock { ($0.sets, $0.selections) }
        for set in sets.reversed() {
            if let parameters = set.matcher.match(&facts) {
                return (set, Self.selected(in: set, selections), parameters)
            }
        }
        return nil
    }

    func respond(to request: NetworkRequest, passThrough: (any NetworkClient)?) async throws(NetworkError)
        -> NetworkResponse
    {
        var facts = RequestFacts(request)
        guard let (_, response, parameters) = answer(&facts) else {
            throw .noStub(
                "no response set matches \(request) any more (it was removed while the request was in flight)")
        }
        var random = SeededRandom(seed: 0)
        return try await NetworkCondition.run(response.conditions[...], request: request, random: &random) {
            () async throws(NetworkError) in
            try await response.response.respond(to: MatchedRequest(request: request, pathParameters: parameters))
        }
    }
}

extension StubSet {
    /// Lets `store`'s response sets answer requests that no stub matches (stubs first,
    /// then the responders added last, then the unmatched policy).
    public func add(_ store: ResponseSetStore) {
        addResponder(store)
    }
}
