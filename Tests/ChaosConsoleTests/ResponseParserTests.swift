import ChaosKit
import Foundation
import TestHelpers
import Testing

@testable import ChaosControl

/// Bytes in memory, handed out in pieces of the given sizes.
struct MemorySource: ByteSource {
    var bytes: [UInt8]
    var pieces: [Int]
    var offset = 0
    var piece = 0

    mutating func read(into buffer: UnsafeMutableRawBufferPointer) throws(ControlError) -> Int {
        guard offset < bytes.count else { return 0 }
        let size = pieces.isEmpty ? buffer.count : max(1, pieces[piece % pieces.count])
        piece += 1
        let count = min(size, buffer.count, bytes.count - offset)
        for index in 0..<count { buffer[index] = bytes[offset + index] }
        offset += count
        return count
    }
}

func parse(_ text: [UInt8], pieces: [Int] = [], limit: Int = 1 << 20) throws(ControlError) -> (Int, [UInt8]) {
    var reader = HTTPResponseReader(MemorySource(bytes: text, pieces: pieces))
    let head = try reader.head()
    var body: [UInt8] = []
    try reader.body(of: head, limit: limit) {
        body.append(contentsOf: $0)
        return true
    }
    return (head.status, body)
}

/// The client's own HTTP/1.1 response reader and SSE parser: exact on good input, a
/// `badResponse` error (never a crash) on anything else.
@Suite struct ResponseParserTests {
    static let chunked = Array(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n"
            .utf8)
    static let sized = Array(
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 422 Unprocessable\r\ncontent-length: 11\r\n\r\n{\"a\": true}".utf8)

    @Test func readsChunkedSizedAndInterimResponsesInAnyPieces() throws {
        for pieces in [[], [1], [2, 3], [7], [64]] {
            let (status, body) = try parse(Self.chunked, pieces: pieces)
            #expect(status == 200)
            #expect(String(decoding: body, as: UTF8.self) == "hello, world")
            let (sizedStatus, sizedBody) = try parse(Self.sized, pieces: pieces)
            #expect(sizedStatus == 422)
            #expect(String(decoding: sizedBody, as: UTF8.self) == "{\"a\": true}")
        }
        let (_, untilClose) = try parse(Array("HTTP/1.0 200 OK\n\nall of it".utf8))
        #expect(String(decoding: untilClose, as: UTF8.self) == "all of it")
    }

    @Test func refusesWhatIsNotTheProtocol() {
        let bad = [
            "", "SSH-2.0-OpenSSH\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhelloXX",
            "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Long: \(String(repeating: "a", count: 8_000))\r\n", count: 10)
                + "\r\n",
        ]
        for text in bad {
            #expect(throws: ControlError.self, "\(text.prefix(40))") { _ = try parse(Array(text.utf8)) }
        }
        #expect(throws: ControlError.self) { _ = try parse(Self.sized, limit: 4) }
    }

    @Test(.disabled(if: Sanitizers.thread, Sanitizers.fuzzReason))
    func mutatedResponsesNeverCrash() {
        var random = SeededRandom(seed: 14)
        let seeds = [Self.chunked, Self.sized]
        for round in 0..<20_000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                guard !bytes.isEmpty else { break }
                let index = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: bytes[index] = UInt8.random(in: 0...255, using: &random)
                case 1: bytes.remove(at: index)
                case 2: bytes.insert(contentsOf: bytes[index...].prefix(8), at: index)
                default: bytes = Array(bytes.prefix(index))
                }
            }
            _ = try? parse(bytes, pieces: [Int.random(in: 1...32, using: &random)], limit: 4_096)
            var sse = ServerSentEventParser()
            _ = try? sse.feed(bytes[...])
        }
    }

    @Test func serverSentEventsSplitAnywhere() throws {
        let stream = Array(
            "retry: 1000\n: connected\n\nevent: act\ndata: {\"a\":1}\n\n: keep-alive\n\nevent: act\r\ndata: x\r\ndata: y\r\n\r\ndata: plain\n\n"
                .utf8)
        let expected: [ServerSentEventParser.Item] = [
            .comment("connected"), .event(.init(name: "act", data: "{\"a\":1}")), .comment("keep-alive"),
            .event(.init(name: "act", data: "x\ny")), .event(.init(name: "message", data: "plain")),
        ]
        for split in 0...stream.count {
            var parser = ServerSentEventParser()
            let items = try parser.feed(stream[..<split]) + parser.feed(stream[split...])
            #expect(items == expected, "split at \(split)")
        }
    }

    @Test func endpointAddresses() throws {
        #expect(try ControlAddress("http://127.0.0.1:4567").hostHeader == "127.0.0.1:4567")
        #expect(try ControlAddress("http://[::1]:80/").hostHeader == "[::1]:80")
        #expect(try ControlAddress("unix:/tmp/a.sock").hostHeader == "localhost")
        for bad in ["ftp://x:1", "http://:1", "http://x", "http://x:0", "http://x:70000", "unix:rel", "http://[::1:80"]
        {
            #expect(throws: ControlError.self, "\(bad)") { _ = try ControlAddress(bad) }
        }
    }
}
