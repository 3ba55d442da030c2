public import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A response from a control endpoint.
public struct ControlResponse: Sendable {
    /// The HTTP status.
    public let status: Int
    /// The headers, names lower-cased.
    public let headers: [String: String]
    /// The body.
    public let body: Data
}

/// A small blocking client of the control protocol: what `chaos ctl` uses, and what a
/// UI-test runner in another process can use to set chaos before the app goes on.
///
/// ```swift
/// let endpoint = try ControlEndpoint.find(pid: 4242)
/// let client = ControlClient(endpoint)
/// let applied = try client.apply(profile: Data(#"{"entries": [{"point": "clock.now", "provider": "random"}]}"#.utf8))
/// try client.go()
/// try client.revert(entry: applied.entries[0])
/// ```
/// Each call opens a connection (HTTP/1.1 over TCP or a Unix socket), sends the token, and
/// waits for the answer; it blocks the calling thread, so call it from a thread of your own
/// (or a test), not from an actor's executor. An endpoint's refusal is a ``ControlError``
/// with the status and the endpoint's kind, subject and message.
public struct ControlClient: Sendable {
    /// Where the endpoint listens: `http://HOST:PORT` or `unix:/path`.
    public let url: String
    /// The token sent with every request.
    public let token: String
    /// How long a connection, a write or a wait for bytes may take.
    public var timeout: Duration
    /// Whether a Unix socket may belong to a process of another user. Off by default: such a
    /// process could answer anything and would learn every plan sent to it, so a socket
    /// whose peer (`SO_PEERCRED`) is not the caller's effective user is refused with an
    /// `untrustedEndpoint` error before anything is sent. A TCP peer's user cannot be asked;
    /// the endpoint file's owner (``ControlEndpoint/find(pid:in:allowingOtherUsers:)``) vouches
    /// for it.
    public var allowsOtherUsers: Bool

    /// A client of the endpoint at `url` (`http://127.0.0.1:PORT` or `unix:/path`).
    public init(url: String, token: String, timeout: Duration = .seconds(5), allowsOtherUsers: Bool = false) {
        self.url = url
        self.token = token
        self.timeout = timeout
        self.allowsOtherUsers = allowsOtherUsers
    }

    /// A client of a process found by its endpoint file.
    public init(_ endpoint: ControlEndpoint, timeout: Duration = .seconds(5), allowsOtherUsers: Bool = false) {
        self.init(url: endpoint.url, token: endpoint.token, timeout: timeout, allowsOtherUsers: allowsOtherUsers)
    }

    // MARK: The verbs

    /// `GET /v1/status`.
    public func status() throws(ControlError) -> ControlAPI.Status {
        try decode(ControlAPI.Status.self, try checked(send("GET", "/v1/status")))
    }

    /// `GET /v1/points`: every live point with its catalogue.
    public func points() throws(ControlError) -> [ControlAPI.Point] {
        try decode([ControlAPI.Point].self, try checked(send("GET", "/v1/points")))
    }

    /// `GET /v1/entries`: every live entry with its counters.
    public func entries() throws(ControlError) -> [ControlAPI.Entry] {
        try decode([ControlAPI.Entry].self, try checked(send("GET", "/v1/entries")))
    }

    /// `POST /v1/entries`: applies a JSON profile, all or nothing. `source` names it in
    /// located errors (e.g. the file's path: `flaky.json:3:17 at $.entries[0]…`).
    ///
    /// An entry whose point the program has not made yet waits for it, unless its name is a
    /// couple of letters off a live point's: then the profile is refused as misspelt
    /// (`unknownPoint`, with "did you mean"). `allowPending` lets such an entry wait too
    /// (`?allowPending=true`), for a point of exactly that name the program makes later.
    public func apply(profile: Data, source: String? = nil, allowPending: Bool = false) throws(ControlError)
        -> ControlAPI.Applied
    {
        let path = "/v1/entries" + Self.query(source: source, allowPending: allowPending)
        return try decode(ControlAPI.Applied.self, try checked(send("POST", path, body: profile)))
    }

    /// `POST /v1/entries` with fault-plan text (`text/x-chaos-plan`, Docs/FaultPlan.md): what
    /// a `preload` endpoint (a `chaos run` child) takes instead of a JSON profile, which it
    /// cannot compile. Every `entry` of the plan becomes one entry; all or nothing.
    public func apply(plan: String, source: String? = nil) throws(ControlError) -> ControlAPI.Applied {
        let path = "/v1/entries" + Self.query(source: source)
        let response = try send(
            "POST", path, body: Data(plan.utf8), headers: [("Content-Type", "text/x-chaos-plan; charset=utf-8")])
        return try decode(ControlAPI.Applied.self, try checked(response))
    }

    /// `POST /v1/profile/validate`: whether a JSON profile (or, with `chaosLine`, a `CHAOS`
    /// line) would apply in the process, by the checks an apply makes, without applying it.
    /// An invalid profile is not an error here: the answer says why, located in the text.
    /// `allowPending` checks as ``apply(profile:source:allowPending:)`` would with it.
    public func validate(profile: Data, chaosLine: Bool = false, source: String? = nil, allowPending: Bool = false)
        throws(ControlError) -> ControlAPI.Validation
    {
        let type = chaosLine ? "text/plain; charset=utf-8" : "application/json"
        let path = "/v1/profile/validate" + Self.query(source: source, allowPending: allowPending)
        let response = try send("POST", path, body: profile, headers: [("Content-Type", type)])
        return try decode(ControlAPI.Validation.self, try checked(response))
    }

    /// `GET /v1/profile`: what is applied in the process, as a JSON profile that applies
    /// again to the same effect. When an entry cannot be written as a profile (made in code
    /// from a typed provider) the endpoint refuses (`notExportable`) unless `partial` is
    /// true: then the profile's `description` names the entries left out.
    public func exportProfile(partial: Bool = false) throws(ControlError) -> Data {
        try checked(send("GET", "/v1/profile" + (partial ? "?partial=true" : ""))).body
    }

    /// `?source=NAME` (percent-encoded) `&allowPending=true`, what of them is given, or nothing.
    private static func query(source: String?, allowPending: Bool = false) -> String {
        var items: [String] = []
        if let source,
            let encoded = source.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics.union(.init(charactersIn: "-._~/")))
        {
            items.append("source=\(encoded)")
        }
        if allowPending { items.append("allowPending=true") }
        return items.isEmpty ? "" : "?" + items.joined(separator: "&")
    }

    /// `DELETE /v1/entries/ID`: reverts one live entry.
    @discardableResult
    public func revert(entry: Int) throws(ControlError) -> ControlAPI.Reverted {
        try decode(ControlAPI.Reverted.self, try checked(send("DELETE", "/v1/entries/\(entry)")))
    }

    /// `DELETE /v1/entries`: reverts every live entry but those on ``ControlAPI/clockPoint``
    /// (the answer's `kept` and `note` say which, and why), or those too with
    /// `includingClock`. A `chaos run` child's endpoint reverts every entry either way:
    /// `chaos ctl revert` keeps its clock entries by reverting the others one by one.
    @discardableResult
    public func revertAll(includingClock: Bool = false) throws(ControlError) -> ControlAPI.Reverted {
        try decode(
            ControlAPI.Reverted.self,
            try checked(send("DELETE", "/v1/entries" + (includingClock ? "?includeClock=true" : ""))))
    }

    /// `POST /v1/entries/ID/enable` or `/disable`.
    @discardableResult
    public func setEnabled(_ enabled: Bool, entry: Int) throws(ControlError) -> ControlAPI.Entry {
        try decode(
            ControlAPI.Entry.self, try checked(send("POST", "/v1/entries/\(entry)/\(enabled ? "enable" : "disable")")))
    }

    /// `GET /v1/response-sets`.
    public func responseSets() throws(ControlError) -> [ControlAPI.ResponseSet] {
        try decode([ControlAPI.ResponseSet].self, try checked(send("GET", "/v1/response-sets")))
    }

    /// `GET /v1/requests[?answer=KIND][&limit=N]`: the request journal; only the requests
    /// answered so (``ControlAPI/Request/answer``, e.g. `refused`) when `answer` is given, and
    /// the newest `limit` of them when that is.
    public func requests(limit: Int? = nil, answer: String? = nil) throws(ControlError) -> ControlAPI.Requests {
        var query: [String] = []
        if let answer {
            query.append("answer=\(answer.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")")
        }
        if let limit { query.append("limit=\(limit)") }
        let path = "/v1/requests" + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
        return try decode(ControlAPI.Requests.self, try checked(send("GET", path)))
    }

    /// `PUT /v1/response-sets/NAME`: selects the answer called `response`.
    @discardableResult
    public func select(_ response: String, in set: String) throws(ControlError) -> ControlAPI.ResponseSet {
        let name = set.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? set
        let body: Data
        do {
            body = try ControlAPI.encoder().encode(ControlAPI.Selection(response: response))
        } catch {
            throw ControlError("badRequest", "the selection cannot be encoded (\(error))")
        }
        return try decode(
            ControlAPI.ResponseSet.self, try checked(send("PUT", "/v1/response-sets/\(name)", body: body)))
    }

    /// `GET /v1/time`: the process's virtual time.
    public func virtualTime() throws(ControlError) -> ControlAPI.VirtualTime {
        try decode(ControlAPI.VirtualTime.self, try checked(send("GET", "/v1/time")))
    }

    /// `POST /v1/time/advance?by=DURATION`: moves the process's virtual time forward by
    /// `duration` (plan text: `1h`, `90m`, `30s`, `250ms`), through every deadline on the
    /// way; answers once the last has been taken, however long that takes (the client's
    /// timeout does not apply: closing the connection stops the advance). At most
    /// `maxSteps` steps (`nil`: the endpoint's limit, a million); an advance stopped or cut
    /// short throws `advanceStopped` or `stepLimit`, saying where virtual time stays.
    @discardableResult
    public func advance(by duration: String, maxSteps: Int? = nil) throws(ControlError) -> ControlAPI.VirtualTime {
        var query =
            "by="
            + (duration.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: ".+-"))) ?? duration)
        if let maxSteps { query += "&steps=\(maxSteps)" }
        return try decode(
            ControlAPI.VirtualTime.self,
            try checked(send("POST", "/v1/time/advance?\(query)", waitForever: true)))
    }

    /// `DELETE /v1/time/advance`: stops the advance under way, if one is, and answers once it
    /// has stopped (`stopped` says whether one ran), with where virtual time stays.
    @discardableResult
    public func stopAdvance() throws(ControlError) -> ControlAPI.VirtualTime {
        try decode(ControlAPI.VirtualTime.self, try checked(send("DELETE", "/v1/time/advance", waitForever: true)))
    }

    /// `POST /v1/go`: lets a program waiting in bootstrap (`CHAOS_CONTROL_WAIT=1`) go on.
    public func go() throws(ControlError) {
        _ = try checked(send("POST", "/v1/go"))
    }

    /// `GET /v1/events`: follows the event stream, calling `handle` for each act until it
    /// returns false or the endpoint stops. `onOpen` runs once the endpoint has subscribed
    /// (every act from then on is delivered). The wait for an event has no time limit.
    public func events(
        onOpen: () -> Void = {}, _ handle: (ControlAPI.Event) throws(ControlError) -> Bool
    ) throws(ControlError) {
        try follow("/v1/events", event: "act", as: ControlAPI.Event.self, onOpen: onOpen, handle)
    }

    /// Follows a Server-Sent Events route: `onOpen` once the endpoint has subscribed (its
    /// first comment), then `handle` for each event called `name`, decoded as `type`, until it
    /// returns false or the endpoint stops. The wait for an event has no time limit.
    func follow<Value: Decodable>(
        _ path: String, event name: String, as type: Value.Type, onOpen: () -> Void,
        _ handle: (Value) throws(ControlError) -> Bool
    ) throws(ControlError) {
        var parser = ServerSentEventParser()
        var opened = false
        let decoder = ControlAPI.decoder()
        var failure: ControlError?
        try stream("GET", path, accept: "text/event-stream", waitForever: true) {
            (head: HTTPResponseHead, bytes: ArraySlice<UInt8>) throws(ControlError) -> Bool in
            guard head.status == 200 else {
                failure = Self.error(status: head.status, body: Data(bytes))
                return false
            }
            for item in try parser.feed(bytes) {
                switch item {
                case .comment:
                    if !opened {
                        opened = true
                        onOpen()
                    }
                case .event(let event) where event.name == name:
                    guard let decoded = try? decoder.decode(type, from: Data(event.data.utf8)) else {
                        throw ControlError(
                            "badResponse", "the data of a '\(name)' event is not one: '\(event.data.prefix(80))'")
                    }
                    if try !handle(decoded) { return false }
                case .event:
                    break
                }
            }
            return true
        }
        if let failure { throw failure }
    }

    // MARK: Requests

    /// Sends one request and reads the whole answer (at most 64 MiB), whatever its status.
    /// A body is sent as `application/json` unless `headers` name another `Content-Type`.
    /// With `waitForever`, the answer may take as long as it takes (the request is sent
    /// within the timeout).
    public func send(
        _ method: String, _ path: String, body: Data? = nil, headers: [(String, String)] = [],
        waitForever: Bool = false
    ) throws(ControlError) -> ControlResponse {
        var collected = Data()
        var answered: HTTPResponseHead?
        try stream(method, path, body: body, headers: headers, waitForever: waitForever) { head, bytes in
            answered = head
            collected.append(contentsOf: bytes)
            return true
        }
        guard let head = answered else { throw ControlError("badResponse", "the endpoint sent no response") }
        var fields: [String: String] = [:]
        for (name, value) in head.headers { fields[name] = value }
        return ControlResponse(status: head.status, headers: fields, body: collected)
    }

    /// The response when it is a success; the endpoint's error otherwise.
    func checked(_ response: ControlResponse) throws(ControlError) -> ControlResponse {
        guard (200...299).contains(response.status) else {
            throw Self.error(status: response.status, body: response.body)
        }
        return response
    }

    static func error(status: Int, body: Data) -> ControlError {
        if let decoded = try? ControlAPI.decoder().decode(ControlAPI.ErrorBody.self, from: ControlAPI.repaired(body)) {
            return ControlError(
                decoded.error.kind, status: status, subject: decoded.error.subject, decoded.error.message)
        }
        let text = String(decoding: body.prefix(80), as: UTF8.self)
        return ControlError(
            "badResponse", status: status,
            "the endpoint answered \(status) without a control-protocol error body ('\(text)'); is this a ChaosKit endpoint?"
        )
    }

    func decode<T: Decodable>(_ type: T.Type, _ response: ControlResponse) throws(ControlError) -> T {
        do {
            return try ControlAPI.decoder().decode(type, from: ControlAPI.repaired(response.body))
        } catch {
            throw ControlError(
                "badResponse", status: response.status,
                "the endpoint's answer is not a \(T.self) of protocol version \(ControlAPI.version) (\(error)); are client and endpoint the same version?"
            )
        }
    }

    /// Sends a request and hands the head and each piece of the body to `deliver` (called
    /// once with an empty piece when the body is empty) until it returns false.
    func stream(
        _ method: String, _ path: String, body: Data? = nil, headers: [(String, String)] = [],
        accept: String = "application/json",
        waitForever: Bool, _ deliver: (HTTPResponseHead, ArraySlice<UInt8>) throws(ControlError) -> Bool
    ) throws(ControlError) {
        let address = try ControlAddress(url)
        let socket = try address.connect(timeout: timeout, peer: allowsOtherUsers ? nil : geteuid())
        defer { close(socket) }
        var request =
            "\(method) \(path) HTTP/1.1\r\nHost: \(address.hostHeader)\r\nAuthorization: Bearer \(token)\r\nAccept: \(accept)\r\nConnection: close\r\nUser-Agent: ChaosControl/\(ControlAPI.version)\r\n"
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        if let body {
            if !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
                request += "Content-Type: application/json\r\n"
            }
            request += "Content-Length: \(body.count)\r\n"
        } else if method == "POST" || method == "PUT" {
            request += "Content-Length: 0\r\n"
        }
        request += "\r\n"
        var bytes = Data(request.utf8)
        if let body { bytes.append(body) }
        try Self.write(bytes, to: socket)
        if waitForever { try Self.setReceiveTimeout(socket, nil) }
        var reader = HTTPResponseReader(SocketSource(fd: socket))
        let head = try reader.head()
        var delivered = false
        try reader.body(of: head, limit: waitForever ? Int.max : 64 << 20) {
            (piece: ArraySlice<UInt8>) throws(ControlError) -> Bool in
            delivered = true
            return try deliver(head, piece)
        }
        if !delivered { _ = try deliver(head, []) }
    }

    private static func write(_ data: Data, to socket: Int32) throws(ControlError) {
        let failed = data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                #if canImport(Darwin)
                let sent = Darwin.send(socket, raw.baseAddress! + offset, raw.count - offset, 0)
                #else
                let sent = Glibc.send(socket, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                #endif
                if sent < 0 {
                    if errno == EINTR { continue }
                    return true
                }
                offset += sent
            }
            return false
        }
        if failed {
            throw ControlError(
                "unreachable",
                "the request could not be sent (\(ControlEndpoint.lastError())); is the process still running?")
        }
    }

    static func setReceiveTimeout(_ socket: Int32, _ timeout: Duration?) throws(ControlError) {
        var value = timeval()
        if let timeout {
            let (seconds, attoseconds) = timeout.components
            value.tv_sec = .init(max(0, seconds))
            value.tv_usec = .init(attoseconds / 1_000_000_000_000)
            if seconds <= 0 && value.tv_usec == 0 { value.tv_usec = 1_000 }
        }
        guard setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size)) == 0,
            setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size)) == 0
        else {
            throw ControlError("unreachable", "cannot set the socket's timeout (\(ControlEndpoint.lastError()))")
        }
    }
}

/// Reads from a connected socket; a timeout is an `unreachable` error.
struct SocketSource: ByteSource {
    let fd: Int32

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(ControlError) -> Int {
        while true {
            let count = recv(fd, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                throw ControlError(
                    "unreachable", "the endpoint did not answer in time; is the process stopped in a debugger, or busy?"
                )
            }
            if errno == ECONNRESET { return 0 }
            throw ControlError("unreachable", "reading the answer failed (\(ControlEndpoint.lastError()))")
        }
    }
}

/// An endpoint address: `http://HOST:PORT` or `unix:/path`.
struct ControlAddress {
    enum Transport {
        case tcp(host: String, port: UInt16)
        case unix(path: String)
    }

    let transport: Transport

    init(_ url: String) throws(ControlError) {
        func invalid(_ why: String) -> ControlError {
            ControlError(
                "invalidEndpoint", subject: String(url.prefix(80)),
                "\(why); give http://HOST:PORT (e.g. http://127.0.0.1:4567) or unix:/path/to/socket")
        }
        if url.hasPrefix("unix:") {
            var path = String(url.dropFirst(5))
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }
            guard path.hasPrefix("/") else { throw invalid("a Unix socket path must be absolute") }
            guard path.utf8.count < 104 else { throw invalid("a Unix socket path must be shorter than 104 bytes") }
            transport = .unix(path: path)
            return
        }
        guard url.hasPrefix("http://") else { throw invalid("only http:// and unix: endpoints exist") }
        var rest = url.dropFirst(7)
        if let slash = rest.firstIndex(of: "/") { rest = rest[..<slash] }
        let host: Substring
        let portText: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw invalid("an IPv6 address needs its closing ]") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":") else { throw invalid("the port is missing") }
            portText = after.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else { throw invalid("the port is missing") }
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        }
        guard !host.isEmpty else { throw invalid("the host is missing") }
        guard let port = UInt16(portText), port > 0 else { throw invalid("the port must be 1…65535") }
        transport = .tcp(host: String(host), port: port)
    }

    /// What the `Host` header says.
    var hostHeader: String {
        switch transport {
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix: "localhost"
        }
    }

    /// A connected socket, with send and receive timeouts set. A Unix socket whose peer is
    /// not of user `peer` (when given) is closed unused.
    func connect(timeout: Duration, peer: uid_t? = nil) throws(ControlError) -> Int32 {
        switch transport {
        case .unix(let path):
            #if canImport(Darwin)
            let fd = socket(AF_UNIX, SOCK_STREAM, 0)
            #else
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            #endif
            guard fd >= 0 else {
                throw ControlError("unreachable", "cannot make a socket (\(ControlEndpoint.lastError()))")
            }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
            }
            do throws(ControlError) {
                try ControlClient.setReceiveTimeout(fd, timeout)
            } catch {
                close(fd)
                throw error
            }
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc_connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard result == 0 else {
                let code = errno
                let reason = ControlEndpoint.lastError()
                close(fd)
                // A Unix socket whose queue of connections is full makes connect wait, then
                // fail with EAGAIN: the endpoint is there, but busy.
                if code == EAGAIN || code == EWOULDBLOCK || code == ETIMEDOUT || code == EINPROGRESS {
                    throw ControlError(
                        "busy", subject: path,
                        "the endpoint is there but takes no new connection now (\(reason)); try again in a moment")
                }
                throw ControlError(
                    "unreachable", subject: path,
                    "nothing listens on this socket (\(reason)); the process has ended, or its endpoint stopped")
            }
            if let peer {
                do throws(ControlError) {
                    try Self.check(fd, path: path, isOf: peer)
                } catch {
                    close(fd)
                    throw error
                }
            }
            return fd
        case .tcp(let host, let port):
            var hints = addrinfo()
            #if canImport(Darwin)
            hints.ai_socktype = SOCK_STREAM
            #else
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            #endif
            hints.ai_flags = AI_NUMERICSERV
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, String(port), &hints, &list)
            guard status == 0, let first = list else {
                throw ControlError(
                    "unreachable", subject: host,
                    "the host cannot be resolved (\(String(cString: gai_strerror(status)))); use an address such as 127.0.0.1"
                )
            }
            defer { freeaddrinfo(list) }
            var reason = "no address"
            var current: UnsafeMutablePointer<addrinfo>? = first
            while let info = current {
                current = info.pointee.ai_next
                let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
                guard fd >= 0 else { continue }
                do throws(ControlError) {
                    try ControlClient.setReceiveTimeout(fd, timeout)
                } catch {
                    close(fd)
                    throw error
                }
                if Glibc_connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                    var one: Int32 = 1
                    _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    #if canImport(Darwin)
                    _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
                    #endif
                    return fd
                }
                reason = ControlEndpoint.lastError()
                close(fd)
            }
            throw ControlError(
                "unreachable", subject: "\(host):\(port)",
                "nothing answers there (\(reason)); is the process still running, and is this its endpoint?")
        }
    }
}

extension ControlAddress {
    /// The user of the process at the other end of the connected Unix socket `fd`, as the
    /// kernel recorded it when that process listened; nil when it cannot be asked.
    static func peerUser(_ fd: Int32) -> uid_t? {
        #if canImport(Darwin)
        var user = uid_t()
        var group = gid_t()
        return getpeereid(fd, &user, &group) == 0 ? user : nil
        #else
        // struct ucred: pid, uid, gid.
        var credentials: (Int32, UInt32, UInt32) = (0, 0, 0)
        var size = socklen_t(MemoryLayout.size(ofValue: credentials))
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0,
            Int(size) == MemoryLayout.size(ofValue: credentials)
        else { return nil }
        return credentials.1
        #endif
    }

    /// Refuses the socket `fd` (connected to `path`) unless its peer runs as `user`.
    static func check(_ fd: Int32, path: String, isOf user: uid_t) throws(ControlError) {
        guard let peer = peerUser(fd) else {
            throw ControlError(
                "untrustedEndpoint", subject: path,
                "the user of the process behind this socket cannot be asked (\(ControlEndpoint.lastError())); allow other users (chaos ctl --allow-other-users) to talk to it anyway"
            )
        }
        guard peer == user else {
            throw ControlError(
                "untrustedEndpoint", subject: path,
                "the process behind this socket runs as uid \(peer), not as you (uid \(user)); it could answer anything and would learn what is sent to it. Steer it as that user, or allow other users (chaos ctl --allow-other-users) if you trust them"
            )
        }
    }
}

/// `connect(2)`, named apart from the method above.
// swift-format-ignore: AlwaysUseLowerCamelCase
// Named for the libc function it reaches past the module's own `connect`.
private func Glibc_connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}
