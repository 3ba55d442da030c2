import ArgumentParser
import ChaosHooks
import ChaosKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `chaos run --profile FILE -- COMMAND [ARGS…]`: compiles the profile's system entries
/// into a fault plan and has the `chaos` launcher start the program under it.
///
/// The launcher (C) starts programs itself from a plan compiled earlier; it runs this
/// command only when the profile is new to it, and tells it where to keep the compiled
/// plan (`CHAOS_RUN_CACHE`). This command then starts the launcher again with the plan
/// (`CHAOS_RUN_COMPILED`), so choosing the seed, setting the environment and starting the
/// program are written once, in C.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Run a program with a profile's system entries (files, sockets, DNS, environment, clock, processes, directories) applied.",
        // One line a paragraph (a backslash ends each source line): the argument parser wraps
        // the text to the terminal, and hard breaks inside a paragraph would make it ragged.
        discussion: """
            Entries on system.files, system.connect, system.accept, system.send, system.recv, \
            system.getaddrinfo, system.getenv, system.clock, system.process and system.dir reach \
            the program through its C library calls (LD_PRELOAD), with probability, times, delay, \
            sequential and match \
            meaning what they mean in-process. Without a seed one is drawn and printed, so a run \
            can be replayed with --seed or CHAOS_SEED.

            Programs the preload library cannot reach (statically linked programs, Go programs) get \
            the seccomp delivery instead: chaos run stays their parent and answers the system calls \
            the profile's files, connect, clock, stat, process and dir entries name. Its vDSO is patched so that a \
            steady clock (an offset, a frozen clock, a speed, virtual time) is read inside the program at \
            about the vDSO's cost, and other clock readings become system calls; where it cannot \
            be patched it is hidden (slower), which is said and reported. A program neither delivery reaches (another ELF class, or \
            entries the seccomp delivery cannot carry, such as getenv sequences) is refused before \
            it starts, with the reason; --allow-unreached runs it anyway, without chaos.

            Every exec in the program's tree is checked as the program was: one the preload library \
            cannot reach fails with the reason (--allow-unreached: runs, said and reported), and a \
            program that drops the variables that carry chaos from its children's environment gets \
            them back. io_uring, whose reads and writes pass every interceptor, fails with ENOSYS \
            when the profile has file or socket entries (--io-uring allow: goes through, said).

            When the program ends, chaos run reports each entry's calls seen and acted on, counted \
            across every process of the program's tree (--quiet: not; --report FILE: as JSON), names \
            the processes of the tree still running (--wait-tree[=DURATION]: waits for them first), \
            and --require-fired fails a run in which an entry never acted (it waits up to 5 s for \
            the tree, less once every entry has acted).

            Exit status: the program's own; 125 when chaos run itself fails (a profile error, \
            no preload library, a program it cannot reach, an entry that never acted under \
            --require-fired), 126 when the program cannot be run, 127 when it is not found.

            Example: chaos run --profile Examples/Profiles/thirty-years-ago.json -- date
            """
    )

    @Option(
        help: "The JSON profile whose system entries to apply: a file, - for standard input, or /dev/fd/N (bash <(…)).")
    var profile: String

    @Option(
        help: "Replay a run: the seed it printed (default: the profile's seed, else $CHAOS_SEED, else a fresh one).")
    var seed: UInt64?

    @Option(help: "The preload library (default: $CHAOS_PRELOAD_LIBRARY, or libChaosPreload.so beside chaos).")
    var preload: String?

    @Flag(help: "Compile the profile again instead of using a plan compiled earlier.")
    var noCache = false

    @Flag(
        help:
            "Run a program the preload library cannot reach (static, Go, another ELF class) anyway, without chaos, instead of refusing it."
    )
    var allowUnreached = false

    @Option(
        help:
            "How chaos reaches the program: auto (the preload library where it reaches, else seccomp), preload or seccomp."
    )
    var delivery: Delivery = .auto

    @Flag(help: "Do not report the entries' counts when the program ends.")
    var quiet = false

    @Option(help: "Also write the report as JSON to this file.")
    var report: String?

    @Flag(help: "Exit 125 after the program ends when an entry never acted.")
    var requireFired = false

    @Flag(
        help:
            "Report when every process of the program's tree has ended, not only the program (--wait-tree=DURATION: at most that long after it)."
    )
    var waitTree = false

    @Option(help: .hidden)
    var waitTreeBound: String?

    @Option(
        help:
            "io_uring in the tree: refuse (ENOSYS, so that programs fall back to calls chaos reaches) or allow (out of chaos's reach, said)."
    )
    var ioUring: IOUring = .refuse

    /// Whether the program's tree may set up io_uring.
    enum IOUring: String, ExpressibleByArgument, CaseIterable {
        case refuse, allow
    }

    /// How `chaos run` reaches its program.
    enum Delivery: String, ExpressibleByArgument, CaseIterable {
        case auto, preload, seccomp
    }

    @Argument(parsing: .captureForPassthrough, help: "The program and its arguments (after --).")
    var command: [String]

    func validate() throws {
        if let waitTreeBound, !waitTreeBound.isEmpty {
            guard let bound = DurationText.parse(waitTreeBound), bound > .zero else {
                throw ValidationError("--wait-tree=\(waitTreeBound): give a duration such as 30s or 2m")
            }
        }
    }

    func run() throws {
        let arguments = command.first == "--" ? Array(command.dropFirst()) : command
        guard !arguments.isEmpty else {
            throw ValidationError("name the program to run after --, e.g. chaos run --profile p.json -- date")
        }
        let plan: SystemRunPlan
        do {
            plan = try ProfileCheck.runPlan(try ChaosProfile.load(contentsOfFile: profile))
        } catch {
            printError("chaos run: \(error)")
            throw ExitCode(125)
        }
        let launcher = try Launcher.path(for: "chaos run")
        let environment = ProcessInfo.processInfo.environment
        let compiled: String
        var temporary = false
        if !noCache, let cache = environment["CHAOS_RUN_CACHE"], !cache.isEmpty {
            compiled = cache
        } else {
            compiled =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "chaos-run-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).plan"
                ).path
            temporary = true
        }
        do {
            try write(RunPlanFile.text(of: plan), atomicallyTo: compiled)
        } catch {
            printError("chaos run: cannot write the compiled plan to \(compiled): \(error)")
            throw ExitCode(125)
        }
        // The launcher reads the plan, deletes it when it was only for this run, and
        // becomes the program.
        setenv("CHAOS_RUN_COMPILED", compiled, 1)
        if temporary { setenv("CHAOS_RUN_COMPILED_ONCE", "1", 1) } else { unsetenv("CHAOS_RUN_COMPILED_ONCE") }
        unsetenv("CHAOS_RUN_CACHE")
        var argv = [launcher, "run", "--profile", profile]
        if let seed { argv += ["--seed", String(seed)] }
        if let preload { argv += ["--preload", preload] }
        if allowUnreached { argv.append("--allow-unreached") }
        argv += ["--delivery", delivery.rawValue]
        if quiet { argv.append("--quiet") }
        if let report { argv += ["--report", report] }
        if requireFired { argv.append("--require-fired") }
        if let waitTreeBound {
            argv.append("--wait-tree=\(waitTreeBound)")
        } else if waitTree {
            argv.append("--wait-tree")
        }
        argv += ["--io-uring", ioUring.rawValue]
        argv += ["--"] + arguments
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
        cArguments.append(nil)
        execv(launcher, &cArguments)
        printError("chaos run: cannot start the launcher \(launcher): \(String(cString: strerror(errno)))")
        throw ExitCode(125)
    }

    /// Writes `text` so that a reader never sees half of it (a temporary file, renamed).
    private func write(_ text: String, atomicallyTo path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}

/// The file the launcher reads: `chaoskit-run 1`, directives, a line `plan`, then the plan
/// without its seed (the launcher chooses the seed per run). See `Sources/2-Deliveries/chaos/main.c`.
enum RunPlanFile {
    static func text(of plan: SystemRunPlan) -> String {
        var lines = ["chaoskit-run 1"]
        for change in plan.environment {
            if let value = change.value {
                lines.append("env \(change.name)=\(escaped(value))")
            } else {
                lines.append("unenv \(change.name)")
            }
        }
        if let seed = plan.seed { lines.append("seed \(seed)") }
        if plan.draws { lines.append("draws") }
        lines.append("plan")
        return lines.joined(separator: "\n") + "\n" + plan.body
    }

    /// `\\`, `\n` and `\xHH` for control bytes, so a value stays on one line.
    static func escaped(_ value: String) -> String {
        var bytes: [UInt8] = []
        let hex = Array("0123456789abcdef".utf8)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case UInt8(ascii: "\n"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0..<0x20, 0x7F:
                bytes += [UInt8(ascii: "\\"), UInt8(ascii: "x"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
            default: bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
