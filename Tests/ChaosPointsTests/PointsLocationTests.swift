import Foundation
import TestHelpers
import Testing

@testable import ChaosKit
@testable import ChaosPoints

/// `location.current`, `location.updates` and their catalogue. All chaos is scoped.
@Suite struct PointsLocationTests {
    static let edinburgh = City.named("edinburgh")!.location(at: Date(timeIntervalSince1970: 0))
    let provider: any LocationProvider = ChaosLocationProvider(base: FixedLocationProvider(Self.edinburgh))

    init() { Chaos.registerBuiltInPoints() }

    private func named(_ item: String, _ values: [String: ProfileValue] = [:]) -> ProfileEntry {
        ProfileEntry(point: "location.current", .catalogue(item, settings(values)))
    }

    private func typed(_ scenario: LocationScenario) -> ProfileEntry {
        ProfileEntry(ChaosLocation.current, scenario.current)
    }

    /// `count` fixes read in a scope with `entry` and `seed`.
    private func fixes(_ entry: ProfileEntry, seed: UInt64 = 1, count: Int = 20) async throws -> [Location] {
        try await Chaos.with(entry, seed: seed) {
            var result: [Location] = []
            for _ in 0..<count { result.append(try await provider.currentLocation()) }
            return result
        }
    }

    private func coordinates(_ fixes: [Location]) -> [[Double]] {
        fixes.map { [$0.latitude, $0.longitude] }
    }

    @Test func withoutChaosTheBaseAnswers() async throws {
        let fix = try await provider.currentLocation()
        #expect(fix.latitude == Self.edinburgh.latitude && fix.longitude == Self.edinburgh.longitude)
        var seen: [Location] = []
        for try await fix in provider.updates() { seen.append(fix) }
        #expect(seen.count == 1)
        await #expect(throws: LocationError.unavailable) { try await FixedLocationProvider(nil).currentLocation() }
    }

    @Test func locationIsCodable() throws {
        let fix = Location(
            latitude: 1.5, longitude: -2.25, altitude: 3, horizontalAccuracy: 4, verticalAccuracy: 5, course: 6,
            speed: 7, timestamp: iso("2026-01-01T00:00:00Z"))
        #expect(try JSONDecoder().decode(Location.self, from: JSONEncoder().encode(fix)) == fix)
    }

    @Test func geometry() {
        let london = City.named("london")!.location(at: Date())
        let paris = City.named("Paris")!.location(at: Date())
        #expect(abs(london.distance(to: paris) - 343_500) < 2_000)  // about 344 km
        let moved = london.moved(distance: 10_000, bearing: 90)
        #expect(abs(london.distance(to: moved) - 10_000) < 1)
        #expect(abs(london.bearing(to: moved) - 90) < 0.1)
        #expect(City.all.count >= 20)
        #expect(Set(City.all.map(\.name)).count == City.all.count)
        #expect(City.all.allSatisfy { TimeZone(identifier: $0.timeZoneIdentifier) != nil })
    }

    // MARK: city

    @Test func city() async throws {
        let tokyo = try #require(City.named("tokyo"))
        for entry in [
            typed(.city(tokyo)), named("city", ["name": .string("tokyo")]),
            ProfileEntry(point: "location.current", .catalogue("city", positional(.string("tokyo")))),
        ] {
            for fix in try await fixes(entry, count: 2) {
                #expect(
                    fix.latitude == tokyo.latitude && fix.longitude == tokyo.longitude && fix.altitude == tokyo.altitude
                )
            }
        }
        let error = scopeError(named("city", ["name": .string("Atlantis")]))
        #expect(error?.kind == .invalidProvider)
        #expect(error?.message.contains("new-york") == true)
    }

    // MARK: random

    @Test func randomGlobeIsUniformByAreaAndReplays() async throws {
        for entry in [typed(.randomGlobe), named("random-globe")] {
            let first = try await fixes(entry, seed: 7)
            #expect(coordinates(try await fixes(entry, seed: 7)) == coordinates(first))
            #expect(coordinates(try await fixes(entry, seed: 8)) != coordinates(first))
            #expect(first.allSatisfy { (-90...90).contains($0.latitude) && (-180..<180).contains($0.longitude) })
        }
        // Area-uniform: half the sphere's area lies within 30° of the equator (sin 30° = ½);
        // uniform latitudes would put only a third there.
        let many = try await fixes(typed(.randomGlobe), seed: 3, count: 4_000)
        let tropical = Double(many.filter { abs($0.latitude) < 30 }.count) / Double(many.count)
        #expect(abs(tropical - 0.5) < 0.03, "fraction within 30° of the equator: \(tropical)")
        let eastern = Double(many.filter { $0.longitude > 0 }.count) / Double(many.count)
        #expect(abs(eastern - 0.5) < 0.03)
    }

    @Test func randomRegionStaysInsideAndIsUniformByArea() async throws {
        let centre = City.named("london")!.location(at: Date())
        let typedEntry = typed(.randomRegion(latitude: centre.latitude, longitude: centre.longitude, radiusKm: 50))
        let namedEntry = named(
            "random-region",
            [
                "latitude": .number(centre.latitude), "longitude": .number(centre.longitude), "radiusKm": .number(50),
            ])
        for entry in [typedEntry, namedEntry] {
            let first = try await fixes(entry, seed: 11, count: 200)
            #expect(first.allSatisfy { $0.distance(to: centre) <= 50_000 + 1 })
            #expect(coordinates(try await fixes(entry, seed: 11, count: 200)) == coordinates(first))
            #expect(coordinates(try await fixes(entry, seed: 12, count: 200)) != coordinates(first))
        }
        // Uniform by area: a quarter of the disc lies within half the radius.
        let many = try await fixes(typedEntry, seed: 5, count: 4_000)
        let inner = Double(many.filter { $0.distance(to: centre) < 25_000 }.count) / Double(many.count)
        #expect(abs(inner - 0.25) < 0.03, "fraction within half the radius: \(inner)")
        #expect(
            scopeError(
                named("random-region", ["latitude": .number(0), "longitude": .number(0), "radiusKm": .number(0)]))
                != nil)
        #expect(
            scopeError(
                named("random-region", ["latitude": .number(91), "longitude": .number(0), "radiusKm": .number(5)]))
                != nil)
        #expect(scopeError(named("random-region", ["latitude": .number(0)]))?.message.contains("'longitude'") == true)
    }

    // MARK: teleport

    @Test func teleportJumpsFar() async throws {
        for entry in [
            typed(.teleport(minimumKm: 5_000)), named("teleport"), named("teleport", ["minimumKm": .number(5_000)]),
        ] {
            let jumps = try await fixes(entry, seed: 21, count: 12)
            for (a, b) in zip(jumps, jumps.dropFirst()) {
                #expect(a.distance(to: b) >= 5_000_000, "\(a) → \(b)")
            }
            #expect(coordinates(try await fixes(entry, seed: 21, count: 12)) == coordinates(jumps))
            #expect(coordinates(try await fixes(entry, seed: 22, count: 12)) != coordinates(jumps))
        }
        let cities = ["london", "tokyo", "sydney"].map { City.named($0)!.location(at: Date()) }
        for entry in [
            typed(.teleport(between: cities)),
            named("teleport", ["cities": .array([.string("london"), .string("tokyo"), .string("sydney")])]),
        ] {
            let jumps = try await fixes(entry, count: 4)
            #expect(coordinates(jumps) == coordinates(cities + [cities[0]]))
        }
        #expect(scopeError(named("teleport", ["cities": .array([.string("london")])])) != nil)
        #expect(scopeError(named("teleport", ["cities": .string("london")])) != nil)
        #expect(scopeError(named("teleport", ["minimumKm": .number(20_000)])) != nil)
    }

    // MARK: degraded accuracy

    @Test func degradedAccuracy() async throws {
        for entry in [typed(.degradedAccuracy(meters: 250)), named("degraded-accuracy", ["meters": .number(250)])] {
            let blurred = try await fixes(entry, seed: 4)
            #expect(blurred.allSatisfy { $0.horizontalAccuracy == 250 && $0.verticalAccuracy == 250 })
            #expect(blurred.allSatisfy { $0.distance(to: Self.edinburgh) <= 250.5 })
            #expect(Set(coordinates(blurred)).count > 1)
            #expect(coordinates(try await fixes(entry, seed: 4)) == coordinates(blurred))
        }
        #expect(scopeError(named("degraded-accuracy", ["meters": .number(-3)])) != nil)
    }

    // MARK: failures

    @Test(arguments: LocationError.allCases)
    func failures(_ failure: LocationError) async throws {
        for entry in [
            typed(.failing(failure)), ProfileEntry(ChaosLocation.current, .throwing(failure)), named("\(failure)"),
        ] {
            await #expect(throws: failure) {
                try await Chaos.with(entry) { try await provider.currentLocation() }
            }
        }
        let updates = ProfileEntry(point: "location.updates", .catalogue("\(failure)", settings()))
        await #expect(throws: failure) {
            try await Chaos.with(updates) {
                for try await _ in provider.updates() {}
            }
        }
    }

    // MARK: gpx

    @Test func gpxPlaybackFollowsTheClock() async throws {
        let points = try GPXDocument.load(contentsOf: pointsResource("eastlake-drive-gpsbabel-1.0.gpx")).playbackPoints
        let clock = ManualWallClock(iso("2026-01-01T00:00:00Z"))
        let scenario = try LocationScenario.route(points, speed: 10, clock: clock)
        try await Chaos.with(typed(scenario)) {
            let start = try await provider.currentLocation()
            #expect(start.latitude == points[0].latitude && start.longitude == points[0].longitude)
            clock.advance(by: 2.1)  // 21 s of the route: between the 2nd and 3rd points (14 s apart)
            let moving = try await provider.currentLocation()
            #expect(moving.latitude < points[1].latitude && moving.latitude > points[2].latitude)
            #expect(abs(moving.course - points[1].location.bearing(to: points[2].location)) < 0.01)
            #expect(moving.speed > 10 * 10)  // a city drive at 10× speed
            clock.advance(by: 3_600)
            let end = try await provider.currentLocation()
            #expect(end.latitude == points[7].latitude && end.longitude == points[7].longitude && end.speed == 0)
        }
    }

    @Test func gpxFromAProfile() async throws {
        let path = pointsResource("thames-run-garmin-1.1.gpx").path
        let first = try GPXDocument.load(contentsOf: pointsResource("thames-run-garmin-1.1.gpx")).playbackPoints[0]
        // Speed 0: the playback stays at the start, whatever the real clock does.
        for entry in [
            named("gpx", ["path": .string(path), "speed": .number(0)]),
            ProfileEntry(
                point: "location.current", .catalogue("gpx", settings(["path": .string(path), "speed": .number(0)]))),
        ] {
            let fix = try await fixes(entry, count: 1)[0]
            #expect(fix.latitude == first.latitude && fix.longitude == first.longitude && fix.altitude == 8.4)
        }
        // A huge speed factor: the run is over at once.
        let last = try GPXDocument.load(contentsOf: pointsResource("royal-mile-route.gpx")).playbackPoints.last!
        try await Chaos.with(
            named("gpx", ["path": .string(pointsResource("royal-mile-route.gpx").path), "speed": .number(1e6)])
        ) {
            try await Task.sleep(for: .milliseconds(5))
            let fix = try await provider.currentLocation()
            #expect(fix.latitude == last.latitude && fix.longitude == last.longitude)
        }
        let malformed = scopeError(named("gpx", ["path": .string(pointsResource("malformed.gpx").path)]))
        #expect(malformed?.kind == .invalidProvider)
        #expect(malformed?.message.contains("line 11") == true)
        let missing = scopeError(named("gpx", ["path": .string("/no/such/route.gpx")]))
        #expect(missing?.message.contains("/no/such/route.gpx") == true)
        #expect(scopeError(named("gpx", ["path": .string(path), "speed": .number(-1)])) != nil)
        #expect(throws: ChaosError.self) { try LocationScenario.route([]) }
    }

    @Test func gpxPlaybackLoops() async throws {
        let points = try GPXDocument.load(contentsOf: pointsResource("eastlake-drive-gpsbabel-1.0.gpx")).playbackPoints
        let once = RoutePlayback(points: points, metersPerSecond: 5)
        let clock = ManualWallClock(iso("2026-01-01T00:00:00Z"))
        let looping = try LocationScenario.route(points, speed: 1, loop: true, clock: clock)
        let stopping = try LocationScenario.route(points, speed: 1, clock: clock)
        clock.advance(by: once.duration * 3 + 21)  // 21 s into the fourth lap
        let expected = once.location(atRouteTime: 21, speedFactor: 1, timestamp: Date())
        try await Chaos.with(typed(looping)) {
            let fix = try await provider.currentLocation()
            #expect(abs(fix.latitude - expected.latitude) < 1e-9 && abs(fix.longitude - expected.longitude) < 1e-9)
            #expect(fix.speed > 0 && fix.course == expected.course)
        }
        try await Chaos.with(typed(stopping)) {
            let fix = try await provider.currentLocation()
            #expect(fix.latitude == points.last!.latitude && fix.speed == 0)
        }
        // Exactly at the end of a lap the route is back at its start.
        let wrapped = RoutePlayback(points: points, metersPerSecond: 5, loop: true)
            .location(atRouteTime: once.duration * 2, speedFactor: 1, timestamp: Date())
        #expect(wrapped.latitude == points[0].latitude && wrapped.longitude == points[0].longitude)
    }

    @Test func gpxLoopIsADeclaredParameter() async throws {
        let loop = try #require(ChaosLocation.parameters(of: "gpx").first { $0.name == "loop" })
        #expect(loop.kind == .boolean && loop.defaultValue == .bool(false))
        let path = pointsResource("royal-mile-route.gpx").path
        let wrongType = scopeError(named("gpx", ["path": .string(path), "loop": .string("yes")]))
        #expect(wrongType?.message.contains("'loop'") == true, "\(String(describing: wrongType))")
        let points = try GPXDocument.load(contentsOf: pointsResource("royal-mile-route.gpx")).playbackPoints
        // A looping route played fast never settles on its last point with speed 0.
        try await Chaos.with(named("gpx", ["path": .string(path), "speed": .number(1e6), "loop": .bool(true)])) {
            try await Task.sleep(for: .milliseconds(5))
            let fix = try await provider.currentLocation()
            #expect(!(fix.latitude == points.last!.latitude && fix.speed == 0))
        }
    }

    @Test func fixesAreTimestampedByTheChaosClock() async throws {
        let frozen = iso("2031-07-04T12:00:00Z")
        let clock = ProfileEntry(ChaosClock.now, ChaosClock.frozen(at: frozen))
        let gpx = pointsResource("thames-run-garmin-1.1.gpx").path
        for location in [typed(.city(City.named("cairo")!)), typed(.randomGlobe), named("gpx", ["path": .string(gpx)])]
        {
            let fix = try await Chaos.with([clock, location]) { try await provider.currentLocation() }
            #expect(fix.timestamp == frozen)
        }
        // The base provider's fixes too, and a stream's.
        #expect(try await Chaos.with(clock) { try await provider.currentLocation() }.timestamp == frozen)
        let updates = ProfileEntry(
            ChaosLocation.updates, LocationScenario.city(City.named("cairo")!).updates(every: .milliseconds(1)))
        let streamed = try await Chaos.with([clock, updates]) {
            var stamps: [Date] = []
            for try await fix in provider.updates() {
                stamps.append(fix.timestamp)
                if stamps.count == 3 { break }
            }
            return stamps
        }
        #expect(streamed == [frozen, frozen, frozen])
    }

    // MARK: updates

    @Test func updatesStreamTheScenario() async throws {
        let cairo = City.named("cairo")!
        for entry in [
            ProfileEntry(ChaosLocation.updates, LocationScenario.city(cairo).updates(every: .milliseconds(1))),
            ProfileEntry(
                point: "location.updates",
                .catalogue("city", settings(["name": .string("cairo"), "interval": .number(0.001)]))),
        ] {
            let seen = try await Chaos.with(entry) {
                var seen: [Location] = []
                for try await fix in provider.updates().prefix(3) { seen.append(fix) }
                return seen
            }
            #expect(seen.count == 3)
            #expect(seen.allSatisfy { $0.latitude == cairo.latitude && $0.longitude == cairo.longitude })
        }
        func globe(seed: UInt64) async throws -> [[Double]] {
            try await Chaos.with(
                ProfileEntry(point: "location.updates", .catalogue("random-globe", settings(["interval": .number(0)]))),
                seed: seed
            ) {
                var seen: [Location] = []
                for try await fix in provider.updates().prefix(5) { seen.append(fix) }
                return coordinates(seen)
            }
        }
        let first = try await globe(seed: 1)
        #expect(try await globe(seed: 1) == first)
        #expect(try await globe(seed: 2) != first)
        #expect(Set(first).count == 5)
    }
}
