// The server and its API exist with the package trait `Console` (ConsoleTrait.swift says why).
#if Console
import ChaosControl
import ChaosKit
import ChaosNetwork
import Foundation
import HTTPTypes
import Hummingbird
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The control protocol's routes, behind the checks every request passes first.
extension ChaosConsole {
    /// The largest request body accepted (a profile): 1 MiB.
    static let maximumBody = 1 << 20

    /// The one path answered without the token: browsers ask for it on their own, with no
    /// way to send one. Its answer (204, no body) says nothing about the process.
    static let faviconPath = "/favicon.ico"

    func respond(to request: Request) async -> Response {
        if let refusal = refusal(of: request) { return refusal }
        if request.uri.path == Self.faviconPath {
            guard request.method == .get || request.method == .head else { return notAllowed("GET") }
            return Response(status: .noContent, headers: Self.commonHeaders)
        }
        let rawPath = request.uri.path
        let parts = rawPath.split(separator: "/", omittingEmptySubsequences: true).map {
            $0.removingPercentEncoding ?? String($0)
        }
        let method = request.method
        switch parts.count {
        case 0:
            return method == .get || method == .head ? consolePage() : notAllowed("GET")
        case 1 where parts[0] == "console":
            return method == .get || method == .head ? consolePage() : notAllowed("GET")
        case 2 where parts[0] == "console" && parts[1] == "processes":
            return method == .get || method == .head ? processesPage() : notAllowed("GET")
        default:
            break
        }
        guard parts[0] == "v1" else {
            return failure(
                .notFound, "notFound", subject: InputExcerpt.of(rawPath),
                "no such route; the control routes start with /v1/ (see GET /v1/status) and the console is at /console")
        }
        let route = Array(parts.dropFirst())
        switch (route.first, route.count) {
        case ("status", 1):
            return method == .get ? json(status()) : notAllowed("GET")
        case ("points", 1):
            return method == .get ? json(Chaos.catalogue.map(Self.wire)) : notAllowed("GET")
        case ("entries", 1):
            switch method {
            case .get: return json(Chaos.liveEntries.map(Self.wire))
            case .post: return await apply(request)
            case .delete: return revertAll(includingClock: Self.flag("includeClock", in: request))
            default: return notAllowed("GET, POST, DELETE")
            }
        case ("entries", 2):
            guard let id = Self.entryID(route[1]) else { return badEntryID(route[1]) }
            return method == .delete ? revert(id) : method == .get ? entry(id) : notAllowed("GET, DELETE")
        case ("entries", 3) where route[2] == "enable" || route[2] == "disable":
            guard let id = Self.entryID(route[1]) else { return badEntryID(route[1]) }
            return method == .post ? setEnabled(route[2] == "enable", id) : notAllowed("POST")
        case ("profile", 1):
            return method == .get ? exportProfile(request) : notAllowed("GET")
        case ("profile", 2) where route[1] == "validate":
            return method == .post ? await validateProfile(request) : notAllowed("POST")
        case ("response-sets", 1):
            return method == .get ? json(responseSets()) : notAllowed("GET")
        case ("response-sets", 2):
            switch method {
            case .get:
                guard let set = responseSets().first(where: { $0.name == route[1] }) else {
                    return unknownSet(route[1])
                }
                return json(set)
            case .put, .post: return await select(request, set: route[1])
            default: return notAllowed("GET, PUT")
            }
        case ("requests", 1):
            return method == .get ? requests(request) : notAllowed("GET")
        case ("events", 1):
            return method == .get ? events() : notAllowed("GET")
        case ("journal", 1):
            return await journalRoute(request)
        case ("time", 1):
            return await time(request, advance: false)
        case ("time", 2) where route[1] == "advance":
            return await time(request, advance: true)
        case ("processes", 1):
            return method == .get ? await processes() : notAllowed("GET")
        case ("explorations", 1):
            return explorationsRoute(request)
        case ("explorations", 5) where route[2] == "failures" && route[4] == "replay":
            return replayRoute(request, exploration: route[1], failure: route[3])
        case ("go", 1):
            guard method == .post else { return notAllowed("POST") }
            sayGo()
            Self.logger.info("chaos control: go")
            return json(status())
        default:
            return failure(
                .notFound, "notFound", subject: InputExcerpt.of(rawPath),
                "no such route; there are \(ControlAPI.routeList)")
        }
    }

    // MARK: The checks

    /// Why `request` is refused, or nil: a foreign Host (DNS rebinding), a foreign Origin or
    /// a cross-site fetch (CSRF), or a missing or wrong token.
    func refusal(of request: Request) -> Response? {
        let host = request.head.authority?.lowercased()
        if !allowedHosts.isEmpty {
            guard let host, allowedHosts.contains(host) else {
                return failure(
                    .forbidden, "forbiddenHost", subject: host.map { "Host: \(InputExcerpt.of($0))" } ?? "Host",
                    "the request does not name this endpoint in its Host header (a DNS rebinding attempt, or a proxy); send Host: \(allowedHosts.sorted().first ?? "")"
                )
            }
        }
        if let origin = request.headers[.origin] {
            let allowed = allowedHosts.map { "http://\($0)" }
            guard allowed.contains(origin.lowercased()) else {
                return failure(
                    .forbidden, "forbiddenOrigin", subject: "Origin: \(InputExcerpt.of(origin))",
                    "requests from other web origins are refused (a page in the browser must not change chaos); use the console this endpoint serves"
                )
            }
        }
        if let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!], site == "cross-site" {
            return failure(
                .forbidden, "forbiddenOrigin", subject: "Sec-Fetch-Site: cross-site",
                "cross-site requests are refused; use the console this endpoint serves")
        }
        // Host, Origin and Sec-Fetch-Site are checked for it too.
        if request.uri.path == Self.faviconPath, request.method == .get || request.method == .head { return nil }
        var offered: Substring?
        if let authorization = request.headers[.authorization] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == "bearer" { offered = parts[1].drop { $0 == " " } }
        } else if request.method == .get || request.method == .head {
            offered = request.uri.queryParameters["token"]
        }
        guard let offered else {
            return failure(
                .unauthorized, "unauthorized", subject: "Authorization",
                "the request carries no token; send Authorization: Bearer TOKEN with the token from this process's endpoint file (chaos ctl does)"
            )
        }
        guard Self.sameBytes(offered, token) else {
            return failure(
                .unauthorized, "unauthorized", subject: "Authorization",
                "the token is not this session's; read it again from the endpoint file (the token changes with every start)"
            )
        }
        return nil
    }

    /// Compares in time that does not depend on where the first difference is.
    static func sameBytes(_ a: some StringProtocol, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        for index in 0..<max(x.count, y.count) {
            difference |= (index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0)
        }
        return difference == 0 && x.count == y.count
    }

    // MARK: Entries

    private func status() -> ControlAPI.Status {
        let entries = Chaos.liveEntries
        let enabled = entries.filter(\.isEnabled)
        return ControlAPI.Status(
            pid: getpid(), program: endpoint.program, kind: "swift", entries: entries.count,
            enabledEntries: enabled.count, pendingEntries: enabled.filter(\.isPending).count,
            notAppliedEntries: enabled.filter { $0.problem != nil }.count, waiting: isWaiting,
            features: [
                "points", "response-sets", "requests", "events", "journal", "console", "profile", "processes",
                "explorations",
            ]
                + (Chaos.virtualClock == nil ? [] : ["time"]),
            advance: Self.advanceProgress()
        )
    }

    private func apply(_ request: Request) async -> Response {
        let text: ProfileText
        switch await ProfileText.read(request) {
        case .success(let read): text = read
        case .failure(let failure): return failure.response
        }
        do throws(ChaosError) {
            let profile = try text.profile()
            // A profile sent to a running app may name points it has not made yet, but one a
            // couple of letters off a live point waits only when asked to. Without a seed of
            // its own it gets one that an export can write.
            let chaos = try profile.apply(
                seed: profile.seed ?? Self.exportableSeed(), missingPoints: Self.missingPoints(for: request))
            keep(chaos)
            let entries = (chaos.appliedEntries + chaos.waitingEntries).sorted { $0.id.number < $1.id.number }
            Self.logger.info(
                "chaos control: profile applied",
                metadata: ["entries": "\(Self.logSummary(entries))", "seed": "\(chaos.seed)"])
            let ids = entries.map(\.id.number)
            return json(ControlAPI.Applied(entries: ids, seed: String(chaos.seed)), status: .created)
        } catch {
            // Located in the text sent, for an editor to point at.
            let response = failure(error)
            guard let location = text.location(error.subject) else { return response }
            return json(
                ControlAPI.ErrorBody(
                    kind: "\(error.kind)", subject: error.subject, message: error.message, location: location),
                status: response.status)
        }
    }

    /// What an apply did, for the log: each entry's id, point and provider
    /// (`#3 demo.greeting ← stutter(times: 2)`), each cut to 200 characters (names are input).
    static func logSummary(_ entries: [ProfileEntry]) -> String {
        entries.map { "\($0.id) \(InputExcerpt.of($0.description, limit: 200))" }.joined(separator: ", ")
    }

    private func entry(_ id: Int) -> Response {
        guard let live = Chaos.liveEntries.first(where: { $0.entry.id.number == id }) else { return unknownEntry(id) }
        return json(Self.wire(live))
    }

    private func revert(_ id: Int) -> Response {
        do throws(ChaosError) {
            try Chaos.revert(entryID: ProfileEntry.ID(number: id))
        } catch {
            return unknownEntry(id)
        }
        pruneApplied()
        Self.logger.info("chaos control: entry reverted", metadata: ["entry": "#\(id)"])
        return json(ControlAPI.Reverted(entries: [id]))
    }

    /// Reverts every live entry, newest first, but those on the clock point unless
    /// `includingClock` (``ControlAPI/clockPoint`` says why), which the answer names.
    private func revertAll(includingClock: Bool) -> Response {
        var reverted: [Int] = []
        var kept: [LiveEntry] = []
        for live in Chaos.liveEntries.reversed() {
            if !includingClock, live.entry.pointName == ControlAPI.clockPoint {
                kept.append(live)
                continue
            }
            do throws(ChaosError) {
                try Chaos.revert(entryID: live.entry.id)
                reverted.append(live.entry.id.number)
            } catch {
                continue  // reverted meanwhile (a lease ended)
            }
        }
        pruneApplied()
        kept.reverse()
        Self.logger.info(
            "chaos control: every entry reverted",
            metadata: ["entries": "\(reverted.sorted())", "kept": "\(kept.map(\.entry.id.number))"])
        return json(
            ControlAPI.Reverted(
                entries: reverted.sorted(),
                keptClock: kept.map {
                    ($0.entry.id.number, "\($0.entry.id) \(InputExcerpt.of($0.entry.description, limit: 200))")
                }))
    }

    private func setEnabled(_ enabled: Bool, _ id: Int) -> Response {
        do throws(ChaosError) {
            try Chaos.setEnabled(enabled, entryID: ProfileEntry.ID(number: id))
        } catch {
            return error.kind == .notApplied ? unknownEntry(id) : failure(error)
        }
        return entry(id)
    }

    // MARK: Response sets

    private func responseSets() -> [ControlAPI.ResponseSet] {
        var seen = Set<String>()
        var sets: [ControlAPI.ResponseSet] = []
        for store in stores {
            for set in store.sets where seen.insert(set.name).inserted {
                sets.append(
                    ControlAPI.ResponseSet(
                        name: set.name, matcher: "\(set.matcher)", responses: set.responseNames,
                        selected: store.selection(for: set.name) ?? set.defaultResponseName
                    ))
            }
        }
        return sets
    }

    private func select(_ request: Request, set name: String) async -> Response {
        let body: Data
        switch await Self.collect(request) {
        case .success(let data): body = data
        case .failure(let failure): return failure.response
        }
        guard let store = stores.first(where: { $0.sets.contains { $0.name == name } }) else { return unknownSet(name) }
        let selection: ControlAPI.Selection
        do {
            selection = try ControlAPI.decoder().decode(ControlAPI.Selection.self, from: body)
        } catch {
            return failure(
                .badRequest, "badRequest", subject: "response set '\(InputExcerpt.of(name))'",
                "the body must be {\"response\": \"NAME\"} naming one of the set's responses"
            )
        }
        do throws(ChaosError) {
            try store.select(selection.response, for: name)
        } catch {
            return failure(.init(code: 422), "\(error.kind)", subject: error.subject, error.message)
        }
        Self.logger.info(
            "chaos control: response selected", metadata: ["set": "\(name)", "response": "\(selection.response)"])
        guard let set = responseSets().first(where: { $0.name == name }) else { return unknownSet(name) }
        return json(set)
    }

    // MARK: Requests

    /// The request journal; `?answer=KIND` keeps the requests answered so (`refused` …),
    /// `?limit=N` the newest N of them.
    private func requests(_ request: Request) -> Response {
        var limit = Int.max
        if let text = request.uri.queryParameters["limit"] {
            guard text.count <= 9, let number = Int(text), number >= 0 else {
                return failure(
                    .badRequest, "badRequest", subject: "limit '\(InputExcerpt.of(String(text)))'",
                    "limit is how many of the newest requests to list: a whole number, e.g. ?limit=50")
            }
            limit = number
        }
        let answer = request.uri.queryParameters["answer"].map(String.init)
        let journal = ChaosNetwork.journal
        let recorded = journal.recordedCount
        var requests = journal.requests.map(Self.wire)
        if let answer { requests.removeAll { $0.answer != answer } }
        return json(
            ControlAPI.Requests(
                capacity: journal.capacity, recorded: recorded, requests: Array(requests.suffix(limit))))
    }

    // MARK: Events

    /// Server-Sent Events: a comment once subscribed, then an `act` event per act.
    private func events() -> Response {
        eventStream { continuation in
            let acts = Chaos.events(bufferingNewest: 1_024)  // subscribed from here on
            return Task {
                let encoder = ControlAPI.encoder()
                for await act in acts {
                    guard let data = try? encoder.encode(ChaosConsole.wire(act)) else { continue }
                    continuation.yield("event: act\ndata: \(String(decoding: data, as: UTF8.self))\n\n")
                }
            }
        }
    }

    /// A Server-Sent Events response: `start` subscribes to what it streams and returns the
    /// task that yields its events; then `: connected` is written, what the task yields, and
    /// a comment every 15 s so that idle proxies and clients keep the stream open.
    func eventStream(
        _ start: @escaping @Sendable (AsyncStream<String>.Continuation) -> Task<Void, Never>
    ) -> Response {
        var headers = Self.commonHeaders
        headers[.contentType] = "text/event-stream"
        let console = self
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                guard let (stream, continuation) = console.openStream() else {
                    try await writer.finish(nil)
                    return
                }
                let forward = start(continuation)
                let heartbeat = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(15))
                        continuation.yield(": keep-alive\n\n")
                    }
                }
                defer {
                    forward.cancel()
                    heartbeat.cancel()
                    // Ends the stream, which takes it off the console's subscribers.
                    continuation.finish()
                }
                try await writer.write(ByteBuffer(string: "retry: 1000\n: connected\n\n"))
                for await text in stream {
                    try await writer.write(ByteBuffer(string: text))
                }
                try await writer.finish(nil)
            })
    }

    // MARK: Bodies and errors

    static func collect(_ request: Request) async -> Result<Data, ResponseFailure> {
        if let length = request.headers[.contentLength].flatMap({ Int($0) }), length > maximumBody {
            return .failure(ResponseFailure(tooLarge()))
        }
        var request = request
        do {
            let buffer = try await request.collectBody(upTo: maximumBody)
            return .success(Data(buffer.readableBytesView))
        } catch {
            return .failure(ResponseFailure(tooLarge()))
        }
    }

    private static func tooLarge() -> Response {
        errorResponse(
            .contentTooLarge, "payloadTooLarge", subject: "body",
            "the body is larger than \(maximumBody) bytes; split the profile")
    }

    static var commonHeaders: HTTPFields {
        var headers = HTTPFields()
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return headers
    }

    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        Self.json(value, status: status)
    }

    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) -> Response {
        var headers = commonHeaders
        headers[.contentType] = "application/json"
        let data = (try? ControlAPI.encoder().encode(value)) ?? Data("{}".utf8)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }

    func failure(_ status: HTTPResponse.Status, _ kind: String, subject: String?, _ message: String) -> Response {
        Self.errorResponse(status, kind, subject: subject, message)
    }

    static func errorResponse(_ status: HTTPResponse.Status, _ kind: String, subject: String?, _ message: String)
        -> Response
    {
        var response = json(ControlAPI.ErrorBody(kind: kind, subject: subject, message: message), status: status)
        if status == .unauthorized { response.headers[.wwwAuthenticate] = "Bearer realm=\"chaos\"" }
        return response
    }

    /// A ChaosError as the endpoint answers it: 404 for an entry that is not applied,
    /// 409 for conflicts, 500 when the system refused, 422 for every mistake in the input.
    func failure(_ error: ChaosError) -> Response {
        let status: HTTPResponse.Status =
            switch error.kind {
            case .notApplied: .notFound
            case .alreadyApplied, .alreadyHooked, .duplicatePointName: .conflict
            case .systemFailure: .internalServerError
            default: .init(code: 422)
            }
        return failure(status, "\(error.kind)", subject: error.subject, error.message)
    }

    func notAllowed(_ allowed: String) -> Response {
        var response = failure(.methodNotAllowed, "methodNotAllowed", subject: nil, "this route takes \(allowed)")
        response.headers[.allow] = allowed
        return response
    }

    private func unknownEntry(_ id: Int) -> Response {
        failure(
            .notFound, "notApplied", subject: "entry #\(id)",
            "no live entry has this id; GET /v1/entries (or chaos ctl status PID) lists them")
    }

    private func badEntryID(_ text: String) -> Response {
        failure(
            .badRequest, "badRequest", subject: "entry '\(InputExcerpt.of(text))'",
            "an entry id is a whole number, as GET /v1/entries lists them")
    }

    private func unknownSet(_ name: String) -> Response {
        let names = responseSets().map { "'\($0.name)'" }.joined(separator: ", ")
        return failure(
            .notFound, "notFound", subject: "response set '\(InputExcerpt.of(name))'",
            "there is no response set of this name; the endpoint has: \(names.isEmpty ? "none (register a ResponseSetStore with the console)" : names)"
        )
    }

    /// Whether the query says `name=true` (or `1`, `yes`): the form of the routes' switches.
    static func flag(_ name: String, in request: Request) -> Bool {
        ["1", "true", "yes"].contains(request.uri.queryParameters[Substring(name)].map { $0.lowercased() })
    }

    /// What an apply or a validation does with entries whose point does not exist yet:
    /// they wait, unless a name is a misspelling of a live point's and `allowPending` is not
    /// given.
    static func missingPoints(for request: Request) -> Chaos.MissingPoints {
        flag("allowPending", in: request) ? .wait : .waitUnlessMisspelt
    }

    static func entryID(_ text: String) -> Int? {
        guard text.count <= 18, let id = Int(text.hasPrefix("#") ? String(text.dropFirst()) : text), id > 0 else {
            return nil
        }
        return id
    }
}

/// A ready error response, carried through a `Result`.
struct ResponseFailure: Error {
    let response: Response
    init(_ response: Response) { self.response = response }
}
#endif
