// A misbehaving HTTP/1.1 server on 127.0.0.1, for causing real network failures in tests:
// a body cut short (by FIN or by RST), a server that never answers, an empty reply, and a
// port nobody listens on. It serves a bounded number of connections and stops by itself.
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a ``FaultServer`` does with each connection.
enum FaultBehaviour: Sendable {
    /// Sends the head with `Content-Length: declared` and `sent` bytes of `body`, then
    /// closes: with a reset (RST, `SO_LINGER` 0) when `reset`, else a plain close (FIN).
    case cutBody(body: Data, declared: Int, sent: Int, reset: Bool)
    /// Sends the head without Content-Length and `sent` bytes of the body, then closes:
    /// the body is delimited by the close, so the client cannot tell it was cut.
    case closeDelimited(body: Data, sent: Int)
    /// Reads the request and never answers (until the server stops).
    case neverAnswers
    /// Closes the connection as soon as the request arrived, without a byte.
    case emptyReply
}

final class FaultServer: Sendable {
    let port: UInt16
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    private let listener: Int32
    private let behaviour: FaultBehaviour
    private let stopped = Atomic<Bool>(false)
    private let connections = Atomic<Int>(0)

    /// How many connections the server accepted.
    var connectionCount: Int { connections.load(ordering: .relaxed) }

    init(_ behaviour: FaultBehaviour, lifetime: Double = 20) throws {
        let (socketFD, port) = try Self.listeningSocket()
        self.listener = socketFD
        self.port = port
        self.behaviour = behaviour
        let thread = Thread { [self] in acceptLoop(lifetime: lifetime) }
        thread.start()
    }

    /// A port on 127.0.0.1 that nothing listens on (bound once, then closed).
    static func closedPort() throws -> UInt16 {
        let (socketFD, port) = try listeningSocket()
        close(socketFD)
        return port
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
    }

    private static func listeningSocket() throws -> (Int32, UInt16) {
        try LoopbackServer.listeningSocket(backlog: 16)
    }

    private func acceptLoop(lifetime: Double) {
        var waited = 0.0
        while !stopped.load(ordering: .relaxed) && waited < lifetime {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            if poll(&descriptor, 1, 50) <= 0 {
                waited += 0.05
                continue
            }
            let connection = accept(listener, nil, nil)
            if connection < 0 { continue }
            connections.wrappingAdd(1, ordering: .relaxed)
            let thread = Thread { [self] in serve(connection, lifetime: lifetime) }
            thread.start()
        }
        close(listener)
    }

    private func serve(_ connection: Int32, lifetime: Double) {
        // Read the request head (and whatever body came with it).
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var received = [UInt8]()
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while !received.contains(13) || String(decoding: received, as: UTF8.self).range(of: "\r\n\r\n") == nil {
            let count = read(connection, &buffer, buffer.count)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        func send(_ bytes: [UInt8]) {
            var sent = 0
            while sent < bytes.count {
                let count = bytes[sent...].withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                if count <= 0 { return }
                sent += count
            }
        }
        switch behaviour {
        case .cutBody(let body, let declared, let sent, let reset):
            send(
                Array(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: \(declared)\r\n\r\n"
                        .utf8) + Array(body.prefix(sent)))
            usleep(50_000)
            if reset {
                var option = linger(l_onoff: 1, l_linger: 0)
                setsockopt(connection, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
            }
            close(connection)
        case .closeDelimited(let body, let sent):
            send(
                Array("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n".utf8)
                    + Array(body.prefix(sent)))
            usleep(50_000)
            close(connection)
        case .neverAnswers:
            var waited = 0.0
            while !stopped.load(ordering: .relaxed) && waited < lifetime {
                usleep(50_000)
                waited += 0.05
            }
            close(connection)
        case .emptyReply:
            close(connection)
        }
    }
}
