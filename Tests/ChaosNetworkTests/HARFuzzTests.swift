import ChaosKit
import Foundation
import Synchronization
import Testing

@testable import ChaosNetwork

/// Bad input: a seeded mutation loop over the real HAR fixtures. Every input must end in a
/// value or a located `ChaosError`, never a crash; a value must replay and write back out
/// without trapping, and what it writes must read back.
@Suite struct HARFuzzTests {

    static let fixtures = [
        "recorded/chromium-playwright.har", "recorded/mitmproxy.har", "handwritten/firefox.har",
        "handwritten/safari.har",
        "handwritten/charles.har", "handwritten/pollyjs.har", "handwritten/webpagetest.har", "browser-export.har",
    ]

    /// Seeds: small documents of one to three real entries each (the page entries' bodies
    /// make whole files slow to mutate 100,000 times), and the whole files themselves.
    static func seeds() throws -> (documents: [Data], trees: [HARJSON], whole: [Data]) {
        var documents: [Data] = []
        var trees: [HARJSON] = []
        var whole: [Data] = []
        for name in fixtures {
            let data = try Data(contentsOf: HARFormatsTests.fixture(name))
            whole.append(data)
            let tree = try HARJSON.parse(data)
            let entries = tree["log"]?["entries"]?.array ?? []
            for start in entries.indices {
                var small = tree
                small.update("log") { log in
                    log.set("entries", .array(Array(entries[start..<min(start + 1 + start % 3, entries.count)])))
                    log.set("pages", .array([]))
                }
                small = Self.trimmed(small)
                trees.append(small)
                documents.append(Data(small.text(pretty: false).utf8))
            }
        }
        return (documents, trees, whole)
    }

    /// `tree` with long strings cut (base64 and JSON bodies stay whole) and long lists
    /// shortened: the same shapes, fewer bytes to read 100,000 times in a debug build.
    static func trimmed(_ tree: HARJSON) -> HARJSON {
        switch tree {
        case .string(let text) where text.count > 120 && !text.hasPrefix("{") && !text.hasPrefix("iVBOR"):
            return .string(String(text.prefix(120)))
        case .array(let items):
            return .array(items.prefix(5).map(trimmed))
        case .object(let members):
            return .object(members.map { HARJSON.Member(key: $0.key, value: trimmed($0.value)) })
        default:
            return tree
        }
    }

    /// A random JSON value of any type, with the edge values HAR readers trip over.
    static func randomValue(_ random: inout SeededRandom) -> HARJSON {
        let numbers = ["-1", "0", "1000", "-5", "99", "200", "1e309", "-0", "2.5", "9999999999999999999999", "NaN"]
        let strings = [
            "", "200", "base64", "%%%", "net::ERR_CONNECTION_REFUSED", "text/plain; charset=utf-16", "ftp://x", "\u{0}",
            "GET",
            "https://a.test/\u{1F600}?q=%ZZ", String(repeating: "x", count: 300), "[Errno 111]",
        ]
        switch random.next() % 7 {
        case 0: return .null
        case 1: return .bool(random.next() % 2 == 0)
        case 2: return .number(numbers[Int(random.next() % UInt64(numbers.count))])
        case 3: return .string(strings[Int(random.next() % UInt64(strings.count))])
        case 4: return .array([])
        case 5: return .object([])
        default:
            return .array([
                .object([.init(key: "name", value: .string("x")), .init(key: "value", value: .array([.number("1")]))])
            ])
        }
    }

    /// Replaces, removes or retypes one node of `tree`, chosen at random.
    static func mutate(_ tree: inout HARJSON, _ random: inout SeededRandom, depth: Int = 0) {
        let stop = random.next() % 4 == 0 || depth > 8
        switch tree {
        case .object(var members) where !members.isEmpty:
            let index = Int(random.next() % UInt64(members.count))
            if stop {
                if random.next() % 3 == 0 {
                    members.remove(at: index)
                } else {
                    members[index].value = randomValue(&random)
                }
            } else {
                mutate(&members[index].value, &random, depth: depth + 1)
            }
            tree = .object(members)
        case .array(var items) where !items.isEmpty:
            let index = Int(random.next() % UInt64(items.count))
            if stop {
                switch random.next() % 3 {
                case 0: items.remove(at: index)
                case 1: items.append(items[index])
                default: items[index] = randomValue(&random)
                }
            } else {
                mutate(&items[index], &random, depth: depth + 1)
            }
            tree = .array(items)
        default:
            tree = randomValue(&random)
        }
    }

    /// One input made from the seeds.
    static func input(_ random: inout SeededRandom, documents: [Data], trees: [HARJSON], whole: [Data]) -> Data {
        func pick<T>(_ list: [T]) -> T { list[Int(random.next() % UInt64(list.count))] }
        // One input in 50 mutates a whole file (slow to read 100,000 times in a debug build).
        let documents = random.next() % 50 == 0 ? whole : documents
        switch random.next() % 6 {
        case 0:  // byte flips
            var bytes = [UInt8](pick(documents))
            guard !bytes.isEmpty else { return Data() }
            for _ in 0...(random.next() % 8) {
                bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
            }
            return Data(bytes)
        case 1:  // truncation
            let data = pick(documents)
            return data.prefix(Int(random.next() % UInt64(data.count + 1)))
        case 2:  // splice of two documents
            let first = pick(documents)
            let second = pick(documents)
            return first.prefix(Int(random.next() % UInt64(first.count + 1)))
                + second.suffix(Int(random.next() % UInt64(second.count + 1)))
        case 3:  // structural bytes inserted
            var bytes = [UInt8](pick(documents))
            let tokens: [[UInt8]] = [
                Array("{".utf8), Array("[".utf8), Array("\"".utf8), Array(",".utf8), Array("\\u".utf8), [0xC3], [0xFF],
                Array("[[[[[[[[".utf8),
            ]
            bytes.insert(contentsOf: pick(tokens), at: Int(random.next() % UInt64(bytes.count + 1)))
            return Data(bytes)
        default:  // type swaps at JSON level, one to three
            var tree = pick(trees)
            for _ in 0...(random.next() % 3) { mutate(&tree, &random) }
            return Data(tree.text(pretty: false).utf8)
        }
    }

    enum Outcome { case value, located }

    /// Loads `data`; a value is replayed and written back, and what it writes must read back.
    static func check(_ data: Data, skipping: Bool) -> (Outcome, String?) {
        do {
            let loaded = try HARCassette.load(data, source: "fuzz", redaction: .default, skippingBadEntries: skipping)
            for record in loaded.records {
                _ = try? record.response()
                _ = HARCassette.key(method: record.method, url: record.url, redaction: .default)
            }
            guard data.count % 4 == 0 else { return (.value, nil) }  // writing back: one value in four
            var archive = loaded.archive
            for index in archive.entries.indices { HARRedaction.default.redact(entry: &archive.entries[index]) }
            let written = archive.encoded()
            do {
                _ = try HARJSON.parse(written)
            } catch {
                return (.value, "what it wrote does not read back: \(error.message)")
            }
            return (.value, nil)
        } catch {
            let located =
                error.kind == .invalidNetworkConfiguration && error.subject == "fuzz"
                && (error.message.contains("log") || error.message.contains("line "))
            return (.located, located ? nil : "not a located error: \(error)")
        }
    }

    @Test(.disabled(if: Sanitizers.thread, Sanitizers.fuzzReason))
    func hundredThousandMutantsEndInAValueOrALocatedError() async throws {
        let (documents, trees, whole) = try Self.seeds()
        let total = 100_000  // an even number of inputs per worker
        let workers = 2
        let clock = ContinuousClock()
        let start = clock.now
        // On threads of their own: a loop this long on the cooperative pool would starve the
        // tests running beside it, which wait there for URLSession.
        let results = await withCheckedContinuation {
            (continuation: CheckedContinuation<(values: Int, errors: Int, failures: [String]), Never>) in
            let tally = Mutex<(values: Int, errors: Int, failures: [String], finished: Int)>((0, 0, [], 0))
            for worker in 0..<workers {
                let thread = Thread {
                    // The lowest priority: both cores are busy for most of a minute, and
                    // the suites beside this one wait on servers, processes and deadlines.
                    // Linux keeps a nice value per thread; `who` 0 is the calling one.
                    setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
                    var random = SeededRandom(seed: 0xC4A0_5EED &+ UInt64(worker))
                    var values = 0
                    var errors = 0
                    var failures: [String] = []
                    for index in 0..<(total / workers) {
                        let seed = random.position
                        let data = Self.input(&random, documents: documents, trees: trees, whole: whole)
                        let (outcome, failure) = Self.check(data, skipping: index % 2 == 0)
                        if outcome == .value { values += 1 } else { errors += 1 }
                        if let failure, failures.count < 5 {
                            failures.append("worker \(worker), generator state \(seed): \(failure)")
                        }
                    }
                    let total = tally.withLock { all in
                        all.values += values
                        all.errors += errors
                        all.failures += failures
                        all.finished += 1
                        return all
                    }
                    if total.finished == workers {
                        continuation.resume(returning: (total.values, total.errors, total.failures))
                    }
                }
                thread.stackSize = 16 << 20
                thread.start()
            }
        }
        let elapsed = clock.now - start
        print(
            "HAR fuzz: \(results.values + results.errors) inputs, \(results.values) values, \(results.errors) located errors, \(elapsed)"
        )
        #expect(results.values + results.errors == total)
        #expect(results.failures.isEmpty, "\(results.failures)")
        #expect(results.values > total / 10 && results.errors > total / 10, "the mutants should reach both outcomes")
    }

    /// Inputs the loop found or that are known to be hard, kept as regressions.
    @Test(arguments: [
        "", "{", "[]", "null", "\u{FEFF}{}", "{\"log\": null}", "{\"log\": {\"entries\": null}}",
        String(repeating: "[", count: 100_000),
        "{\"log\":{\"entries\":[{\"request\":{\"method\":\"GET\",\"url\":\"https://a.test/\"},\"response\":{\"status\":1e309}}]}}",
        "{\"log\":{\"entries\":[{\"request\":{\"method\":\"GET\",\"url\":\"https://a.test/\"},\"response\":{\"status\":-9223372036854775809}}]}}",
        "{\"log\":{\"entries\":[{\"request\":{\"method\":\"GET\",\"url\":\"https://a.test/\"},\"response\":{\"status\":200,\"statusText\":\"\\u0000\\r\\n\"}}]}}",
        "{\"log\":{\"entries\":[{\"request\":{\"method\":\"GET\",\"url\":\"https://a.test/\"},\"response\":{\"status\":0,\"_urlErrorCode\":-99999}}]}}",
        "{\"a\":\"\\ud800\\u0041\"}",
    ])
    func knownHardInputs(text: String) {
        for skipping in [false, true] {
            let (_, failure) = Self.check(Data(text.utf8), skipping: skipping)
            #expect(failure == nil, "\(failure ?? "")")
        }
    }
}
