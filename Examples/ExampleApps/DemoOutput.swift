import Foundation
import Logging

/// Sends a demo's logs to standard error: at info level, or warnings only when
/// `CHAOS_DEMO_QUIET` is set (the tests set it, so that what they read stays short).
public func bootstrapDemoLogging() {
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = ProcessInfo.processInfo.environment["CHAOS_DEMO_QUIET"] == nil ? .info : .warning
        return handler
    }
}

/// Writes one line to standard output at once: the tests read a demo's lines as they come.
public func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
