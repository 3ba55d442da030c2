import ChaosKit
import ChaosNetwork
import ChaosPoints
import ExampleApps
import Foundation
import Logging

// "The weather at the current location" from a JSON weather API, through ChaosNetwork.
// There is no network here: the API is a Router in this process (WeatherService), reached
// through ChaosNetworkClient, so profile chaos on network.send applies to every request.
//   swift run Weather                                                 (Edinburgh, a calm day)
//   CHAOS_PROFILE=Examples/Profiles/weather-flaky.json swift run Weather   (503, retry, slow)
//   CHAOS='network.send=offline' swift run Weather
//   CHAOS='location.current=city(reykjavik)' swift run Weather
// Logs go to standard error, the screen to standard output.
LoggingSystem.bootstrap(StreamLogHandler.standardError)
Chaos.registerBuiltInPoints()
ChaosNetwork.register()
let logger = Logger(label: "weather")
do {
    let session = try Chaos.bootstrap(watchProfile: false)
    let stubs = try WeatherService.stubs()
    let edinburgh = FixedLocationProvider(Location(latitude: 55.9533, longitude: -3.1883))
    let app = WeatherApp(client: ChaosNetworkClient(stubs), location: ChaosLocationProvider(base: edinburgh))
    let clock = ContinuousClock()
    let start = clock.now
    let screen = await app.load()
    if case .forecast(_, let attempts) = screen {
        logger.info("answered after \(attempts) request(s) in \(clock.now - start)")
    }
    print(screen.text)
    session?.stop()
} catch {
    print("chaos profile rejected: \(error)")
}
