import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// toxiproxy's stream toxics on `system.send` and `system.recv`, against curl fetching from a
/// local Python HTTP server: a bandwidth makes the download take its time, a data limit
/// cuts it short with a close or a reset, a stall holds it and then ends it, slices arrive
/// one by one, and an entry aimed at another port leaves the download alone. How accurate
/// the bandwidth is, is the benchmark's to measure (`bandwidth_accuracy`); these tests hold
/// only lower bounds, which no scheduling can break.
@Suite(
    .serialized, .disabled(if: Sanitizers.thread, Sanitizers.preloadReason),
    .enabled(
        if: ReachTests.which("curl") != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"),
        "no curl or /usr/bin/python3"))
struct StreamTests {
    /// A folder with a file of `size` bytes, served over HTTP on 127.0.0.1 by Python.
    final class Served {
        let folder: String
        let port: Int
        let server: Process

        init(size: Int) throws {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent("chaos-stream-\(UUID().uuidString)")
                .path
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }).write(
                to: URL(fileURLWithPath: folder + "/data"))
            let (probe, free) = try SeccompDeliveryTests.Workspace.listen()
            close(probe)
            port = free
            server = Process()
            // Debian's python3 itself: a shim (pyenv's) would outlive the kill below.
            server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            server.arguments = ["-m", "http.server", String(port), "--bind", "127.0.0.1", "--directory", folder]
            server.standardOutput = FileHandle.nullDevice
            server.standardError = FileHandle.nullDevice
            try server.run()
            // Until it answers: a connect that succeeds (for at most 10 s).
            var tries = 0
            while !Self.accepts(port) && tries < 200 {
                usleep(50_000)
                tries += 1
            }
        }

        deinit {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            try? FileManager.default.removeItem(atPath: folder)
        }

        private static func accepts(_ port: Int) -> Bool {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }

        /// A profile of one entry on `point` (`item` with `parameters`, JSON members).
        func profile(_ point: String, _ item: String, _ parameters: String) throws -> String {
            let path = folder + "/profile-\(UUID().uuidString.prefix(6)).json"
            try
                #"{"entries": [{"point": "\#(point)", "provider": {"item": "\#(item)", "parameters": {\#(parameters)}}}]}"#
                .write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// curl fetching the file into `name` under `chaos run` with `profile`, and how long it took.
        func fetch(_ profile: String, into name: String) throws -> (ChaosToolTests.Outcome, Double) {
            let started = Date()
            let outcome = try ReachTests.runIn(
                folder, ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
                [
                    "run", "--delivery", "preload", "--seed", "1", "--profile", profile, "--",
                    ReachTests.which("curl")!, "-sS", "-o", name, "http://127.0.0.1:\(port)/data",
                ],
                environment: ["CHAOS_PRELOAD_LIBRARY": ChaosToolTests.preloadLibrary])
            return (outcome, Date().timeIntervalSince(started))
        }

        func size(_ name: String) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: folder + "/" + name))?[.size] as? Int) ?? -1
        }

        func same(_ name: String) -> Bool {
            FileManager.default.contentsEqual(atPath: folder + "/" + name, andPath: folder + "/data")
        }
    }

    @Test func aBandwidthOnTheServersPortMakesTheDownloadTakeItsTimeAndAnotherPortIsLeftAlone() throws {
        let served = try Served(size: 300_000)
        // 300 kB at 150 kB/s: two seconds, and never less than 1.5.
        let slow = try served.profile(
            "system.recv", "bandwidth", #""rate": 150000, "host": "127.0.0.1", "port": \#(served.port)"#)
        let (fetched, seconds) = try served.fetch(slow, into: "slow")
        #expect(fetched.status == 0, "\(fetched.errors)")
        #expect(served.same("slow"), "every byte arrives, in order")
        #expect(seconds >= 1.5, "took \(seconds) s")
        #expect(fetched.errors.contains("system.recv ← bandwidth") && !fetched.errors.contains("NEVER ACTED"))
        let elsewhere = try served.profile(
            "system.recv", "bandwidth", #""rate": 150000, "port": \#(served.port == 1 ? 2 : served.port - 1)"#)
        let (untouched, _) = try served.fetch(elsewhere, into: "untouched")
        #expect(untouched.status == 0 && served.same("untouched"))
        #expect(untouched.errors.contains("NEVER ACTED"), "an entry on another port: \(untouched.errors)")
    }

    @Test func aDataLimitCutsTheDownloadWithACloseOrAReset() throws {
        let served = try Served(size: 300_000)
        let whole = try ReachTests.runIn(
            served.folder, ReachTests.which("curl")!, ["-sS", "-o", "whole", "http://127.0.0.1:\(served.port)/data"],
            environment: [:])
        #expect(whole.status == 0 && served.same("whole"), "without the entry: \(whole.errors)")
        let closed = try served.profile("system.recv", "limit-data", #""bytes": 50000, "then": "close""#)
        let (cut, _) = try served.fetch(closed, into: "cut")
        // curl's "transfer closed with N bytes remaining to read".
        #expect(cut.status == 18, "\(cut.errors)")
        #expect(
            served.size("cut") > 0 && served.size("cut") < 50000, "the body after the headers: \(served.size("cut"))")
        let reset = try served.profile("system.recv", "limit-data", #""bytes": 50000, "then": "reset""#)
        let (broken, _) = try served.fetch(reset, into: "broken")
        #expect(broken.status == 56 && broken.errors.contains("reset"), "\(broken.errors)")
    }

    @Test func aStallHoldsTheDownloadThenEndsIt() throws {
        let served = try Served(size: 1000)
        let stalled = try served.profile("system.recv", "stall", #""for": "1500ms", "then": "reset""#)
        let (held, seconds) = try served.fetch(stalled, into: "held")
        #expect(held.status == 56, "\(held.errors)")
        #expect(seconds >= 1.4, "took \(seconds) s")
    }

    @Test func slicesArriveOneByOne() throws {
        // A Python sender under slices of 100 ± 20 bytes; its receiver (not under chaos)
        // counts the reads that bring them in.
        let served = try Served(size: 1)
        let script = """
            import socket, sys, threading
            listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(1)
            reads = []
            def receive():
                peer, _ = listener.accept()
                while True:
                    data = peer.recv(65536)
                    if not data: break
                    reads.append(len(data))
            receiver = threading.Thread(target=receive); receiver.start()
            sender = socket.create_connection(listener.getsockname())
            sender.sendall(b"x" * 3000); sender.close(); receiver.join()
            print(sum(reads), len(reads), max(reads))
            """
        let profile = try served.profile(
            "system.send", "slicer", #""size": 100, "variation": 20, "delay": "5ms", "roles": ["client"]"#)
        let sliced = try ReachTests.runIn(
            served.folder, ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
            ["run", "--delivery", "preload", "--profile", profile, "--", "/usr/bin/python3", "-c", script],
            environment: ["CHAOS_PRELOAD_LIBRARY": ChaosToolTests.preloadLibrary])
        let numbers = sliced.output.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        #expect(numbers.count == 3, "\(sliced)")
        if numbers.count == 3 {
            #expect(numbers[0] == 3000, "every byte arrives")
            #expect(numbers[1] >= 20, "3000 bytes in slices of at most 120: \(numbers)")
            #expect(numbers[2] <= 120, "no read brings more than a slice: \(numbers)")
        }
        let plain = try ReachTests.runIn(served.folder, "/usr/bin/python3", ["-c", script], environment: [:])
        #expect(plain.output.hasPrefix("3000 1 3000"), "without the entry: one read \(plain.output)")
    }

    @Test func aSlowCloseHoldsTheCloseAndALatencyDoesNot() throws {
        let served = try Served(size: 1)
        let script = """
            import socket, time
            listener = socket.socket(); listener.bind(("127.0.0.1", 0)); listener.listen(1)
            sender = socket.create_connection(listener.getsockname()); peer, _ = listener.accept()
            sender.sendall(b"hi"); started = time.monotonic(); sender.close()
            print(round(time.monotonic() - started, 1), peer.recv(10), peer.recv(10))
            """
        func closing(_ item: String) throws -> ChaosToolTests.Outcome {
            try ReachTests.runIn(
                served.folder, ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path,
                [
                    "run", "--delivery", "preload", "--profile",
                    try served.profile("system.send", item, #""delay": "1s", "roles": ["client"]"#), "--",
                    "/usr/bin/python3", "-c", script,
                ],
                environment: ["CHAOS_PRELOAD_LIBRARY": ChaosToolTests.preloadLibrary])
        }
        let slow = try closing("slow-close")
        let waited = Double(slow.output.split(separator: " ").first ?? "") ?? -1
        #expect(waited >= 0.9, "the close waited: \(slow.output)")
        #expect(slow.output.contains("b'hi' b''"), "what was sent arrives, then the end: \(slow.output)")
        #expect(slow.errors.contains("acted 1"), "one close: \(slow.errors)")
        let latency = try closing("latency")
        #expect(latency.output.hasPrefix("0.0 "), "a send's latency leaves its close alone: \(latency.output)")
    }
}
