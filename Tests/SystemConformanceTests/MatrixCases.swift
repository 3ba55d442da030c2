#if os(Linux)
import ChaosHooks
import ChaosKit
import Foundation
import Glibc
import Testing

/// One provider tree of the conformance matrix (issue #22), written three ways — Swift code,
/// a JSON profile entry, a `CHAOS` line (nil where the grammar cannot say it) — with the
/// calls to make and, one character per call, what every cell must see: `A` when chaos
/// acted (an injected errno, a constant, or a delay), `P` when the call passed.
///
/// `$DIR` in the JSON and `CHAOS` texts, and the code's `dir`, is a fresh workspace (with
/// the folders `io` and `io2`) per cell.
struct MatrixCase: Sendable, CustomTestStringConvertible {
    enum Point: Sendable { case files, app }

    let name: String
    let point: Point
    /// The tree as code, for the workspace `dir`.
    let code: @Sendable (_ dir: String) throws -> ProfileEntry
    /// The entry object of a JSON profile.
    let json: String?
    /// The `CHAOS` line.
    let chaos: String?
    let seed: UInt64
    /// files: `OP:NAME` steps of the probe's `script`; app: the point's arguments.
    let script: [String]
    /// One character per call.
    let expected: String
    /// A call at least this slow counts as acted on (0: never): the delay cases.
    var slowMS: Int = 0

    var testDescription: String { name }
}

/// The test point of the app cases: the length of a word; the catalogue's `fail` answers
/// -1, and `match` takes a `prefix` of the word.
enum MatrixApp {
    static let word = InjectionPoint<String, Int, Never>(
        "conformance.matrix.word",
        catalogue: PointCatalogue(
            [CatalogueItem("fail", "answers -1") { _ in .constant(-1) }],
            matcher: ArgumentMatcher(conditions: [.string("prefix", "the word starts with it")]) { parameters in
                let prefix = try parameters.string("prefix")
                return { $0.hasPrefix(prefix) }
            })
    ) { $0.count }

    static var name: String { word.name }
}

typealias SystemTree = ChaosProvider<SystemCall, SystemOutcome, Never>
typealias AppTree = ChaosProvider<String, Int, Never>

/// The trees of the matrix, and the helpers that write their code form as an item would.
enum Matrix {
    // MARK: Code helpers: what the catalogue items build

    static let writes: Set<FileOperationKind> = [.write]
    /// `enospc`'s default operations.
    static let enospcOperations: Set<FileOperationKind> = [.write, .sync, .truncate]

    /// `{"item": "enospc"|"eio", "parameters": {"path": …, "operations": …}}` (the item's
    /// default operations when `operations` is nil).
    static func item(_ code: Int32 = ENOSPC, path: String?, operations: Set<FileOperationKind>?) throws -> SystemTree {
        let defaults: Set<FileOperationKind> = code == EIO ? [.write, .sync] : enospcOperations
        return .on(try .files(path: path, operations: operations ?? defaults), .constant(.fail(errno: code)))
    }

    /// An entry's `match` object over system.files.
    static func match(path: String?, operations: Set<FileOperationKind>?, _ tree: SystemTree) throws -> SystemTree {
        .on(try .files(path: path, operations: operations), tree)
    }

    static func files(_ tree: SystemTree) -> ProfileEntry { ProfileEntry(SystemPoints.files, tree) }
    static func app(_ tree: AppTree) -> ProfileEntry { ProfileEntry(MatrixApp.word, tree) }

    static let minus1 = AppTree.constant(-1)
    static let startsWithA: @Sendable (String) -> Bool = { $0.hasPrefix("a") }

    /// `open:a` then `count` writes to a.
    static func openThenWrites(_ count: Int, _ name: String = "a") -> [String] {
        ["open:\(name)"] + Array(repeating: "write:\(name)", count: count)
    }

    // MARK: Golden sequences of the probability cases

    // ChaosKit's draws (SeededRandom.derive(entry seed, asked, salt)), which both engines
    // are to make: recorded from the Swift evaluator at 41f8051. The C engine's
    // chaos_fault_draw still scrambles derive(entry seed, asked) once more before mixing
    // in the salt, so its cells differ until it draws as ChaosKit does. Empty: not
    // recorded yet (the test then fails, showing what each cell gave).
    /// p 0.5 around an item's writes of a, seed 7: open, then 16 writes.
    static let goldenWrites = "PPPPAAAPPAAPPAPAP"
    /// p 0.5 below times 4 around an item's writes, seed 7: open, then 10 writes.
    static let goldenTimesOverProbability = "PAPAPPPPPPP"
    /// p 0.5 below a one-step sequential below times 4, seed 7: open, then 10 writes.
    static let goldenTimesOverSequentialProbability = "PPAAPPPPPPP"
    /// p 0.5 with times 3 as a step of a sequential under match, seed 11: open, then 8 writes.
    static let goldenProbabilityStep = "PPAPPPPPP"
    /// p 0.5 under match, seed 11: open, then 12 writes.
    static let goldenMatch = "PPPAPPAAAPAAP"
    /// p 0.5 on the app point, seed 5, 16 calls.
    static let goldenApp = "PPAPPPPPPPAPAAAP"
    /// p 0.5 below times 4 on the app point, seed 8, 10 calls.
    static let goldenAppTimesOverProbability = "APPPPPPPPP"
    /// p 0.5 with times 3 as a step of a sequential on the app point, seed 9, 8 calls.
    static let goldenAppProbabilityStep = "PAAPPPPP"
    /// p 0.5 under match on the app point, seed 13, 12 calls.
    static let goldenAppMatch = "PPAAPPPAAAAP"

    /// `golden` with every `A` after the first `n` turned into `P`: what times n below the
    /// same probability node (same seed, same position, same draws) acts on.
    static func firstActs(_ golden: String, _ n: Int) -> String {
        var left = n
        return String(
            golden.map { mark -> Character in
                guard mark == "A" else { return mark }
                left -= 1
                return left >= 0 ? "A" : "P"
            })
    }

    /// `golden` (its first `lead` calls, then one character per targeted call) with a `P`
    /// for each of the `every` untargeted calls the script makes after each targeted one,
    /// and `before` untargeted calls first; empty while `golden` is not recorded.
    static func interleaved(_ golden: String, lead: Int, every: Int, before: Int = 0) -> String {
        guard !golden.isEmpty else { return "" }
        let head = String(repeating: "P", count: before) + String(golden.prefix(lead))
        return head + golden.dropFirst(lead).map { String($0) + String(repeating: "P", count: every) }.joined()
    }

    // MARK: The table

    static let cases: [MatrixCase] = files + apps

    static let p = #""parameters": {"path": "$DIR/a", "operations": ["write"]}"#

    static let files: [MatrixCase] = [
        MatrixCase(
            name: "times 2 around an item's writes (the open is not asked)", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: writes).times(2)) },
            json: #"{"point": "system.files", "provider": {"item": "enospc", \#(p), "times": 2}}"#,
            chaos: #"system.files=2*enospc(path=$DIR/a, operations=["write"])"#,
            seed: 1, script: openThenWrites(4), expected: "PAAPP"),
        MatrixCase(
            name: "times 1: open, then five writes: write 0 fails, 1-4 pass", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: writes).times(1)) },
            json: #"{"point": "system.files", "provider": {"item": "enospc", \#(p), "times": 1}}"#,
            chaos: #"system.files=1*enospc(path=$DIR/a, operations=["write"])"#,
            seed: 1, script: openThenWrites(5), expected: "PAPPPP"),
        MatrixCase(
            name: "times 3 on enospc's default operations: opens and reads are not asked", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: nil).times(3)) },
            json:
                #"{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "$DIR/a"}, "times": 3}}"#,
            chaos: #"system.files=3*enospc(path=$DIR/a)"#,
            seed: 1, script: ["open:a", "read:a", "write:a", "fsync:a", "read:a", "write:a", "write:a"],
            expected: "PPAAPAP"),
        MatrixCase(
            name: "times 3 under a glob path: calls on other names are not asked", point: .files,
            code: { dir in files(try item(EIO, path: dir + "/*.log", operations: writes).times(3)) },
            json:
                #"{"point": "system.files", "provider": {"item": "eio", "parameters": {"path": "$DIR/*.log", "operations": ["write"]}, "times": 3}}"#,
            chaos: #"system.files=3*eio(path=$DIR/*.log, operations=["write"])"#,
            seed: 1,
            script: [
                "open:x.log", "open:y.txt", "open:z.log", "write:x.log", "write:y.txt", "write:z.log", "write:y.txt",
                "write:x.log", "write:z.log",
            ],
            expected: "PPPAPAPAP"),
        MatrixCase(
            name: "times 2 on a directory: its files, not its sibling io2", point: .files,
            code: { dir in files(try item(path: dir + "/io", operations: writes).times(2)) },
            json:
                #"{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "$DIR/io", "operations": ["write"]}, "times": 2}}"#,
            chaos: #"system.files=2*enospc(path=$DIR/io, operations=["write"])"#,
            seed: 1,
            script: [
                "open:io/x", "open:io2/x", "write:io2/x", "write:io/x", "write:io2/x", "write:io/x", "write:io/x",
            ],
            expected: "PPPAPAP"),
        MatrixCase(
            name: "times 2 on syncs: writes are not asked", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: [.sync]).times(2)) },
            json:
                #"{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "$DIR/a", "operations": ["sync"]}, "times": 2}}"#,
            chaos: #"system.files=2*enospc(path=$DIR/a, operations=["sync"])"#,
            seed: 1, script: ["open:a", "write:a", "fsync:a", "write:a", "fsync:a", "fsync:a"], expected: "PPAPAP"),
        MatrixCase(
            name: "probability 0.5 around an item's writes", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: writes).probability(0.5)) },
            json: #"{"point": "system.files", "provider": {"item": "enospc", \#(p), "probability": 0.5}}"#,
            chaos: #"system.files=50%enospc(path=$DIR/a, operations=["write"])"#,
            seed: 7, script: openThenWrites(16), expected: goldenWrites),
        MatrixCase(
            name: "probability 0.5: calls on another file and other operations draw nothing", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: writes).probability(0.5)) },
            json: #"{"point": "system.files", "provider": {"item": "enospc", \#(p), "probability": 0.5}}"#,
            chaos: #"system.files=50%enospc(path=$DIR/a, operations=["write"])"#,
            seed: 7,
            script: ["open:a", "open:b"]
                + (0..<16).flatMap { _ in ["write:a", "write:b", "read:a"] },
            expected: interleaved(goldenWrites, lead: 1, every: 2, before: 1)),
        MatrixCase(
            name: "probability 1 acts on every targeted call", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: writes).probability(1)) },
            json: #"{"point": "system.files", "provider": {"item": "enospc", \#(p), "probability": 1}}"#,
            chaos: #"system.files=100%enospc(path=$DIR/a, operations=["write"])"#,
            seed: 3, script: openThenWrites(4), expected: "PAAAA"),
        MatrixCase(
            name: "probability 0 never acts", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: writes).probability(0)) },
            json: #"{"point": "system.files", "provider": {"item": "enospc", \#(p), "probability": 0}}"#,
            chaos: #"system.files=0%enospc(path=$DIR/a, operations=["write"])"#,
            seed: 3, script: openThenWrites(4), expected: "PPPPP"),
        MatrixCase(
            name: "times 3 inside probability 0.5: the first three hits act", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: writes).times(3).probability(0.5)) },
            json: #"{"point": "system.files", "provider": {"item": "enospc", \#(p), "times": 3, "probability": 0.5}}"#,
            chaos: #"system.files=50%3*enospc(path=$DIR/a, operations=["write"])"#,
            seed: 7, script: openThenWrites(16), expected: firstActs(goldenWrites, 3)),
        MatrixCase(
            name: "probability 0.5 inside times 4: only the first four targeted calls draw", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: writes).probability(0.5).times(4)) },
            json: nil, chaos: nil,
            seed: 7, script: openThenWrites(10), expected: goldenTimesOverProbability),
        MatrixCase(
            name: "times 4 around a one-step sequential of probability 0.5", point: .files,
            code: { dir in
                files(SystemTree.sequential([try item(path: dir + "/a", operations: writes).probability(0.5)]).times(4))
            },
            json:
                #"{"point": "system.files", "provider": {"sequential": [{"item": "enospc", \#(p), "probability": 0.5}], "times": 4}}"#,
            chaos: nil,
            seed: 7, script: openThenWrites(10), expected: goldenTimesOverSequentialProbability),
        MatrixCase(
            name: "probability 1 and times 2 on syncs (both modifiers)", point: .files,
            code: { dir in files(try item(EIO, path: dir + "/a", operations: [.sync]).times(2).probability(1)) },
            json:
                #"{"point": "system.files", "provider": {"item": "eio", "parameters": {"path": "$DIR/a", "operations": ["sync"]}, "times": 2, "probability": 1}}"#,
            chaos: #"system.files=100%2*eio(path=$DIR/a, operations=["sync"])"#,
            seed: 1, script: ["open:a", "write:a", "fsync:a", "fsync:a", "write:a", "fsync:a"], expected: "PPAAPP"),
        MatrixCase(
            name: "latency twice: two slow writes, then fast ones; the open is not delayed", point: .files,
            code: { dir in
                files(
                    try match(path: dir + "/a", operations: writes, SystemTree.original.delayed(by: .milliseconds(250)))
                        .times(2))
            },
            json:
                #"{"point": "system.files", "provider": {"item": "latency", "parameters": {"delay": "250ms", "path": "$DIR/a", "operations": ["write"]}, "times": 2}}"#,
            chaos: #"system.files=2*latency(delay=250ms, path=$DIR/a, operations=["write"])"#,
            seed: 1, script: openThenWrites(3), expected: "PAAP", slowMS: 120),
        MatrixCase(
            name: "delay around times 1: the first write fails, every later one waits", point: .files,
            code: { dir in
                files(try item(path: dir + "/a", operations: writes).times(1).delayed(by: .milliseconds(250)))
            },
            json: #"{"point": "system.files", "provider": {"item": "enospc", \#(p), "times": 1, "delay": "250ms"}}"#,
            chaos: #"system.files=1*enospc(path=$DIR/a, operations=["write"])@250ms"#,
            seed: 1, script: openThenWrites(2), expected: "PAA", slowMS: 120),
        MatrixCase(
            name: "sequential [enospc ×2, original] of item steps: 2*enospc->original", point: .files,
            code: { dir in files(.sequential([try item(path: dir + "/a", operations: writes).times(2), .original])) },
            json:
                #"{"point": "system.files", "provider": {"sequential": [{"item": "enospc", \#(p), "times": 2}, "original"]}}"#,
            chaos: #"system.files=2*enospc(path=$DIR/a, operations=["write"])->original"#,
            seed: 1, script: openThenWrites(4), expected: "PAAPP"),
        MatrixCase(
            name: "sequential of item steps: calls on another file do not use up a step", point: .files,
            code: { dir in files(.sequential([try item(path: dir + "/a", operations: writes).times(2), .original])) },
            json:
                #"{"point": "system.files", "provider": {"sequential": [{"item": "enospc", \#(p), "times": 2}, "original"]}}"#,
            chaos: #"system.files=2*enospc(path=$DIR/a, operations=["write"])->original"#,
            seed: 1, script: ["open:a", "open:b", "write:a", "write:b", "write:a", "write:a"], expected: "PPAPAP"),
        MatrixCase(
            name: "a chain of item steps 3*enospc->2*original->eio", point: .files,
            code: { dir in
                files(
                    .sequential([
                        try item(path: dir + "/a", operations: writes).times(3), SystemTree.original.times(2),
                        try item(EIO, path: dir + "/a", operations: writes),
                    ]))
            },
            json:
                #"{"point": "system.files", "provider": {"sequential": [{"item": "enospc", \#(p), "times": 3}, {"sequential": ["original"], "times": 2}, {"item": "eio", \#(p)}]}}"#,
            chaos:
                #"system.files=3*enospc(path=$DIR/a, operations=["write"])->2*original->eio(path=$DIR/a, operations=["write"])"#,
            seed: 1, script: openThenWrites(7), expected: "PAAAPPAA"),
        MatrixCase(
            name: "a chain 3*enospc->2*original->eio under match", point: .files,
            code: { dir in
                files(
                    try match(
                        path: dir + "/a", operations: writes,
                        .sequential([
                            try item(path: nil, operations: nil).times(3), SystemTree.original.times(2),
                            try item(EIO, path: nil, operations: nil),
                        ])))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"sequential": [{"item": "enospc", "times": 3}, {"sequential": ["original"], "times": 2}, "eio"]}}"#,
            chaos: nil,
            seed: 1, script: openThenWrites(7), expected: "PAAAPPAA"),
        MatrixCase(
            name: "sequential under match: plain steps", point: .files,
            code: { dir in
                let fail = try item(path: nil, operations: nil)
                return files(
                    try match(path: dir + "/a", operations: writes, .sequential([.original, fail, .original, fail])))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"sequential": ["original", "enospc", "original", "enospc"]}}"#,
            chaos: nil,
            seed: 1, script: openThenWrites(6), expected: "PPAPAAA"),
        MatrixCase(
            name: "sequential under match with a times step", point: .files,
            code: { dir in
                files(
                    try match(
                        path: dir + "/a", operations: writes,
                        .sequential([try item(path: nil, operations: nil).times(2), .original])))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"sequential": [{"item": "enospc", "times": 2}, "original"]}}"#,
            chaos: nil,
            seed: 1, script: ["open:a", "open:b", "write:a", "write:b", "write:a", "write:a", "write:a"],
            expected: "PPAPAPP"),
        MatrixCase(
            name: "nested sequential as a counted step", point: .files,
            code: { dir in
                let fail = try item(path: nil, operations: nil)
                return files(
                    try match(
                        path: dir + "/a", operations: writes,
                        .sequential([SystemTree.sequential([fail, .original]).times(2), fail, .original])))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"sequential": [{"sequential": ["enospc", "original"], "times": 2}, "enospc", "original"]}}"#,
            chaos: nil,
            seed: 1, script: openThenWrites(5), expected: "PAPAPP"),
        MatrixCase(
            name: "nested sequential without a count covers one call", point: .files,
            code: { dir in
                let fail = try item(path: nil, operations: nil)
                return files(
                    try match(
                        path: dir + "/a", operations: writes,
                        .sequential([SystemTree.sequential([.original, fail]), fail, .original])))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"sequential": [{"sequential": ["original", "enospc"]}, "enospc", "original"]}}"#,
            chaos: nil,
            seed: 1, script: openThenWrites(5), expected: "PPAPPP"),
        MatrixCase(
            name: "the last step repeats", point: .files,
            code: { dir in
                files(
                    try match(
                        path: dir + "/a", operations: writes,
                        .sequential([.original, try item(path: nil, operations: nil)])))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"sequential": ["original", "enospc"]}}"#,
            chaos: nil,
            seed: 1, script: openThenWrites(5), expected: "PPAAAA"),
        MatrixCase(
            name: "a probability step with times 3, then original, under match", point: .files,
            code: { dir in
                files(
                    try match(
                        path: dir + "/a", operations: writes,
                        .sequential([try item(path: nil, operations: nil).times(3).probability(0.5), .original])))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"sequential": [{"item": "enospc", "times": 3, "probability": 0.5}, "original"]}}"#,
            chaos: nil,
            seed: 11, script: openThenWrites(8), expected: goldenProbabilityStep),
        MatrixCase(
            name: "match with times inside: calls outside the match are not asked", point: .files,
            code: { dir in
                files(try match(path: dir + "/a", operations: writes, try item(path: nil, operations: nil).times(2)))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"item": "enospc", "times": 2}}"#,
            chaos: nil,
            seed: 1, script: ["open:a", "open:b", "write:b", "write:a", "write:b", "write:a", "write:a"],
            expected: "PPPAPAP"),
        MatrixCase(
            name: "match on a path, an item's operations inside, times 2", point: .files,
            code: { dir in
                files(try match(path: dir + "/a", operations: nil, try item(path: nil, operations: [.sync]).times(2)))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a"}, "provider": {"item": "enospc", "parameters": {"operations": ["sync"]}, "times": 2}}"#,
            chaos: nil,
            seed: 1, script: ["open:a", "write:a", "fsync:a", "write:a", "fsync:a", "fsync:a"], expected: "PPAPAP"),
        MatrixCase(
            name: "match with probability 0.5 inside", point: .files,
            code: { dir in
                files(
                    try match(
                        path: dir + "/a", operations: writes, try item(path: nil, operations: nil).probability(0.5)))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"item": "enospc", "probability": 0.5}}"#,
            chaos: nil,
            seed: 11, script: openThenWrites(12), expected: goldenMatch),
        MatrixCase(
            name: "match with probability 0.5 inside: other calls interleaved draw nothing", point: .files,
            code: { dir in
                files(
                    try match(
                        path: dir + "/a", operations: writes, try item(path: nil, operations: nil).probability(0.5)))
            },
            json:
                #"{"point": "system.files", "match": {"path": "$DIR/a", "operations": ["write"]}, "provider": {"item": "enospc", "probability": 0.5}}"#,
            chaos: nil,
            seed: 11,
            script: ["open:a", "open:b"] + (0..<12).flatMap { _ in ["write:a", "read:a", "write:b"] },
            expected: interleaved(goldenMatch, lead: 1, every: 2, before: 1)),
        MatrixCase(
            name: "at 3 around an item's writes: only the third write fails (the open is not asked)", point: .files,
            code: { dir in files(try item(path: dir + "/a", operations: writes).at(call: 3)) },
            json: #"{"point": "system.files", "provider": {"item": "enospc", \#(p), "at": 3}}"#,
            chaos: #"system.files=enospc(path=$DIR/a, operations=["write"])#3"#,
            seed: 1, script: openThenWrites(5), expected: "PPPAPP"),
        MatrixCase(
            name: "at 2 and 4 on a directory: its files' writes are counted, its sibling's are not", point: .files,
            code: { dir in files(try item(path: dir + "/io", operations: writes).at(calls: [2, 4])) },
            json:
                #"{"point": "system.files", "provider": {"item": "enospc", "parameters": {"path": "$DIR/io", "operations": ["write"]}, "at": [2, 4]}}"#,
            chaos: #"system.files=enospc(path=$DIR/io, operations=["write"])#2,4"#,
            seed: 1,
            script: [
                "open:io/x", "open:io2/x", "write:io/x", "write:io2/x", "write:io/x", "write:io/x", "write:io2/x",
                "write:io/x", "write:io/x",
            ],
            expected: "PPPPAPPAP"),
    ]

    static let w = MatrixApp.name

    static let apps: [MatrixCase] = [
        MatrixCase(
            name: "app: times 2", point: .app, code: { _ in app(minus1.times(2)) },
            json: #"{"point": "\#(w)", "provider": {"constant": -1, "times": 2}}"#, chaos: "\(w)=2*constant(-1)",
            seed: 1, script: ["x", "yy", "zzz", "w"], expected: "AAPP"),
        MatrixCase(
            name: "app: a catalogue item with times 2", point: .app,
            code: { _ in app(AppTree.constant(-1).times(2)) },
            json: #"{"point": "\#(w)", "provider": {"item": "fail", "times": 2}}"#, chaos: "\(w)=2*fail",
            seed: 1, script: ["x", "yy", "zzz"], expected: "AAP"),
        MatrixCase(
            name: "app: probability 0.5", point: .app, code: { _ in app(minus1.probability(0.5)) },
            json: #"{"point": "\#(w)", "provider": {"constant": -1, "probability": 0.5}}"#,
            chaos: "\(w)=50%constant(-1)",
            seed: 5, script: (0..<16).map { "w\($0)" }, expected: goldenApp),
        MatrixCase(
            name: "app: times 3 inside probability 0.5", point: .app,
            code: { _ in app(minus1.times(3).probability(0.5)) },
            json: #"{"point": "\#(w)", "provider": {"constant": -1, "times": 3, "probability": 0.5}}"#,
            chaos: "\(w)=50%3*constant(-1)",
            seed: 5, script: (0..<16).map { "w\($0)" }, expected: firstActs(goldenApp, 3)),
        MatrixCase(
            name: "app: probability 0.5 inside times 4", point: .app,
            code: { _ in app(minus1.probability(0.5).times(4)) }, json: nil, chaos: nil,
            seed: 8, script: (0..<10).map { "w\($0)" }, expected: goldenAppTimesOverProbability),
        MatrixCase(
            name: "app: sequential [constant ×2, original] (2*constant(-1)->original)", point: .app,
            code: { _ in app(.sequential([minus1.times(2), .original])) },
            json: #"{"point": "\#(w)", "provider": {"sequential": [{"constant": -1, "times": 2}, "original"]}}"#,
            chaos: "\(w)=2*constant(-1)->original",
            seed: 1, script: ["a", "b", "c", "d", "e"], expected: "AAPPP"),
        MatrixCase(
            name: "app: a chain 3*constant(-1)->2*original->constant(-2)", point: .app,
            code: { _ in app(.sequential([minus1.times(3), AppTree.original.times(2), .constant(-2)])) },
            json:
                #"{"point": "\#(w)", "provider": {"sequential": [{"constant": -1, "times": 3}, {"sequential": ["original"], "times": 2}, {"constant": -2}]}}"#,
            chaos: "\(w)=3*constant(-1)->2*original->constant(-2)",
            seed: 1, script: ["a", "b", "c", "d", "e", "f", "g"], expected: "AAAPPAA"),
        MatrixCase(
            name: "app: nested sequential as a counted step", point: .app,
            code: { _ in app(.sequential([AppTree.sequential([minus1, .original]).times(2), minus1, .original])) },
            json:
                #"{"point": "\#(w)", "provider": {"sequential": [{"sequential": [{"constant": -1}, "original"], "times": 2}, {"constant": -1}, "original"]}}"#,
            chaos: nil,
            seed: 1, script: ["a", "b", "c", "d", "e"], expected: "APAPP"),
        MatrixCase(
            name: "app: the last step repeats", point: .app, code: { _ in app(.sequential([.original, minus1])) },
            json: #"{"point": "\#(w)", "provider": {"sequential": ["original", {"constant": -1}]}}"#,
            chaos: "\(w)=1*original->constant(-1)",
            seed: 1, script: ["a", "b", "c", "d"], expected: "PAAA"),
        MatrixCase(
            name: "app: a probability step with times 3, then original", point: .app,
            code: { _ in app(.sequential([minus1.times(3).probability(0.5), .original])) },
            json:
                #"{"point": "\#(w)", "provider": {"sequential": [{"constant": -1, "times": 3, "probability": 0.5}, "original"]}}"#,
            chaos: "\(w)=50%3*constant(-1)->original",
            seed: 9, script: (0..<8).map { "w\($0)" }, expected: goldenAppProbabilityStep),
        MatrixCase(
            name: "app: match with times 2 inside", point: .app,
            code: { _ in app(.composite([.when(startsWithA, minus1.times(2))])) },
            json: #"{"point": "\#(w)", "match": {"prefix": "a"}, "provider": {"constant": -1, "times": 2}}"#,
            chaos: nil,
            seed: 1, script: ["a1", "b1", "a2", "b2", "a3"], expected: "APAPP"),
        MatrixCase(
            name: "app: match with probability 0.5 inside", point: .app,
            code: { _ in app(.composite([.when(startsWithA, minus1.probability(0.5))])) },
            json: #"{"point": "\#(w)", "match": {"prefix": "a"}, "provider": {"constant": -1, "probability": 0.5}}"#,
            chaos: nil,
            seed: 13, script: (0..<12).map { "a\($0)" }, expected: goldenAppMatch),
        MatrixCase(
            name: "app: match with probability 0.5 inside: calls outside the match draw nothing", point: .app,
            code: { _ in app(.composite([.when(startsWithA, minus1.probability(0.5))])) },
            json: #"{"point": "\#(w)", "match": {"prefix": "a"}, "provider": {"constant": -1, "probability": 0.5}}"#,
            chaos: nil,
            seed: 13, script: (0..<12).flatMap { ["a\($0)", "b\($0)"] },
            expected: interleaved(goldenAppMatch, lead: 0, every: 1)),
        MatrixCase(
            name: "app: delay around times 1: every call waits", point: .app,
            code: { _ in app(minus1.times(1).delayed(by: .milliseconds(250))) },
            json: #"{"point": "\#(w)", "provider": {"constant": -1, "times": 1, "delay": "250ms"}}"#,
            chaos: "\(w)=1*constant(-1)@250ms",
            seed: 1, script: ["a", "b", "c"], expected: "AAA", slowMS: 120),
        MatrixCase(
            name: "app: at 2", point: .app, code: { _ in app(minus1.at(call: 2)) },
            json: #"{"point": "\#(w)", "provider": {"constant": -1, "at": 2}}"#, chaos: "\(w)=constant(-1)#2",
            seed: 1, script: ["x", "yy", "zzz", "w"], expected: "PAPP"),
        MatrixCase(
            name: "app: match with at 2 inside: calls outside the match are not counted", point: .app,
            code: { _ in app(.composite([.when(startsWithA, minus1.at(call: 2))])) },
            json: #"{"point": "\#(w)", "match": {"prefix": "a"}, "provider": {"item": "fail", "at": 2}}"#,
            chaos: nil,
            seed: 1, script: ["a1", "b1", "b2", "a2", "a3"], expected: "PPPAP"),
    ]
}
#endif
