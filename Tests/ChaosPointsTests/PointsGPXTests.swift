import Foundation
import TestHelpers
import Testing

@testable import ChaosKit
@testable import ChaosPoints

/// The GPX 1.0/1.1 parser, on files written the way real tools write them.
@Suite struct PointsGPXTests {
    private func document(_ name: String) throws -> GPXDocument {
        try GPXDocument.parse(Data(contentsOf: pointsResource(name)))
    }

    private func parseError(_ text: String) -> GPXError? {
        do {
            _ = try GPXDocument.parse(Data(text.utf8))
            Issue.record("expected a GPXError")
            return nil
        } catch {
            return error
        }
    }

    @Test func gpx11TrackAsGarminConnectWritesIt() throws {
        let gpx = try document("thames-run-garmin-1.1.gpx")
        #expect(gpx.version == "1.1")
        #expect(gpx.creator == "Garmin Connect")
        #expect(gpx.name == "Thames Path Morning Run")
        #expect(gpx.waypoints.isEmpty && gpx.routes.isEmpty)
        let track = try #require(gpx.tracks.first)
        #expect(track.name == "Thames Path Morning Run")
        #expect(track.segments.map(\.count) == [6, 4])
        let first = try #require(track.points.first)
        #expect(first.latitude == 51.50453 && first.longitude == -0.07514)
        #expect(first.elevation == 8.4)
        #expect(first.time == iso("2024-05-04T07:12:03Z"))
        // The Garmin extension's <ns3:speed> is not GPX 1.0's <speed>.
        #expect(track.points.allSatisfy { $0.speed == nil && $0.course == nil })
        #expect(zip(track.points, track.points.dropFirst()).allSatisfy { $0.time! < $1.time! })
        #expect(gpx.playbackPoints == track.points)
    }

    @Test func gpx10TrackAsGPSBabelWritesIt() throws {
        let gpx = try document("eastlake-drive-gpsbabel-1.0.gpx")
        #expect(gpx.version == "1.0")
        #expect(gpx.creator?.hasPrefix("GPSBabel") == true)
        #expect(gpx.name == "Eastlake drive")
        #expect(gpx.waypoints.map(\.name) == ["START", "I-5 RAMP"])
        #expect(gpx.waypoints[0].time == iso("2009-10-17T18:37:26Z"))
        #expect(gpx.waypoints[1].time == nil)
        #expect(gpx.waypoints[1].elevation == 12.5)
        let track = try #require(gpx.tracks.first)
        #expect(track.name == "ACTIVE LOG")
        #expect(track.points.count == 8)
        #expect(track.points[0].speed == 13.322886)
        #expect(track.points[0].course == 162.298644)
        #expect(track.points[0].location.speed == 13.322886)
        #expect(track.points[1].time == iso("2009-10-17T18:37:40Z"))
        #expect(track.points.allSatisfy { $0.speed != nil && $0.course != nil && $0.elevation != nil })
    }

    @Test func gpx11Route() throws {
        let gpx = try document("royal-mile-route.gpx")
        #expect(gpx.creator == "OsmAnd Maps 4.7.9")
        #expect(gpx.name == "Royal Mile walk")
        #expect(gpx.tracks.isEmpty)
        let route = try #require(gpx.routes.first)
        #expect(route.name == "Royal Mile")
        #expect(route.points.count == 6)
        #expect(route.points.first?.name == "Edinburgh Castle")
        #expect(route.points.last?.name == "Palace of Holyroodhouse")
        #expect(route.points[2].name == "St Giles' Cathedral")
        #expect(route.points.allSatisfy { $0.time == nil && $0.elevation != nil })
        #expect(gpx.playbackPoints == route.points)
        // Without times the playback spaces the points by distance.
        let playback = RoutePlayback(points: route.points, metersPerSecond: 1.4)
        #expect(zip(playback.offsets, playback.offsets.dropFirst()).allSatisfy { $0 < $1 })
        #expect(playback.duration > 1_000 && playback.duration < 2_000)  // the Royal Mile is about 1.8 km
    }

    @Test func malformedFileReportsItsLine() throws {
        do {
            _ = try document("malformed.gpx")
            Issue.record("malformed.gpx parsed")
        } catch let error as GPXError {
            // A bare & in a name on line 11 (hand edits do this).
            #expect(error.line == 11, "\(error)")
            #expect(error.description.contains("line 11"))
        }
        // Through the loader and the catalogue the line is in the ChaosError's message.
        #expect(throws: ChaosError.self) { try GPXDocument.load(contentsOf: pointsResource("malformed.gpx")) }
        do {
            _ = try GPXDocument.load(contentsOf: pointsResource("malformed.gpx"))
        } catch {
            #expect(error.kind == .invalidProvider)
            #expect(error.message.contains("line 11"))
            #expect(error.subject?.hasSuffix("malformed.gpx") == true)
        }
    }

    @Test func invalidContentReportsItsLine() {
        let badLatitude = parseError(
            """
            <?xml version="1.0"?>
            <gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1">
              <wpt lat="51.5" lon="-0.12"/>
              <wpt lat="95.0" lon="-0.12"/>
            </gpx>
            """)
        #expect(badLatitude?.line == 4)
        #expect(badLatitude?.message.contains("lat=\"95.0\"") == true)

        let missingLongitude = parseError("<gpx version=\"1.1\">\n<wpt lat=\"1\"/>\n</gpx>")
        #expect(missingLongitude?.line == 2)

        let notGPX = parseError("<?xml version=\"1.0\"?>\n<kml xmlns=\"http://www.opengis.net/kml/2.2\"/>")
        #expect(notGPX?.message.contains("<kml>") == true)

        let truncated = parseError("<gpx version=\"1.1\">\n<trk>\n<trkseg>\n<trkpt lat=\"1\" lon=\"2\">")
        #expect(truncated != nil && truncated!.line >= 4)
    }

    @Test func timesWithAndWithoutFractionsAndZones() throws {
        let gpx = try GPXDocument.parse(
            Data(
                """
                <gpx version="1.1" creator="test" xmlns="http://www.topografix.com/GPX/1/1">
                  <wpt lat="1" lon="2"><time>2024-05-04T07:12:03Z</time></wpt>
                  <wpt lat="1" lon="2"><time>2024-05-04T07:12:03.125Z</time></wpt>
                  <wpt lat="1" lon="2"><time>2024-05-04T09:12:03+02:00</time></wpt>
                  <wpt lat="1" lon="2"><time>2024-05-04T07:12:03</time></wpt>
                  <wpt lat="1" lon="2"><name><![CDATA[Café & Bar]]></name></wpt>
                </gpx>
                """.utf8))
        let base = iso("2024-05-04T07:12:03Z")
        #expect(gpx.waypoints.map(\.time) == [base, base.addingTimeInterval(0.125), base, base, nil])
        #expect(gpx.waypoints.last?.name == "Café & Bar")
    }

    // MARK: Leniency (as gpxpy reads GPX)

    static let lenient = """
        <gpx version="1.0" creator="test" xmlns="http://www.topografix.com/GPX/1/0">
        <wpt lat="1" lon="2"><ele></ele><time></time><name>Kept  </name></wpt>
        <wpt lat="1" lon="2"><ele>NaN</ele><speed>inf</speed><course>abc</course></wpt>
        <wpt lat="1" lon="2"><ele> 12.5 </ele><time>yesterday</time><name>   </name></wpt>
        <wpt lat="1" lon="2"><time>2024-05-04</time><name>
         two lines
        </name></wpt>
        <trk><name> padded track </name><trkseg><trkpt lat="3" lon="4"><ele>-0.5</ele><time> 2024-05-04T07:12:03Z </time></trkpt></trkseg></trk>
        </gpx>
        """

    @Test func emptyOrUnreadableOptionalFieldsAreLeftOutWithAWarning() throws {
        let gpx = try GPXDocument.parse(Data(Self.lenient.utf8))
        #expect(gpx.waypoints.count == 4)
        #expect(gpx.waypoints.map(\.elevation) == [nil, nil, 12.5, nil])
        #expect(gpx.waypoints.allSatisfy { $0.time == nil && $0.speed == nil && $0.course == nil })
        // Names as written: trailing spaces, a name of spaces, line breaks.
        #expect(gpx.waypoints.map(\.name) == ["Kept  ", nil, "   ", "\n two lines\n"])
        #expect(gpx.tracks.first?.name == " padded track ")
        // Numbers and times may have spaces around them (XML Schema collapses them).
        #expect(gpx.tracks.first?.points.first?.elevation == -0.5)
        #expect(gpx.tracks.first?.points.first?.time == iso("2024-05-04T07:12:03Z"))
        // Every field left out is reported with its line.
        #expect(gpx.warnings.map(\.line) == [2, 2, 3, 3, 3, 4, 5])
        #expect(gpx.warnings[0].message.contains("<ele> is empty"))
        #expect(gpx.warnings[2].message.contains("\"NaN\""))
        #expect(gpx.warnings[5].message.contains("\"yesterday\"") && gpx.warnings[5].message.contains("ISO-8601"))
        #expect(gpx.warnings.allSatisfy { $0.message.hasSuffix("the field is left out") })
    }

    @Test func skippedFieldsAreLoggedWithTheFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("lenient-\(UUID().uuidString).gpx")
        try Data(Self.lenient.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let (logger, log) = RecordingLogHandler.logger()
        let gpx = try GPXDocument.load(contentsOf: file, logger: logger)
        #expect(log.all.count == gpx.warnings.count)
        #expect(log.all.allSatisfy { $0.level == .warning && $0.metadata["file"] == "\(file.path)" })
        #expect(log.all.first?.message.contains("line 2") == true)
    }

    @Test func aPointStillNeedsAUsableLatitudeAndLongitude() {
        for (attributes, fragment) in [
            ("lat=\"NaN\" lon=\"2\"", "lat=\"NaN\""), ("lat=\"\" lon=\"2\"", "lat=\"\""),
            ("lat=\"1\" lon=\"181\"", "lon=\"181\""),
            ("lon=\"2\"", "needs both"), ("lat=\"-90.5\" lon=\"0\"", "lat=\"-90.5\""),
        ] {
            let error = parseError("<gpx version=\"1.1\">\n<wpt lat=\"1\" lon=\"2\"/>\n\n<wpt \(attributes)/>\n</gpx>")
            #expect(error?.line == 4, "\(attributes)")
            #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "")")
        }
        // Input quoted in a message is cut to 80 characters.
        let long = String(repeating: "9", count: 5_000)
        let error = parseError("<gpx version=\"1.1\"><wpt lat=\"\(long)\" lon=\"2\"/></gpx>")
        #expect(error != nil && error!.message.count < 200)
        #expect(error?.message.contains("5000 characters") == true)
    }
}
