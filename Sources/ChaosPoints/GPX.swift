public import ChaosKit
public import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// One GPX point (`wpt`, `rtept` or `trkpt`).
public struct GPXPoint: Sendable, Hashable, Codable {
    /// Degrees north.
    public var latitude: Double
    /// Degrees east.
    public var longitude: Double
    /// `<ele>`: metres above sea level.
    public var elevation: Double?
    /// `<time>`.
    public var time: Date?
    /// `<name>`.
    public var name: String?
    /// GPX 1.0 `<speed>`: metres per second.
    public var speed: Double?
    /// GPX 1.0 `<course>`: degrees clockwise from true north.
    public var course: Double?

    /// A point.
    public init(
        latitude: Double, longitude: Double, elevation: Double? = nil, time: Date? = nil,
        name: String? = nil, speed: Double? = nil, course: Double? = nil
    ) {
        self.latitude = latitude
        self.longitude = longitude
        self.elevation = elevation
        self.time = time
        self.name = name
        self.speed = speed
        self.course = course
    }

    /// The point as a ``Location`` (unknown values negative, as in CoreLocation).
    public var location: Location {
        Location(
            latitude: latitude, longitude: longitude, altitude: elevation ?? 0,
            horizontalAccuracy: 5, verticalAccuracy: elevation == nil ? -1 : 10,
            course: course ?? -1, speed: speed ?? -1, timestamp: time ?? Date(timeIntervalSince1970: 0)
        )
    }
}

/// A GPX `<rte>`: an ordered list of points to go through.
public struct GPXRoute: Sendable, Hashable {
    /// `<name>`.
    public var name: String?
    /// The `rtept`s.
    public var points: [GPXPoint]
}

/// A GPX `<trk>`: recorded segments.
public struct GPXTrack: Sendable, Hashable {
    /// `<name>`.
    public var name: String?
    /// The `trkseg`s, each a list of `trkpt`s.
    public var segments: [[GPXPoint]]
    /// Every point of every segment, in order.
    public var points: [GPXPoint] { segments.flatMap { $0 } }
}

/// Why a GPX document could not be read, and where.
public struct GPXError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The line of the problem (1-based; 0 when unknown).
    public let line: Int
    /// The column of the problem (1-based; 0 when unknown).
    public let column: Int
    /// What is wrong.
    public let message: String

    /// An error at `line`:`column`.
    public init(line: Int, column: Int, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }

    /// `line L, column C: message`.
    public var description: String { "line \(line), column \(column): \(message)" }
}

/// A parsed GPX 1.0 or 1.1 document: waypoints, routes and tracks.
public struct GPXDocument: Sendable, Hashable {
    /// The `version` attribute (`"1.0"` or `"1.1"`).
    public var version: String
    /// The `creator` attribute.
    public var creator: String?
    /// The document's name (1.1: `<metadata><name>`, 1.0: `<gpx><name>`).
    public var name: String?
    /// The `wpt`s.
    public var waypoints: [GPXPoint] = []
    /// The `rte`s.
    public var routes: [GPXRoute] = []
    /// The `trk`s.
    public var tracks: [GPXTrack] = []

    /// What to play back: the first track with points, else the first route, else the waypoints.
    public var playbackPoints: [GPXPoint] {
        if let track = tracks.first(where: { !$0.points.isEmpty }) { return track.points }
        if let route = routes.first(where: { !$0.points.isEmpty }) { return route.points }
        return waypoints
    }

    /// Parses GPX 1.0 or 1.1. Elements of other namespaces (extensions) are skipped.
    public static func parse(_ data: Data) throws(GPXError) -> GPXDocument {
        let parser = XMLParser(data: data)
        let reader = GPXReader()
        parser.delegate = reader
        parser.shouldProcessNamespaces = true
        let ok = parser.parse()
        if let error = reader.error { throw error }
        guard ok else {
            let code = (parser.parserError as NSError?)?.code ?? -1
            throw GPXError(
                line: parser.lineNumber, column: parser.columnNumber,
                message: "the file is not well-formed XML (XMLParser error \(code)); fix the markup there"
            )
        }
        guard let document = reader.document else {
            throw GPXError(line: parser.lineNumber, column: parser.columnNumber, message: "there is no <gpx> element; this is not a GPX file")
        }
        return document
    }

    /// Reads and parses the GPX file at `url`; errors are `ChaosError`s naming the file and line.
    public static func load(contentsOf url: URL) throws(ChaosError) -> GPXDocument {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ChaosError(.invalidProvider, subject: url.path, "cannot read the GPX file (\(error.localizedDescription)); give the path of a readable .gpx file")
        }
        do {
            return try parse(data)
        } catch {
            throw ChaosError(.invalidProvider, subject: url.path, "invalid GPX at line \(error.line), column \(error.column): \(error.message)")
        }
    }
}

/// The XMLParser delegate that builds a ``GPXDocument``. It lives for one parse on one
/// thread and never leaves `GPXDocument.parse`.
private final class GPXReader: NSObject, XMLParserDelegate {
    var document: GPXDocument?
    var error: GPXError?

    private var path: [String] = []
    private var text = ""
    private var point: GPXPoint?
    private var route: GPXRoute?
    private var track: GPXTrack?
    private var segment: [GPXPoint]?

    private static func isGPX(_ namespaceURI: String?) -> Bool {
        guard let namespaceURI, !namespaceURI.isEmpty else { return true }
        return namespaceURI.hasPrefix("http://www.topografix.com/GPX/")
    }

    private func fail(_ parser: XMLParser, _ message: String) {
        guard error == nil else { return }
        error = GPXError(line: parser.lineNumber, column: parser.columnNumber, message: message)
        parser.abortParsing()
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
        qualifiedName: String?, attributes: [String: String] = [:]
    ) {
        let name = Self.isGPX(namespaceURI) ? elementName : "{\(namespaceURI ?? "")}\(elementName)"
        text = ""
        if path.isEmpty {
            guard name == "gpx" else {
                fail(parser, "the root element is <\(elementName)>, not <gpx>; this is not a GPX file")
                return
            }
            document = GPXDocument(version: attributes["version"] ?? "1.1", creator: attributes["creator"])
        }
        let parent = path.last
        path.append(name)
        switch (name, parent) {
        case ("wpt", "gpx"), ("rtept", "rte"), ("trkpt", "trkseg"):
            guard let latText = attributes["lat"], let lonText = attributes["lon"] else {
                fail(parser, "<\(name)> needs both lat and lon attributes")
                return
            }
            guard let lat = Double(latText.trimmingCharacters(in: .whitespaces)), (-90...90).contains(lat) else {
                fail(parser, "<\(name)> has lat=\"\(latText)\"; give degrees between -90 and 90")
                return
            }
            guard let lon = Double(lonText.trimmingCharacters(in: .whitespaces)), (-180...180).contains(lon) else {
                fail(parser, "<\(name)> has lon=\"\(lonText)\"; give degrees between -180 and 180")
                return
            }
            point = GPXPoint(latitude: lat, longitude: lon)
        case ("rte", "gpx"): route = GPXRoute(name: nil, points: [])
        case ("trk", "gpx"): track = GPXTrack(name: nil, segments: [])
        case ("trkseg", "trk"): segment = []
        default: break
        }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        text += string
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        text += String(decoding: CDATABlock, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard error == nil, let name = path.popLast() else { return }
        let parent = path.last
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        text = ""
        switch (name, parent) {
        case ("ele", "wpt"?), ("ele", "rtept"?), ("ele", "trkpt"?):
            point?.elevation = number(parser, value, "ele", "metres, e.g. 45.2")
        case ("speed", "wpt"?), ("speed", "rtept"?), ("speed", "trkpt"?):
            point?.speed = number(parser, value, "speed", "metres per second, e.g. 3.4")
        case ("course", "wpt"?), ("course", "rtept"?), ("course", "trkpt"?):
            point?.course = number(parser, value, "course", "degrees, e.g. 271.5")
        case ("time", "wpt"?), ("time", "rtept"?), ("time", "trkpt"?):
            guard let date = ISO8601Date.parse(value) else {
                fail(parser, "<time> is \"\(value)\", not an ISO-8601 date-time; write e.g. 2024-05-04T08:15:30Z")
                return
            }
            point?.time = date
        case ("name", "wpt"?), ("name", "rtept"?), ("name", "trkpt"?): point?.name = value
        case ("name", "rte"?): route?.name = value
        case ("name", "trk"?): track?.name = value
        case ("name", "metadata"?), ("name", "gpx"?): document?.name = value
        case ("wpt", _): if let point { document?.waypoints.append(point) }; point = nil
        case ("rtept", _): if let point { route?.points.append(point) }; point = nil
        case ("trkpt", _): if let point { segment?.append(point) }; point = nil
        case ("rte", _): if let route { document?.routes.append(route) }; route = nil
        case ("trkseg", _): if let segment { track?.segments.append(segment) }; segment = nil
        case ("trk", _): if let track { document?.tracks.append(track) }; track = nil
        default: break
        }
    }

    private func number(_ parser: XMLParser, _ value: String, _ element: String, _ expected: String) -> Double? {
        guard let number = Double(value), number.isFinite else {
            fail(parser, "<\(element)> is \"\(value)\"; give a number in \(expected)")
            return nil
        }
        return number
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        guard error == nil else { return }
        let code = (parseError as NSError).code
        error = GPXError(
            line: parser.lineNumber, column: parser.columnNumber,
            message: "the file is not well-formed XML (XMLParser error \(code)); fix the markup there"
        )
    }
}
