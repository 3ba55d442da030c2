import ChaosHooks
import ChaosKit
import ExampleApps
import Foundation

#if Console
import ChaosConsole
#endif

// Virtual time steered from the console: a program on virtual time (VirtualTime, from
// ChaosHooks) that waits an hour, says so, and waits again, while its control endpoint lets
// `chaos ctl advance PID 1h` or the console's advance buttons move time forward.
//
//   swift run --traits Console ConsoleClockDemo          (virtual time from 2030-01-01T00:00:00Z)
//   CHAOS_DEMO_REAL_TIME=1 swift run --traits Console ConsoleClockDemo   (no virtual time)
//
// Standard output: `ready URL CONSOLE-URL`, then `<virtual time> waiting 1h (N)` before each
// wait and `<virtual time> woke (N)` after it; logs go to standard error.
bootstrapDemoLogging()

#if Console
let onVirtualTime = ProcessInfo.processInfo.environment["CHAOS_DEMO_REAL_TIME"] == nil
if onVirtualTime {
    try VirtualTime.start(at: ISO8601Date.parse("2030-01-01T00:00:00Z"))
}
let started = try await Chaos.bootstrap(control: .always(.init(program: "ConsoleClockDemo")))
guard let console = started.console else {
    say("ready - - (no control endpoint: a release build)")
    exit(0)
}
say("ready \(console.url) \(console.consoleURL ?? "-")")
for turn in 1... {
    say("\(ISO8601Date.format(VirtualTime.now)) waiting 1h (\(turn))")
    try await Task.sleep(for: .seconds(3600))
    say("\(ISO8601Date.format(VirtualTime.now)) woke (\(turn))")
}
#else
FileHandle.standardError.write(
    Data("ConsoleClockDemo needs the package trait Console: swift run --traits Console ConsoleClockDemo\n".utf8))
exit(64)
#endif
