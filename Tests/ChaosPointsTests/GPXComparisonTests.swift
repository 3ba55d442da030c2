import ChaosKit
import ChaosPoints
import Foundation
import TestHelpers
import Testing

/// ChaosKit's GPX reader against gpxpy's, point by point: on the checked-in fixtures, on
/// files with the edge cases written here, and on gpxpy's own test files (from its source
/// distribution, which .ci/install-test-deps unpacks into .build-testdata/gpxpy).
///
/// Where the two readers differ on purpose, the difference is one of these:
/// - gpxpy refuses a non-numeric optional number (`<ele>high</ele>`); ChaosKit leaves the
///   field out with a warning.
/// - gpxpy accepts a latitude or longitude out of range or `NaN`; ChaosKit refuses the file
///   and names the line.
/// - gpxpy keeps `NaN`/`inf` numbers; ChaosKit leaves them out with a warning (the dump
///   writes gpxpy's non-finite numbers as null, so the two compare equal).
@Suite struct GPXComparisonTests {
    static let gpxpyInstalled = pythonCanImport("gpxpy")
    static let gpxpyTestFiles = packageRoot.appendingPathComponent(".build-testdata/gpxpy/test_files")

    struct Point: Decodable {
        var lat: Double?, lon: Double?, ele: Double?, time: Double?, name: String?, speed: Double?, course: Double?
    }
    struct Route: Decodable {
        var name: String?
        var points: [Point]
    }
    struct Track: Decodable {
        var name: String?
        var segments: [[Point]]
    }
    struct Reference: Decodable {
        var file: String
        var ok: Bool
        var error: String?
        var name: String?
        var waypoints: [Point]?
        var routes: [Route]?
        var tracks: [Track]?
    }

    /// What gpxpy reads from `files` (Scripts/gpxpy-dump.py).
    static func gpxpy(_ files: [URL]) throws -> [Reference] {
        let script = packageRoot.appendingPathComponent("Scripts/gpxpy-dump.py").path
        let output = try #require(runPython([script] + files.map(\.path)))
        try #require(output.status == 0, "gpxpy-dump.py failed: \(output.stderr)")
        return try JSONDecoder().decode([Reference].self, from: output.stdout)
    }

    /// The differences between gpxpy's reading of a file and ChaosKit's, as sentences.
    static func differences(_ reference: Reference) -> [String] {
        let file = URL(fileURLWithPath: reference.file).lastPathComponent
        let ours: GPXDocument
        do {
            ours = try GPXDocument.parse(Data(contentsOf: URL(fileURLWithPath: reference.file)), source: file)
        } catch let error as ChaosError {
            if !reference.ok { return [] }  // both refuse it
            // gpxpy takes coordinates out of range (or NaN); ChaosKit refuses them, with the line.
            if error.message.contains("lat=") || error.message.contains("lon=") { return [] }
            return ["\(file): gpxpy reads it, ChaosKit refuses it: \(error)"]
        } catch {
            return ["\(file): cannot be read: \(error)"]
        }
        guard reference.ok else {
            // gpxpy refuses an unreadable optional number; ChaosKit leaves it out, with a warning.
            if reference.error?.contains("Invalid value for <") == true, !ours.warnings.isEmpty { return [] }
            return ["\(file): gpxpy refuses it (\(reference.error ?? "")), ChaosKit reads it"]
        }
        var problems: [String] = []
        func compare(_ theirs: [Point], _ mine: [GPXPoint], _ place: String) {
            guard theirs.count == mine.count else {
                problems.append("\(file) \(place): gpxpy has \(theirs.count) points, ChaosKit \(mine.count)")
                return
            }
            for (index, (a, b)) in zip(theirs, mine).enumerated() {
                let at = "\(file) \(place)[\(index)]"
                if a.lat != b.latitude || a.lon != b.longitude {
                    problems.append("\(at): \(a.lat ?? .nan),\(a.lon ?? .nan) vs \(b.latitude),\(b.longitude)")
                }
                if a.ele != b.elevation {
                    problems.append(
                        "\(at): elevation \(String(describing: a.ele)) vs \(String(describing: b.elevation))")
                }
                switch (a.time, b.time?.timeIntervalSince1970) {
                case (nil, nil): break
                case (let x?, let y?) where abs(x - y) < 1e-3: break
                default: problems.append("\(at): time \(String(describing: a.time)) vs \(String(describing: b.time))")
                }
                if a.name != b.name {
                    problems.append("\(at): name \(String(reflecting: a.name)) vs \(String(reflecting: b.name))")
                }
                if a.speed != nil || a.course != nil, a.speed != b.speed || a.course != b.course {
                    problems.append(
                        "\(at): speed/course \(String(describing: a.speed))/\(String(describing: a.course)) vs \(String(describing: b.speed))/\(String(describing: b.course))"
                    )
                }
            }
        }
        if reference.name != ours.name {
            problems.append("\(file): name \(String(reflecting: reference.name)) vs \(String(reflecting: ours.name))")
        }
        compare(reference.waypoints ?? [], ours.waypoints, "waypoints")
        let routes = reference.routes ?? []
        let tracks = reference.tracks ?? []
        if routes.count != ours.routes.count || tracks.count != ours.tracks.count {
            return problems + [
                "\(file): gpxpy has \(routes.count) routes and \(tracks.count) tracks, ChaosKit \(ours.routes.count) and \(ours.tracks.count)"
            ]
        }
        for (index, (a, b)) in zip(routes, ours.routes).enumerated() {
            if a.name != b.name {
                problems.append(
                    "\(file) route \(index): name \(String(reflecting: a.name)) vs \(String(reflecting: b.name))")
            }
            compare(a.points, b.points, "route \(index)")
        }
        for (index, (a, b)) in zip(tracks, ours.tracks).enumerated() {
            if a.name != b.name {
                problems.append(
                    "\(file) track \(index): name \(String(reflecting: a.name)) vs \(String(reflecting: b.name))")
            }
            guard a.segments.count == b.segments.count else {
                problems.append("\(file) track \(index): \(a.segments.count) segments vs \(b.segments.count)")
                continue
            }
            for (number, (x, y)) in zip(a.segments, b.segments).enumerated() {
                compare(x, y, "track \(index) segment \(number)")
            }
        }
        return problems
    }

    /// Files with the cases gpxpy and ChaosKit must agree on, and the ones they differ on by design.
    static let edgeCases: [String: String] = [
        "lenient-1.1.gpx": """
        <?xml version="1.0" encoding="UTF-8"?>
        <gpx version="1.1" creator="edge cases" xmlns="http://www.topografix.com/GPX/1/1"
             xmlns:gpxtpx="http://www.garmin.com/xmlschemas/TrackPointExtension/v1">
          <metadata><name>Edge cases  </name></metadata>
          <wpt lat="51.5" lon="-0.12"><ele></ele><time></time><name>Trailing  </name></wpt>
          <wpt lat="-33.86" lon="151.21"><ele>NaN</ele><name>   </name></wpt>
          <wpt lat="0" lon="0"><ele>-12.25</ele><time>2024-05-04T09:12:03.250+02:00</time><name>
            two lines
          </name></wpt>
          <wpt lat="1e1" lon="-1.5E+1"><time>2024-05-04T07:12:03</time><name><![CDATA[Café & <Bar>]]></name></wpt>
          <wpt lat="89.999999" lon="-179.999999"><name>Fish &amp; Chips</name><time>2024-05-04</time></wpt>
          <wpt lat="10" lon="20"><name></name><ele>inf</ele></wpt>
          <rte><name> Route </name><rtept lat="1" lon="2"><ele>3</ele></rtept><rtept lat="1.5" lon="2.5"/></rte>
          <trk><name>Run</name>
            <trkseg>
              <trkpt lat="51.50453" lon="-0.07514"><ele>8.4</ele><time>2024-05-04T07:12:03Z</time>
                <extensions><gpxtpx:TrackPointExtension><gpxtpx:speed>3.2</gpxtpx:speed></gpxtpx:TrackPointExtension></extensions>
              </trkpt>
              <trkpt lat="51.5046" lon="-0.0752"><ele></ele><time>not a time</time></trkpt>
            </trkseg>
            <trkseg></trkseg>
          </trk>
          <trk></trk>
        </gpx>
        """,
        "lenient-1.0.gpx": """
        <gpx version="1.0" creator="edge cases" xmlns="http://www.topografix.com/GPX/1/0">
          <name>GPX 1.0</name>
          <trk><trkseg>
            <trkpt lat="47.644548" lon="-122.326897"><ele>4.46</ele><time>2009-10-17T18:37:26Z</time><course>162.298644</course><speed>13.322886</speed></trkpt>
            <trkpt lat="47.6445" lon="-122.3268"><time></time><course></course><speed></speed></trkpt>
          </trkseg></trk>
        </gpx>
        """,
        // gpxpy refuses an unreadable number; ChaosKit leaves it out with a warning.
        "unreadable-elevation.gpx": """
        <gpx version="1.1" creator="edge cases" xmlns="http://www.topografix.com/GPX/1/1"><wpt lat="1" lon="2"><ele>high</ele></wpt></gpx>
        """,
        // Both refuse a point without a latitude.
        "missing-latitude.gpx": """
        <gpx version="1.1" creator="edge cases" xmlns="http://www.topografix.com/GPX/1/1"><wpt lon="2"/></gpx>
        """,
        // gpxpy reads a latitude of 95; ChaosKit refuses it, with its line.
        "latitude-out-of-range.gpx": """
        <gpx version="1.1" creator="edge cases" xmlns="http://www.topografix.com/GPX/1/1"><wpt lat="95" lon="2"/></gpx>
        """,
    ]

    @Test(.enabled(if: gpxpyInstalled, "gpxpy is not installed (.ci/install-test-deps installs it)"))
    func agreesWithGpxpyOnTheFixturesAndTheEdgeCases() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("gpx-edge-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var files: [URL] = []
        for (name, text) in Self.edgeCases.sorted(by: { $0.key < $1.key }) {
            let file = directory.appendingPathComponent(name)
            try Data(text.utf8).write(to: file)
            files.append(file)
        }
        let fixtures = pointsResource("")
        for name in try FileManager.default.contentsOfDirectory(atPath: fixtures.path).sorted()
        where name.hasSuffix(".gpx") {
            files.append(fixtures.appendingPathComponent(name))
        }
        let references = try Self.gpxpy(files)
        #expect(references.count == files.count)
        let problems = references.flatMap(Self.differences)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        // The edge cases were read as meant: the lenient file by both, with its names as written.
        let lenient = try #require(references.first { $0.file.hasSuffix("lenient-1.1.gpx") })
        #expect(
            lenient.ok
                && lenient.waypoints?.map(\.name) == [
                    "Trailing  ", "   ", "\n    two lines\n  ", "Café & <Bar>", "Fish & Chips", nil,
                ])
        #expect(references.first { $0.file.hasSuffix("latitude-out-of-range.gpx") }?.ok == true)
        #expect(references.first { $0.file.hasSuffix("unreadable-elevation.gpx") }?.ok == false)
    }

    @Test(
        .enabled(
            if: gpxpyInstalled && FileManager.default.fileExists(atPath: gpxpyTestFiles.path),
            "gpxpy's test files are not unpacked (.ci/install-test-deps does it)"))
    func agreesWithGpxpyOnItsOwnTestFiles() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.gpxpyTestFiles.path).filter {
            $0.hasSuffix(".gpx")
        }.sorted()
        let references = try Self.gpxpy(names.map { Self.gpxpyTestFiles.appendingPathComponent($0) })
        #expect(references.count >= 25)
        let problems = references.flatMap(Self.differences)
        #expect(problems.isEmpty, "\(problems.joined(separator: "\n"))")
        let points = references.reduce(0) { total, reference in
            total + (reference.waypoints?.count ?? 0) + (reference.routes ?? []).reduce(0) { $0 + $1.points.count }
                + (reference.tracks ?? []).reduce(0) { $0 + $1.segments.reduce(0) { $0 + $1.count } }
        }
        print(
            "GPX against gpxpy: \(references.count) of gpxpy's test files, \(references.filter(\.ok).count) read, \(points) points compared"
        )
    }
}
