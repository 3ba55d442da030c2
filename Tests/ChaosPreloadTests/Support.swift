import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Runs real programs with `LD_PRELOAD=<built libChaosPreload.so>` and a plan.
enum Preload {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The folder `swift build --show-bin-path` names: the one holding this test bundle.
    static var binDirectory: URL {
        var url = Bundle.main.bundleURL
        if url.pathExtension == "xctest" { url = url.deletingLastPathComponent() }
        let candidates = [url, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
        return candidates.first {
            FileManager.default.fileExists(atPath: $0.appendingPathComponent("libChaosPreload.so").path)
        } ?? url
    }

    /// The built library (`CHAOS_PRELOAD_LIBRARY` overrides): beside this bundle, else in
    /// the folder `swift build --show-bin-path` names. `swift build` builds it with every
    /// other product; a missing library is a build problem, so tests fail on it.
    static let library: String = {
        if let given = ProcessInfo.processInfo.environment["CHAOS_PRELOAD_LIBRARY"] { return given }
        let beside = binDirectory.appendingPathComponent("libChaosPreload.so").path
        if FileManager.default.fileExists(atPath: beside) { return beside }
        // The bundle's folder is that path in every layout SwiftPM uses; ask it otherwise.
        let scratch = binDirectory.deletingLastPathComponent().deletingLastPathComponent()
        var arguments = ["swift", "build", "--package-path", root.path, "--show-bin-path"]
        if scratch.lastPathComponent.hasPrefix(".build") { arguments += ["--scratch-path", scratch.path] }
        if let shown = try? plain(arguments), shown.status == 0, let folder = shown.lines.last {
            return folder + "/libChaosPreload.so"
        }
        return beside
    }()

    struct Outcome: CustomStringConvertible {
        let status: Int32
        let output: String
        let errors: String
        var description: String {
            "status \(status), stdout: \(output.debugDescription), stderr: \(errors.debugDescription)"
        }
        var lines: [String] { output.split(separator: "\n").map(String.init) }
        /// The "NAME RESULT" lines a probe prints, by name.
        var results: [String: String] {
            Dictionary(
                lines.map { line in
                    let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                    return (parts[0], parts.count > 1 ? parts[1] : "")
                }, uniquingKeysWith: { $1 })
        }
    }

    /// Where a program is on PATH, or nil.
    static func which(_ program: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = "\(folder)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Runs `arguments` (the first one looked up on PATH) without the preload.
    static func plain(_ arguments: [String], in directory: String? = nil, input: String? = nil) throws -> Outcome {
        try run(arguments, environment: [:], in: directory, input: input)
    }

    /// Runs `arguments` with the preload library and `plan` (its text).
    static func under(
        _ plan: String, _ arguments: [String], in directory: String? = nil, input: String? = nil,
        environment: [String: String] = [:]
    ) throws -> Outcome {
        #expect(
            FileManager.default.fileExists(atPath: library),
            "libChaosPreload.so is not built at \(library); run swift build first")
        var variables = environment
        variables["LD_PRELOAD"] = library
        variables["CHAOS_PLAN_TEXT"] = plan
        return try run(arguments, environment: variables, in: directory, input: input)
    }

    static func run(_ arguments: [String], environment: [String: String], in directory: String?, input: String?) throws
        -> Outcome
    {
        let process = Process()
        let program = arguments[0].hasPrefix("/") ? arguments[0] : (which(arguments[0]) ?? arguments[0])
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = Array(arguments.dropFirst())
        var merged = ProcessInfo.processInfo.environment
        for name in ["LD_PRELOAD", "CHAOS_PLAN", "CHAOS_PLAN_TEXT", "CHAOS_CLOCK_ANCHOR"] { merged[name] = nil }
        for name in merged.keys where name.hasPrefix("CHAOS_PRELOAD_") { merged[name] = nil }
        merged.merge(environment) { $1 }
        merged["LC_ALL"] = "C"
        process.environment = merged
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        let output = Pipe()
        let errors = Pipe()
        let standardInput = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = standardInput
        try process.runWithSignalsUnblocked()
        // No program may hang the suite: one that runs for a minute is stopped (and fails).
        let watchdog = DispatchWorkItem { [process] in if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
        defer { watchdog.cancel() }
        if let input { standardInput.fileHandleForWriting.write(Data(input.utf8)) }
        try? standardInput.fileHandleForWriting.close()
        // Read both pipes at once so that a chatty program cannot fill one and block.
        let errorData = DataBox()
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            errorData.data = errors.fileHandleForReading.readDataToEndOfFile()
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
            errors: String(decoding: errorData.data, as: UTF8.self))
    }

    /// A fresh directory (physical path: no symbolic link in it), removed by `cleanup`.
    static func directory(_ name: String = "d") throws -> String {
        let base = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "chaos-preload-\(name)-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true)
        guard let resolved = realpath(base, nil) else { return base }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func remove(_ path: String) { try? FileManager.default.removeItem(atPath: path) }

    /// Compiles a C program (once per process and source) and returns the binary's path.
    static func compile(_ name: String, _ source: String) throws -> String {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "chaos-preload-programs-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("\(name).c")
        let binary = folder.appendingPathComponent(name).path
        if FileManager.default.fileExists(atPath: binary) { return binary }
        try source.write(to: file, atomically: true, encoding: .utf8)
        let built = try plain(["cc", "-O1", "-Wall", "-o", binary + ".tmp", file.path])
        #expect(built.status == 0, "cc failed: \(built.errors)")
        try? FileManager.default.moveItem(atPath: binary + ".tmp", toPath: binary)
        return binary
    }

    /// A files plan failing `ops` under `path` with `errno`.
    static func filesPlan(_ path: String, ops: String = "write,sync", errno: String = "ENOSPC", seed: UInt64 = 0)
        -> String
    {
        """
        chaos-plan 1
        seed \(seed)
        entry files
        node 0 composite
        case 1 path="\(path)" ops=\(ops)
        node 1 fail errno=\(errno)
        """
    }
}

/// Conditions that skip a test with a named reason (never a silent pass).
enum Needs {
    static func program(_ name: String) -> Bool { Preload.which(name) != nil }
    static var coreutils: Bool { ["cp", "dd", "tee", "sh"].allSatisfy(program) }
}

/// Written by one reader thread, read after it finished (the group orders them).
final class DataBox: @unchecked Sendable {
    var data = Data()
}
