public import Foundation

/// A real place, for the `"city"` and `"teleport"` location chaos.
public struct City: Sendable, Hashable {
    /// The name profiles use: lower case, hyphens for spaces (`"new-york"`).
    public let name: String
    /// Degrees north.
    public let latitude: Double
    /// Degrees east.
    public let longitude: Double
    /// Metres above sea level.
    public let altitude: Double
    /// The city's IANA time zone.
    public let timeZoneIdentifier: String

    /// The city's location at `timestamp` (10 m horizontal accuracy).
    public func location(at timestamp: Date) -> Location {
        Location(
            latitude: latitude, longitude: longitude, altitude: altitude,
            horizontalAccuracy: 10, verticalAccuracy: 10, timestamp: timestamp
        )
    }

    /// The table's city named `name` (case and spaces/underscores forgiven), or nil.
    public static func named(_ name: String) -> City? {
        let key = name.lowercased().replacingOccurrences(of: " ", with: "-").replacingOccurrences(of: "_", with: "-")
        return all.first { $0.name == key }
    }

    /// Twenty-odd cities on every continent, with the awkward ones in: the equator (Quito,
    /// Singapore, Nairobi), the far north (Longyearbyen), the antimeridian (Suva), the
    /// southern hemisphere, and Null Island (0, 0), where broken code puts people.
    public static let all: [City] = [
        City(name: "london", latitude: 51.5074, longitude: -0.1278, altitude: 11, timeZoneIdentifier: "Europe/London"),
        City(
            name: "edinburgh", latitude: 55.9533, longitude: -3.1883, altitude: 47, timeZoneIdentifier: "Europe/London"),
        City(name: "paris", latitude: 48.8566, longitude: 2.3522, altitude: 35, timeZoneIdentifier: "Europe/Paris"),
        City(
            name: "reykjavik", latitude: 64.1466, longitude: -21.9426, altitude: 15,
            timeZoneIdentifier: "Atlantic/Reykjavik"),
        City(
            name: "longyearbyen", latitude: 78.2232, longitude: 15.6267, altitude: 20,
            timeZoneIdentifier: "Arctic/Longyearbyen"),
        City(name: "moscow", latitude: 55.7558, longitude: 37.6173, altitude: 156, timeZoneIdentifier: "Europe/Moscow"),
        City(name: "cairo", latitude: 30.0444, longitude: 31.2357, altitude: 23, timeZoneIdentifier: "Africa/Cairo"),
        City(
            name: "nairobi", latitude: -1.2921, longitude: 36.8219, altitude: 1795, timeZoneIdentifier: "Africa/Nairobi"
        ),
        City(
            name: "cape-town", latitude: -33.9249, longitude: 18.4241, altitude: 25,
            timeZoneIdentifier: "Africa/Johannesburg"),
        City(name: "mumbai", latitude: 19.0760, longitude: 72.8777, altitude: 14, timeZoneIdentifier: "Asia/Kolkata"),
        City(
            name: "kathmandu", latitude: 27.7172, longitude: 85.3240, altitude: 1400,
            timeZoneIdentifier: "Asia/Kathmandu"),
        City(
            name: "singapore", latitude: 1.3521, longitude: 103.8198, altitude: 15, timeZoneIdentifier: "Asia/Singapore"
        ),
        City(
            name: "beijing", latitude: 39.9042, longitude: 116.4074, altitude: 44, timeZoneIdentifier: "Asia/Shanghai"),
        City(name: "tokyo", latitude: 35.6762, longitude: 139.6503, altitude: 40, timeZoneIdentifier: "Asia/Tokyo"),
        City(
            name: "sydney", latitude: -33.8688, longitude: 151.2093, altitude: 58,
            timeZoneIdentifier: "Australia/Sydney"),
        City(
            name: "auckland", latitude: -36.8485, longitude: 174.7633, altitude: 26,
            timeZoneIdentifier: "Pacific/Auckland"),
        City(name: "suva", latitude: -18.1248, longitude: 178.4501, altitude: 5, timeZoneIdentifier: "Pacific/Fiji"),
        City(
            name: "honolulu", latitude: 21.3069, longitude: -157.8583, altitude: 6,
            timeZoneIdentifier: "Pacific/Honolulu"),
        City(
            name: "anchorage", latitude: 61.2181, longitude: -149.9003, altitude: 31,
            timeZoneIdentifier: "America/Anchorage"),
        City(
            name: "los-angeles", latitude: 34.0522, longitude: -118.2437, altitude: 89,
            timeZoneIdentifier: "America/Los_Angeles"),
        City(
            name: "mexico-city", latitude: 19.4326, longitude: -99.1332, altitude: 2240,
            timeZoneIdentifier: "America/Mexico_City"),
        City(
            name: "new-york", latitude: 40.7128, longitude: -74.0060, altitude: 10,
            timeZoneIdentifier: "America/New_York"),
        City(
            name: "quito", latitude: -0.1807, longitude: -78.4678, altitude: 2850,
            timeZoneIdentifier: "America/Guayaquil"),
        City(
            name: "sao-paulo", latitude: -23.5505, longitude: -46.6333, altitude: 760,
            timeZoneIdentifier: "America/Sao_Paulo"),
        City(
            name: "buenos-aires", latitude: -34.6037, longitude: -58.3816, altitude: 25,
            timeZoneIdentifier: "America/Argentina/Buenos_Aires"),
        City(name: "null-island", latitude: 0, longitude: 0, altitude: 0, timeZoneIdentifier: "UTC"),
    ]
}
