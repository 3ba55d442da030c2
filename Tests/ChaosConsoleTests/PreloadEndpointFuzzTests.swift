import ChaosKit
import Foundation
import Synchronization
import TestHelpers
import Testing

@testable import ChaosControl

/// The attack suite of issue #21, kept: a fuzzer of the control endpoint that
/// `CHAOS_CONTROL=unix` starts inside a `chaos run` child. Tens of thousands of mutated
/// requests (the classic attacks among them) arrive from eight connections at once, while a
/// hundred slow clients trickle and `status` is asked every 200 ms, in a program that closed
/// every descriptor it inherited, as daemons do. Every answer must be well-formed HTTP/1.1
/// with a JSON body in valid UTF-8; afterwards the program runs on unharmed, the endpoint
/// answers, and the program's memory and descriptors are where they were.
///
/// `CHAOS_FUZZ_REQUESTS=200000` sends more requests; `CHAOS_FUZZ_SEED=N` sends a run's
/// requests again (each failure names its seed).
@Suite(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct PreloadEndpointFuzzTests {
    static let harmless = PreloadControlTests.harmless

    /// The daemon pattern (every inherited descriptor closed, so the listener takes fd 3),
    /// then a loop that checks each of its own connections: a byte sent must come back
    /// through its listener. A connection the endpoint took prints `lost`. A connect that a
    /// fuzzed plan refuses prints `refused`, and the loop goes on: applied chaos cannot end it.
    static let daemon = """
        import ctypes, os, socket, time
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG: SIGKILL when its parent goes
        os.closerange(3, 1024)
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(128)
        server.settimeout(5)
        print("port", server.getsockname()[1], "fd", server.fileno(), flush=True)
        while True:
            client = socket.socket()
            try:
                client.connect(server.getsockname())
                client.sendall(b"x")
            except OSError as error:
                print("refused", error.errno, flush=True)
                client.close()
                time.sleep(0.02)
                continue
            try:
                connection, _ = server.accept()
                print("ok" if connection.recv(1) == b"x" else "lost", flush=True)
                connection.close()
            except socket.timeout:
                print("lost", flush=True)
            client.close()
            time.sleep(0.02)
        """

    /// Runs the daemon as a child of its own, and waits for it. Foundation's Process takes
    /// the closing of a socket its child inherited for the child's end, and then waits for
    /// it, holding up every other process of the test run: a daemon it started itself
    /// would stall them all for as long as the fuzz runs. Here the parent keeps the socket.
    static let parent = """
        import os, sys
        pid = os.fork()
        if pid == 0:
            os.execv(sys.executable, [sys.executable, "-c", sys.argv[1]])
        print("daemon", pid, flush=True)
        os.waitpid(pid, 0)
        """

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }

    @Test func mutatedRequestsLeaveTheProgramAndItsEndpointUnharmed() async throws {
        let environment = ProcessInfo.processInfo.environment
        let total = environment["CHAOS_FUZZ_REQUESTS"].flatMap { Int($0) } ?? 20_000
        let seed = environment["CHAOS_FUZZ_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max)
        let replay = "seed \(seed) (CHAOS_FUZZ_SEED=\(seed) sends these requests again)"
        let child = try PreloadChild(profile: Self.harmless, command: ["python3", "-c", Self.parent, Self.daemon])
        defer { child.stop() }
        let pid = try #require(Int32(try await child.line(startingWith: "daemon ").dropFirst(7)))
        defer { kill(pid, SIGKILL) }
        let listening = try await child.line(startingWith: "port ")
        #expect(listening.hasSuffix(" fd 3"), "the daemon's listener took the lowest descriptor: \(listening)")
        let endpoint = try await child.endpoint(of: pid)
        let path = String(endpoint.url.dropFirst(5))
        let fuzzer = EndpointFuzzer(path: path, token: endpoint.token, seed: seed)
        let started = ContinuousClock.now

        // The endpoint's buffers and the allocator's arenas take their working size first.
        let warmUp = min(2_000, total / 10)
        var report = try await fuzzer.run(0..<warmUp)
        let before = try await ProcessUsage.baseline(of: pid)

        let stop = Locked(false)
        defer { stop.withLock { $0 = true } }
        let slowClients = Task { try await offload { SlowClients.trickle(path: path, connections: 100, until: stop) } }
        // A liveness bound, not a speed: an endpoint held up by the fuzz would not answer at all.
        let quick = ControlClient(endpoint, timeout: .seconds(30))
        let watch = Task { try await offload { StatusWatch.ask(quick, pid: pid, until: stop) } }
        let linesBefore = child.output.count
        report.merge(try await fuzzer.run(warmUp..<total))
        stop.withLock { $0 = true }
        let slow = try await slowClients.value
        let watched = try await watch.value
        let linesDuring = child.output.count - linesBefore
        let elapsed = ContinuousClock.now - started

        // Whatever the fuzzed plans applied goes; the program's own connections go through.
        let client = ControlClient(endpoint, timeout: .seconds(30))
        _ = try await offload { try client.revertAll() }
        try await child.line(startingWith: "ok", after: child.output.count)
        #expect(try await offload { try quick.status() }.pid == pid, "the endpoint answers")
        let after = try await ProcessUsage.settled(of: pid, toward: before)

        let statuses = report.byStatus.sorted { $0.key < $1.key }.map { "\($0.value)×\($0.key)" }
        print(
            """
            endpoint fuzz, \(replay)
              \(report.requests) requests in \(elapsed) (\(Int(Double(report.requests) / Self.seconds(elapsed)))/s)
              answers: \(statuses.joined(separator: ", ")); closed without an answer: \(report.unanswered)
              invalid answers: \(report.invalid) (\(report.invalidUTF8) not UTF-8); whole requests dropped: \(report.droppedWhole), \
            late: \(report.late), hung: \(report.hung)
              slow clients: \(slow.connections), turned away: \(slow.turnedAway); status asked \(watched.calls) times, \
            slowest \(watched.slowest), failed \(watched.failures.count)
              the program printed \(linesDuring) lines meanwhile; RSS \(before.residentKiB) → \(after.residentKiB) KiB; \
            descriptors per thread \(before.descriptors.values.sorted()) → \(after.descriptors.values.sorted())
            """)

        #expect(report.requests == total)
        #expect(
            report.invalid == 0,
            "\(replay): \(report.invalid) invalid answers (\(report.invalidUTF8) not UTF-8), e.g.\n\(report.examples.joined(separator: "\n"))"
        )
        #expect(report.hung == 0, "\(replay): \(report.hung) connections neither answered nor closed in 8 s")
        #expect(report.connectFailures == 0, "\(replay): \(report.connectFailures) connects failed")
        #expect(
            report.droppedWhole == 0,
            "\(replay): \(report.droppedWhole) whole requests closed without an answer, e.g. \(report.dropped)")
        #expect(
            report.byStatus[500] == nil,
            "\(replay): the endpoint failed \(report.byStatus[500] ?? 0) times, e.g.\n\(report.failures.joined(separator: "\n"))"
        )
        for status in [200, 201, 400, 401, 403, 404, 405, 409, 413, 415, 422] where total >= 20_000 {
            #expect(report.byStatus[status, default: 0] > 0, "\(replay): no answer \(status): the corpus lost a route")
        }
        #expect(slow.invalid.isEmpty, "slow clients were answered otherwise than 503: \(slow.invalid.prefix(3))")
        #expect(slow.turnedAway > 0, "the slow clients kept the endpoint full: some were turned away")
        #expect(
            watched.calls > 0 && watched.failures.isEmpty, "status answered every time: \(watched.failures.prefix(5))")

        #expect(child.process.isRunning && kill(pid, 0) == 0, "the daemon and its parent live")
        #expect(linesDuring > 0, "the program went on with its own work during the fuzz")
        #expect(!child.output.contains("lost"), "every connection of the program's came back to it")
        // Bound: the allocator may keep what the warm-up did not reach of eight 1 MiB
        // request buffers; a leak of even an 8 KiB request buffer per request is 160 MiB.
        #expect(
            after.residentKiB - before.residentKiB < 8 * 1024,
            "RSS grew from \(before.residentKiB) to \(after.residentKiB) KiB")
        #expect(
            after.settled,
            "descriptors per thread \(before.descriptors) before, \(after.descriptors) after the fuzz")
    }

    /// Found by the fuzzer: enabling an entry that takes the enabled entries past the
    /// engine's limit of 256 answered 500 systemFailure. It is the user's to change, so a
    /// 422 naming the entry, and nothing changes.
    @Test func enablingPastTheEnginesLimitIsRefusedAndChangesNothing() async throws {
        let child = try PreloadChild(profile: Self.harmless)
        defer { child.stop() }
        try await child.line(startingWith: "port ")
        let client = ControlClient(try await child.endpoint(), timeout: .seconds(30))
        let one = "entry dns\nnode 0 composite\ncase 1 host=limit.invalid\nnode 1 fail ret=EAI_FAIL\n"
        // With the start entry, 256.
        let first = try await offload {
            try client.apply(plan: "chaos-plan 1\n" + String(repeating: one, count: 255))
        }.entries[0]
        _ = try await offload { try client.setEnabled(false, entry: first) }
        _ = try await offload { try client.apply(plan: "chaos-plan 1\n" + one) }
        do {
            _ = try await offload { try client.setEnabled(true, entry: first) }
            Issue.record("an entry past the engine's limit was enabled")
        } catch let error as ControlError {
            #expect(error.status == 422 && error.kind == "invalidProfile", "\(error)")
            #expect(error.subject == "entry \(first)", "\(error)")
        }
        let entries = try await offload { try client.entries() }
        #expect(entries.count == 257 && entries.filter(\.enabled).count == 256)
        #expect(entries.first { $0.id == first }?.enabled == false)
    }
}

// MARK: - Requests

/// One request before it is put into bytes. Mutations at this level keep it well-formed
/// enough to reach the checks behind the first ones (the token, the length, the route).
private struct FuzzRequest {
    enum Length {
        case actual
        case text(String)
    }

    var method = "GET"
    var target: [UInt8]
    var version = "HTTP/1.1"
    var headers: [(name: String, value: [UInt8])]
    var type: String?
    var lengths: [Length] = []
    var body: [UInt8] = []
    /// Bytes after the body: a pipelined request, or junk.
    var trailing: [UInt8] = []

    var bytes: [UInt8] {
        var out = Array("\(method) ".utf8) + target + Array(" \(version)\r\n".utf8)
        for (name, value) in headers { out += Array("\(name): ".utf8) + value + [13, 10] }
        if let type { out += Array("Content-Type: \(type)\r\n".utf8) }
        for length in lengths {
            switch length {
            case .actual: out += Array("Content-Length: \(body.count)\r\n".utf8)
            case .text(let text): out += Array("Content-Length: \(text)\r\n".utf8)
            }
        }
        return out + [13, 10] + body + trailing
    }
}

/// Makes request `index` of a run from the seed (and the newest entry id, which only picks
/// ids), so that a failing request can be made again; sends it on a connection of its own
/// and checks the answer.
private final class EndpointFuzzer: Sendable {
    let path: String
    let token: String
    let seed: UInt64
    /// The newest entry id an answer named: requests about entries name ids near it, so
    /// that they meet live entries (ids are never reused).
    let newest = Atomic<Int>(1)

    static let lanes = 8

    init(path: String, token: String, seed: UInt64) {
        self.path = path
        self.token = token
        self.seed = seed
    }

    /// Sends the requests of `range` from eight connections at once.
    func run(_ range: Range<Int>) async throws -> FuzzReport {
        try await withThrowingTaskGroup(of: FuzzReport.self) { group in
            for lane in 0..<Self.lanes {
                group.addTask {
                    try await offload {
                        var report = FuzzReport()
                        for index in stride(from: range.lowerBound + lane, to: range.upperBound, by: Self.lanes) {
                            self.send(index, into: &report)
                        }
                        return report
                    }
                }
            }
            return try await group.reduce(into: FuzzReport()) { $0.merge($1) }
        }
    }

    func generator(for index: Int) -> SeededRandom {
        var mixer = SeededRandom(seed: seed ^ UInt64(index))
        return SeededRandom(seed: mixer.next())
    }

    func send(_ index: Int, into report: inout FuzzReport) {
        var random = generator(for: index)
        let request = Mutator.request(&random, token: token, newest: newest.load(ordering: .relaxed))
        let complete = Completeness.answersWithoutMore(request, token: token)
        report.requests += 1
        let exchange: Exchange
        do {
            exchange = try Exchange.run(request, complete: complete, path: path)
        } catch {
            report.connectFailures += 1
            report.note("request \(index): \(error)")
            return
        }
        if exchange.hung {
            report.hung += 1
            report.note("request \(index) hung: \(Escaped(request))")
        }
        if exchange.late { report.late += 1 }
        guard !exchange.received.isEmpty else {
            report.unanswered += 1
            if complete && !exchange.late {
                report.droppedWhole += 1
                if report.dropped.count < 3 { report.dropped.append("request \(index): \(Escaped(request))") }
            }
            return
        }
        switch AnswerCheck.status(of: exchange.received) {
        case .success(let status):
            report.byStatus[status, default: 0] += 1
            if status == 500, report.failures.count < 3 {
                report.failures.append("request \(index): \(Escaped(request))\n  got \(Escaped(exchange.received))")
            }
            if status == 201, let id = AnswerCheck.lastEntryID(in: exchange.received) {
                _ = newest.max(id, ordering: .relaxed)
            }
        case .failure(let problem):
            report.invalid += 1
            if problem.notUTF8 { report.invalidUTF8 += 1 }
            report.note(
                "request \(index): \(problem.description)\n  sent \(Escaped(request))\n  got \(Escaped(exchange.received))"
            )
        }
    }
}

/// What a run found.
private struct FuzzReport: Sendable {
    var requests = 0
    var byStatus: [Int: Int] = [:]
    /// Closed without an answer: requests that never came whole, and changes whose client
    /// hung up first.
    var unanswered = 0
    var invalid = 0
    var invalidUTF8 = 0
    /// Requests taken for whole that got no answer in 2 s (then ended with a half-close).
    var late = 0
    /// Connections the endpoint neither answered nor closed in 8 s.
    var hung = 0
    var connectFailures = 0
    /// Whole requests closed without an answer.
    var droppedWhole = 0
    var examples: [String] = []
    var dropped: [String] = []
    var failures: [String] = []

    mutating func note(_ example: String) {
        if examples.count < 12 { examples.append(example) }
    }

    mutating func merge(_ other: FuzzReport) {
        requests += other.requests
        byStatus.merge(other.byStatus, uniquingKeysWith: +)
        unanswered += other.unanswered
        invalid += other.invalid
        invalidUTF8 += other.invalidUTF8
        late += other.late
        hung += other.hung
        connectFailures += other.connectFailures
        droppedWhole += other.droppedWhole
        for example in other.examples { note(example) }
        dropped += other.dropped
        failures += other.failures
    }
}

/// A valid request of the corpus, then up to three mutations.
private enum Mutator {
    static func request(_ random: inout SeededRandom, token: String, newest: Int) -> [UInt8] {
        var request = corpus(&random, token: token, newest: newest)
        let rounds = random.next() % 10 == 0 ? 0 : Int.random(in: 1...3, using: &random)
        var byteLevel: [ByteMutation] = []
        for _ in 0..<rounds {
            if Bool.random(using: &random) {
                RequestMutation.pick(&random).apply(to: &request, &random, token: token, newest: newest)
            } else {
                byteLevel.append(ByteMutation.allCases.randomElement(using: &random)!)
            }
        }
        var bytes = request.bytes
        for mutation in byteLevel { mutation.apply(to: &bytes, &random) }
        return bytes
    }

    /// An entry id: mostly near the newest, sometimes one long gone or never made.
    static func entryID(_ random: inout SeededRandom, newest: Int) -> Int {
        switch random.next() % 8 {
        case 0: Int.random(in: 1...3, using: &random)
        case 1: Int.random(in: 1...1_000_000, using: &random)
        default: max(1, newest - Int.random(in: -1...12, using: &random))
        }
    }

    static func corpus(_ random: inout SeededRandom, token: String, newest: Int) -> FuzzRequest {
        let id = entryID(&random, newest: newest)
        var request = FuzzRequest(
            target: Array("/v1/status".utf8),
            headers: [
                ("Host", Array("localhost".utf8)), ("Authorization", Array("Bearer \(token)".utf8)),
                ("Connection", Array("close".utf8)),
            ])
        func change(_ method: String, _ target: String) {
            request.method = method
            request.target = Array(target.utf8)
            request.lengths = [.actual]
        }
        switch random.next() % 16 {
        case 0: break
        case 1: request.target = Array("/v1/entries".utf8)
        case 2: request.target = Array("/v1/entries/\(id)".utf8)
        case 3, 4, 5, 6:
            change("POST", "/v1/entries?source=fuzz-\(random.next() % 100)")
            request.type = "text/x-chaos-plan"
            request.body = Array(Plans.valid.randomElement(using: &random)!.utf8)
        case 7: change("DELETE", "/v1/entries/\(id)")
        case 8: change("POST", "/v1/entries/\(id)/enable")
        case 9: change("POST", "/v1/entries/\(id)/disable")
        case 10: request.target = Array("/v1/time".utf8)
        case 11:
            // Not on virtual time: 409 notRunning, at once.
            change("POST", "/v1/time/advance?by=\(["1h", "90m", "250ms", "1d"].randomElement(using: &random)!)")
        case 12: change("DELETE", "/v1/time/advance")
        case 13: change("POST", "/v1/go")
        case 14:
            // Reverting everything now and then keeps the entries under the engine's limits.
            if random.next() % 3 == 0 { change("DELETE", "/v1/entries") }
        default: request.target = Array("/v1/entries/\(id)/enable".utf8)
        }
        return request
    }
}

/// Plans that apply cleanly and cannot stop the daemon: their entries meet nothing it does
/// (port 1, a path that does not exist, names it never looks up) or let it retry.
private enum Plans {
    static let valid = [
        "chaos-plan 1\nentry connect label=\"fuzz\"\nnode 0 composite\ncase 1 port=1\nnode 1 fail errno=ECONNREFUSED\n",
        """
        chaos-plan 1
        seed 42
        entry files label="disk \\xc3\\xb1 full ← fail"
        node 0 composite
        case 1 path=/nonexistent/chaos-fuzz ops=mkdir
        node 1 probability p=0.5 child=2
        node 2 fail errno=ENOSPC

        """,
        "chaos-plan 1\nentry dns label=\"ñ dns ← fail(host: *.invalid)\"\nnode 0 composite\ncase 1 host=*.invalid\nnode 1 fail ret=EAI_NONAME\n",
        "chaos-plan 1\nentry getenv\nnode 0 composite\ncase 1 name=CHAOS_FUZZ_UNUSED\nnode 1 set value=\"x y\"\n",
        """
        chaos-plan 1
        # refused three times, then through
        entry connect label="→ 127.0.0.2"
        node 0 composite
        case 1 host=127.0.0.2 port=1
        node 1 sequential children=2*3,3
        node 2 fail errno=ECONNREFUSED
        node 3 original

        """,
        """
        chaos-plan 1
        seed 0x10
        entry connect family=inet6 label="v6"
        node 0 composite
        case 1 port=2
        node 1 times n=3 child=2
        node 2 fail errno=ETIMEDOUT
        entry dns
        node 0 composite
        case 1 host=fuzz.invalid
        node 1 fail ret=EAI_AGAIN

        """,
        "chaos-plan 1\n",
    ]

    /// Thousands of entries: past the engine's limit of 256.
    static let thousands: [UInt8] = Array(
        ("chaos-plan 1\n"
            + String(
                repeating:
                    "entry connect label=\"many\"\nnode 0 composite\ncase 1 port=1\nnode 1 fail errno=ECONNREFUSED\n",
                count: 3_000)).utf8)

    /// As many entries as a plan may have alone (with others applied, the sum is refused).
    static let most: [UInt8] = Array(
        ("chaos-plan 1\n"
            + String(
                repeating: "entry dns\nnode 0 composite\ncase 1 host=most.invalid\nnode 1 fail ret=EAI_FAIL\n",
                count: 256))
            .utf8)

    /// A body of 1 MiB, the most a request may carry: a plan of comments.
    static let megabyte: [UInt8] = {
        let line = Array("# \(String(repeating: "m", count: 1021))\n".utf8)
        var body = Array("chaos-plan 1\n".utf8)
        while body.count + line.count <= 1 << 20 { body += line }
        return body + [UInt8](repeating: UInt8(ascii: "#"), count: (1 << 20) - body.count)
    }()

    /// JSON nested 100,000 deep.
    static let deepJSON: [UInt8] =
        [UInt8](repeating: UInt8(ascii: "["), count: 100_000) + [UInt8](repeating: UInt8(ascii: "]"), count: 100_000)

    static let deepObject: [UInt8] =
        Array(String(repeating: "{\"a\":", count: 20_000).utf8) + [49]
        + [UInt8](repeating: UInt8(ascii: "}"), count: 20_000)
}

/// Mutations of the request's parts: the classic attacks.
private enum RequestMutation: CaseIterable {
    case duplicateHeader, oversizedHeader, manyHeaders, duplicateContentLength, chunked, longerLength,
        shorterLength, oddLength, pipelined, hugeBody, deepJSON, thousandsOfEntries, longTarget, percentEncoded,
        wrongToken, method, version, host, contentType, planText, noLength

    /// The attacks that cost a megabyte or more come seldom; the rest alike.
    static func pick(_ random: inout SeededRandom) -> RequestMutation {
        let rare: [RequestMutation] = [.hugeBody, .thousandsOfEntries, .deepJSON, .manyHeaders, .oversizedHeader]
        let choice = allCases.randomElement(using: &random)!
        if rare.contains(choice), random.next() % 4 != 0 { return .planText }
        return choice
    }

    func apply(to request: inout FuzzRequest, _ random: inout SeededRandom, token: String, newest: Int) {
        switch self {
        case .duplicateHeader:
            guard let header = request.headers.randomElement(using: &random) else { return }
            let value = Bool.random(using: &random) ? header.value : header.value + Array("x".utf8)
            request.headers.insert((header.name, value), at: Int.random(in: 0...request.headers.count, using: &random))
        case .oversizedHeader:
            let size = Int.random(in: 1_000...40_000, using: &random)
            let name = ["X-Fuzz", "Authorization", "Host", "Cookie"].randomElement(using: &random)!
            request.headers.append((name, [UInt8](repeating: UInt8(ascii: "a"), count: size)))
        case .manyHeaders:
            for number in 0..<Int.random(in: 100...2_000, using: &random) {
                request.headers.append(("X-Fuzz-\(number)", Array("\(number)".utf8)))
            }
        case .duplicateContentLength:
            let second: FuzzRequest.Length =
                Bool.random(using: &random)
                ? .actual : .text("\(request.body.count + Int.random(in: 1...10, using: &random))")
            request.lengths += [second]
            if request.lengths.count == 1 { request.lengths += [.actual] }
        case .chunked:
            // CL and TE both, or TE alone: how requests get smuggled.
            let size = String(request.body.count, radix: 16)
            request.body = Array("\(size)\r\n".utf8) + request.body + Array("\r\n0\r\n\r\n".utf8)
            request.headers.append(("Transfer-Encoding", Array("chunked".utf8)))
            if Bool.random(using: &random) { request.lengths = [] }
        case .longerLength:
            request.lengths = [.text("\(request.body.count + Int.random(in: 1...1_000, using: &random))")]
        case .shorterLength:
            request.lengths = [.text("\(Int.random(in: 0...request.body.count, using: &random))")]
        case .oddLength:
            let odd = [
                "-1", "+5", "0x10", "", " 7 ", "1e3", "99999999999999999999", "18446744073709551616", "1048577",
                "\(1 << 40)", "0", "00000000000000000000000000000000000003", "5, 5",
            ]
            request.lengths = [.text(odd.randomElement(using: &random)!)]
        case .pipelined:
            request.trailing += Mutator.corpus(&random, token: token, newest: newest).bytes
            if Bool.random(using: &random) {
                request.trailing += Mutator.corpus(&random, token: token, newest: newest).bytes
            }
        case .hugeBody:
            request.method = "POST"
            request.type = "text/x-chaos-plan"
            if Bool.random(using: &random) {
                request.body = Plans.megabyte
                request.lengths = [.actual]
            } else {
                // Declared too large: refused from the head, before any of it is read.
                request.lengths = [.text("\((1 << 20) + Int.random(in: 1...(1 << 30), using: &random))")]
            }
        case .deepJSON:
            request.method = "POST"
            request.target = Array("/v1/entries".utf8)
            request.type = Bool.random(using: &random) ? "application/json" : "text/x-chaos-plan"
            request.body = Bool.random(using: &random) ? Plans.deepJSON : Plans.deepObject
            request.lengths = [.actual]
        case .thousandsOfEntries:
            request.method = "POST"
            request.target = Array("/v1/entries?source=many".utf8)
            request.type = "text/x-chaos-plan"
            request.body = Bool.random(using: &random) ? Plans.thousands : Plans.most
            request.lengths = [.actual]
        case .longTarget:
            let count = Int.random(in: 100...6_000, using: &random)
            switch random.next() % 3 {
            case 0: request.target = Array("/v1/entries/".utf8) + [UInt8](repeating: UInt8(ascii: "9"), count: count)
            case 1: request.target += Array("?source=".utf8) + [UInt8](repeating: UInt8(ascii: "s"), count: count)
            default: request.target = Array("/v1/".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: count)
            }
        case .percentEncoded:
            let tails = ["%ff%fe", "%00", "%c3%28", "%e2%82", "%zz", "%", "%2", "%c3%b1", "%F0%9F%98%80", "+%20+"]
            let tail = (0..<Int.random(in: 1...40, using: &random)).map { _ in tails.randomElement(using: &random)! }
                .joined()
            switch random.next() % 3 {
            case 0: request.target += Array("?source=\(tail)".utf8)
            case 1:
                request.target = Array(
                    "/v1/time/advance?by=\(["%31%68", tail, "1h%00"].randomElement(using: &random)!)".utf8)
            default: request.target += Array(tail.utf8)
            }
        case .wrongToken:
            let wrong = (0..<64).map { _ in String(random.next() % 16, radix: 16) }.joined()
            let values = [
                "Bearer \(wrong)", "bearer \(token)", "Bearer  \(token)", "Bearer \(token.prefix(63))",
                "Bearer \(token)0",
                "Basic \(token)", "Bearer", "Bearer \(token.uppercased())",
            ]
            request.headers.removeAll { $0.name == "Authorization" }
            if random.next() % 8 != 0 {
                request.headers.append(("Authorization", Array(values.randomElement(using: &random)!.utf8)))
            }
        case .method:
            request.method = [
                "get", "PATCH", "PUT", "HEAD", "OPTIONS", "POSTPOSTPOSTPOSTPOST", "", "G\tET", "DELETE", "POST",
            ]
            .randomElement(using: &random)!
        case .version:
            request.version = ["HTTP/1.0", "HTTP/2", "HTTP/1.1x", "", "http/1.1", "HTTP/1.1 extra", "HTTP/0.9"]
                .randomElement(using: &random)!
        case .host:
            let choice = random.next() % 6
            request.headers.removeAll { $0.name == "Host" }
            if choice < 4 {
                let host = ["attacker.example", "LOCALHOST", "localhost:80", "localhost\u{0B}"][Int(choice)]
                request.headers.append(("Host", Array(host.utf8)))
            } else {
                request.headers.append(("Host", Array("localhost".utf8)))
                request.headers.append(
                    choice == 4
                        ? ("Origin", Array("http://evil.example".utf8)) : ("Sec-Fetch-Site", Array("cross-site".utf8))
                )
            }
        case .contentType:
            request.type = [
                nil, "application/json", "text/plain; charset=utf-8", "TEXT/X-CHAOS-PLAN", "text/x-chaos-planx",
                "\u{FF}",
            ]
            .randomElement(using: &random)!
        case .planText:
            var lines = request.body.split(separator: 10, omittingEmptySubsequences: false).map(Array.init)
            guard !lines.isEmpty else { return }
            let line = Int.random(in: 0..<lines.count, using: &random)
            let pieces: [[UInt8]] = [
                Array(" label=\"\\xff\\xfe\"".utf8), Array(" label=\"\\xc3\"".utf8), [0xFF, 0xC3, 0x28], [0],
                Array(" label=\"ñ\u{2190}\"".utf8), Array("\nentry connect\nnode 0 fail errno=EINTR".utf8),
                Array(" p=1e309".utf8), Array(" child=99999999999".utf8), Array("\nseed 18446744073709551616".utf8),
                Array(" host=\(String(repeating: "h", count: 5_000))".utf8),
            ]
            lines[line] += pieces.randomElement(using: &random)!
            request.body = Array(lines.joined(separator: [10]))
            if request.method == "GET" { request.method = "POST" }
            request.lengths = [.actual]
        case .noLength:
            request.lengths = []
        }
    }
}

/// Mutations of the bytes as sent.
private enum ByteMutation: CaseIterable {
    case flip, truncate, insert, delete, repeatRange, bareLineFeeds

    func apply(to bytes: inout [UInt8], _ random: inout SeededRandom) {
        guard !bytes.isEmpty else { return }
        func place() -> Int { Int.random(in: 0..<bytes.count, using: &random) }
        switch self {
        case .flip:
            for _ in 0..<Int.random(in: 1...8, using: &random) { bytes[place()] ^= 1 << UInt8(random.next() % 8) }
        case .truncate:
            bytes.removeSubrange(place()...)
        case .insert:
            let inserts: [[UInt8]] = [
                [0], [13], [10], [0xFF], [0xC3, 0x28], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF4, 0x90, 0x80, 0x80],
                [0xE2, 0x82], [13, 10], [13, 10, 13, 10], [0x7F], [0x1B, 0x5B, 0x32, 0x4A],
            ]
            bytes.insert(contentsOf: inserts.randomElement(using: &random)!, at: place())
        case .delete:
            let start = place()
            bytes.removeSubrange(start..<min(bytes.count, start + Int.random(in: 1...64, using: &random)))
        case .repeatRange:
            let start = place()
            let range = Array(bytes[start..<min(bytes.count, start + Int.random(in: 1...64, using: &random))])
            bytes.insert(contentsOf: range, at: place())
        case .bareLineFeeds:
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            var index = 0
            while index < bytes.count {
                if bytes[index] == 13, index + 1 < bytes.count, bytes[index + 1] == 10, Bool.random(using: &random) {
                    index += 1
                    continue
                }
                out.append(bytes[index])
                index += 1
            }
            bytes = out
        }
    }
}

// MARK: - The endpoint's side, as far as the fuzzer needs it

/// Whether the endpoint answers `request` as sent, or waits for bytes that never come (a
/// head without its end, a body shorter than its Content-Length). Mirrors chaos_control.c's
/// `received` and `parse_head`; where it errs, the fuzzer waits 2 s and counts the request
/// as late.
private enum Completeness {
    static let headLimit = 16_384
    static let bodyLimit = 1 << 20

    static func answersWithoutMore(_ request: [UInt8], token: String) -> Bool {
        let searched = request.prefix(headLimit)
        guard let end = find([13, 10, 13, 10], in: searched) else { return request.count >= headLimit }
        let head = Array(request[..<end])
        if head.contains(0) { return true }
        var lines = split(head, by: [13, 10])
        let requestLine = lines.removeFirst()
        guard let version = scanVersion(requestLine), version.starts(with: Array("HTTP/1.".utf8)) else { return true }
        var host: [UInt8]?
        var authorization: [UInt8]?
        var refused = false
        var length: Int?
        var lengths = 0
        for line in lines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = trimmed(Array(line[(colon + 1)...]))
            switch name {
            case "host": host = value
            case "authorization": authorization = value
            case "origin", "transfer-encoding": refused = true
            case "sec-fetch-site": if value == Array("cross-site".utf8) { refused = true }
            case "content-length":
                lengths += 1
                length = lengths == 1 ? decimal(value) : nil
            default: break
            }
        }
        guard let host, String(decoding: host, as: UTF8.self).lowercased() == "localhost", !refused,
            let authorization, authorization.count >= 7,
            String(decoding: authorization.prefix(7), as: UTF8.self).lowercased() == "bearer ",
            trimmed(Array(authorization.dropFirst(7))) == Array(token.utf8)
        else { return true }
        if lengths > 0 && length == nil { return true }
        let want = length ?? 0
        if want > bodyLimit { return true }
        return request.count - (end + 4) >= want
    }

    static func find(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var index = haystack.startIndex
        while index <= haystack.endIndex - needle.count {
            if haystack[index] == needle[0], haystack[index..<(index + needle.count)].elementsEqual(needle) {
                return index
            }
            index += 1
        }
        return nil
    }

    static func split(_ bytes: [UInt8], by separator: [UInt8]) -> [[UInt8]] {
        var parts: [[UInt8]] = []
        var rest = bytes[...]
        while let at = find(separator, in: rest) {
            parts.append(Array(rest[..<at]))
            rest = rest[(at + separator.count)...]
        }
        return parts + [Array(rest)]
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 32 || (9...13).contains(byte) }

    /// The third word `sscanf("%15s %2047s %15s")` reads, or nil when it reads fewer.
    static func scanVersion(_ line: [UInt8]) -> [UInt8]? {
        var index = 0
        var word: [UInt8] = []
        for width in [15, 2047, 15] {
            while index < line.count, isSpace(line[index]) { index += 1 }
            word = []
            while index < line.count, !isSpace(line[index]), word.count < width {
                word.append(line[index])
                index += 1
            }
            if word.isEmpty { return nil }
        }
        return word
    }

    static func trimmed(_ value: [UInt8]) -> [UInt8] {
        var slice = value[...]
        while let first = slice.first, first == 32 || first == 9 { slice = slice.dropFirst() }
        while let last = slice.last, last == 32 || last == 9 || last == 13 { slice = slice.dropLast() }
        return Array(slice)
    }

    /// `strtoll` of the whole value, as the endpoint reads a length; nil for what it refuses.
    static func decimal(_ value: [UInt8]) -> Int? {
        let text = String(decoding: value.drop(while: isSpace), as: UTF8.self)
        guard let number = Int(text), number >= 0 else { return nil }
        return number
    }
}

/// One request on a connection of its own, read until the endpoint closes it.
private struct Exchange {
    var received: [UInt8] = []
    var late = false
    var hung = false

    /// Sends and reads at once, so that neither side waits on a full socket. A request the
    /// endpoint waits on (`complete` false), or one unanswered 2 s after it was sent, is
    /// ended with a half-close: the endpoint then drops it, and closes.
    static func run(_ request: [UInt8], complete: Bool, path: String) throws -> Exchange {
        let fd = try PreloadEndpointLoadTests.connectUnix(path)
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var exchange = Exchange()
        var sent = 0
        var halfClosed = false
        let start = ContinuousClock.now
        var allSent: ContinuousClock.Instant?
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let now = ContinuousClock.now
            if sent == request.count {
                let since = allSent ?? now
                allSent = since
                if !halfClosed && (!complete || now - since > .seconds(2)) {
                    exchange.late = complete
                    shutdown(fd, Int32(SHUT_WR))
                    halfClosed = true
                }
            }
            // The endpoint gives a request 5 s to arrive and its answer 5 s to be taken.
            if now - start > .seconds(8) {
                exchange.hung = true
                return exchange
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN) | (sent < request.count ? Int16(POLLOUT) : 0), revents: 0)
            guard poll(&poller, 1, 50) >= 0 || errno == EINTR else { return exchange }
            if poller.revents & Int16(POLLOUT) != 0 && sent < request.count {
                let wrote = request.withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress! + sent, request.count - sent, Int32(MSG_NOSIGNAL))
                }
                if wrote > 0 {
                    sent += wrote
                } else if errno != EAGAIN && errno != EINTR {
                    // Answered and closed before the rest was read: what came is the answer.
                    sent = request.count
                    halfClosed = true
                }
            }
            if poller.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let got = recv(fd, &buffer, buffer.count, 0)
                if got > 0 {
                    exchange.received += buffer[..<got]
                } else if got == 0 || (errno != EAGAIN && errno != EINTR) {
                    return exchange
                }
            }
        }
    }
}

/// The checks every answer must pass.
private enum AnswerCheck {
    struct Problem: Error {
        let description: String
        var notUTF8 = false
    }

    static let reasons = [
        200: "OK", 201: "Created", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
        405: "Method Not Allowed", 409: "Conflict", 413: "Content Too Large", 415: "Unsupported Media Type",
        422: "Unprocessable Content", 500: "Internal Server Error", 503: "Service Unavailable",
    ]

    /// The status of a well-formed answer: HTTP/1.1, a known status with its reason, one
    /// Content-Length that is the body's, and a body of JSON in valid UTF-8 (an error object
    /// for 4xx and 5xx).
    static func status(of answer: [UInt8]) -> Result<Int, Problem> {
        guard let end = Completeness.find([13, 10, 13, 10], in: answer[...]) else {
            return .failure(Problem(description: "no end of head"))
        }
        guard let head = String(validating: answer[..<end], as: UTF8.self), head.allSatisfy(\.isASCII) else {
            return .failure(Problem(description: "the head is not ASCII", notUTF8: true))
        }
        let body = Array(answer[(end + 4)...])
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2).map(String.init)
        guard parts.count == 3, parts[0] == "HTTP/1.1", let status = Int(parts[1]), reasons[status] == parts[2] else {
            return .failure(Problem(description: "status line '\(statusLine)'"))
        }
        var fields: [String: [String]] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else {
                return .failure(Problem(description: "header '\(line)'"))
            }
            fields[line[..<colon].lowercased(), default: []].append(
                line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        guard let lengths = fields["content-length"], lengths.count == 1, let length = Int(lengths[0]),
            length == body.count
        else {
            return .failure(
                Problem(description: "Content-Length \(fields["content-length"] ?? []) for \(body.count) bytes"))
        }
        guard fields["content-type"] == ["application/json"] else {
            return .failure(Problem(description: "Content-Type \(fields["content-type"] ?? [])"))
        }
        let required = [401: "www-authenticate", 405: "allow", 503: "retry-after"]
        if let name = required[status], fields[name] == nil {
            return .failure(Problem(description: "\(status) without \(name)"))
        }
        guard String(validating: body, as: UTF8.self) != nil else {
            let at = firstInvalidUTF8(body)
            let around = Escaped(Array(body[max(0, at - 60)..<min(body.count, at + 8)]))
            return .failure(Problem(description: "the body is not UTF-8 at byte \(at): …\(around)", notUTF8: true))
        }
        guard let json = try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed]) else {
            return .failure(Problem(description: "the body is not JSON"))
        }
        if status >= 400 {
            guard let error = (json as? [String: Any])?["error"] as? [String: Any], error["kind"] is String,
                error["message"] is String
            else { return .failure(Problem(description: "a \(status) without an error object")) }
        } else if !(json is [String: Any] || json is [Any]) {
            return .failure(Problem(description: "the body is neither an object nor an array"))
        }
        return .success(status)
    }

    static func firstInvalidUTF8(_ bytes: [UInt8]) -> Int {
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var offset = 0
        while case .valid(let scalar) = parser.parseScalar(from: &iterator) { offset += scalar.count }
        return offset
    }

    /// The last id of a 201's `{"entries":[…]}`.
    static func lastEntryID(in answer: [UInt8]) -> Int? {
        guard let end = Completeness.find([13, 10, 13, 10], in: answer[...]),
            let json = try? JSONSerialization.jsonObject(with: Data(answer[(end + 4)...])) as? [String: Any],
            let ids = json["entries"] as? [Int]
        else { return nil }
        return ids.last
    }
}

// MARK: - Beside the fuzz

/// Slow clients (slowloris): `connections` of them at all times, each sending a byte of its
/// head every 200 ms and never its end. The endpoint turns the slowest away with 503 when it
/// is full, and closes the rest when their 5 s are up; those that go are replaced.
private enum SlowClients {
    struct Report: Sendable {
        var connections = 0
        var turnedAway = 0
        var invalid: [String] = []
    }

    static func trickle(path: String, connections: Int, until stop: Locked<Bool>) -> Report {
        var report = Report()
        var open: [Int32] = []
        defer { for fd in open { close(fd) } }
        while !stop.withLock({ $0 }) {
            while open.count < connections, let fd = try? PreloadEndpointLoadTests.connectUnix(path) {
                PreloadEndpointLoadTests.send(fd, "GET /v1/status HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
                open.append(fd)
                report.connections += 1
            }
            open.removeAll { fd in
                let (bytes, closed) = PreloadEndpointLoadTests.receiveAvailable(fd)
                if bytes.isEmpty && !closed {
                    PreloadEndpointLoadTests.send(fd, "s")
                    return false
                }
                if !bytes.isEmpty {
                    switch AnswerCheck.status(of: bytes) {
                    case .success(503): report.turnedAway += 1
                    case .success(let status): report.invalid.append("answered \(status)")
                    case .failure(let problem): report.invalid.append(problem.description)
                    }
                }
                close(fd)
                return true
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return report
    }
}

/// `status` every 200 ms while the fuzz runs. The bound is liveness, not speed: on a loaded
/// machine an answer can take a second (one took 1.06 s under stress-ng and two builds), but
/// an endpoint the fuzz had wedged would not answer within ten.
private enum StatusWatch {
    struct Report: Sendable {
        var calls = 0
        var slowest: Duration = .zero
        var failures: [String] = []
    }

    static func ask(_ client: ControlClient, pid: Int32, until stop: Locked<Bool>) -> Report {
        var report = Report()
        while !stop.withLock({ $0 }) {
            let start = ContinuousClock.now
            // A full endpoint turns a request away (503, or a connection closed while the
            // request was still being written: EPIPE) by design; asked again, it must answer
            // within the liveness bound.
            var lastError: (any Error)?
            var answered = false
            while !answered && ContinuousClock.now - start < .seconds(10) {
                do {
                    let status = try client.status()
                    if status.pid != pid { report.failures.append("status of pid \(status.pid)") }
                    answered = true
                } catch {
                    lastError = error
                    Thread.sleep(forTimeInterval: 0.05)
                }
            }
            if !answered { report.failures.append("\(lastError.map { "\($0)" } ?? "no answer")") }
            let took = ContinuousClock.now - start
            report.calls += 1
            report.slowest = max(report.slowest, took)
            if took > .seconds(10) { report.failures.append("status took \(took)") }
            Thread.sleep(forTimeInterval: 0.2)
        }
        return report
    }
}

/// What a process holds: its resident memory, and the descriptors of each of its threads
/// (the endpoint's thread has a table of its own, so /proc/PID/fd alone would miss them).
private struct ProcessUsage: Sendable {
    var residentKiB: Int
    var descriptors: [Int: Int]
    var settled = true

    static func sample(of pid: Int32) -> ProcessUsage {
        // Read to its end: /proc files report a size of 0.
        let status = String(
            decoding: FileHandle(forReadingAtPath: "/proc/\(pid)/status")?.readDataToEndOfFile() ?? Data(),
            as: UTF8.self)
        let resident = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }.flatMap {
            Int($0.split { $0 == " " || $0 == "\t" }.dropFirst().first ?? "")
        }
        var descriptors: [Int: Int] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? [] {
            guard let tid = Int(task),
                let open = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task/\(task)/fd")
            else { continue }
            descriptors[tid] = open.count
        }
        return ProcessUsage(residentKiB: resident ?? 0, descriptors: descriptors)
    }

    /// The fewest descriptors each thread holds over a second (the program opens and closes
    /// a connection of its own every 20 ms), and the resident memory at its end.
    static func baseline(of pid: Int32) async throws -> ProcessUsage {
        var least = sample(of: pid)
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(50))
            let next = sample(of: pid)
            least.descriptors.merge(next.descriptors, uniquingKeysWith: min)
            least.residentKiB = next.residentKiB
        }
        return least
    }

    /// Samples until every thread holds no more descriptors than in `baseline` (connections
    /// still closing get 15 s), and the resident memory then.
    static func settled(of pid: Int32, toward baseline: ProcessUsage) async throws -> ProcessUsage {
        let deadline = ContinuousClock.now + .seconds(15)
        var least = sample(of: pid)
        while true {
            let settled = baseline.descriptors.allSatisfy { tid, count in (least.descriptors[tid] ?? .max) <= count }
            if settled || ContinuousClock.now > deadline {
                least.settled = settled && least.descriptors.count == baseline.descriptors.count
                return least
            }
            try await Task.sleep(for: .milliseconds(50))
            let next = sample(of: pid)
            least.descriptors.merge(next.descriptors, uniquingKeysWith: min)
            least.residentKiB = next.residentKiB
        }
    }
}

/// Bytes as text for a failure message: printable ASCII as it is, the rest escaped, cut to
/// 300 bytes.
private struct Escaped: CustomStringConvertible {
    let bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var description: String {
        let shown = bytes.prefix(300).map { byte -> String in
            switch byte {
            case 13: "\\r"
            case 10: "\\n"
            case 32..<127 where byte != UInt8(ascii: "\\"): String(UnicodeScalar(byte))
            default: String(format: "\\x%02x", byte)
            }
        }.joined()
        return bytes.count > 300 ? "\(shown)… (\(bytes.count) bytes)" : shown
    }
}
