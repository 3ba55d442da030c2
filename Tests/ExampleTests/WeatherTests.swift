import ChaosKit
import ChaosNetwork
import ChaosPoints
import ChaosTesting
import ExampleApps
import Foundation
import Testing

/// Robustness of the weather example under a bad network and a bad location. The network
/// chaos is task-scoped on `network.send` (the app's `ChaosNetworkClient` runs in the test's
/// task), so these tests run in parallel with each other and everything else.
@Suite struct WeatherAppTests {
    static let edinburgh = Location(latitude: 55.9533, longitude: -3.1883)

    /// The app on the in-process API, retrying quickly.
    static func app(attempts: Int = 3) throws -> WeatherApp {
        WeatherApp(
            client: ChaosNetworkClient(try WeatherService.stubs()),
            location: ChaosLocationProvider(base: FixedLocationProvider(edinburgh)),
            retry: .init(attempts: attempts, delay: .milliseconds(10), maxRetryAfter: .milliseconds(50))
        )
    }

    @Test func aCalmDayShowsTheForecastForTheCurrentPlace() async throws {
        let screen = try await Self.app().load()
        #expect(screen == .forecast(WeatherService.forecast(latitude: 55.9533, longitude: -3.1883), attempts: 1))
        #expect(screen.text.hasPrefix("Edinburgh: "))
    }

    @Test(.chaos(ProfileEntry(ChaosNetwork.send, NetworkCondition.offline.provider)))
    func offlineShowsAFriendlyError() async throws {
        #expect(try await Self.app().load() == .problem(WeatherApp.Message.offline))
    }

    @Test(
        .chaos(
            ProfileEntry(
                ChaosNetwork.send, .sequential([NetworkCondition.status(503, retryAfter: 1).provider, .original]))))
    func aServiceUnavailableThenTheOriginalIsRetriedAndSucceeds() async throws {
        guard case .forecast(let forecast, let attempts) = try await Self.app().load() else {
            Issue.record("no forecast after a 503")
            return
        }
        #expect(attempts == 2)
        #expect(forecast.place == "Edinburgh")
    }

    @Test(.chaos(ProfileEntry(ChaosNetwork.send, NetworkCondition.status(503).provider)))
    func aServiceThatStaysDownGivesUpPolitely() async throws {
        #expect(try await Self.app().load() == .problem(WeatherApp.Message.unavailable))
    }

    @Test(.chaos(ProfileEntry(ChaosNetwork.send, NetworkCondition.truncated(keeping: 0.6).provider)))
    func aTruncatedAnswerIsUnreadableNotACrash() async throws {
        #expect(try await Self.app().load() == .problem(WeatherApp.Message.unreadable))
    }

    @Test(arguments: 1...40)
    func corruptedBytesNeverCrashTheApp(seed: Int) async throws {
        try await Chaos.with(
            ProfileEntry(ChaosNetwork.send, NetworkCondition.corrupted(bytes: 4).provider), seed: UInt64(seed)
        ) {
            let screen = try await Self.app().load()
            switch screen {
            case .forecast(let forecast, _): #expect((-100...70).contains(forecast.temperature))
            case .problem(let message):
                #expect(message == WeatherApp.Message.unreadable || message == WeatherApp.Message.other)
            }
        }
    }

    @Test(
        .chaos(
            ProfileEntry(
                ChaosNetwork.send,
                .constant(NetworkResponse(status: 200, body: Data(#"{"place":"Edinburgh","temperature":"warm"}"#.utf8)))
            )))
    func wrongJSONIsUnreadable() async throws {
        #expect(try await Self.app().load() == .problem(WeatherApp.Message.unreadable))
    }

    @Test(.chaos(ProfileEntry(ChaosNetwork.send, NetworkCondition.latency(.milliseconds(300)).provider)))
    func aSlowNetworkStillAnswers() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        guard case .forecast = try await Self.app().load() else {
            Issue.record("no forecast on a slow network")
            return
        }
        #expect(clock.now - start >= .milliseconds(300))
    }

    @Test(.chaos(ProfileEntry(ChaosLocation.current, LocationScenario.failing(.denied).current)))
    func noLocationAsksForPermission() async throws {
        #expect(try await Self.app().load() == .problem(WeatherApp.Message.noLocation))
    }

    @Test(.chaos(ProfileEntry(ChaosLocation.current, LocationScenario.city(City.named("reykjavik")!).current)))
    func anotherPlaceGetsItsOwnForecast() async throws {
        #expect(try await Self.app().load().text.hasPrefix("Reykjavik: "))
    }

    @Test(.chaos(profile: "../../Examples/Profiles/weather-flaky.json", points: ChaosNetwork.send))
    func theFlakyProfileRetriesThenAnswersSlowly() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        guard case .forecast(_, let attempts) = try await Self.app().load() else {
            Issue.record("no forecast under weather-flaky.json")
            return
        }
        #expect(attempts == 2)
        #expect(clock.now - start >= .milliseconds(1_000))
    }

    @Test func theAPIRejectsBadCoordinates() async throws {
        let stubs = try WeatherService.stubs()
        let response = try await stubs.respond(
            to: NetworkRequest(
                .init(method: .get, url: URL(string: "https://api.weather.example.com/v1/forecast?lat=north")!)))
        #expect(response.statusCode == 400)
    }
}
