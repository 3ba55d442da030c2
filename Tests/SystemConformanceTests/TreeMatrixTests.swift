#if os(Linux)
import Foundation
import TestHelpers
import Testing

/// The conformance matrix's rows for a process tree (issue #32): counts across forks and
/// execs, and descriptors a process hands down. Only `chaos run` has a tree, so each row
/// runs under both of its deliveries, and both must see the row's one sequence. A step
/// `fork.OP:NAME` makes the call in a forked child, `exec.OP:NAME` in a program exec'd with
/// the file as its standard output (`cmd >> NAME`).
@Suite(
    .enabled(if: Needs.cc, "no C compiler (cc) to build the probe program"),
    .disabled(if: Sanitizers.thread, Sanitizers.preloadReason))
struct TreeMatrixTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        /// The entry object of a JSON profile; `$DIR` is the workspace.
        let json: String
        let script: [String]
        let expected: String
        /// What the report says of the entry, when the row checks it.
        var counted: String?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(
            name: "times counts the tree's writes, forked children's too",
            json:
                #"{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "$DIR/io"}, "times": 2}}"#,
            script: ["open:io/f", "fork.write:io/f", "fork.write:io/f", "write:io/f", "fork.write:io/f"],
            expected: "PAAPP"),
        Row(
            name: "a sequential placement at the 3rd write, made by a forked child",
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/io", "operations": ["write"]}, "provider": {"sequential": ["original", "original", {"item": "enospc"}, "original"]}}"#,
            script: ["open:io/f", "write:io/f", "fork.write:io/f", "fork.write:io/f", "write:io/f"],
            expected: "PPPAP"),
        Row(
            name: "a placement counts a program exec'd in the tree",
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/io", "operations": ["write"]}, "provider": {"sequential": ["original", {"item": "eio"}, "original"]}}"#,
            script: ["open:io/f", "write:io/f", "exec.write:io/f", "write:io/f"],
            expected: "PPAP"),
        Row(
            name: "a descriptor handed down as stdout is matched by its folder",
            json: #"{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "$DIR/io"}}}"#,
            script: ["open:io/f", "exec.write:io/f", "exec.write:io2/g", "open:io2/g", "exec.write:io2/g"],
            expected: "PAEPP"),
        Row(
            name: "seen counts only the calls an entry targets",
            json:
                #"{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "$DIR/io"}, "times": 1}}"#,
            script: ["open:io/f", "read:io/f", "fsync:io/f", "open:io2/g", "write:io2/g", "write:io/f", "write:io/f"],
            expected: "PPAPPPP", counted: "seen 3, acted 1"),
        Row(
            name: "a match entry and an item entry with one target count alike",
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/io", "operations": ["write"]}, "provider": {"item": "enospc", "times": 1}}"#,
            script: ["open:io/f", "read:io/f", "open:io2/g", "write:io2/g", "write:io/f", "write:io/f"],
            expected: "PPPPAP", counted: "seen 2, acted 1"),
    ]

    @Test(arguments: rows)
    func bothDeliveriesSeeTheRowsSequence(_ row: Row) throws {
        try Build.requirePreload()
        let probe = try Build.probeProgram.get()
        for delivery in ["preload", "seccomp"] {
            let dir = try workspace("tree", folders: ["io", "io2"])
            defer { remove(dir) }
            let file = dir + ".json"
            try #"{"seed": 7, "entries": [\#(row.json.replacingOccurrences(of: "$DIR", with: dir))]}"#
                .write(toFile: file, atomically: true, encoding: .utf8)
            defer { remove(file) }
            let outcome = try Command.run(
                [Build.chaos, "run", "--delivery", delivery, "--profile", file, "--", probe, "script", dir, "0"]
                    + row.script)
            #expect(outcome.line == row.expected, "\(row.name) under \(delivery): \(outcome)")
            if let counted = row.counted {
                #expect(outcome.errors.contains(": \(counted)\n"), "\(row.name) under \(delivery): \(outcome.errors)")
            }
        }
    }
}
#endif
