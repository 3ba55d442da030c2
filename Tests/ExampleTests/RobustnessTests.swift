import ChaosKit
import ChaosPoints
import ChaosTesting
import ExampleApps
import Foundation
import Testing

/// Robustness tests as a ChaosKit user writes them: each test case runs in its own chaos
/// scope (the trait), so they run in parallel without seeing each other's chaos.
@Suite struct HalleyCountdownTests {
    @Test func countsDaysFromTheRealClock() {
        #expect(HalleyCountdown().daysRemaining > 0)
    }

    @Test func thePerihelionIsJuly28th2061() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        #expect(
            calendar.dateComponents([.year, .month, .day, .hour], from: HalleyCountdown.perihelion)
                == DateComponents(year: 2061, month: 7, day: 28, hour: 0))
    }

    @Test(arguments: [0.0, 43_200, 86_399])
    func saysTodayAllDayOnThePerihelion(secondsIntoTheDay: Double) throws {
        let instant = HalleyCountdown.perihelion.addingTimeInterval(secondsIntoTheDay)
        try Chaos.with(ProfileEntry(ChaosClock.now, ChaosClock.frozen(at: instant))) {
            #expect(HalleyCountdown().message == "Halley's comet is at perihelion today!")
        }
    }

    @Test(
        .chaos(ProfileEntry(ChaosClock.now, ChaosClock.frozen(at: HalleyCountdown.perihelion.addingTimeInterval(-1)))))
    func oneSecondBeforeItIsTomorrow() {
        #expect(HalleyCountdown().daysRemaining == 1)
    }

    @Test(.chaos(ProfileEntry(ChaosClock.now, ChaosClock.offset(by: try! ClockOffset.parse("+40y")))))
    func aClockFortyYearsAheadSeesItPassed() {
        #expect(HalleyCountdown().daysRemaining < 0)
        #expect(HalleyCountdown().message.contains("passed perihelion"))
    }

    @Test(
        .chaos(
            seed: 10_000,
            ProfileEntry(ChaosClock.now, .random(.date(withinDays: 10_000, of: HalleyCountdown.perihelion)))))
    func anyDateWithinTenThousandDaysGivesASensibleMessage() {
        for _ in 0..<200 {
            let message = HalleyCountdown().message
            #expect(message.hasPrefix("Halley's comet"))
        }
    }
}

@Suite struct WelcomeBannerTests {
    static let name = "Ada"

    @Test func plainGreeting() {
        #expect(WelcomeBanner().line(for: Self.name) == "Welcome, Ada!")
    }

    @Test(arguments: StringTransformation.allDefaults)
    func everyStringChaosFitsTheWidthAndKeepsTheName(_ transformation: StringTransformation) throws {
        try Chaos.with(ProfileEntry(ChaosStrings.localized, ChaosStrings.transformed(transformation))) {
            let line = WelcomeBanner(width: 40).line(for: Self.name)
            #expect(!line.isEmpty, "\(transformation)")
            #expect(line.count <= 40, "\(transformation): \(line.count) characters")
            #expect(!line.contains("%@"), "\(transformation): raw placeholder in \(line)")
        }
    }
}

@Suite struct LocationTrackerTests {
    static let london = Location(latitude: 51.5007, longitude: -0.1246)
    static var routeURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
            .appendingPathComponent("Examples/Routes/royal-mile.gpx")
    }

    @Test func aFixedProviderGivesOneFixAndNoDistance() async {
        let log = await LocationTracker(provider: FixedLocationProvider(Self.london)).track(limit: 3)
        #expect(log.fixes.map { [$0.latitude, $0.longitude] } == [[Self.london.latitude, Self.london.longitude]])
        #expect(log.distance == 0)
        #expect(log.failure == nil)
    }

    /// A clock that moves 30 s on every read: the walk is deterministic, whatever the
    /// machine's speed or any process-wide clock hook of another test.
    final class SteppingClock: WallClock, @unchecked Sendable {
        // `current` is only touched under `lock`.
        private let lock = NSLock()
        private var current = Date(timeIntervalSince1970: 1_800_000_000)

        var now: Date {
            lock.lock()
            defer { lock.unlock() }
            current += 30
            return current
        }
    }

    @Test func aGPXRouteIsWalkedInOrder() async throws {
        let route = try LocationScenario.gpx(contentsOf: Self.routeURL, speed: 1, clock: SteppingClock())
        try await Chaos.with(ProfileEntry(ChaosLocation.updates, route.updates(every: .milliseconds(20)))) {
            let log = await LocationTracker(provider: ChaosLocationProvider(base: FixedLocationProvider(Self.london)))
                .track(limit: 6)
            #expect(log.fixes.count == 6)
            #expect(log.fixes.allSatisfy { (55.9...56.0).contains($0.latitude) }, "the walk is in Edinburgh")
            #expect(log.distance > 0)
            #expect(log.jumps == 0)
        }
    }

    @Test(
        .chaos(
            seed: 3,
            entries: {
                [ProfileEntry(ChaosLocation.updates, LocationScenario.teleport().updates(every: .milliseconds(5)))]
            }))
    func teleportsAreCountedAsJumps() async {
        let log = await LocationTracker(provider: ChaosLocationProvider(base: FixedLocationProvider(Self.london)))
            .track(limit: 5)
        #expect(log.fixes.count == 5)
        #expect(log.jumps >= 1)
    }

    @Test(
        .chaos(ProfileEntry(ChaosLocation.updates, LocationScenario.failing(.denied).updates(every: .milliseconds(5)))))
    func aDeniedPermissionEndsTheLogWithAReason() async {
        let log = await LocationTracker(provider: ChaosLocationProvider(base: FixedLocationProvider(Self.london)))
            .track(limit: 5)
        #expect(log.fixes.isEmpty)
        #expect(log.failure != nil)
    }
}
