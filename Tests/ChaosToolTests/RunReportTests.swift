import Foundation
import TestHelpers
import Testing

/// The report `chaos run` gives under the preload delivery: every preloaded process of the
/// program's tree counts into one place, so forked children, programs started by exec and
/// processes killed before they could say anything are all in it.
@Suite struct RunReportTests {
    /// Forks `children` processes that each write once into DIR/out (then the parent
    /// writes once itself); the last child kills itself with SIGKILL after writing.
    static let forking = """
        #include <fcntl.h>
        #include <signal.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <sys/wait.h>
        #include <unistd.h>

        static void write_once(const char *folder, int n) {
            char path[4096];
            snprintf(path, sizeof path, "%s/out/%d", folder, n);
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0 && write(fd, "x", 1) < 0) perror("write");
            if (fd >= 0) close(fd);
        }

        int main(int argc, char **argv) {
            int children = atoi(argv[2]);
            for (int i = 0; i < children; i++) {
                pid_t child = fork();
                if (child == 0) {
                    write_once(argv[1], i + 1);
                    if (i == children - 1) raise(SIGKILL);  // no exit handler runs
                    _exit(0);
                }
                waitpid(child, NULL, 0);
            }
            write_once(argv[1], 0);
            return 3;
        }
        """

    @Test(arguments: ["preload", "seccomp"])
    func aProgramThatCannotStartKeepsItsStatusAndGetsNoReport(delivery: String) throws {
        let workspace = try ReachTests.Workspace()
        defer { workspace.remove() }
        let report = workspace.folder + "/report-out.json"
        let outcome = try ChaosToolTests.chaos([
            "run", "--delivery", delivery, "--preload", ChaosToolTests.preloadLibrary, "--require-fired", "--report",
            report, "--profile", workspace.profile, "--", workspace.folder + "/missing-program",
        ])
        // Not 125 for entries that never acted: the program never ran, and 127 says so.
        #expect(outcome.status == 127, "\(delivery): \(outcome)")
        #expect(outcome.errors.contains("missing-program: command not found"), "\(delivery): \(outcome.errors)")
        #expect(!outcome.errors.contains("NEVER ACTED"), "\(delivery): \(outcome.errors)")
        #expect(!FileManager.default.fileExists(atPath: report), "\(delivery): no report of a run that never began")
    }

    @Test(.enabled(if: ReachTests.which("cc") != nil, "no C compiler (cc)"))
    func theReportCountsEveryProcessOfTheTree() throws {
        let workspace = try ReachTests.Workspace()
        defer { workspace.remove() }
        try FileManager.default.createDirectory(atPath: workspace.folder + "/out", withIntermediateDirectories: true)
        let program = try #require(try workspace.compile("forking", Self.forking))
        let profile = workspace.folder + "/report.json"
        try #"""
        {"entries": [
          {"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "\#(workspace.folder)/out", "operations": ["write"]}}},
          {"point": "system.files", "provider": {"item": "eacces", "parameters": {"path": "/nonexistent/chaos-never"}}}
        ]}
        """#.write(toFile: profile, atomically: true, encoding: .utf8)
        let report = workspace.folder + "/report-out.json"
        // Through a shell that execs it: the program replaces the shell's process.
        let outcome = try ChaosToolTests.chaos(
            [
                "run", "--preload", ChaosToolTests.preloadLibrary, "--report", report, "--profile", profile, "--",
                "/bin/sh",
                "-c", "exec \"$0\" \"$@\"", program, workspace.folder, "3",
            ])
        #expect(outcome.status == 3, "chaos run exits as its program did: \(outcome)")
        #expect(outcome.errors.contains("preload delivery"), "\(outcome.errors)")
        #expect(
            outcome.errors.contains(", acted 4\n"), "three children (one killed) and the parent: \(outcome.errors)")
        #expect(outcome.errors.contains("<- NEVER ACTED"), "\(outcome.errors)")
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: report))) as? [String: Any])
        let entries = try #require(json["entries"] as? [[String: Any]])
        #expect(entries.map { $0["acted"] as? Int } == [4, 0], "\(entries)")
        #expect(entries.map { $0["entry"] as? Int } == [1, 2], "numbered as in the profile: \(entries)")
        #expect(json["delivery"] as? String == "preload")
        #expect((json["status"] as? [String: Any])?["exit"] as? Int == 3)

        let required = try ChaosToolTests.chaos(
            [
                "run", "--preload", ChaosToolTests.preloadLibrary, "--require-fired", "--profile", profile, "--",
                program,
                workspace.folder, "1",
            ])
        #expect(required.status == 125, "the second entry never acted: \(required)")
        #expect(required.errors.contains("1 entry never acted (--require-fired)"), "\(required.errors)")
    }
}
