import Foundation
import TestHelpers
import Testing

@testable import ChaosKit
@testable import ChaosPoints

/// `clock.now`, `clock.timeZone`, `clock.sleep` and their catalogues. Every test scopes its
/// chaos with `Chaos.with`, so the shared built-in points never leak between parallel tests.
@Suite struct PointsClockTests {
    let clock: any WallClock = ChaosWallClock()

    init() { Chaos.registerBuiltInPoints() }

    @Test func withoutChaosTheClocksAreReal() {
        let before = Date()
        let chaotic = clock.now
        let live = LiveWallClock().now
        let after = Date()
        #expect(chaotic >= before && chaotic <= after)
        #expect(live >= before && live <= after)
        #expect(clock.timeZone == TimeZone.current)
    }

    @Test func builtInPointsAreListedWithTheirCatalogues() {
        let catalogue = Dictionary(uniqueKeysWithValues: Chaos.catalogue.map { ($0.name, Set($0.items.map(\.name))) })
        #expect(catalogue["clock.now"] == ["frozen", "offset", "speed", "random-date", "backwards", "edge"])
        #expect(catalogue["clock.timeZone"] == ["timezone", "random-timezone"])
        #expect(catalogue["clock.sleep"] == ["skip", "stretch", "fail"])
        #expect(catalogue["strings.localized"]?.count == 12)
        #expect(catalogue["location.current"] == Set(ChaosLocation.itemNames))
        #expect(catalogue["location.updates"] == Set(ChaosLocation.itemNames))
    }

    // MARK: frozen

    @Test func frozen() throws {
        let date = iso("2026-03-29T01:00:00Z")
        try Chaos.with(ProfileEntry(ChaosClock.now, ChaosClock.frozen(at: date))) {
            #expect(clock.now == date)
            #expect(clock.now == date)
        }
        try Chaos.with(
            ProfileEntry(point: "clock.now", .catalogue("frozen", settings(["date": .string("2026-03-29T01:00:00Z")])))
        ) {
            #expect(clock.now == date)
        }
        try Chaos.with(ProfileEntry(point: "clock.now", .catalogue("frozen", settings(["date": .number(0)])))) {
            #expect(clock.now == Date(timeIntervalSince1970: 0))
        }
        let error = scopeError(
            ProfileEntry(point: "clock.now", .catalogue("frozen", settings(["date": .string("29/03/2026")]))))
        #expect(error?.kind == .invalidProvider)
        #expect(error?.message.contains("ISO-8601") == true)
        #expect(
            scopeError(ProfileEntry(point: "clock.now", .catalogue("frozen", settings())))?.message.contains("'date'")
                == true)
    }

    // MARK: offset

    @Test func compactOffsets() throws {
        #expect(try ClockOffset.parse("-1d") == ClockOffset(days: -1))
        #expect(try ClockOffset.parse("+30y") == ClockOffset(years: 30))
        #expect(try ClockOffset.parse("90m") == ClockOffset(minutes: 90))
        #expect(try ClockOffset.parse("1d12h") == ClockOffset(seconds: 129_600))
        #expect(try ClockOffset.parse("-2mo") == ClockOffset(months: -2))
        #expect(try ClockOffset.parse("1.5h") == ClockOffset(seconds: 5_400))
        #expect(try ClockOffset.parse("2w 30s") == ClockOffset(seconds: 14 * 86_400 + 30))
        for bad in ["", "-", "5", "3x", "1.5y", "d"] {
            #expect(throws: ChaosError.self, "'\(bad)' should not parse") { try ClockOffset.parse(bad) }
        }
        // Calendar years land on the same day and time of year.
        let moved = try ClockOffset.parse("+30y").applied(to: iso("2024-02-29T10:00:00Z"))
        #expect(moved == iso("2054-02-28T10:00:00Z"))
    }

    /// Checks that `read()` is the real time moved by `offset`, bracketing the real time.
    private func expectOffset(_ offset: ClockOffset, _ read: () -> Date) {
        let before = Date()
        let value = read()
        let after = Date()
        #expect(
            value >= offset.applied(to: before) && value <= offset.applied(to: after),
            "\(value) is not real time + \(offset)")
    }

    @Test func offset() throws {
        try Chaos.with(ProfileEntry(ChaosClock.now, ChaosClock.offset(by: -86_400))) {
            expectOffset(ClockOffset(days: -1)) { clock.now }
        }
        try Chaos.with(ProfileEntry(ChaosClock.now, ChaosClock.offset(by: try ClockOffset.parse("+30y")))) {
            expectOffset(ClockOffset(years: 30)) { clock.now }
        }
        let cases: [([String: ProfileValue], ClockOffset)] = [
            (["by": .string("-1d")], ClockOffset(days: -1)),
            (["by": .string("+30y")], ClockOffset(years: 30)),
            (["by": .string("90m")], ClockOffset(minutes: 90)),
            (["seconds": .number(-5)], ClockOffset(seconds: -5)),
            (["days": .number(2), "hours": .number(3)], ClockOffset(days: 2, hours: 3)),
            (["years": .number(-1), "months": .number(6)], ClockOffset(years: -1, months: 6)),
        ]
        for (values, expected) in cases {
            try Chaos.with(ProfileEntry(point: "clock.now", .catalogue("offset", settings(values)))) {
                expectOffset(expected) { clock.now }
            }
        }
        let none = scopeError(ProfileEntry(point: "clock.now", .catalogue("offset", settings())))
        #expect(none?.message.contains("'by'") == true)
        let bad = scopeError(ProfileEntry(point: "clock.now", .catalogue("offset", settings(["by": .string("soon")]))))
        #expect(bad?.kind == .invalidProvider)
        #expect(bad?.subject?.contains("clock.now") == true)
        #expect(
            scopeError(ProfileEntry(point: "clock.now", .catalogue("offset", settings(["years": .number(1.5)])))) != nil
        )
    }

    @Test func positionalValuesFillTheMainParameter() throws {
        // The CHAOS grammar passes `offset(-1d)` as the parameter `value`.
        let entries = try ChaosGrammar.parse("clock.now=offset(-1d)")
        try Chaos.with(entries.map { ProfileEntry(point: $0.pointName, $0.provider) }) {
            expectOffset(ClockOffset(days: -1)) { clock.now }
        }
        try Chaos.with(ProfileEntry(point: "clock.now", .catalogue("edge", positional(.string("y2038"))))) {
            #expect(clock.now == ClockEdge.y2038.date)
        }
    }

    @Test func jsonProfileCarriesBuiltInItems() async throws {
        let profile = try ChaosProfile.decode(
            json: """
                { "seed": 42,
                  "entries": [
                    { "point": "clock.now", "provider": { "item": "edge", "parameters": { "name": "dst-fall" } } },
                    { "point": "clock.timeZone", "provider": { "item": "timezone", "parameters": { "identifier": "Europe/London" } } },
                    { "point": "strings.localized", "provider": { "item": "bounded" }, "match": { "key": "title" } },
                    { "point": "location.current", "provider": { "item": "city", "parameters": { "name": "reykjavik" } } }
                  ] }
                """)
        try await Chaos.with(profile.profileEntries, seed: profile.seed) {
            #expect(clock.now == ClockEdge.dstFall.date)
            #expect(clock.timeZone.identifier == "Europe/London")
            let strings = ChaosLocalizedStrings(base: StubStrings(table: ["title": "Inbox", "body": "Hi"]))
            #expect(strings.string(forKey: "title") == "[# Inbox #]")
            #expect(strings.string(forKey: "body") == "Hi")
            let fix = try await ChaosLocationProvider(base: FixedLocationProvider(nil)).currentLocation()
            #expect(fix.latitude == City.named("reykjavik")!.latitude)
        }
    }

    // MARK: speed

    @Test func speed() throws {
        let start = Date().addingTimeInterval(-100)
        try Chaos.with(ProfileEntry(ChaosClock.now, ChaosClock.speed(factor: 2, from: start))) {
            let before = Date()
            let value = clock.now
            let after = Date()
            #expect(value >= start.addingTimeInterval(2 * before.timeIntervalSince(start)))
            #expect(value <= start.addingTimeInterval(2 * after.timeIntervalSince(start)))
        }
        // The catalogue item starts at the apply instant: then the clock is right, and it runs 3×.
        let applied = Date()
        try Chaos.with(ProfileEntry(point: "clock.now", .catalogue("speed", settings(["factor": .number(3)])))) {
            Thread.sleep(forTimeInterval: 0.02)
            let value = clock.now
            let after = Date()
            #expect(value <= applied.addingTimeInterval(3 * after.timeIntervalSince(applied)))
            // At least 20 ms passed since the scope began, which the clock shows as 60 ms.
            #expect(value.timeIntervalSince(applied) >= 0.06)
        }
        try Chaos.with(ProfileEntry(point: "clock.now", .catalogue("speed", settings(["factor": .number(0)])))) {
            let first = clock.now
            Thread.sleep(forTimeInterval: 0.005)
            #expect(clock.now == first)
        }
        #expect(
            scopeError(ProfileEntry(point: "clock.now", .catalogue("speed", settings())))?.message.contains("'factor'")
                == true)
    }

    // MARK: random-date

    @Test func randomDatesReplayFromTheSeed() throws {
        let around = iso("2026-01-01T00:00:00Z")
        func draws(_ entry: ProfileEntry, seed: UInt64) throws -> [Date] {
            try Chaos.with(entry, seed: seed) { collect(8) { clock.now } }
        }
        let typed = ProfileEntry(ChaosClock.now, ChaosClock.randomDate(withinDays: 100, of: around))
        let named = ProfileEntry(
            point: "clock.now",
            .catalogue(
                "random-date",
                settings([
                    "days": .number(100), "around": .string("2026-01-01T00:00:00Z"),
                ])))
        for entry in [typed, named] {
            let first = try draws(entry, seed: 42)
            #expect(try draws(entry, seed: 42) == first)
            #expect(try draws(entry, seed: 43) != first)
            #expect(Set(first).count == first.count)
            for date in first {
                #expect(abs(date.timeIntervalSince(around)) <= 100 * 86_400)
            }
        }
        // Without parameters: Dixie's ±10,000 days, around a fixed centre so seeds replay across runs.
        let wide = try draws(ProfileEntry(point: "clock.now", .catalogue("random-date", settings())), seed: 1)
        let centre = iso("2025-01-01T00:00:00Z")
        #expect(wide.allSatisfy { abs($0.timeIntervalSince(centre)) <= 10_000 * 86_400 })
        #expect(wide.contains { abs($0.timeIntervalSince(centre)) > 1_000 * 86_400 })
        #expect(try draws(ProfileEntry(ChaosClock.now, ChaosClock.randomDate()), seed: 1) == wide)
        #expect(
            scopeError(ProfileEntry(point: "clock.now", .catalogue("random-date", settings(["days": .number(-1)]))))
                != nil)
    }

    // MARK: backwards

    @Test func backwards() throws {
        try Chaos.with(ProfileEntry(ChaosClock.now, ChaosClock.backwards)) {
            let reads = collect(6) { clock.now }
            #expect(zip(reads, reads.dropFirst()).allSatisfy { $1 < $0 })
            #expect(reads[0] < Date())
        }
        try Chaos.with(ProfileEntry(point: "clock.now", .catalogue("backwards", settings(["step": .number(60)])))) {
            let reads = collect(4) { clock.now }
            #expect(zip(reads, reads.dropFirst()).allSatisfy { $0.timeIntervalSince($1) == 60 })
        }
        #expect(
            scopeError(ProfileEntry(point: "clock.now", .catalogue("backwards", settings(["step": .number(0)])))) != nil
        )
    }

    // MARK: edge

    @Test(arguments: ClockEdge.allCases)
    func edgeDates(_ edge: ClockEdge) throws {
        try Chaos.with(ProfileEntry(ChaosClock.now, ChaosClock.edge(edge))) {
            #expect(clock.now == edge.date)
        }
        try Chaos.with(ProfileEntry(point: "clock.now", .catalogue("edge", settings(["name": .string(edge.rawValue)]))))
        {
            #expect(clock.now == edge.date)
        }
        try Chaos.with(
            ProfileEntry(
                point: "clock.now", .catalogue("edge", settings(["name": .string(edge.rawValue), "lead": .number(5)])))
        ) {
            #expect(clock.now == edge.date.addingTimeInterval(-5))
        }
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(secondsFromGMT: 0)!
        let parts = utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: edge.date)
        switch edge {
        case .feb29:
            #expect(parts.month == 2 && parts.day == 29)
        case .newYearEve:
            #expect(
                parts.month == 12 && parts.day == 31 && parts.hour == 23 && parts.minute == 59 && parts.second == 59)
        case .dstSpring, .dstFall, .dstSpringUS, .dstFallUS:
            // A real change: the zone's offset differs one second either side of the instant.
            let zone = try #require(TimeZone(identifier: edge.timeZoneIdentifier))
            let before = zone.secondsFromGMT(for: edge.date.addingTimeInterval(-1))
            let after = zone.secondsFromGMT(for: edge.date)
            let springs = edge == .dstSpring || edge == .dstSpringUS
            #expect(after - before == (springs ? 3_600 : -3_600))
            #expect(zone.isDaylightSavingTime(for: edge.date) == springs)
        case .y2038:
            #expect(edge.date.timeIntervalSince1970 == Double(Int32.max) + 1)
        case .epoch:
            #expect(edge.date.timeIntervalSince1970 == 0)
        case .year9999:
            #expect(parts.year == 9999 && parts.month == 12 && parts.day == 31 && parts.second == 59)
        }
    }

    @Test func runningEdgeStartsBeforeTheEdgeAndMoves() throws {
        try Chaos.with(
            ProfileEntry(
                point: "clock.now",
                .catalogue(
                    "edge",
                    settings([
                        "name": .string("new-year-eve"), "lead": .number(3), "running": .bool(true),
                    ])))
        ) {
            let first = clock.now
            #expect(first >= ClockEdge.newYearEve.date.addingTimeInterval(-3))
            Thread.sleep(forTimeInterval: 0.01)
            #expect(clock.now > first)
        }
        let error = scopeError(
            ProfileEntry(point: "clock.now", .catalogue("edge", settings(["name": .string("doomsday")]))))
        #expect(error?.message.contains("dst-spring") == true)
    }

    // MARK: time zones

    @Test func timeZones() throws {
        let kathmandu = try #require(TimeZone(identifier: "Asia/Kathmandu"))
        try Chaos.with(ProfileEntry(ChaosClock.timeZone, ChaosClock.timeZone(kathmandu))) {
            #expect(clock.timeZone.identifier == "Asia/Kathmandu")
            #expect(clock.timeZone.secondsFromGMT(for: iso("2026-01-01T00:00:00Z")) == 20_700)
        }
        try Chaos.with(
            ProfileEntry(
                point: "clock.timeZone", .catalogue("timezone", settings(["identifier": .string("Pacific/Kiritimati")]))
            )
        ) {
            #expect(clock.timeZone.secondsFromGMT(for: iso("2026-01-01T00:00:00Z")) == 14 * 3_600)
        }
        let error = scopeError(
            ProfileEntry(
                point: "clock.timeZone", .catalogue("timezone", settings(["identifier": .string("Mars/Olympus_Mons")])))
        )
        #expect(error?.message.contains("Mars/Olympus_Mons") == true)

        func zones(_ entry: ProfileEntry, seed: UInt64) throws -> [String] {
            try Chaos.with(entry, seed: seed) { collect(6) { clock.timeZone.identifier } }
        }
        for entry in [
            ProfileEntry(ChaosClock.timeZone, ChaosClock.randomTimeZone),
            ProfileEntry(point: "clock.timeZone", .catalogue("random-timezone", settings())),
        ] {
            let first = try zones(entry, seed: 9)
            #expect(try zones(entry, seed: 9) == first)
            #expect(try zones(entry, seed: 10) != first)
        }
    }

    // MARK: sleeping

    @Test func chaosSleepClockIsAClock() async throws {
        let clock: any Clock<Duration> = ChaosSleepClock()
        let start = ContinuousClock.now
        try await clock.sleep(for: .milliseconds(10))
        #expect(ContinuousClock.now - start >= .milliseconds(10))
        let suspending = ChaosSleepClock(SuspendingClock())
        #expect(suspending.minimumResolution == SuspendingClock().minimumResolution)
    }

    @Test func skippedSleeps() async throws {
        let clock: any Clock<Duration> = ChaosSleepClock()
        try await Chaos.with(ProfileEntry(ChaosClock.sleep, ChaosClock.skippedSleeps)) {
            try await clock.sleep(for: .seconds(3_600))
        }
        try await Chaos.with(ProfileEntry(point: "clock.sleep", .catalogue("skip", settings()))) {
            try await clock.sleep(for: .seconds(3_600))
        }
        try await Chaos.with(
            ProfileEntry(point: "clock.sleep", .catalogue("stretch", settings(["factor": .number(0)])))
        ) {
            try await clock.sleep(for: .seconds(3_600))
        }
    }

    @Test func stretchedSleeps() async throws {
        let clock = ChaosSleepClock()
        let requests = Recorder<Duration>()
        let recording = ChaosClock.SleepProvider.block { env in
            requests.record(env.arguments.duration)
            try await env.callOriginal()
        }
        try await Chaos.with(ProfileEntry(ChaosClock.sleep, recording)) {
            try await clock.sleep(for: .milliseconds(5))
        }
        #expect(requests.values.count == 1)
        #expect(requests.values[0] <= .milliseconds(5) && requests.values[0] > .milliseconds(4))

        for entry in [
            ProfileEntry(ChaosClock.sleep, ChaosClock.stretchedSleeps(factor: 4)),
            ProfileEntry(point: "clock.sleep", .catalogue("stretch", settings(["factor": .number(4)]))),
        ] {
            let start = ContinuousClock.now
            try await Chaos.with(entry) {
                try await clock.sleep(for: .milliseconds(25))
            }
            #expect(ContinuousClock.now - start >= .milliseconds(100))
        }
        #expect(
            scopeError(ProfileEntry(point: "clock.sleep", .catalogue("stretch", settings(["factor": .number(-1)]))))
                != nil)
    }

    @Test func failingSleeps() async throws {
        let clock: any Clock<Duration> = ChaosSleepClock()
        await #expect(throws: SleepChaosError.self) {
            try await Chaos.with(ProfileEntry(ChaosClock.sleep, ChaosClock.failingSleeps())) {
                try await clock.sleep(for: .seconds(3_600))
            }
        }
        await #expect(throws: SleepChaosError.self) {
            try await Chaos.with(ProfileEntry(point: "clock.sleep", .catalogue("fail", settings()))) {
                try await clock.sleep(for: .seconds(3_600))
            }
        }
        await #expect(throws: CancellationError.self) {
            try await Chaos.with(
                ProfileEntry(point: "clock.sleep", .catalogue("fail", settings(["cancellation": .bool(true)])))
            ) {
                try await clock.sleep(for: .seconds(3_600))
            }
        }
    }

    // MARK: ISO-8601

    @Test func iso8601Dates() {
        #expect(ISO8601Date.parse("2026-03-29T01:00:00Z") == Date(timeIntervalSince1970: 1_774_746_000))
        #expect(ISO8601Date.parse("2026-03-29T01:00:00.250Z") == Date(timeIntervalSince1970: 1_774_746_000.25))
        #expect(ISO8601Date.parse("2026-03-29T02:00:00+01:00") == iso("2026-03-29T01:00:00Z"))
        #expect(ISO8601Date.parse("2026-03-28T20:00:00-0500") == iso("2026-03-29T01:00:00Z"))
        #expect(ISO8601Date.parse("2026-03-29T01:00:00") == iso("2026-03-29T01:00:00Z"))
        #expect(ISO8601Date.parse("2026-03-29 01:00") == iso("2026-03-29T01:00:00Z"))
        #expect(ISO8601Date.parse("1970-01-01") == Date(timeIntervalSince1970: 0))
        #expect(ISO8601Date.parse("1969-12-31T23:59:59Z") == Date(timeIntervalSince1970: -1))
        for bad in [
            "", "2026", "2025-02-29", "2026-02-30T00:00:00Z", "2026-13-01", "2026-03-29T25:00:00Z",
            "2026-03-29T01:00:00Q", "yesterday",
        ] {
            #expect(ISO8601Date.parse(bad) == nil, "'\(bad)' should not parse")
        }
        for edge in ClockEdge.allCases {
            #expect(ISO8601Date.parse(ISO8601Date.format(edge.date)) == edge.date)
        }
        #expect(ISO8601Date.format(ClockEdge.y2038.date) == "2038-01-19T03:14:08Z")
    }
}
