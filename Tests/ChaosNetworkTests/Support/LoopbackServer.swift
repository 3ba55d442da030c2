// A tiny blocking HTTP/1.1 server over POSIX sockets, for tests and benchmarks: it listens
// on 127.0.0.1 only, on an ephemeral port, serves a bounded number of requests, and stops
// by itself after a spell without connections (or when `stop()` is called).
// Shared with the benchmark package (Benchmarks/Sources/LoopbackServer links to this file).
public import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A request the loopback server received.
public struct LoopbackRequest: Sendable {
    /// `GET`, `POST` …
    public let method: String
    /// The request target: path and query.
    public let target: String
    /// Header fields, names lower-cased (the last value of a repeated name wins).
    public let headers: [String: String]
    /// The body (empty without one).
    public let body: Data
}

/// A response the loopback server sends.
public struct LoopbackResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields (Content-Length and Connection are added).
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// A response.
    public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// A blocking HTTP/1.1 server on 127.0.0.1 (keep-alive, Content-Length bodies only).
public final class LoopbackServer: Sendable {
    /// The port it listens on.
    public let port: UInt16
    /// The server's base URL, `http://127.0.0.1:PORT`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    /// Requests served so far.
    public var requestCount: Int { served.load(ordering: .relaxed) }

    private let listener: Int32
    private let handler: @Sendable (LoopbackRequest) -> LoopbackResponse
    private let served = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let maxRequests: Int
    private let idleTimeout: Double

    /// Starts listening; `handler` answers every request. The server stops by itself after
    /// `maxRequests` requests or `idleTimeout` seconds without a new connection.
    public init(
        maxRequests: Int = 1_000, idleTimeout: Double = 300,
        handler: @escaping @Sendable (LoopbackRequest) -> LoopbackResponse
    ) throws {
        let (socketFD, port) = try Self.listeningSocket(backlog: 64)
        self.port = port
        self.listener = socketFD
        self.handler = handler
        self.maxRequests = maxRequests
        self.idleTimeout = idleTimeout
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Stops accepting connections (open connections end after their current request).
    public func stop() {
        stopped.store(true, ordering: .relaxed)
    }

    private var isDone: Bool {
        stopped.load(ordering: .relaxed) || served.load(ordering: .relaxed) >= maxRequests
    }

    private func acceptLoop() {
        var idle = 0.0
        while !isDone && idle < idleTimeout {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 100)
            if ready <= 0 {
                idle += 0.1
                continue
            }
            idle = 0
            let connection = accept(listener, nil, nil)
            if connection < 0 { continue }
            var timeout = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
        close(listener)
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while !isDone {
            // Read the head.
            var headEnd: Int?
            while headEnd == nil {
                headEnd = Self.find([13, 10, 13, 10], in: buffer)
                if headEnd != nil { break }
                guard buffer.count < 65_536 else { return }
                let count = read(connection, &chunk, chunk.count)
                if count <= 0 { return }
                buffer.append(contentsOf: chunk[0..<count])
            }
            guard let end = headEnd else { return }
            let head = String(decoding: buffer[0..<end], as: UTF8.self)
            var lines = head.components(separatedBy: "\r\n")
            let requestLine = lines.removeFirst().split(separator: " ")
            guard requestLine.count >= 2 else { return }
            var headers: [String: String] = [:]
            for line in lines {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            guard length >= 0, length <= 16_777_216, headers["transfer-encoding"] == nil else { return }
            buffer.removeFirst(end + 4)
            while buffer.count < length {
                let count = read(connection, &chunk, chunk.count)
                if count <= 0 { return }
                buffer.append(contentsOf: chunk[0..<count])
            }
            let body = Data(buffer[0..<length])
            buffer.removeFirst(length)
            let request = LoopbackRequest(
                method: String(requestLine[0]), target: String(requestLine[1]), headers: headers, body: body)
            served.wrappingAdd(1, ordering: .relaxed)
            let response = handler(request)
            let keepAlive = headers["connection"]?.lowercased() != "close" && !isDone
            var text = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
            for (name, value) in response.headers.sorted(by: { $0.key < $1.key }) { text += "\(name): \(value)\r\n" }
            text +=
                "Content-Length: \(response.body.count)\r\nConnection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
            var bytes = Array(text.utf8)
            bytes.append(contentsOf: response.body)
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                if count <= 0 { return }
                sent += count
            }
            if !keepAlive { return }
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if Array(haystack[index..<index + needle.count]) == needle { return index }
        }
        return nil
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 201: "Created"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 400: "Bad Request"
        case 404: "Not Found"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    /// A TCP socket listening on 127.0.0.1 at a port the system chose, and that port.
    public static func listeningSocket(backlog: Int32) throws -> (descriptor: Int32, port: UInt16) {
        #if canImport(Glibc)
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let socketFD = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard socketFD >= 0 else { throw LoopbackServerError.system("socket", errno) }
        var yes: Int32 = 1
        setsockopt(socketFD, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(socketFD, backlog) == 0 else {
            let code = errno
            close(socketFD)
            throw LoopbackServerError.system("bind/listen", code)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        return (socketFD, UInt16(bigEndian: actual.sin_port))
    }
}

/// Why the loopback server could not start.
public enum LoopbackServerError: Error {
    /// A system call failed with errno.
    case system(String, Int32)
}
