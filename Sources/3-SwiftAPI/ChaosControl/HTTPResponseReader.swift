import Foundation

/// Where response bytes come from: a socket, or (in tests) bytes in memory.
protocol ByteSource {
    /// Reads up to `buffer.count` bytes; 0 at the end. Throws on timeouts and errors.
    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(ControlError) -> Int
}

/// A status line and headers.
struct HTTPResponseHead: Sendable {
    var status: Int
    /// Lower-cased names.
    var headers: [(name: String, value: String)]

    func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// Reads one HTTP/1.1 response: the head, then the body — sized by Content-Length, chunked,
/// or up to the end of the connection — whole or piece by piece. Bounded everywhere: a head
/// over 64 KiB, a line over 8 KiB, a chunk size that does not parse or a body over the
/// limit is a `badResponse` error, never a crash.
struct HTTPResponseReader<Source: ByteSource> {
    static var maximumHead: Int { 65_536 }

    private var source: Source
    private var buffer: [UInt8] = []
    private var start = 0
    private var ended = false

    init(_ source: Source) {
        self.source = source
    }

    private static func bad(_ message: String) -> ControlError {
        ControlError(
            "badResponse", "the endpoint's answer is not HTTP/1.1 as the control protocol speaks it: \(message)")
    }

    /// Fills the buffer with more bytes; false at the end of the stream.
    private mutating func fill() throws(ControlError) -> Bool {
        if ended { return false }
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 65_536 {
            buffer.removeFirst(start)
            start = 0
        }
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 16_384, alignment: 1)
        defer { scratch.deallocate() }
        let count = try source.read(into: scratch)
        if count <= 0 {
            ended = true
            return false
        }
        buffer.append(contentsOf: scratch[0..<min(count, scratch.count)])
        return true
    }

    /// One line without its CRLF (a bare LF is accepted).
    private mutating func line(limit: Int) throws(ControlError) -> String? {
        while true {
            if let index = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = index
                if end > start, buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let text = String(decoding: buffer[start..<end], as: UTF8.self)
                start = index + 1
                return text
            }
            if buffer.count - start > limit { throw Self.bad("a line is longer than \(limit) bytes") }
            guard try fill() else {
                return nil
            }
        }
    }

    /// Reads the status line and headers (skipping 1xx interim responses).
    mutating func head() throws(ControlError) -> HTTPResponseHead {
        while true {
            guard let statusLine = try line(limit: 8_192) else {
                throw ControlError(
                    "unreachable", "the endpoint closed the connection without answering; is the process still running?"
                )
            }
            let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]),
                (100...599).contains(status)
            else {
                throw Self.bad("the status line is '\(statusLine.prefix(80))'")
            }
            var headers: [(String, String)] = []
            var size = statusLine.utf8.count
            while true {
                guard let header = try line(limit: 8_192) else {
                    throw Self.bad("the connection ended inside the headers")
                }
                if header.isEmpty { break }
                size += header.utf8.count
                guard size <= Self.maximumHead else {
                    throw Self.bad("the headers are longer than \(Self.maximumHead) bytes")
                }
                guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                    throw Self.bad("a header line is '\(header.prefix(80))'")
                }
                let name = header[..<colon].lowercased()
                let value = header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers.append((name, value))
            }
            if (100...199).contains(status) { continue }
            return HTTPResponseHead(status: status, headers: headers)
        }
    }

    /// Reads the body after `head`, handing each decoded piece to `deliver`, which returns
    /// false to stop early. At most `limit` bytes in all.
    mutating func body(
        of head: HTTPResponseHead, limit: Int, _ deliver: (ArraySlice<UInt8>) throws(ControlError) -> Bool
    ) throws(ControlError) {
        var total = 0
        func hand(_ bytes: ArraySlice<UInt8>) throws(ControlError) -> Bool {
            total += bytes.count
            guard total <= limit else { throw Self.bad("the body is longer than \(limit) bytes") }
            return bytes.isEmpty ? true : try deliver(bytes)
        }
        if head.status == 204 || head.status == 304 { return }
        if let encoding = head.header("transfer-encoding"), encoding.lowercased().contains("chunked") {
            while true {
                guard let sizeLine = try line(limit: 1_024) else {
                    throw Self.bad("the connection ended inside a chunked body")
                }
                let hex =
                    sizeLine.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) }
                    ?? ""
                guard !hex.isEmpty, hex.count <= 15, let size = Int(hex, radix: 16), size >= 0 else {
                    throw Self.bad("a chunk size is '\(sizeLine.prefix(80))'")
                }
                if size == 0 {
                    while let trailer = try line(limit: 8_192), !trailer.isEmpty {}
                    return
                }
                guard size <= limit - total else { throw Self.bad("the body is longer than \(limit) bytes") }
                var remaining = size
                while remaining > 0 {
                    if start == buffer.count {
                        guard try fill() else { throw Self.bad("the connection ended inside a chunk") }
                    }
                    let take = min(remaining, buffer.count - start)
                    let piece = buffer[start..<(start + take)]
                    start += take
                    remaining -= take
                    guard try hand(piece) else { return }
                }
                guard let end = try line(limit: 2), end.isEmpty else {
                    throw Self.bad("a chunk does not end with CRLF")
                }
            }
        } else if let lengthText = head.header("content-length") {
            guard let length = Int(lengthText), length >= 0 else {
                throw Self.bad("Content-Length is '\(lengthText.prefix(80))'")
            }
            guard length <= limit else { throw Self.bad("the body is longer than \(limit) bytes") }
            var remaining = length
            while remaining > 0 {
                if start == buffer.count {
                    guard try fill() else {
                        throw Self.bad("the connection ended \(remaining) bytes before the body's end")
                    }
                }
                let take = min(remaining, buffer.count - start)
                let piece = buffer[start..<(start + take)]
                start += take
                remaining -= take
                guard try hand(piece) else { return }
            }
        } else {
            while true {
                if start == buffer.count { guard try fill() else { return } }
                let piece = buffer[start...]
                start = buffer.count
                guard try hand(piece) else { return }
            }
        }
    }
}

/// Splits a Server-Sent Events stream into events (`event:`, `data:` lines, a blank line
/// ends one) and comments (lines starting with `:`).
struct ServerSentEventParser {
    struct Event: Equatable {
        var name: String
        var data: String
    }

    enum Item: Equatable {
        case event(Event)
        case comment(String)
    }

    private var pending: [UInt8] = []
    private var name = ""
    private var data: [String] = []
    static var maximumLine: Int { 1_048_576 }

    /// Feeds bytes; returns what they completed.
    mutating func feed(_ bytes: ArraySlice<UInt8>) throws(ControlError) -> [Item] {
        pending.append(contentsOf: bytes)
        var items: [Item] = []
        var lineStart = 0
        for index in pending.indices where pending[index] == UInt8(ascii: "\n") {
            var end = index
            if end > lineStart, pending[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            let line = String(decoding: pending[lineStart..<end], as: UTF8.self)
            lineStart = index + 1
            if line.isEmpty {
                if !data.isEmpty || !name.isEmpty {
                    items.append(
                        .event(Event(name: name.isEmpty ? "message" : name, data: data.joined(separator: "\n"))))
                }
                name = ""
                data = []
            } else if line.hasPrefix(":") {
                items.append(.comment(String(line.dropFirst()).trimmingCharacters(in: .whitespaces)))
            } else {
                let field: Substring
                var value: Substring
                if let colon = line.firstIndex(of: ":") {
                    field = line[..<colon]
                    value = line[line.index(after: colon)...]
                    if value.first == " " { value = value.dropFirst() }
                } else {
                    field = Substring(line)
                    value = ""
                }
                switch field {
                case "event": name = String(value)
                case "data": data.append(String(value))
                default: break  // id, retry: not needed here
                }
            }
        }
        pending.removeFirst(lineStart)
        guard pending.count <= Self.maximumLine else {
            throw ControlError("badResponse", "an event line is longer than \(Self.maximumLine) bytes")
        }
        return items
    }
}
