public import ChaosKit
public import ChaosNetwork
public import ChaosPoints
public import Foundation
import HTTPTypes

/// What the weather API answers: `GET /v1/forecast?lat=…&lon=…`.
public struct Forecast: Codable, Sendable, Equatable {
    /// The nearest named place.
    public var place: String
    /// Degrees Celsius.
    public var temperature: Double
    /// "Drizzle", "Sunny" …
    public var summary: String
}

/// Dixie's weather example, reborn (issue 8): "the weather at the current location", from
/// a JSON weather API through a `NetworkClient`, with the location from a
/// `LocationProvider`. It retries 5xx answers (honouring `Retry-After`, capped) and turns
/// every failure into a friendly sentence; nothing a bad network does makes it crash.
public struct WeatherApp: Sendable {
    /// How often and how patiently to retry answers of 500 and above.
    public struct RetryPolicy: Sendable {
        /// Attempts in all (1: no retry).
        public var attempts: Int
        /// The wait before a retry when the answer gives no `Retry-After`.
        public var delay: Duration
        /// The longest `Retry-After` the app honours.
        public var maxRetryAfter: Duration

        /// A policy.
        public init(attempts: Int = 3, delay: Duration = .milliseconds(200), maxRetryAfter: Duration = .seconds(2)) {
            self.attempts = max(1, attempts)
            self.delay = delay
            self.maxRetryAfter = maxRetryAfter
        }
    }

    /// What the app shows.
    public enum Screen: Sendable, Equatable {
        /// The forecast, and how many requests it took.
        case forecast(Forecast, attempts: Int)
        /// A friendly message for the user.
        case problem(String)

        /// The text on screen.
        public var text: String {
            switch self {
            case .forecast(let forecast, _):
                "\(forecast.place): \(String(format: "%.1f", forecast.temperature)) °C, \(forecast.summary)"
            case .problem(let message): message
            }
        }
    }

    /// The friendly messages.
    public enum Message {
        /// No connection.
        public static let offline = "You're offline. Check your connection and try again."
        /// The service failed even after retrying.
        public static let unavailable = "The weather service is having trouble. Please try again in a moment."
        /// The answer could not be read.
        public static let unreadable = "The weather service sent something we couldn't read. Please try again."
        /// No location.
        public static let noLocation = "We can't tell where you are. Allow location access to see your local weather."
        /// Anything else.
        public static let other = "Something went wrong fetching the weather. Please try again."
    }

    let client: any NetworkClient
    let location: any LocationProvider
    let baseURL: URL
    let retry: RetryPolicy

    /// An app asking `baseURL`'s API through `client`, for the place `location` reports.
    public init(
        client: any NetworkClient, location: any LocationProvider,
        baseURL: URL = URL(string: "https://api.weather.example.com")!, retry: RetryPolicy = RetryPolicy()
    ) {
        self.client = client
        self.location = location
        self.baseURL = baseURL
        self.retry = retry
    }

    /// Finds the location, fetches its forecast (retrying 5xx), and says what to show.
    public func load() async -> Screen {
        let here: Location
        do {
            here = try await location.currentLocation()
        } catch {
            return .problem(Message.noLocation)
        }
        var components = URLComponents(
            url: baseURL.appendingPathComponent("v1/forecast"), resolvingAgainstBaseURL: false)!
        components.queryItems = [
            URLQueryItem(name: "lat", value: String(format: "%.4f", here.latitude)),
            URLQueryItem(name: "lon", value: String(format: "%.4f", here.longitude)),
        ]
        var request = HTTPRequest(method: .get, url: components.url!)
        request.headerFields[.accept] = "application/json"
        for attempt in 1...retry.attempts {
            let response: HTTPResponse
            let body: Data
            do {
                (response, body) = try await client.send(request, body: nil)
            } catch {
                switch NetworkError(error) {
                case .offline, .dnsFailure: return .problem(Message.offline)
                case .timeout, .transport:
                    if attempt < retry.attempts {
                        try? await Task.sleep(for: retry.delay)
                        continue
                    }
                    return .problem(Message.unavailable)
                default: return .problem(Message.other)
                }
            }
            switch response.status.code {
            case 200..<300:
                guard let forecast = try? JSONDecoder().decode(Forecast.self, from: body),
                    forecast.temperature.isFinite, (-100...70).contains(forecast.temperature)
                else {
                    return .problem(Message.unreadable)
                }
                return .forecast(forecast, attempts: attempt)
            case 500...:
                guard attempt < retry.attempts else { return .problem(Message.unavailable) }
                try? await Task.sleep(for: wait(before: response))
            default:
                return .problem(Message.other)
            }
        }
        return .problem(Message.unavailable)
    }

    func wait(before response: HTTPResponse) -> Duration {
        guard let text = response.headerFields[.retryAfter], let seconds = Int(text), seconds >= 0 else {
            return retry.delay
        }
        return min(.seconds(seconds), retry.maxRetryAfter)
    }
}

/// The weather API as a prototype back-end (a ChaosNetwork `Router`): the nearest city's
/// forecast, made up but stable. With no network, this is what the example talks to.
public enum WeatherService {
    /// The API's host.
    public static let host = "api.weather.example.com"

    /// A stub set answering `GET /v1/forecast?lat=…&lon=…` (400 without valid coordinates).
    public static func stubs() throws(ChaosError) -> StubSet {
        let router = Router(host: host)
        try router.get("/v1/forecast") { request -> Forecast in
            guard let lat = request.query["lat"].flatMap(Double.init),
                let lon = request.query["lon"].flatMap(Double.init),
                (-90...90).contains(lat), (-180...180).contains(lon)
            else {
                throw RouteError.badRequest("lat and lon must be coordinates, e.g. ?lat=55.95&lon=-3.19")
            }
            return forecast(latitude: lat, longitude: lon)
        }
        let stubs = StubSet()
        stubs.add(router)
        return stubs
    }

    /// The made-up forecast for a place: the nearest city, a temperature from its latitude.
    public static func forecast(latitude: Double, longitude: Double) -> Forecast {
        let here = Location(latitude: latitude, longitude: longitude)
        let nearest = City.all.min {
            here.distance(to: Location(latitude: $0.latitude, longitude: $0.longitude))
                < here.distance(to: Location(latitude: $1.latitude, longitude: $1.longitude))
        }
        let name =
            nearest.map {
                $0.name.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined(separator: " ")
            } ?? "Nowhere"
        let temperature = (30 - abs(latitude) * 0.5).rounded()
        let summaries = ["Sunny", "Cloudy", "Drizzle", "Showers", "Windy", "Fog"]
        let summary = summaries[abs(Int(latitude * 10 + longitude * 10)) % summaries.count]
        return Forecast(place: name, temperature: temperature, summary: summary)
    }
}
