import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The seccomp delivery of `chaos run`, against programs the preload library cannot reach:
/// Go built both ways, a static C program and Debian's busybox. Each sees a write fail
/// with ENOSPC, a read fail with EIO, a connect to a listening port refused, and a clock
/// ten years back; then the same profile with a never-matching entry shows the report and
/// --require-fired.
@Suite(.serialized) struct SeccompDeliveryTests {
    /// A folder with `in/source` to read, `out/` to write into, and the profile.
    struct Workspace {
        let folder: String
        let profile: String
        let listener: Int32
        let port: Int

        init(extraEntry: String? = nil) throws {
            folder =
                FileManager.default.temporaryDirectory.appendingPathComponent("chaos-seccomp-\(UUID().uuidString)").path
            for sub in ["in", "out"] {
                try FileManager.default.createDirectory(atPath: folder + "/" + sub, withIntermediateDirectories: true)
            }
            try "source bytes\n".write(toFile: folder + "/in/source", atomically: true, encoding: .utf8)
            (listener, port) = try Self.listen()
            profile = folder + "/profile.json"
            var entries = [
                #"{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "\#(folder)/out", "operations": ["write"]}}}"#,
                #"{"point": "system.files", "provider": {"item": "eio", "parameters": {"path": "\#(folder)/in", "operations": ["read"]}}}"#,
                #"{"point": "system.connect", "provider": "refused"}"#,
                #"{"point": "system.clock", "provider": {"item": "offset", "parameters": {"years": -10}}}"#,
            ]
            if let extraEntry { entries.append(extraEntry) }
            try #"{"entries": [\#(entries.joined(separator: ",\n"))]}"#.write(
                toFile: profile, atomically: true, encoding: .utf8)
        }

        func remove() {
            close(listener)
            try? FileManager.default.removeItem(atPath: folder)
        }

        /// A TCP socket listening on 127.0.0.1: a connect to it succeeds unless chaos refuses it.
        static func listen() throws -> (Int32, Int) {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                    bind(fd, pointer, length) == 0 && Glibc.listen(fd, 16) == 0
                        && getsockname(fd, pointer, &length) == 0
                }
            }
            guard fd >= 0, bound else { throw POSIXError(.EADDRNOTAVAIL) }
            return (fd, Int(UInt16(bigEndian: address.sin_port)))
        }

        func chaosRun(_ program: [String], options: [String] = []) throws -> ChaosToolTests.Outcome {
            try ChaosToolTests.chaos(
                ["run", "--preload", ChaosToolTests.preloadLibrary] + options + ["--profile", profile, "--"] + program)
        }
    }

    /// What every probe prints: the year, then how the write, the read and the connect went
    /// ("ok", or the error).
    static let goSource = """
        package main

        import (
            "fmt"
            "net"
            "os"
            "time"
        )

        func main() {
            folder, address := os.Args[1], os.Args[2]
            fmt.Println("year", time.Now().UTC().Year())
            err := os.WriteFile(folder+"/out/written", []byte("data"), 0o644)
            fmt.Println("write", describe(err))
            _, err = os.ReadFile(folder + "/in/source")
            fmt.Println("read", describe(err))
            connection, err := net.DialTimeout("tcp", address, 5*time.Second)
            if err == nil {
                connection.Close()
            }
            fmt.Println("connect", describe(err))
        }

        func describe(err error) string {
            if err == nil {
                return "ok"
            }
            return err.Error()
        }
        """

    static let cSource = """
        #include <arpa/inet.h>
        #include <errno.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/socket.h>
        #include <time.h>
        #include <unistd.h>

        static const char *describe(long result) { return result < 0 ? strerror(errno) : "ok"; }

        int main(int argc, char **argv) {
            char path[4096];
            time_t now = time(NULL);
            struct tm parts;
            gmtime_r(&now, &parts);
            printf("year %d\\n", parts.tm_year + 1900);
            snprintf(path, sizeof path, "%s/out/written", argv[1]);
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            long wrote = fd < 0 ? -1 : write(fd, "data", 4);
            printf("write %s\\n", describe(wrote));
            snprintf(path, sizeof path, "%s/in/source", argv[1]);
            fd = open(path, O_RDONLY);
            char buffer[64];
            long got = fd < 0 ? -1 : read(fd, buffer, sizeof buffer);
            printf("read %s\\n", describe(got));
            struct sockaddr_in address = { .sin_family = AF_INET };
            char host[64];
            int port = 0;
            sscanf(argv[2], "%63[^:]:%d", host, &port);
            address.sin_port = htons((unsigned short)port);
            inet_pton(AF_INET, host, &address.sin_addr);
            int s = socket(AF_INET, SOCK_STREAM, 0);
            printf("connect %s\\n", describe(connect(s, (struct sockaddr *)&address, sizeof address)));
            return 0;
        }
        """

    static var thisYear: Int { Calendar(identifier: .gregorian).component(.year, from: Date()) }

    /// The probe's lines as a dictionary.
    static func lines(_ output: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1)
            if parts.count == 2 { result[String(parts[0])] = String(parts[1]) }
        }
        return result
    }

    /// Checks what a probe printed under the profile.
    static func expectFaults(_ outcome: ChaosToolTests.Outcome, _ name: String) {
        #expect(outcome.status == 0, "\(name): \(outcome)")
        let seen = lines(outcome.output)
        #expect(seen["year"] == String(thisYear - 10), "\(name): the clock moved back ten years: \(outcome)")
        #expect(seen["write"]?.lowercased().contains("no space left on device") == true, "\(name): \(outcome)")
        #expect(seen["read"]?.lowercased().contains("input/output error") == true, "\(name): \(outcome)")
        #expect(seen["connect"]?.lowercased().contains("connection refused") == true, "\(name): \(outcome)")
        #expect(
            outcome.errors.contains("seccomp delivery"), "\(name): the report names the delivery: \(outcome.errors)")
    }

    /// Builds the Go program `source` (the probe unless named) in `folder` with
    /// `environment` and `flags`; nil (recorded) when go fails.
    static func buildGo(
        in folder: String, _ name: String, source: String = goSource, flags: [String], environment: [String: String]
    ) throws -> String? {
        let module = folder + "/go-\(name)"
        try FileManager.default.createDirectory(atPath: module, withIntermediateDirectories: true)
        try "module probe\n\ngo 1.19\n".write(toFile: module + "/go.mod", atomically: true, encoding: .utf8)
        try source.write(toFile: module + "/main.go", atomically: true, encoding: .utf8)
        let output = folder + "/" + name
        let cache = ["GOCACHE": folder + "/gocache", "GOFLAGS": "-mod=mod", "GO111MODULE": "on"]
        let built = try ReachTests.runIn(
            module, ReachTests.which("go")!, ["build"] + flags + ["-o", output, "."],
            environment: cache.merging(environment) { $1 })
        guard built.status == 0 else {
            Issue.record("go build \(flags) failed: \(built.errors)")
            return nil
        }
        return output
    }

    @Test(.enabled(if: ReachTests.which("go") != nil, "no Go toolchain (apt install golang-go)"))
    func goProgramsStaticAndDynamicSeeEveryFault() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        var programs: [(String, String?)] = [
            ("static", try Self.buildGo(in: workspace.folder, "static", flags: [], environment: ["CGO_ENABLED": "0"]))
        ]
        if ReachTests.which("cc") != nil {
            programs.append(
                (
                    "dynamic",
                    try Self.buildGo(
                        in: workspace.folder, "dynamic", flags: ["-ldflags=-linkmode=external"], environment: [:])
                )
            )
        }
        for case (let name, let program?) in programs {
            let plain = try ChaosToolTests.run(program, [workspace.folder, "127.0.0.1:\(workspace.port)"])
            #expect(
                Self.lines(plain.output)["connect"] == "ok" && Self.lines(plain.output)["write"] == "ok",
                "without chaos the probe works: \(plain)")
            Self.expectFaults(
                try workspace.chaosRun([program, workspace.folder, "127.0.0.1:\(workspace.port)"]), "Go \(name)")
            let refused = try workspace.chaosRun([program, workspace.folder], options: ["--delivery", "preload"])
            #expect(refused.status == 125 && refused.output.isEmpty, "Go \(name): \(refused)")
            #expect(refused.errors.contains("Go program"), "Go \(name): \(refused.errors)")
        }
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aStaticCProgramSeesEveryFault() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        guard
            let program = try ReachTests.Workspace(folder: workspace.folder).compile(
                "c-static", Self.cSource, flags: ["-static"])
        else {
            Issue.record("cc -static failed: is libc6-dev's libc.a installed?")
            return
        }
        Self.expectFaults(
            try workspace.chaosRun([program, workspace.folder, "127.0.0.1:\(workspace.port)"]), "static C")
    }

    @Test(
        .enabled(if: staticBusybox != nil, "no static /bin/busybox (apt install busybox-static)"))
    func busyboxAndWhatItExecsSeeEveryFault() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        // Each line comes from a program busybox's shell execs: the vDSO is patched at
        // every exec, not only the first.
        let script = """
            echo year $(busybox date -u +%Y)
            if echo data > '\(workspace.folder)/out/written'; then echo write ok; else echo write No space left on device; fi
            if busybox cat '\(workspace.folder)/in/source' > /dev/null 2> '\(workspace.folder)/cat.err'; then echo read ok; else echo read $(busybox cat '\(workspace.folder)/cat.err'); fi
            if busybox nc 127.0.0.1 \(workspace.port) < /dev/null 2> '\(workspace.folder)/nc.err'; then echo connect ok; else echo connect $(busybox cat '\(workspace.folder)/nc.err'); fi
            """
        let outcome = try workspace.chaosRun(["/bin/busybox", "sh", "-c", script])
        Self.expectFaults(outcome, "busybox")
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func theReportListsEveryEntryAndRequireFiredFailsARunWithoutActs() throws {
        let never =
            #"{"point": "system.files", "provider": {"item": "eacces", "parameters": {"path": "/nonexistent/never"}}}"#
        let workspace = try Workspace(extraEntry: never)
        defer { workspace.remove() }
        let program = try #require(
            try ReachTests.Workspace(folder: workspace.folder).compile("c-static", Self.cSource, flags: ["-static"]))
        let arguments = [program, workspace.folder, "127.0.0.1:\(workspace.port)"]
        let report = workspace.folder + "/report.json"
        let plain = try workspace.chaosRun(arguments, options: ["--report", report])
        #expect(plain.status == 0, "\(plain)")
        #expect(plain.errors.contains("NEVER ACTED"), "the entry that never acted is flagged: \(plain.errors)")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let entries = try #require(json["entries"] as? [[String: Any]])
        #expect(entries.count == 5)
        #expect(entries.map { $0["acted"] as? Int } == [1, 1, 1, 1, 0], "\(entries)")
        #expect(entries.last?["neverActed"] as? Bool == true)
        #expect(json["delivery"] as? String == "seccomp")
        #expect((json["status"] as? [String: Any])?["exit"] as? Int == 0)

        let required = try workspace.chaosRun(arguments, options: ["--require-fired"])
        #expect(required.status == 125, "an entry that never acted fails the run: \(required)")
        #expect(required.errors.contains("never acted (--require-fired)"), "\(required.errors)")
        #expect(Self.lines(required.output)["write"]?.contains("No space") == true, "the program still ran whole")

        let quiet = try workspace.chaosRun(arguments, options: ["--quiet"])
        #expect(quiet.status == 0 && quiet.errors.isEmpty, "--quiet: no report: \(quiet)")
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func entriesTheSupervisorCannotCarryAreRefusedBeforeTheProgramStarts() throws {
        let workspace = try Workspace(
            extraEntry:
                #"{"point": "system.getenv", "provider": {"sequential": [{"item": "unset", "parameters": {"name": "HOME"}}, "original"]}}"#
        )
        defer { workspace.remove() }
        let program = try #require(
            try ReachTests.Workspace(folder: workspace.folder).compile("c-static", Self.cSource, flags: ["-static"]))
        let refused = try workspace.chaosRun([program, workspace.folder, "127.0.0.1:\(workspace.port)"])
        #expect(refused.status == 125, "\(refused)")
        #expect(refused.errors.contains("entry #5 system.getenv"), "the refusal names the entry: \(refused.errors)")
        #expect(refused.output.isEmpty, "the program never started")
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func aProgramKilledByASignalEndsChaosRunTheSameWay() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        let program = try #require(
            try ReachTests.Workspace(folder: workspace.folder).compile(
                "c-self-kill",
                """
                #include <signal.h>
                int main(void) {
                    // The signal as this test process hands it down may be blocked or ignored.
                    sigset_t only;
                    sigemptyset(&only);
                    sigaddset(&only, SIGTERM);
                    sigprocmask(SIG_UNBLOCK, &only, 0);
                    signal(SIGTERM, SIG_DFL);
                    raise(SIGTERM);
                    return 0;
                }
                """, flags: ["-static"]))
        let outcome = try workspace.chaosRun([program], options: ["--quiet"])
        #expect(outcome.status == SIGTERM, "Process reports the signal that ended chaos run: \(outcome)")
    }

    /// Waits for DIR/go, then writes DIR/late/file and says how that went.
    static let waiting = """
        #include <errno.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <string.h>
        #include <time.h>
        #include <unistd.h>

        int main(int argc, char **argv) {
            char path[4096];
            snprintf(path, sizeof path, "%s/go", argv[1]);
            for (int i = 0; i < 3000 && access(path, F_OK) != 0; i++) {
                struct timespec pause = { 0, 10 * 1000 * 1000 };
                nanosleep(&pause, NULL);
            }
            snprintf(path, sizeof path, "%s/late/file", argv[1]);
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            long wrote = fd < 0 ? -1 : write(fd, "data", 4);
            printf("late %s\\n", wrote < 0 ? strerror(errno) : "ok");
            return 0;
        }
        """

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func chaosCtlReachesTheSupervisorWhichRefusesWhatItCannotCarry() throws {
        let workspace = try Workspace()
        defer { workspace.remove() }
        try FileManager.default.createDirectory(atPath: workspace.folder + "/late", withIntermediateDirectories: true)
        let program = try #require(
            try ReachTests.Workspace(folder: workspace.folder).compile("c-waiting", Self.waiting, flags: ["-static"]))
        let control = "/tmp/sctl-\(getpid())-\(UUID().uuidString.prefix(6))"  // a socket path stays short
        try FileManager.default.createDirectory(atPath: control, withIntermediateDirectories: true)
        chmod(control, 0o700)
        defer { try? FileManager.default.removeItem(atPath: control) }
        let environment = ["CHAOS_CONTROL": "unix", "CHAOS_CONTROL_DIR": control]
        let process = Process()
        process.executableURL = ChaosToolTests.buildDirectory.appendingPathComponent("chaos")
        process.arguments = [
            "run", "--preload", ChaosToolTests.preloadLibrary, "--profile", workspace.profile, "--", program,
            workspace.folder,
        ]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.runWithSignalsUnblocked()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        let pid = process.processIdentifier
        // Published under the program's own pid (chaos run's child), naming chaos run's beside it.
        var endpointFile = ""
        for _ in 0..<500 where !FileManager.default.fileExists(atPath: endpointFile) {
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            endpointFile = "\(control)/\(children.split(separator: " ").first ?? "none").json"
            usleep(10_000)
        }
        #expect(
            FileManager.default.fileExists(atPath: endpointFile),
            "the supervisor publishes an endpoint under the program's pid: \(endpointFile)")
        let record = try? String(contentsOfFile: endpointFile, encoding: .utf8)
        #expect(record?.contains(#""runner":\#(pid)"#) == true, "\(record ?? "")")

        func ctl(_ arguments: [String]) throws -> ChaosToolTests.Outcome {
            try ChaosToolTests.run(
                ChaosToolTests.buildDirectory.appendingPathComponent("chaos").path, ["ctl"] + arguments,
                environment: environment)
        }
        let listed = try ctl(["list"])
        #expect(listed.output.contains("c-waiting") && listed.output.contains("seccomp"), "\(listed)")

        let getenv = workspace.folder + "/getenv.json"
        try
            #"{"entries": [{"point": "system.getenv", "provider": {"sequential": [{"item": "unset", "parameters": {"name": "HOME"}}, "original"]}}]}"#
            .write(toFile: getenv, atomically: true, encoding: .utf8)
        let refused = try ctl(["apply", String(pid), getenv])
        #expect(refused.status != 0 && refused.errors.contains("cannot be delivered"), "\(refused)")

        let late = workspace.folder + "/late.json"
        try
            #"{"entries": [{"point": "system.files", "provider": {"item": "eio", "parameters": {"path": "\#(workspace.folder)/late", "operations": ["write"]}}}]}"#
            .write(toFile: late, atomically: true, encoding: .utf8)
        let applied = try ctl(["apply", String(pid), late])
        #expect(applied.status == 0, "\(applied)")

        #expect(FileManager.default.createFile(atPath: workspace.folder + "/go", contents: nil))
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(
            printed.contains("late Input/output error"), "the entry applied through chaos ctl acted: \(printed) \(said)"
        )
        #expect(said.contains("eio("), "the report lists the applied entry: \(said)")
    }
}
