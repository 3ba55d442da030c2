import ArgumentParser
import ChaosKit
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `chaos run --profile FILE -- COMMAND [ARGS…]`: runs any dynamically linked program with
/// the profile's system-level entries applied through the ChaosPreload library.
struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a program with a profile's system entries (clock, environment, sockets, files) applied.",
        discussion: """
        Only entries on system.clock, system.getenv, system.connect, system.send, system.recv,
        system.getaddrinfo and system.files reach another program; other entries are refused.
        Example: chaos run --profile Examples/Profiles/thirty-years-ago.json -- date
        """
    )

    @Option(help: "The JSON profile whose system entries to apply.")
    var profile: String

    @Option(help: "The preload library (default: libChaosPreload.so beside this tool).")
    var preload: String?

    @Argument(parsing: .captureForPassthrough, help: "The program and its arguments (after --).")
    var command: [String]

    func run() throws {
        let arguments = command.first == "--" ? Array(command.dropFirst()) : command
        guard let program = arguments.first else {
            throw ValidationError("name the program to run after --, e.g. chaos run --profile p.json -- date")
        }
        let loaded = try ChaosProfile.load(contentsOfFile: profile)
        let configuration = try PreloadConfiguration(profile: loaded)
        var environment: [String: String?] = configuration.environmentChanges
        for (name, value) in configuration.environment { environment[name] = .some(value) }
        let library = try preloadLibrary()
        let existing = ProcessInfo.processInfo.environment["LD_PRELOAD"].map { " " + $0 } ?? ""
        environment["LD_PRELOAD"] = .some(library + existing)
        try execute(program, arguments, environment)
    }

    private func preloadLibrary() throws -> String {
        let candidates = [preload, ProcessInfo.processInfo.environment["CHAOS_PRELOAD_LIBRARY"]].compactMap { $0 }
            + [executableDirectory().appendingPathComponent("libChaosPreload.so").path]
        for path in candidates where FileManager.default.fileExists(atPath: path) {
            return path
        }
        throw ValidationError("the preload library was not found at \(candidates.joined(separator: ", ")); build it with `swift build` or pass --preload PATH")
    }

    private func executableDirectory() -> URL {
        let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: path).deletingLastPathComponent()
    }

    /// Replaces this process with `program`, so its exit status, signals and terminal are its own.
    private func execute(_ program: String, _ arguments: [String], _ changes: [String: String?]) throws {
        #if os(Linux)
        for (name, value) in changes {
            if let value { setenv(name, value, 1) } else { unsetenv(name) }
        }
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) }
        argv.append(nil)
        execvp(program, &argv)
        let reason = String(cString: strerror(errno))
        throw ValidationError("cannot run \(program): \(reason)")
        #else
        throw ValidationError("chaos run needs Linux (LD_PRELOAD and glibc)")
        #endif
    }
}

/// Turns a profile's system entries into the CHAOS_PRELOAD_* variables the preload library reads.
struct PreloadConfiguration {
    var environment: [String: String] = [:]
    /// Variables the program starts with changed (nil: removed), so that programs reading
    /// `environ` directly (shells, Python's os.environ) see system.getenv chaos too.
    var environmentChanges: [String: String?] = [:]

    init(profile: ChaosProfile) throws(ChaosError) {
        if let seed = profile.seed { environment["CHAOS_PRELOAD_SEED"] = String(seed) }
        var getenvItems: [String] = []
        for entry in profile.entries where entry.enabled {
            let (probability, item, parameters) = try Self.flatten(entry)
            func conflict(_ variable: String) throws(ChaosError) {
                if environment[variable] != nil {
                    throw ChaosError(.invalidProfile, subject: entry.location, "a second \(entry.pointName) entry; chaos run applies one per point (except system.getenv)")
                }
            }
            switch (entry.pointName, item) {
            case ("system.clock", "offset"):
                try conflict("CHAOS_PRELOAD_CLOCK")
                environment["CHAOS_PRELOAD_CLOCK"] = "offset:\(try Self.offsetSeconds(parameters, entry))"
            case ("system.clock", "frozen"):
                try conflict("CHAOS_PRELOAD_CLOCK")
                let checked = try parameters.checked(against: [.date("date", "the instant the clock shows")], owner: "'frozen'")
                environment["CHAOS_PRELOAD_CLOCK"] = "freeze:\(try checked.date("date").timeIntervalSince1970)"
            case ("system.clock", "speed"):
                try conflict("CHAOS_PRELOAD_CLOCK")
                environment["CHAOS_PRELOAD_CLOCK"] = "speed:\(try parameters.double("factor"))"
            case ("system.clock", "jump"):
                try conflict("CHAOS_PRELOAD_CLOCK")
                let checked = try parameters.checked(against: [
                    .offset("by", "how far the clock jumps"), .integer("after", "readings first", default: 1, range: 0...1_000_000_000),
                ], owner: "'jump'")
                let jump = try checked.offset("by").seconds(from: Date())
                environment["CHAOS_PRELOAD_CLOCK"] = "jump:\(jump):\(try checked.int("after"))"
            case ("system.getenv", "set"):
                let name = try parameters.string("name"), value = try parameters.string("value")
                getenvItems.append("\(name)=\(value)")
                environmentChanges[name] = .some(value)
            case ("system.getenv", "unset"):
                let name = try parameters.string("name")
                getenvItems.append("-\(name)")
                environmentChanges[name] = .some(nil)
            case ("system.connect", "refused"), ("system.connect", "timeout"), ("system.connect", "reset"):
                try conflict("CHAOS_PRELOAD_CONNECT")
                let code = ["refused": ECONNREFUSED, "timeout": ETIMEDOUT, "reset": ECONNRESET][item]!
                environment["CHAOS_PRELOAD_CONNECT"] = "\(code):\(probability)"
            case ("system.connect", "latency"):
                try conflict("CHAOS_PRELOAD_CONNECT_LATENCY")
                environment["CHAOS_PRELOAD_CONNECT_LATENCY"] = String(try Self.latencyNanoseconds(parameters, entry))
            case ("system.send", "reset"), ("system.recv", "reset"):
                try conflict("CHAOS_PRELOAD_SOCKETS")
                environment["CHAOS_PRELOAD_SOCKETS"] = "\(ECONNRESET):\(probability):0"
            case ("system.send", "latency"), ("system.recv", "latency"):
                try conflict("CHAOS_PRELOAD_SOCKETS")
                environment["CHAOS_PRELOAD_SOCKETS"] = "0:0:\(try Self.latencyNanoseconds(parameters, entry))"
            case ("system.getaddrinfo", "dns-failure"):
                try conflict("CHAOS_PRELOAD_DNS")
                environment["CHAOS_PRELOAD_DNS"] = "\(EAI_NONAME):\(probability)"
            case ("system.files", "eio"), ("system.files", "enospc"), ("system.files", "eacces"),
                 ("system.files", "short-read"), ("system.files", "short-write"):
                try conflict("CHAOS_PRELOAD_FILES")
                // errno 0 tells the preload library to shorten transfers instead of failing.
                let code: Int32 = ["eio": EIO, "enospc": ENOSPC, "eacces": EACCES][item] ?? 0
                let operations = try parameters.string("operations", default: item == "short-read" ? "r" : "w")
                guard !operations.isEmpty, operations.allSatisfy({ "owrf".contains($0) }) else {
                    throw ChaosError(.invalidProfile, subject: entry.location, "operations must be letters from \"owrf\" (open, write, read, fsync)")
                }
                environment["CHAOS_PRELOAD_FILES"] = "\(code):\(probability):\(operations):\(try parameters.string("path", default: "/"))"
            default:
                throw ChaosError(
                    .invalidProfile, subject: entry.location,
                    "chaos run cannot apply \(entry.pointName) ← \(entry.provider.summary) to another program; use system.clock (offset, frozen, speed, jump), system.getenv (set, unset), system.connect (refused, timeout, reset, latency), system.send/system.recv (reset, latency), system.getaddrinfo (dns-failure) or system.files (eio, enospc, eacces, short-read, short-write)"
                )
            }
        }
        if !getenvItems.isEmpty { environment["CHAOS_PRELOAD_GETENV"] = getenvItems.joined(separator: "\u{1F}") }
    }

    /// The entry as probability × catalogue item; anything else cannot cross into another process.
    private static func flatten(_ entry: ChaosProfile.Entry) throws(ChaosError) -> (Double, String, ProfileParameters) {
        switch entry.provider {
        case .leaf(.catalogue(let name, let parameters)): return (1, name, parameters)
        case .modified(.probability(let p), .leaf(.catalogue(let name, let parameters))): return (p, name, parameters)
        default:
            throw ChaosError(
                .invalidProfile, subject: entry.location,
                "chaos run takes a catalogue item (optionally with a probability) per entry, not \(entry.provider.summary)"
            )
        }
    }

    /// Nanoseconds from `{"delay": "200ms"}`.
    static func latencyNanoseconds(_ parameters: ProfileParameters, _ entry: ChaosProfile.Entry) throws(ChaosError) -> Int64 {
        let checked = try parameters.checked(against: [.duration("delay", "how long to wait")], owner: "'latency'")
        let (seconds, attoseconds) = try checked.duration("delay").components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Seconds from an `offset` item's parameters (`{"by": "-30y"}` or numeric parts).
    static func offsetSeconds(_ parameters: ProfileParameters, _ entry: ChaosProfile.Entry) throws(ChaosError) -> Double {
        let checked = try parameters.checked(against: ClockOffset.catalogueParameters, owner: "'offset'")
        return try ClockOffset(parameters: checked).seconds(from: Date())
    }
}
