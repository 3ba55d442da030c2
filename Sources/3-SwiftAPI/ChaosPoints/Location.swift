public import ChaosKit
public import Foundation

// MARK: - Model

/// A position fix, shaped like CoreLocation's `CLLocation` so that it maps onto it on Apple
/// platforms (there is no CoreLocation on Linux). As in CoreLocation, a negative accuracy,
/// course or speed means "unknown".
public struct Location: Codable, Sendable, Hashable {
    /// Degrees north (−90…90).
    public var latitude: Double
    /// Degrees east (−180…180).
    public var longitude: Double
    /// Metres above sea level.
    public var altitude: Double
    /// Radius of uncertainty in metres; negative when the position is invalid.
    public var horizontalAccuracy: Double
    /// Altitude uncertainty in metres; negative when the altitude is unknown.
    public var verticalAccuracy: Double
    /// Direction of travel in degrees clockwise from true north; negative when unknown.
    public var course: Double
    /// Speed in metres per second; negative when unknown.
    public var speed: Double
    /// When the fix was made.
    public var timestamp: Date

    /// A fix; unknown course and speed unless given.
    public init(
        latitude: Double, longitude: Double, altitude: Double = 0,
        horizontalAccuracy: Double = 5, verticalAccuracy: Double = -1,
        course: Double = -1, speed: Double = -1, timestamp: Date = Date()
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.course = course
        self.speed = speed
        self.timestamp = timestamp
    }

    /// Mean Earth radius in metres (IUGG).
    public static let earthRadius = 6_371_008.8

    // swift-format-ignore: IdentifiersMustBeASCII
    /// Great-circle distance to `other` in metres (haversine).
    public func distance(to other: Location) -> Double {
        let φ1 = latitude * .pi / 180
        let φ2 = other.latitude * .pi / 180
        let Δφ = φ2 - φ1
        let Δλ = (other.longitude - longitude) * .pi / 180
        let a = sin(Δφ / 2) * sin(Δφ / 2) + cos(φ1) * cos(φ2) * sin(Δλ / 2) * sin(Δλ / 2)
        return 2 * Self.earthRadius * atan2(sqrt(a), sqrt(max(0, 1 - a)))
    }

    // swift-format-ignore: IdentifiersMustBeASCII
    /// Initial bearing towards `other`, degrees clockwise from north (0…360).
    public func bearing(to other: Location) -> Double {
        let φ1 = latitude * .pi / 180
        let φ2 = other.latitude * .pi / 180
        let Δλ = (other.longitude - longitude) * .pi / 180
        let y = sin(Δλ) * cos(φ2)
        let x = cos(φ1) * sin(φ2) - sin(φ1) * cos(φ2) * cos(Δλ)
        let degrees = atan2(y, x) * 180 / .pi
        return degrees < 0 ? degrees + 360 : degrees
    }

    // swift-format-ignore: IdentifiersMustBeASCII
    /// The point `distance` metres away along the great circle starting at `bearing` degrees.
    public func moved(distance: Double, bearing: Double) -> Location {
        let δ = distance / Self.earthRadius
        let θ = bearing * .pi / 180
        let φ1 = latitude * .pi / 180
        let λ1 = longitude * .pi / 180
        let φ2 = asin(min(1, max(-1, sin(φ1) * cos(δ) + cos(φ1) * sin(δ) * cos(θ))))
        let λ2 = λ1 + atan2(sin(θ) * sin(δ) * cos(φ1), cos(δ) - sin(φ1) * sin(φ2))
        var moved = self
        moved.latitude = φ2 * 180 / .pi
        moved.longitude = Self.normalizedLongitude(λ2 * 180 / .pi)
        return moved
    }

    /// `longitude` brought into −180..<180.
    static func normalizedLongitude(_ longitude: Double) -> Double {
        var value = (longitude + 180).truncatingRemainder(dividingBy: 360)
        if value < 0 { value += 360 }
        return value - 180
    }
}

/// Why there is no location (CoreLocation's denied / location unknown / no answer in time).
public enum LocationError: Error, Sendable, Hashable, CaseIterable {
    /// The user or the system refused location access.
    case denied
    /// No fix can be had (no signal, no hardware).
    case unavailable
    /// No fix came in time.
    case timeout
}

/// Where the program gets positions from. Depend on this, and give it a
/// ``ChaosLocationProvider`` so that chaos can move the device or take its location away.
public protocol LocationProvider: Sendable {
    /// One fix.
    func currentLocation() async throws(LocationError) -> Location
    /// Fixes as they come; the stream ends with a ``LocationError`` when location fails.
    func updates() -> AsyncThrowingStream<Location, any Error>
}

/// A provider that is always at one place (or never anywhere: `nil` throws `.unavailable`).
/// Its updates stream gives the place once, then ends.
public struct FixedLocationProvider: LocationProvider {
    /// The place, or nil for none.
    public let location: Location?

    /// A provider at `location` (nil: location unavailable).
    public init(_ location: Location?) { self.location = location }

    /// The place, timestamped by the chaos clock (``ChaosClock/now``); `.unavailable` when there is none.
    public func currentLocation() async throws(LocationError) -> Location {
        guard var location else { throw .unavailable }
        location.timestamp = ChaosClock.now()
        return location
    }

    /// The place once, then the end (or `.unavailable`).
    public func updates() -> AsyncThrowingStream<Location, any Error> {
        let location = location
        return AsyncThrowingStream { continuation in
            if var location {
                location.timestamp = ChaosClock.now()
                continuation.yield(location)
                continuation.finish()
            } else {
                continuation.finish(throwing: LocationError.unavailable)
            }
        }
    }
}

/// One request as the `location.current` and `location.updates` points see it.
public struct LocationRequest: Sendable {
    /// The real provider the original asks.
    public let base: any LocationProvider

    /// A request answered by `base` unless chaos says otherwise.
    public init(base: any LocationProvider) { self.base = base }
}

/// A location provider that reads through `location.current` and `location.updates`:
/// `base`'s positions unless chaos says otherwise.
public struct ChaosLocationProvider: LocationProvider {
    /// The real provider.
    public let base: any LocationProvider

    /// Chaos-aware positions over `base`.
    public init(base: any LocationProvider) { self.base = base }

    /// A fix through `location.current`.
    public func currentLocation() async throws(LocationError) -> Location {
        try await ChaosLocation.current(LocationRequest(base: base))
    }

    /// Fixes through `location.updates`.
    public func updates() -> AsyncThrowingStream<Location, any Error> {
        ChaosLocation.updates(LocationRequest(base: base))
    }
}

// MARK: - Scenarios

/// A fake-location behaviour, usable on both points: ``current`` for `location.current`,
/// ``updates(every:)`` for `location.updates` (a stream that gives a fix every interval,
/// and ends with the error when the behaviour fails). Random choices come from the
/// seeded source, so a `Chaos` seed replays them.
public struct LocationScenario: Sendable {
    /// What one fix is made from.
    public struct Context {
        /// Which fix this is (call index for `current`, element index for `updates`).
        public let index: Int
        /// The seeded source for this fix.
        public var random: SeededRandom
        /// The time of the fix, as the chaos clock tells it (``ChaosClock/now``): fixes carry
        /// the time the program sees, so a moved clock moves their timestamps too.
        public let now: Date
        /// Asks the real provider.
        public let original: @Sendable () async throws(LocationError) -> Location
    }

    /// The behaviour's name, for logs.
    public let name: String
    let locate: @Sendable (inout Context) async throws(LocationError) -> Location

    /// A behaviour from your own function.
    public init(name: String, _ locate: @escaping @Sendable (inout Context) async throws(LocationError) -> Location) {
        self.name = name
        self.locate = locate
    }

    /// The provider for `location.current`.
    public var current: ChaosLocation.CurrentProvider {
        let locate = self.locate
        return .block { env throws(LocationError) in
            let base = env.arguments.base
            var context = Context(
                index: env.callIndex, random: env.random, now: ChaosClock.now(),
                original: { () async throws(LocationError) -> Location in try await base.currentLocation() }
            )
            return try await locate(&context)
        }
    }

    /// The provider for `location.updates`: a fix at once, then one every `interval`.
    public func updates(every interval: Duration = .seconds(1)) -> ChaosLocation.UpdatesProvider {
        let locate = self.locate
        return .block { env in
            let base = env.arguments.base
            let seed = env.randomSeed
            return AsyncThrowingStream { continuation in
                let task = Task {
                    var seeds = SeededRandom(seed: seed)
                    var index = 0
                    while !Task.isCancelled {
                        var context = Context(
                            index: index, random: SeededRandom(seed: seeds.next()), now: ChaosClock.now(),
                            original: { () async throws(LocationError) -> Location in try await base.currentLocation() }
                        )
                        do {
                            continuation.yield(try await locate(&context))
                        } catch {
                            continuation.finish(throwing: error)
                            return
                        }
                        index += 1
                        do { try await Task.sleep(for: interval) } catch { break }
                    }
                    continuation.finish()
                }
                continuation.onTermination = { _ in task.cancel() }
            }
        }
    }

    /// Always at `location` (with a fresh timestamp).
    public static func fixed(_ location: Location) -> LocationScenario {
        LocationScenario(name: "fixed") { context throws(LocationError) in
            var fix = location
            fix.timestamp = context.now
            return fix
        }
    }

    /// Always in `city` (`"city"`).
    public static func city(_ city: City) -> LocationScenario {
        LocationScenario(name: "city \(city.name)") { context throws(LocationError) in city.location(at: context.now) }
    }

    /// Anywhere on Earth, uniformly by area (`"random-globe"`): latitude = asin(2u − 1),
    /// so the poles are not over-sampled.
    public static var randomGlobe: LocationScenario {
        LocationScenario(name: "random-globe") { context throws(LocationError) in
            randomGlobePoint(&context.random, at: context.now)
        }
    }

    /// Anywhere within `radiusKm` kilometres of a centre, uniformly by area on the sphere (`"random-region"`).
    public static func randomRegion(latitude: Double, longitude: Double, radiusKm: Double) -> LocationScenario {
        let center = Location(latitude: latitude, longitude: longitude)
        let cap = min(.pi, max(0, radiusKm * 1000 / Location.earthRadius))
        return LocationScenario(name: "random-region") { context throws(LocationError) in
            // The spherical cap's area grows with 1 − cos(arc): draw that uniformly.
            let u = context.random.nextUnitInterval()
            let v = context.random.nextUnitInterval()
            let arc = acos(1 - u * (1 - cos(cap)))
            var fix = center.moved(distance: arc * Location.earthRadius, bearing: v * 360)
            fix.horizontalAccuracy = 10
            fix.timestamp = context.now
            return fix
        }
    }

    /// Each fix at the next of `locations`, round and round (`"teleport"` with `cities`).
    public static func teleport(between locations: [Location]) -> LocationScenario {
        precondition(!locations.isEmpty, "LocationScenario.teleport(between:) needs at least one location")
        return LocationScenario(name: "teleport") { context throws(LocationError) in
            var fix = locations[context.index % locations.count]
            fix.timestamp = context.now
            return fix
        }
    }

    /// Each fix somewhere random at least `minimumKm` kilometres from the one before
    /// (`"teleport"`). The previous fix is remembered by this scenario: sequential
    /// reads replay from the seed; concurrent reads may interleave.
    public static func teleport(minimumKm: Double = 5_000) -> LocationScenario {
        let minimum = min(15_000, max(0, minimumKm)) * 1000
        let last = Locked<Location?>(nil)
        return LocationScenario(name: "teleport") { context throws(LocationError) in
            let previous = last.withLock { $0 }
            var fix = randomGlobePoint(&context.random, at: context.now)
            if let previous {
                for _ in 0..<1000 where fix.distance(to: previous) < minimum {
                    fix = randomGlobePoint(&context.random, at: context.now)
                }
            }
            last.withLock { $0 = fix }
            return fix
        }
    }

    /// The real position, blurred: moved up to `meters` in a random direction, with
    /// accuracies of `meters` (`"degraded-accuracy"`).
    public static func degradedAccuracy(meters: Double) -> LocationScenario {
        LocationScenario(name: "degraded-accuracy") { context throws(LocationError) in
            let real = try await context.original()
            let distance = meters * sqrt(context.random.nextUnitInterval())
            var fix = real.moved(distance: distance, bearing: context.random.nextUnitInterval() * 360)
            fix.horizontalAccuracy = meters
            fix.verticalAccuracy = meters
            return fix
        }
    }

    /// Every fix fails with `error` (`"denied"`, `"unavailable"`, `"timeout"`).
    public static func failing(_ error: LocationError) -> LocationScenario {
        LocationScenario(name: "\(error)") { _ throws(LocationError) in throw error }
    }

    /// A route played back `speed` times as fast as recorded, from the moment this is made
    /// (for a profile: the apply instant) as `clock` tells it (`"gpx"`). Points without
    /// times are spaced as if travelled at `metersPerSecond`. After the end, the last point;
    /// with `loop`, the first point again, round and round. Fixes are timestamped by the
    /// chaos clock (see ``Context/now``).
    public static func route(
        _ points: [GPXPoint], speed: Double = 1, metersPerSecond: Double = 5, loop: Bool = false,
        clock: any WallClock = LiveWallClock()
    ) throws(ChaosError) -> LocationScenario {
        guard !points.isEmpty else {
            throw ChaosError(
                .invalidProvider, "the route has no points; give a GPX file with a track, a route or waypoints")
        }
        guard speed.isFinite, speed >= 0 else {
            throw ChaosError(
                .invalidProvider, "speed \(speed) is not usable; give 0 or more (1 plays back in real time)")
        }
        guard metersPerSecond.isFinite, metersPerSecond > 0 else {
            throw ChaosError(.invalidProvider, "metersPerSecond \(metersPerSecond) is not usable; give a speed above 0")
        }
        let playback = RoutePlayback(points: points, metersPerSecond: metersPerSecond, loop: loop)
        let start = clock.now
        return LocationScenario(name: "gpx") { context throws(LocationError) in
            let elapsed = clock.now.timeIntervalSince(start) * speed
            return playback.location(atRouteTime: elapsed, speedFactor: speed, timestamp: context.now)
        }
    }

    /// The GPX file at `url` played back (see ``route(_:speed:metersPerSecond:loop:clock:)``).
    public static func gpx(
        contentsOf url: URL, speed: Double = 1, metersPerSecond: Double = 5, loop: Bool = false,
        clock: any WallClock = LiveWallClock()
    ) throws(ChaosError) -> LocationScenario {
        let document = try GPXDocument.load(contentsOf: url)
        return try route(
            document.playbackPoints, speed: speed, metersPerSecond: metersPerSecond, loop: loop, clock: clock)
    }

    static func randomGlobePoint(_ random: inout SeededRandom, at timestamp: Date) -> Location {
        let latitude = asin(2 * random.nextUnitInterval() - 1) * 180 / .pi
        let longitude = random.nextUnitInterval() * 360 - 180
        return Location(latitude: latitude, longitude: longitude, horizontalAccuracy: 10, timestamp: timestamp)
    }
}

/// A route on a timeline, and where one is on it at a given time.
struct RoutePlayback: Sendable {
    let points: [GPXPoint]
    /// Seconds from the first point, for each point.
    let offsets: [Double]
    /// Whether the route starts again after its last point.
    let loop: Bool

    init(points: [GPXPoint], metersPerSecond: Double, loop: Bool = false) {
        self.points = points
        self.loop = loop
        let times = points.compactMap(\.time)
        if times.count == points.count, zip(times, times.dropFirst()).allSatisfy({ $0 <= $1 }) {
            offsets = times.map { $0.timeIntervalSince(times[0]) }
        } else {
            var total = 0.0
            var result = [0.0]
            for (a, b) in zip(points, points.dropFirst()) {
                total += a.location.distance(to: b.location) / metersPerSecond
                result.append(total)
            }
            offsets = result
        }
    }

    var duration: Double { offsets.last ?? 0 }

    func location(atRouteTime routeTime: Double, speedFactor: Double, timestamp: Date) -> Location {
        var time = routeTime
        // Looping: the route's time wraps round; a route of one instant just stays put.
        if loop, duration > 0, time >= duration {
            time = time.truncatingRemainder(dividingBy: duration)
        }
        var fix: Location
        if points.count == 1 || time <= 0 {
            fix = points[0].location
            if points.count > 1 {
                fix.course = points[0].location.bearing(to: points[1].location)
                fix.speed = speedFactor == 0 ? 0 : segmentSpeed(0) * speedFactor
            }
        } else if time >= duration {
            fix = points[points.count - 1].location
            fix.speed = 0
        } else {
            // The last point whose offset is ≤ time.
            var low = 0
            var high = offsets.count - 1
            while low < high {
                let mid = (low + high + 1) / 2
                if offsets[mid] <= time { low = mid } else { high = mid - 1 }
            }
            let a = points[low].location
            let b = points[low + 1].location
            let span = offsets[low + 1] - offsets[low]
            let f = span > 0 ? (time - offsets[low]) / span : 0
            fix = a
            fix.latitude = a.latitude + (b.latitude - a.latitude) * f
            fix.longitude = a.longitude + (b.longitude - a.longitude) * f
            fix.altitude = a.altitude + (b.altitude - a.altitude) * f
            fix.course = a.bearing(to: b)
            fix.speed = segmentSpeed(low) * speedFactor
        }
        fix.horizontalAccuracy = 5
        fix.timestamp = timestamp
        return fix
    }

    private func segmentSpeed(_ index: Int) -> Double {
        let span = offsets[index + 1] - offsets[index]
        return span > 0 ? points[index].location.distance(to: points[index + 1].location) / span : 0
    }
}

// MARK: - Points and catalogue

/// The built-in location points and their catalogue (the same items on both points):
///
/// | item | parameters |
/// |---|---|
/// | `city` | `name` (see ``City/all``) |
/// | `random-region` | `latitude`, `longitude`, `radiusKm` |
/// | `random-globe` | — |
/// | `gpx` | `path`, `speed` = 1, `metersPerSecond` = 5 (for points without times), `loop` = false |
/// | `teleport` | `cities` (list of names; default: random places), `minimumKm` = 5000 |
/// | `degraded-accuracy` | `meters` |
/// | `denied`, `unavailable`, `timeout` | — |
///
/// `location.updates` items also take `interval` (seconds between fixes, default 1).
public enum ChaosLocation {
    /// Providers of `location.current`.
    public typealias CurrentProvider = AsyncChaosProvider<LocationRequest, Location, LocationError>
    /// Providers of `location.updates`.
    public typealias UpdatesProvider = ChaosProvider<LocationRequest, AsyncThrowingStream<Location, any Error>, Never>

    /// `location.current`: one fix; the original asks the request's base provider.
    public static let current = AsyncInjectionPoint<LocationRequest, Location, LocationError>(
        "location.current",
        catalogue: PointCatalogue(
            itemNames.map { name in
                CatalogueItem(name, itemSummaries[name] ?? "", parameters: parameters(of: name)) { parameters in
                    try scenario(named: name, parameters).current
                }
            })
    ) { request throws(LocationError) in
        try await request.base.currentLocation()
    }

    /// `location.updates`: a stream of fixes; the original is the base provider's stream.
    public static let updates = InjectionPoint<LocationRequest, AsyncThrowingStream<Location, any Error>, Never>(
        "location.updates",
        catalogue: PointCatalogue(
            itemNames.map { name in
                CatalogueItem(name, itemSummaries[name] ?? "", parameters: parameters(of: name) + [interval]) {
                    parameters in
                    var scenarioParameters = parameters
                    scenarioParameters.values["interval"] = nil
                    return try scenario(named: name, scenarioParameters).updates(
                        every: .seconds(try parameters.double("interval")))
                }
            })
    ) { request in
        request.base.updates()
    }

    /// The catalogue item names.
    public static let itemNames = [
        "city", "random-region", "random-globe", "gpx", "teleport", "degraded-accuracy", "denied", "unavailable",
        "timeout",
    ]

    static let itemSummaries = [
        "city": "a fixed city", "random-region": "random places in a circle", "random-globe": "random places anywhere",
        "gpx": "a recorded route, played back", "teleport": "jumps between far places",
        "degraded-accuracy": "a poor fix",
        "denied": "permission denied", "unavailable": "no fix available", "timeout": "no fix in time",
    ]

    /// What `location.updates` items take on top: the time between fixes.
    static let interval = CatalogueParameter.number(
        "interval", "time between fixes", unit: "seconds", default: 1, range: 0...86_400)

    /// The parameters the item `name` takes (the first is the one the `CHAOS` grammar's
    /// unnamed value fills).
    public static func parameters(of name: String) -> [CatalogueParameter] {
        switch name {
        case "city": [.choice("name", "the city", City.all.map(\.name))]
        case "random-region":
            [
                .number("latitude", "the centre's latitude", unit: "degrees", range: -90...90),
                .number("longitude", "the centre's longitude", unit: "degrees", range: -180...180),
                .number("radiusKm", "the circle's radius", unit: "km", range: 0.001...20_000),
            ]
        case "gpx":
            [
                .string("path", "the GPX file: its track, route or waypoints"),
                .number(
                    "speed", "playback speed (1: real time, 0: stand at the start)", default: 1, range: 0...1_000_000),
                .number(
                    "metersPerSecond", "speed along points without times", unit: "m/s", default: 5,
                    range: 0.001...1_000_000),
                .boolean("loop", "start again from the first point after the last", default: false),
            ]
        case "teleport":
            [
                .strings("cities", "city names to jump between (default: random places far apart)"),
                .number("minimumKm", "how far each jump goes at least", unit: "km", default: 5_000, range: 0...15_000),
            ]
        case "degraded-accuracy": [.number("meters", "the radius of uncertainty", unit: "m", range: 0.001...10_000_000)]
        default: []
        }
    }

    /// The scenario a profile names, with its parameters (checked against
    /// ``parameters(of:)`` first, as the catalogue does).
    public static func scenario(named name: String, _ parameters: ProfileParameters) throws(ChaosError)
        -> LocationScenario
    {
        guard itemNames.contains(name) else {
            throw parameters.invalid(
                "no location chaos named '\(name.prefix(80))'; choose one of: \(itemNames.joined(separator: ", "))")
        }
        let parameters = try parameters.checked(against: Self.parameters(of: name), owner: "'\(name)'")
        switch name {
        case "city":
            return .city(try city(try parameters.string("name"), parameters))
        case "random-region":
            return .randomRegion(
                latitude: try parameters.double("latitude"), longitude: try parameters.double("longitude"),
                radiusKm: try parameters.double("radiusKm")
            )
        case "random-globe":
            return .randomGlobe
        case "gpx":
            let path = try parameters.string("path")
            do throws(ChaosError) {
                return try .gpx(
                    contentsOf: URL(fileURLWithPath: path), speed: try parameters.double("speed"),
                    metersPerSecond: try parameters.double("metersPerSecond"), loop: try parameters.bool("loop")
                )
            } catch {
                // The file's path is the inner error's subject; keep it in the message.
                throw parameters.invalid(error.description, parameter: "path")
            }
        case "teleport":
            if let names = try parameters.strings("cities") {
                guard names.count >= 2 else {
                    throw parameters.invalid(
                        "parameter 'cities' needs at least two city names to jump between", parameter: "cities")
                }
                var locations: [Location] = []
                for cityName in names { locations.append(try city(cityName, parameters).location(at: Date())) }
                return .teleport(between: locations)
            }
            return .teleport(minimumKm: try parameters.double("minimumKm"))
        case "degraded-accuracy":
            return .degradedAccuracy(meters: try parameters.double("meters"))
        case "denied": return .failing(.denied)
        case "unavailable": return .failing(.unavailable)
        default: return .failing(.timeout)
        }
    }

    private static func city(_ name: String, _ parameters: ProfileParameters) throws(ChaosError) -> City {
        guard let city = City.named(name) else {
            throw parameters.invalid(
                "no city named '\(name.prefix(80))'; choose one of: \(City.all.map(\.name).joined(separator: ", "))")
        }
        return city
    }
}
