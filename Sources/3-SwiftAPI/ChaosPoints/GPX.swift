public import ChaosKit
public import Foundation
public import Logging

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
    /// `<name>`, exactly as written (spaces and line breaks kept, as gpxpy keeps them).
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

/// An optional field the reader passed over, and where: an empty or unreadable `<ele>`,
/// `<time>`, `<speed>` or `<course>`, or a number that is not finite (`NaN`, `inf`).
public struct GPXWarning: Sendable, Hashable, CustomStringConvertible {
    /// The line of the field's end tag (1-based).
    public let line: Int
    /// The column of the field's end tag (1-based).
    public let column: Int
    /// What was skipped, and why.
    public let message: String

    /// `line L, column C: message`.
    public var description: String { "line \(line), column \(column): \(message)" }
}

/// A parsed GPX 1.0 or 1.1 document: waypoints, routes and tracks.
///
/// Read as gpxpy reads GPX: an optional field that is empty or unreadable (`<ele></ele>`,
/// `<time>yesterday</time>`, `<ele>NaN</ele>`) is left out with a ``GPXWarning``, not
/// refused; a point without a usable latitude and longitude is an error with its line.
/// Names are kept exactly as written.
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
    /// The optional fields that were left out, in file order (``load(contentsOf:logger:)`` also logs them).
    public var warnings: [GPXWarning] = []

    /// What to play back: the first track with points, else the first route, else the waypoints.
    public var playbackPoints: [GPXPoint] {
        if let track = tracks.first(where: { !$0.points.isEmpty }) { return track.points }
        if let route = routes.first(where: { !$0.points.isEmpty }) { return route.points }
        return waypoints
    }

    /// Parses GPX 1.0 or 1.1. Elements of other namespaces (extensions) are skipped; fields
    /// left out are listed in ``warnings`` (not logged: ``load(contentsOf:logger:)`` logs them).
    public static func parse(_ data: Data) throws(GPXError) -> GPXDocument {
        let parser = XMLParser(data: try utf8(data))
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
            throw GPXError(
                line: parser.lineNumber, column: parser.columnNumber,
                message: "there is no <gpx> element; this is not a GPX file")
        }
        return document
    }

    /// `data` as UTF-8 that declares no other encoding. FoundationXML traps on names that are
    /// not valid UTF-8, which libxml2's recovering parser hands it from a damaged file; so the
    /// text is checked (or, for the other encodings GPX files are written in, converted) here,
    /// and a bad byte is an error with its line and column, as it is for gpxpy.
    static func utf8(_ data: Data) throws(GPXError) -> Data {
        let bytes = [UInt8](data)
        // UTF-16 with a byte order mark: converted.
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            guard let text = String(data: data, encoding: .utf16) else {
                throw GPXError(
                    line: 1, column: 1,
                    message: "the file starts as UTF-16 but does not decode as UTF-16; save it as UTF-8")
            }
            return Data(declaringUTF8(text).utf8)
        }
        let encoding = declaredEncoding(bytes)?.lowercased()
        let converted: String.Encoding?
        switch encoding {
        case nil, "utf-8", "utf8": converted = nil
        case "iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1": converted = .isoLatin1
        case "windows-1252", "cp1252": converted = .windowsCP1252
        case "us-ascii", "ascii": converted = .ascii
        case "utf-16", "utf16": converted = .utf16
        default:
            throw GPXError(
                line: 1, column: 1,
                message:
                    "the file declares encoding \"\(InputExcerpt.of(encoding ?? ""))\", which is not read here; save it as UTF-8"
            )
        }
        if let converted {
            guard let text = String(data: data, encoding: converted) else {
                throw GPXError(
                    line: 1, column: 1,
                    message:
                        "the file does not decode as its declared encoding \"\(InputExcerpt.of(encoding ?? ""))\"; save it as UTF-8"
                )
            }
            return Data(declaringUTF8(text).utf8)
        }
        // The standard library's check first (fast); the package's only to locate a bad byte.
        if String(validating: bytes, as: UTF8.self) != nil { return data }
        do throws(JSONSyntaxError) {
            try UTF8Check.validate(bytes)
        } catch {
            throw GPXError(line: error.line, column: error.column, message: error.message)
        }
        return data
    }

    /// The `encoding` of the XML declaration at the start of `bytes`, if it has one.
    private static func declaredEncoding(_ bytes: [UInt8]) -> String? {
        var start = 0
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { start = 3 }
        guard bytes[start...].starts(with: Array("<?xml".utf8)),
            let end = bytes[start...].firstIndex(of: UInt8(ascii: ">"))
        else { return nil }
        let declaration = String(decoding: bytes[start..<end], as: UTF8.self)
        guard let range = declaration.range(of: "encoding") else { return nil }
        let rest = declaration[range.upperBound...].drop { $0 == " " || $0 == "=" || $0 == "\t" }
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        return String(rest.dropFirst().prefix { $0 != quote })
    }

    /// `text` with its XML declaration's encoding (if any) changed to UTF-8.
    private static func declaringUTF8(_ text: String) -> String {
        var text = Substring(text)
        if text.first == "\u{FEFF}" { text = text.dropFirst() }
        guard text.hasPrefix("<?xml"), let end = text.firstIndex(of: ">") else { return String(text) }
        let declaration = text[..<end]
        guard let range = declaration.range(of: "encoding") else { return String(text) }
        let rest = declaration[range.upperBound...]
        guard let open = rest.firstIndex(where: { $0 == "\"" || $0 == "'" }),
            let close = rest[rest.index(after: open)...].firstIndex(of: rest[open])
        else { return String(text) }
        return String(text[..<rest.index(after: open)]) + "UTF-8" + String(text[close...])
    }

    /// Parses GPX bytes from `source` (a path or any name, for messages); an error is a
    /// `ChaosError` whose subject is `source` and whose message gives the line and column.
    public static func parse(_ data: Data, source: String) throws(ChaosError) -> GPXDocument {
        do {
            return try parse(data)
        } catch {
            throw ChaosError(
                .invalidProvider, subject: source,
                "invalid GPX at line \(error.line), column \(error.column): \(error.message)")
        }
    }

    /// Reads and parses the GPX file at `url`; errors are `ChaosError`s naming the file and
    /// line. Each field left out is logged as a warning to `logger` (label `ChaosKit.GPX`
    /// unless given).
    public static func load(contentsOf url: URL, logger: Logger = GPXDocument.logger) throws(ChaosError) -> GPXDocument
    {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ChaosError(
                .invalidProvider, subject: url.path,
                "cannot read the GPX file (\(error.localizedDescription)); give the path of a readable .gpx file")
        }
        let document = try parse(data, source: url.path)
        for warning in document.warnings {
            logger.warning("GPX field skipped: \(warning)", metadata: ["file": "\(url.path)"])
        }
        return document
    }

    /// The logger ``load(contentsOf:logger:)`` warns on unless given another: `ChaosKit.GPX`.
    public static let logger = Logger(label: "ChaosKit.GPX")
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
                fail(parser, "the root element is <\(InputExcerpt.of(elementName))>, not <gpx>; this is not a GPX file")
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
                fail(parser, "<\(name)> has lat=\"\(InputExcerpt.of(latText))\"; give degrees between -90 and 90")
                return
            }
            guard let lon = Double(lonText.trimmingCharacters(in: .whitespaces)), (-180...180).contains(lon) else {
                fail(parser, "<\(name)> has lon=\"\(InputExcerpt.of(lonText))\"; give degrees between -180 and 180")
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

    func parser(_ parser: XMLParser, foundCDATA block: Data) {
        text += String(decoding: block, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard error == nil, let name = path.popLast() else { return }
        let parent = path.last
        // Names are kept as written; numbers and times may have spaces around them (XML
        // Schema collapses them for these types).
        let written = text
        var value: String { Self.trimmed(written) }
        let asWritten = written.isEmpty ? nil : written
        text = ""
        switch (name, parent) {
        case ("ele", "wpt"?), ("ele", "rtept"?), ("ele", "trkpt"?):
            point?.elevation = number(parser, value, "ele", "metres, e.g. 45.2")
        case ("speed", "wpt"?), ("speed", "rtept"?), ("speed", "trkpt"?):
            point?.speed = number(parser, value, "speed", "metres per second, e.g. 3.4")
        case ("course", "wpt"?), ("course", "rtept"?), ("course", "trkpt"?):
            point?.course = number(parser, value, "course", "degrees, e.g. 271.5")
        case ("time", "wpt"?), ("time", "rtept"?), ("time", "trkpt"?):
            // A date-time, as GPX's xsd:dateTime requires: a bare date is not one.
            guard value.utf8.count > 10, let date = ISO8601Date.parse(value) else {
                skip(parser, "<time>", value, "an ISO-8601 date-time such as 2024-05-04T08:15:30Z")
                return
            }
            point?.time = date
        case ("name", "wpt"?), ("name", "rtept"?), ("name", "trkpt"?): point?.name = asWritten
        case ("name", "rte"?): route?.name = asWritten
        case ("name", "trk"?): track?.name = asWritten
        case ("name", "metadata"?), ("name", "gpx"?): document?.name = asWritten
        case ("wpt", _):
            if let point { document?.waypoints.append(point) }
            point = nil
        case ("rtept", _):
            if let point { route?.points.append(point) }
            point = nil
        case ("trkpt", _):
            if let point { segment?.append(point) }
            point = nil
        case ("rte", _):
            if let route { document?.routes.append(route) }
            route = nil
        case ("trkseg", _):
            if let segment { track?.segments.append(segment) }
            segment = nil
        case ("trk", _):
            if let track { document?.tracks.append(track) }
            track = nil
        default: break
        }
    }

    /// `text` without the white space around it (computed only for the fields that need it:
    /// a Foundation trim on every element's text costs more than the rest of the parse).
    private static func trimmed(_ text: String) -> String {
        var slice = Substring(text)
        while let first = slice.first, first.isWhitespace { slice.removeFirst() }
        while let last = slice.last, last.isWhitespace { slice.removeLast() }
        return String(slice)
    }

    /// The number `value`, or nil with a warning when it is empty, not a number, or not
    /// finite (the field is optional: the point stays).
    private func number(_ parser: XMLParser, _ value: String, _ element: String, _ expected: String) -> Double? {
        guard let number = Double(value), number.isFinite else {
            skip(parser, "<\(element)>", value, "a number in \(expected)")
            return nil
        }
        return number
    }

    /// Records that an optional field was left out, and why.
    private func skip(_ parser: XMLParser, _ element: String, _ value: String, _ expected: String) {
        let found = value.isEmpty ? "empty" : "\"\(InputExcerpt.of(value))\""
        document?.warnings.append(
            GPXWarning(
                line: parser.lineNumber, column: parser.columnNumber,
                message: "\(element) is \(found), not \(expected); the field is left out"
            ))
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
