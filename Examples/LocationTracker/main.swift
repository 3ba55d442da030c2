import ChaosKit
import ChaosPoints
import ExampleApps
import Foundation
import Logging

// Plays a GPX route through the location point and logs the walk.
//   swift run LocationTracker                        (the device stands still in London)
//   CHAOS_PROFILE=Examples/Profiles/royal-mile-walk.json swift run LocationTracker
//   CHAOS='location.updates=teleport' swift run LocationTracker
// Logs (which entries chaos applied, the seed) go to standard error, the output to standard output.
LoggingSystem.bootstrap(StreamLogHandler.standardError)
Chaos.registerBuiltInPoints()
do {
    let session = try Chaos.bootstrap(watchProfile: false)
    let standingStill = FixedLocationProvider(Location(latitude: 51.5007, longitude: -0.1246))
    let log = await LocationTracker(provider: ChaosLocationProvider(base: standingStill)).track(limit: 8)
    for fix in log.fixes {
        print(String(format: "%9.5f, %10.5f  ±%4.0f m", fix.latitude, fix.longitude, fix.horizontalAccuracy))
    }
    print(
        String(
            format: "%d fixes, %.0f m, %d jumps%@", log.fixes.count, log.distance, log.jumps,
            log.failure.map { ", ended: \($0)" } ?? ""))
    session?.stop()
} catch {
    print("chaos profile rejected: \(error)")
}
