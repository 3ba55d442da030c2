import Foundation
import TestHelpers
import Testing

@testable import ChaosControl

/// The control endpoint of a `chaos run` child under the loads and programs that once broke
/// it (issue #21): a daemon that closes every descriptor, a fork, hundreds of slow clients,
/// and an advance of virtual time that takes minutes.
@Suite(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct PreloadEndpointLoadTests {
    static let harmless = PreloadControlTests.harmless

    /// A daemon closes every descriptor it did not open, then opens its listener, which
    /// takes the lowest number (3): the endpoint must never accept on it. Each way a program
    /// does that, then the triggers that once made the endpoint accept again: a request,
    /// and SIGSTOP/SIGCONT. Every one of the program's 20 connections must be its own.
    @Test(arguments: ["closerange", "close_range", "dup2"])
    func aDaemonThatClosesEveryDescriptorKeepsAllItsConnections(_ how: String) async throws {
        // Every descriptor but one: Foundation learns that a child ended when the socket it
        // gave the child closes, and then waits for it, so a child that closes that socket
        // stalls every Process of the test run until it exits. The endpoint's own socket
        // is not in this table at all, so keeping the harness's changes nothing it tests.
        let daemon = """
            import os, socket, stat, sys
            how = sys.argv[1]
            def is_socket(fd):
                try:
                    return stat.S_ISSOCK(os.fstat(fd).st_mode)
                except OSError:  # the directory listdir read, closed since
                    return False
            harness = max(fd for fd in map(int, os.listdir("/proc/self/fd")) if fd > 2 and is_socket(fd))
            def close_all_from(low):
                if how == "closerange":
                    os.closerange(low, harness)
                    os.closerange(harness + 1, 1024)
                elif how == "close_range":
                    import ctypes
                    libc = ctypes.CDLL(None, use_errno=True)
                    libc.close_range(low, harness - 1, 0)
                    libc.close_range(harness + 1, 0xFFFFFFFF, 0)
                else:
                    null = os.open("/dev/null", os.O_RDONLY)
                    for fd in range(low, 1024):
                        if fd not in (null, harness):
                            os.dup2(null, fd)
                    os.closerange(low, harness)
                    os.closerange(harness + 1, 1024)
            close_all_from(3)
            server = socket.socket()
            server.bind(("127.0.0.1", 0))
            server.listen(64)
            print("listening", server.fileno(), server.getsockname()[1], flush=True)
            for served in range(20):
                connection, _ = server.accept()
                connection.sendall(b"mine\\n")
                connection.close()
            print("served 20", flush=True)
            # Alive until the test ends: it asks the endpoint once more after this line.
            import time
            time.sleep(600)
            """
        let child = try PreloadChild(profile: Self.harmless, command: ["python3", "-c", daemon, how])
        defer { child.stop() }
        let listening = try await child.line(startingWith: "listening ").split(separator: " ")
        #expect(listening[1] == "3", "the daemon's listener took the lowest descriptor: \(listening)")
        let port = try #require(UInt16(listening[2]))
        let client = try await Self.answeringClient(of: child)
        var answers: [String] = []
        for attempt in 0..<20 {
            // The triggers, between the program's connections.
            if attempt % 5 == 0 {
                do {
                    #expect(try await offload { try client.status() }.runner == child.pid)
                } catch {
                    // What the program printed says whether it ended, and why.
                    throw TestFailure(
                        "status before connection \(attempt) failed: \(error); the program printed \(child.output.suffix(8))"
                    )
                }
            }
            if attempt % 5 == 2 {
                kill(child.pid, SIGSTOP)
                kill(child.pid, SIGCONT)
            }
            answers.append(try await offload { try Self.firstLine(fromPort: port) })
        }
        #expect(answers.filter { $0 == "mine" }.count == 20, "\(answers)")
        try await child.line(startingWith: "served 20")
        #expect(try await offload { try client.status() }.runner == child.pid, "the endpoint still answers")
    }

    /// A forked child holds none of the endpoint's descriptors: once the parent has gone, a
    /// client is told at once that nothing listens, rather than waiting on a socket that a
    /// child keeps open and never serves.
    @Test func aForkedChildDoesNotKeepTheParentsEndpoint() async throws {
        let program = """
            import os, sys, time
            # One write each: lines of the two processes share the pipe.
            if os.fork() == 0:
                os.write(1, b"child %d\\n" % os.getpid())
                time.sleep(600)
                os._exit(0)
            os.write(1, b"parent waits\\n")
            time.sleep(600)
            """
        let child = try PreloadChild(profile: Self.harmless, command: ["python3", "-c", program])
        defer { child.stop() }
        let forked = try #require(Int32(try await child.line(startingWith: "child ").split(separator: " ")[1]))
        defer { kill(forked, SIGKILL) }
        let endpoint = try await child.endpoint()
        let client = ControlClient(endpoint, timeout: .seconds(5))
        #expect(try await offload { try client.status() }.runner == child.pid)
        // The descriptors of the fork's child: none is a socket of the endpoint's.
        let inherited = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(forked)/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(forked)/fd/\($0)")
        }
        let endpointSockets = Self.socketInodes(listeningAt: String(endpoint.url.dropFirst(5)))
        #expect(!endpointSockets.isEmpty, "the endpoint's socket is listed in /proc/net/unix")
        #expect(
            inherited.allSatisfy { link in !endpointSockets.contains { link == "socket:[\($0)]" } },
            "the child holds \(inherited)")
        // The parent goes; its child lives on.
        kill(child.pid, SIGKILL)
        // Dead once a zombie: its descriptors are closed (Process reaps it only later).
        let gone = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < gone,
            let stat = try? String(contentsOfFile: "/proc/\(child.pid)/stat", encoding: .utf8),
            !stat.contains(") Z ")
        {
            try await Task.sleep(for: .milliseconds(10))
        }
        do {
            _ = try await offload { try client.status() }
            Issue.record("a gone process answered")
        } catch let error as ControlError {
            // Told at once (the connection is refused, or closed unanswered), not after the
            // client's timeout: which it was is in the message, not in how long it took.
            #expect(error.kind == "unreachable", "\(error)")
            #expect(!error.message.contains("did not answer in time"), "\(error)")
        }
    }

    /// Two hundred slow clients (slowloris: a byte at a time, idle ones, one that never reads
    /// its answer) and `status` still answers, every time. (Its client's timeout is a
    /// liveness bound: the slow clients stay connected to the end, so an endpoint they held
    /// up would never answer.) The slowest are
    /// turned away with 503 once the endpoint holds as many connections as it keeps.
    @Test func slowClientsDoNotStopStatusAnswering() async throws {
        let child = try PreloadChild(profile: Self.harmless)
        defer { child.stop() }
        // Each program on the way to python (a pyenv shim runs bash first) writes the file.
        try await child.line(startingWith: "port ")
        let endpoint = try await child.endpoint()
        let path = String(endpoint.url.dropFirst(5))
        var slow: [Int32] = []
        defer { for fd in slow { close(fd) } }
        for index in 0..<200 {
            let fd = try Self.connectUnix(path)
            slow.append(fd)
            // Half send the start of a request, the rest nothing at all.
            if index % 2 == 0 { Self.send(fd, "GET /v1/status HTTP/1.1\r\nHost: localhost\r\n") }
        }
        // One asks for the entries and never reads them.
        let unread = try Self.connectUnix(path)
        slow.append(unread)
        Self.send(
            unread, "GET /v1/entries HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(endpoint.token)\r\n\r\n")
        let client = ControlClient(endpoint, timeout: .seconds(30))
        for round in 0..<6 {
            // The slow ones trickle on meanwhile: one header byte each.
            for fd in slow.prefix(200) { Self.send(fd, "X") }
            let status = try await offload { try client.status() }
            #expect(status.runner == child.pid, "round \(round)")
            try await Task.sleep(for: .milliseconds(300))
        }
        let answers = slow.prefix(200).map { Self.readAvailable($0) }
        let turnedAway = answers.filter { $0.hasPrefix("HTTP/1.1 503 ") }.count
        #expect(turnedAway >= 100, "the slowest were turned away with 503: \(turnedAway) of 200")
        #expect(
            answers.allSatisfy { $0.isEmpty || $0.hasPrefix("HTTP/1.1 503 ") },
            "\(Set(answers.map { String($0.prefix(30)) }))")
    }

    static let tickingProfile = PreloadControlTests.virtualProfile

    /// A program that wakes every 0.2 s: a day of it is 432,000 steps. The advance runs while
    /// the endpoint answers, shows its progress, and stops when asked: by a cancel, by a
    /// second advance that replaces it, and by its client hanging up.
    @Test func aLongAdvanceLeavesTheEndpointAnsweringAndStopsWhenAsked() async throws {
        let program = """
            import time
            print("ready", flush=True)
            while True:
                time.sleep(0.2)
            """
        let child = try PreloadChild(profile: Self.tickingProfile, command: ["python3", "-c", program])
        defer { child.stop() }
        try await child.line(startingWith: "ready")
        let endpoint = try await child.endpoint()
        // Liveness bounds: a day of 0.2 s steps takes far longer than either, so an endpoint
        // that stopped answering while it advanced would fail here.
        let quick = ControlClient(endpoint, timeout: .seconds(30))
        let long = ControlClient(endpoint, timeout: .seconds(60))

        // 1. Cancelled.
        let first = Task { try await offload { try long.advance(by: "1d") } }
        let progress = try await Self.progress(of: quick, atLeast: 100)
        let later = try await Self.progress(of: quick, atLeast: progress.steps + 100)
        #expect(later.remainingNanoseconds < progress.remainingNanoseconds, "\(progress) then \(later)")
        let stopped = try await offload { try quick.stopAdvance() }
        #expect(stopped.stopped == true)
        await #expect(throws: ControlError.self) { try await first.value }
        if case .failure(let error as ControlError) = await first.result {
            #expect(error.kind == "advanceStopped", "\(error)")
        }
        #expect(try await offload { try quick.status() }.advance == nil)
        #expect(try await offload { try quick.stopAdvance() }.stopped == false, "nothing left to stop")

        // 2. Replaced by a second advance, which runs to its end.
        let second = Task { try await offload { try long.advance(by: "1d") } }
        _ = try await Self.progress(of: quick, atLeast: 50)
        let short = try await offload { try long.advance(by: "2s") }
        #expect((9...11).contains(short.steps ?? 0), "a 0.2 s sleep about ten times in 2 s: \(short)")
        if case .failure(let error as ControlError) = await second.result {
            #expect(error.kind == "advanceStopped", "\(error)")
        } else {
            Issue.record("the replaced advance was not stopped")
        }

        // 3. Its client hangs up.
        let path = String(endpoint.url.dropFirst(5))
        let hangingUp = try Self.connectUnix(path)
        Self.send(
            hangingUp,
            "POST /v1/time/advance?by=1d HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(endpoint.token)\r\nContent-Length: 0\r\n\r\n"
        )
        _ = try await Self.progress(of: quick, atLeast: 50)
        close(hangingUp)
        let deadline = ContinuousClock.now + .seconds(10)
        while try await offload({ try quick.status() }).advance != nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(try await offload { try quick.status() }.advance == nil, "the hang-up stopped it")

        // 4. A limit of steps stops it and says so.
        do {
            _ = try await offload { try long.advance(by: "1h", maxSteps: 7) }
            Issue.record("an advance past its step limit succeeded")
        } catch let error as ControlError {
            #expect(error.kind == "stepLimit", "\(error)")
        }
    }

    /// An advance that lets the program end has done its work: `chaos ctl advance` succeeds
    /// and says how the program ended, whether through exit (with its status) or not. A C
    /// program, whose second thread goes on sleeping a second at a time while the main one
    /// exits, so that the advance is still stepping when the exit comes.
    @Test(
        .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/cc"), "no C compiler (cc)"),
        arguments: ["exit", "_exit"])
    func anAdvanceThatLetsTheProgramEndSucceeds(_ ending: String) async throws {
        let folder = URL(fileURLWithPath: "/tmp/vte-\(getpid())-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = folder.appendingPathComponent("ends.c")
        try Data(
            """
            #include <pthread.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            #include <unistd.h>
            static void *tick(void *unused) { for (;;) sleep(1); return unused; }
            int main(int argc, char **argv) {
                pthread_t thread;
                pthread_create(&thread, NULL, tick, NULL);
                printf("ready\\n");
                fflush(stdout);
                sleep(30);
                if (argc > 1 && strcmp(argv[1], "exit") == 0) exit(3);
                _exit(4);
            }
            """.utf8
        ).write(to: source)
        let binary = folder.appendingPathComponent("ends").path
        let compiled = try #require(runProgram("/usr/bin/cc", ["-O1", "-pthread", "-o", binary, source.path]))
        try #require(compiled.status == 0, "cc failed: \(compiled.stderr)")
        let child = try PreloadChild(profile: Self.tickingProfile, command: [binary, ending])
        defer { child.stop() }
        try await child.line(startingWith: "ready")
        let advanced = try await child.ctl("advance", "\(child.pid)", "1h")
        #expect(advanced.status == 0, "\(advanced.errors)")
        let expected =
            ending == "exit"
            ? "the program exited with status 3" : "the program ended during the advance (not through exit"
        #expect(advanced.output.contains(expected), "\(advanced.output)")
    }

    /// A client of the child's endpoint once it answers: the file is read again until then,
    /// since each stage of an exec chain (a pyenv shim runs bash first) writes it in turn.
    static func answeringClient(of child: PreloadChild) async throws -> ControlClient {
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let client = ControlClient(try await child.endpoint(), timeout: .seconds(30))
            var failure: (any Error)?
            do {
                if try await offload({ try client.status() }).runner == child.pid { return client }
            } catch {
                failure = error
            }
            guard ContinuousClock.now < deadline else {
                let files = (try? FileManager.default.contentsOfDirectory(atPath: child.directory.path)) ?? []
                throw TestFailure(
                    "the endpoint of \(child.pid) never answered (\(failure.map { "\($0)" } ?? "another pid")); its directory holds \(files.sorted()); the program printed \(child.output.suffix(8))"
                )
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Waits until `status` shows an advance with at least `steps` steps; every status must
    /// answer within the client's timeout.
    static func progress(of client: ControlClient, atLeast steps: Int) async throws -> ControlAPI.AdvanceProgress {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if let progress = try await offload({ try client.status() }).advance, progress.steps >= steps {
                return progress
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestFailure("no advance reached \(steps) steps in a minute")
    }

    // MARK: Sockets

    static func connectUnix(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in path.utf8.enumerated() where index < raw.count - 1 { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            close(fd)
            throw TestFailure("connect \(path): errno \(errno)")
        }
        return fd
    }

    static func send(_ fd: Int32, _ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer {
            Glibc.send(fd, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
    }

    /// What `fd` has received so far, without waiting.
    static func readAvailable(_ fd: Int32) -> String {
        String(decoding: receiveAvailable(fd).bytes, as: UTF8.self)
    }

    /// What `fd` has received so far, without waiting, and whether its peer has closed it.
    static func receiveAvailable(_ fd: Int32) -> (bytes: [UInt8], closed: Bool) {
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &bytes, bytes.count, Int32(MSG_DONTWAIT))
        if count > 0 { return (Array(bytes[..<count]), false) }
        return ([], count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
    }

    /// The inodes of the Unix sockets bound to `path`, from /proc/net/unix.
    static func socketInodes(listeningAt path: String) -> [String] {
        // Read to its end: /proc files report a size of 0.
        let table = String(
            decoding: FileHandle(forReadingAtPath: "/proc/net/unix")?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
        return table.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            return fields.count >= 8 && fields[7] == path ? String(fields[6]) : nil
        }
    }

    /// Connects to 127.0.0.1:`port` and reads one line ("" when the connection closed first).
    static func firstLine(fromPort port: UInt16) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw TestFailure("connect: \(errno)") }
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1, byte != UInt8(ascii: "\n") { bytes.append(byte) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
