import ArgumentParser
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The `chaos` launcher (C), which starts programs under a compiled plan: `chaos run` hands
/// it the plan it compiled, and `chaos explore` starts it once per run.
enum Launcher {
    /// The launcher that started this tool, else the one beside it; `command` names who
    /// asks, for the error (which exits 125).
    static func path(for command: String) throws -> String {
        if let given = ProcessInfo.processInfo.environment["CHAOS_LAUNCHER"], access(given, X_OK) == 0 { return given }
        let beside = executableDirectory.appendingPathComponent("chaos").path
        guard access(beside, X_OK) == 0 else {
            printError(
                "\(command): the chaos launcher was not found beside \(executableDirectory.path); build it with `swift build --product chaos`"
            )
            throw ExitCode(125)
        }
        return beside
    }

    /// The folder of this tool's executable.
    static var executableDirectory: URL {
        URL(fileURLWithPath: executablePath).deletingLastPathComponent()
    }

    /// This tool's executable.
    static var executablePath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
