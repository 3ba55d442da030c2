import ChaosKit
import ChaosPoints
import ExampleApps
import Logging

// Run plain:               swift run HalleyCountdown
// Run with date chaos:     CHAOS='clock.now=offset(+40y)' swift run HalleyCountdown
// Or from a profile:       CHAOS_PROFILE=Examples/Profiles/halley-in-2061.json swift run HalleyCountdown
// Logs (which entries chaos applied, the seed) go to standard error, the output to standard output.
LoggingSystem.bootstrap(StreamLogHandler.standardError)
Chaos.registerBuiltInPoints()
do {
    let session = try Chaos.bootstrap(watchProfile: false)
    print(HalleyCountdown().message)
    session?.stop()
} catch {
    print("chaos profile rejected: \(error)")
}
