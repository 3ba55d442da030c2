import ChaosKit
import Foundation
import TestHelpers
import Testing

@testable import ChaosPoints

/// Bad input: a seeded mutation loop over the real GPX fixtures and the edge cases. Every
/// input must end in a document or a located `ChaosError` (its source and a line and
/// column), never a crash; a document's points must be usable (finite coordinates in range).
@Suite struct GPXFuzzTests {
    /// The seeds: every checked-in fixture and every edge-case file, as bytes.
    static func seeds() throws -> [[UInt8]] {
        let fixtures = pointsResource("")
        var seeds: [[UInt8]] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: fixtures.path).sorted()
        where name.hasSuffix(".gpx") {
            seeds.append([UInt8](try Data(contentsOf: fixtures.appendingPathComponent(name))))
        }
        for (_, text) in GPXComparisonTests.edgeCases.sorted(by: { $0.key < $1.key }) { seeds.append(Array(text.utf8)) }
        return seeds
    }

    /// Text GPX readers trip over: markup, entities, numbers at the edges, encodings.
    static let tokens: [[UInt8]] =
        [
            "<", ">", "&", "\"", "'", "</trkpt>", "<trkpt lat=\"1\" lon=\"2\">", "<wpt lat=\"", "<ele>", "</ele>",
            "<time>", "</time>",
            "<![CDATA[", "]]>", "<!--", "-->", "&#0;", "&#x1F600;", "&amp;", "&unknown;", "NaN", "-inf", "1e309", "-0",
            "95", "-181",
            "9999-99-99T99:99:99Z", "2024-02-30T00:00:00Z", "<gpx version=\"1.1\">", "</gpx>",
            "xmlns=\"http://www.topografix.com/GPX/1/0\"",
            "<!DOCTYPE gpx [<!ENTITY e \"eeeeeeee\">]>", "&e;", "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>",
            String(repeating: "<trk>", count: 64), String(repeating: "9", count: 400),
        ].map { Array($0.utf8) } + [[0xFF], [0xC3], [0x00], [0xEF, 0xBB, 0xBF]]

    /// Values that keep the markup well-formed: they reach the GPX reader's own checks.
    static let values: [[UInt8]] = [
        "", " ", "0", "-0", "1e309", "-1e309", "NaN", "inf", "95", "-181", "1,5", "0x10", "+5", " 12.5 ", "high",
        "2024-05-04T07:12:03Z", "2024-05-04", "2024-02-30T00:00:00Z", "24:00", "yesterday", "\u{1F600}", "&amp;",
        "&#x41;",
        String(repeating: "x", count: 300), "http://www.topografix.com/GPX/1/0", "1.0", "trkpt",
    ].map { Array($0.utf8) }

    /// One input made from the seeds.
    static func input(_ random: inout SeededRandom, seeds: [[UInt8]]) -> [UInt8] {
        var bytes = random.pick(seeds)
        // Mostly one mutation, sometimes two: enough mutants stay well-formed to reach the
        // GPX reader's own checks, not only XML's.
        for _ in 0...(random.next() % 4 == 0 ? 1 : 0) {
            switch random.next() % 8 {
            case 0:  // byte flips
                guard !bytes.isEmpty else { continue }
                for _ in 0...(random.next() % 3) {
                    bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
                }
            case 1:  // truncation
                bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count + 1))))
            case 2:  // splice of two seeds
                let other = random.pick(seeds)
                bytes =
                    Array(bytes.prefix(Int(random.next() % UInt64(bytes.count + 1))))
                    + other.suffix(Int(random.next() % UInt64(other.count + 1)))
            case 3:  // a token inserted
                bytes.insert(contentsOf: random.pick(tokens), at: Int(random.next() % UInt64(bytes.count + 1)))
            case 4, 5, 6:  // a value replaced: the text between one '>' or '"' and the next '<' or '"'
                // From a random place, the next '>' or '"' (a scan, not a list of them all:
                // this runs 100,000 times in a debug build).
                guard !bytes.isEmpty else { continue }
                var start = Int(random.next() % UInt64(bytes.count))
                while start < bytes.count, bytes[start] != UInt8(ascii: ">"), bytes[start] != UInt8(ascii: "\"") {
                    start += 1
                }
                guard start < bytes.count else { continue }
                start += 1
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "<"), bytes[end] != UInt8(ascii: "\"") { end += 1 }
                bytes.replaceSubrange(
                    start..<end, with: random.next() % 4 == 0 ? random.pick(tokens) : random.pick(values))
            default:  // a range of lines removed or repeated
                guard !bytes.isEmpty else { continue }
                let a = Int(random.next() % UInt64(bytes.count))
                let b = min(bytes.count, a + Int(random.next() % 200))
                if random.next() % 2 == 0 {
                    bytes.removeSubrange(a..<b)
                } else {
                    bytes.insert(contentsOf: bytes[a..<b], at: b)
                }
            }
        }
        return bytes
    }

    enum Outcome { case document, located }

    /// Reads `bytes`; a document's points must be usable, an error must be located.
    static func check(_ bytes: [UInt8]) -> (Outcome, String?) {
        do {
            let document = try GPXDocument.parse(Data(bytes), source: "fuzz")
            let points = document.waypoints + document.routes.flatMap(\.points) + document.tracks.flatMap(\.points)
            for point in points {
                guard (-90...90).contains(point.latitude), (-180...180).contains(point.longitude),
                    point.elevation?.isFinite ?? true, point.speed?.isFinite ?? true, point.course?.isFinite ?? true
                else { return (.document, "a point that is not usable: \(point)") }
            }
            if !document.playbackPoints.isEmpty {
                _ = RoutePlayback(points: document.playbackPoints, metersPerSecond: 5, loop: true)
                    .location(atRouteTime: 12_345, speedFactor: 2, timestamp: Date(timeIntervalSince1970: 0))
            }
            for warning in document.warnings where warning.line < 1 || warning.message.count > 400 {
                return (.document, "a warning without a line, or quoting too much: \(warning)")
            }
            return (.document, nil)
        } catch {
            let located =
                error.subject == "fuzz" && error.message.contains("line ") && error.message.contains(", column ")
                && error.message.count < 400
            return (.located, located ? nil : "not a located error: \(error)")
        }
    }

    @Test func hundredThousandMutantsEndInADocumentOrALocatedError() async throws {
        let seeds = try Self.seeds()
        let total = 100_000
        let workers = 2
        let clock = ContinuousClock()
        let start = clock.now
        // On threads of their own, as in the HAR fuzz test: a loop this long on the
        // cooperative pool would starve the tests running beside it.
        let results = await withCheckedContinuation {
            (continuation: CheckedContinuation<(documents: Int, errors: Int, failures: [String]), Never>) in
            let tally = Locked<(documents: Int, errors: Int, failures: [String], finished: Int)>((0, 0, [], 0))
            for worker in 0..<workers {
                let thread = Thread {
                    // The lowest priority, as in the HAR fuzz test: the suites beside this
                    // one wait on servers, processes and deadlines.
                    setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
                    var random = SeededRandom(seed: 0x6B_5F00 &+ UInt64(worker))
                    var documents = 0
                    var errors = 0
                    var failures: [String] = []
                    for _ in 0..<(total / workers) {
                        let state = random.position
                        let (outcome, failure) = Self.check(Self.input(&random, seeds: seeds))
                        if outcome == .document { documents += 1 } else { errors += 1 }
                        if let failure, failures.count < 5 {
                            failures.append("worker \(worker), generator state \(state): \(failure)")
                        }
                    }
                    let sum = tally.withLock { all in
                        all.documents += documents
                        all.errors += errors
                        all.failures += failures
                        all.finished += 1
                        return all
                    }
                    if sum.finished == workers {
                        continuation.resume(returning: (sum.documents, sum.errors, sum.failures))
                    }
                }
                thread.stackSize = 16 << 20
                thread.start()
            }
        }
        let elapsed = clock.now - start
        print(
            "GPX fuzz: \(results.documents + results.errors) inputs, \(results.documents) documents, \(results.errors) located errors, \(elapsed)"
        )
        #expect(results.documents + results.errors == total)
        #expect(results.failures.isEmpty, "\(results.failures)")
        #expect(results.documents > total / 10 && results.errors > total / 10, "the mutants should reach both outcomes")
    }

    /// Inputs that are known to be hard, kept as regressions (by name: some are long).
    static let hardInputs: [String: [UInt8]] = [
        "empty": [], "lone <": Array("<".utf8), "empty gpx": Array("<gpx/>".utf8), "bom": Array("\u{FEFF}<gpx/>".utf8),
        "kml": Array("<kml/>".utf8), "point without attributes": Array("<gpx><wpt/></gpx>".utf8),
        "deep": Array(String(repeating: "<gpx>", count: 10_000).utf8),
        "long elevation": Array(
            "<gpx><wpt lat=\"1\" lon=\"2\"><ele>\(String(repeating: "9", count: 100_000))</ele></wpt></gpx>".utf8),
        "NaN latitude": Array("<gpx><wpt lat=\"NaN\" lon=\"2\"/></gpx>".utf8),
        "latitude 1e309": Array("<gpx><wpt lat=\"1e309\" lon=\"2\"/></gpx>".utf8),
        "time past the end": Array("<gpx><wpt lat=\"1\" lon=\"2\"><time>9999-12-31T24:00:60Z</time></wpt></gpx>".utf8),
        "entities": Array(
            "<!DOCTYPE gpx [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]><gpx><wpt lat=\"1\" lon=\"2\"><name>&c;&c;&c;</name></wpt></gpx>"
                .utf8),
        // Found by the loop: a byte that is not UTF-8 in an element name made FoundationXML trap.
        "bad UTF-8 in a name": Array("<gpx><w".utf8) + [0xEA] + Array("t lat=\"1\" lon=\"2\"/></gpx>".utf8),
        "bad UTF-8 in an attribute name": Array("<gpx><wpt l".utf8) + [0xFF] + Array("t=\"1\" lon=\"2\"/></gpx>".utf8),
        "latin-1": Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><gpx><wpt lat=\"1\" lon=\"2\"><name>Caf".utf8)
            + [0xE9] + Array("</name></wpt></gpx>".utf8),
        "unknown encoding": Array("<?xml version=\"1.0\" encoding=\"EBCDIC\"?><gpx/>".utf8),
        "utf-16": [0xFF, 0xFE] + Array("<gpx/>".utf8).flatMap { [$0, 0] },
        "utf-16 odd": [0xFF, 0xFE, 0x3C],
    ]

    @Test(arguments: hardInputs.keys.sorted())
    func knownHardInputs(name: String) {
        let (_, failure) = Self.check(Self.hardInputs[name]!)
        #expect(failure == nil, "\(failure ?? "")")
    }

    @Test func otherEncodingsAreReadAsDeclared() throws {
        let latin1 = try GPXDocument.parse(Data(Self.hardInputs["latin-1"]!))
        #expect(latin1.waypoints.first?.name == "Café")
        let utf16 = try GPXDocument.parse(
            Data(
                [0xFF, 0xFE]
                    + Array(
                        "<?xml version=\"1.0\" encoding=\"UTF-16\"?><gpx><wpt lat=\"1\" lon=\"2\"><name>Ω</name></wpt></gpx>"
                            .utf16
                    ).flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))
        #expect(utf16.waypoints.first?.name == "Ω")
        do {
            _ = try GPXDocument.parse(Data(Self.hardInputs["bad UTF-8 in a name"]!))
            Issue.record("a file that is not UTF-8 was read")
        } catch {
            #expect(error.line == 1 && error.column == 8 && error.message.contains("0xEA"), "\(error)")
        }
    }
}

extension SeededRandom {
    /// An element of `list` (not empty), drawn uniformly enough for mutating inputs.
    mutating func pick<T>(_ list: [T]) -> T { list[Int(next() % UInt64(list.count))] }
}
