import CChaosFaults
import Foundation
import Synchronization
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The C engine driven through its API: the plan parser, paths, the errno table and
/// decisions. Serialized: the active plan is process-wide.
@Suite(.serialized, .processWideSystemChaos) struct EngineTests {
    struct ParseError: Error, CustomStringConvertible {
        let line: Int32, column: Int32, message: String
        var description: String { "\(line):\(column): \(message)" }
    }

    static func parse(_ text: String) -> Result<OpaquePointer, ParseError> {
        parse(bytes: Array(text.utf8))
    }

    static func parse(bytes: [UInt8]) -> Result<OpaquePointer, ParseError> {
        var error = chaos_plan_error()
        let plan = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(buffer.count, 1)) {
                chaos_plan_parse($0, buffer.count, &error)
            }
        }
        if let plan { return .success(plan) }
        let message = withUnsafeBytes(of: error.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return .failure(ParseError(line: error.line, column: error.column, message: message))
    }

    static func error(_ text: String) -> ParseError? {
        switch parse(text) {
        case .success(let plan):
            chaos_plan_free(plan)
            return nil
        case .failure(let error): return error
        }
    }

    static func format(_ plan: OpaquePointer) -> String {
        let length = chaos_plan_format(plan, nil, 0)
        var buffer = [CChar](repeating: 0, count: Int(length) + 1)
        _ = chaos_plan_format(plan, &buffer, buffer.count)
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func install(_ text: String) throws {
        switch parse(text) {
        case .success(let plan): chaos_plan_install(plan)
        case .failure(let error): throw error
        }
    }

    // MARK: Parser

    static let sample = """
        chaos-plan 1
        seed 42
        # a comment line
        entry files label="db \\"main\\""
        node 0 composite otherwise=4
        case 1 path=/srv/db ops=write,sync
        case 2 path=/srv/**/*.log
        node 1 probability p=0.25 child=3 salt=9
        node 2 short max=16
        node 3 fail errno=ENOSPC
        node 4 pass
        entry connect family=inet
        node 0 composite
        case 1 host=10.0.0.0/8 port=443
        node 1 delay by=1.5s child=2
        node 2 fail errno=ETIMEDOUT
        entry clock monotonic=yes stat=no
        node 0 sequential children=1*3,2
        node 1 original
        node 2 speed factor=2.5 anchor=1700000000s
        entry getenv
        node 0 composite
        case 1 name=HOME
        case 2 name=USER
        node 1 set value="/tmp/\\x01home"
        node 2 ask id=4294967295
        entry dns
        node 0 times n=2 child=1
        node 1 at calls=3,7 child=2
        node 2 fail ret=EAI_AGAIN
        """

    @Test func aPlanRoundTripsThroughItsCanonicalText() throws {
        let plan = try Self.parse(Self.sample).get()
        defer { chaos_plan_free(plan) }
        #expect(chaos_plan_entry_count(plan) == 5)
        #expect(chaos_plan_entry_point(plan, 2) == Int32(CHAOS_POINT_CLOCK.rawValue))
        let text = Self.format(plan)
        #expect(text.contains("node 1 delay by=1500000000 child=2"))
        #expect(text.contains("case 1 host=10.0.0.0/8 port=443"))
        #expect(text.contains("node 2 speed factor=2.5 anchor=1700000000000000000"))
        #expect(text.contains("node 2 ask id=4294967295"))
        #expect(text.contains("node 1 at calls=3,7 child=2"))
        let again = try Self.parse(text).get()
        defer { chaos_plan_free(again) }
        #expect(Self.format(again) == text)
    }

    @Test(
        arguments: [
            ("chaos-plan 2\n", 1, 12, "plan version 1"),
            ("entry files\n", 1, 1, "first line must be"),
            ("chaos-plan 1\nentry clokc\n", 2, 7, "did you mean 'clock'"),
            ("chaos-plan 1\nentry files\nnode 0 fial errno=EIO\n", 3, 8, "did you mean 'fail'"),
            (
                "chaos-plan 1\nentry files\nnode 0 composite\ncase 1 paht=/a\nnode 1 fail errno=EIO\n", 4, 8,
                "did you mean 'path'"
            ),
            (
                "chaos-plan 1\nentry files\nnode 0 composite\ncase 1 path=/a ops=read\nnode 1 fail errno=ENOSPC\n", 5,
                19, "ENOSPC is not an errno the read calls"
            ),
            (
                "chaos-plan 1\nentry files\nnode 0 composite\ncase 1 path=/a ops=open\nnode 1 fail errno=EACCES\n", 0,
                0, ""
            ),
            (
                "chaos-plan 1\nentry files\nnode 0 composite\ncase 1 path=/a ops=write\nnode 1 fail errno=EACCES\n", 5,
                19, "EACCES is not an errno the write calls"
            ),
            (
                "chaos-plan 1\nentry files\nnode 0 composite\ncase 1 path=/a/../b\nnode 1 fail errno=EIO\n", 4, 13,
                "'..' in the pattern"
            ),
            (
                "chaos-plan 1\nentry files\nnode 0 composite\ncase 1 path=a/b\nnode 1 fail errno=EIO\n", 4, 13,
                "must be absolute"
            ),
            (
                "chaos-plan 1\nentry files\nnode 0 composite\ncase 1 path=/a/x**\nnode 1 fail errno=EIO\n", 4, 13,
                "'**' must be a whole component"
            ),
            (
                "chaos-plan 1\nentry files\nnode 0 composite\ncase 1 ops=open\nnode 1 short\n", 5, 8,
                "short transfer needs read or write"
            ),
            ("chaos-plan 1\nentry files\nnode 0 times n=2 child=0\n", 3, 24, "must come after node 0"),
            ("chaos-plan 1\nentry files\nnode 0 times n=2 child=5\n", 3, 24, "does not exist"),
            ("chaos-plan 1\nentry files\nnode 0 original\nnode 1 pass\n", 4, 0, "not the child of any node"),
            ("chaos-plan 1\nentry files\nnode 1 original\n", 3, 6, "node 1 where node 0 comes next"),
            ("chaos-plan 1\nentry clock\nnode 0 fail errno=EIO\n", 3, 8, "cannot run on a clock entry"),
            (
                "chaos-plan 1\nentry clock\nnode 0 delay by=1s child=1\nnode 1 original\n", 3, 8,
                "cannot run on a clock entry"
            ),
            ("chaos-plan 1\nentry clock\nnode 0 offset by=30y\n", 3, 18, "not a duration"),
            ("chaos-plan 1\nentry clock\nnode 0 speed factor=-1\n", 3, 21, "factor is a number"),
            ("chaos-plan 1\nentry getenv\nnode 0 set value=x\n", 3, 8, "name=<VARIABLE>"),
            ("chaos-plan 1\nentry dns\nnode 0 fail errno=EIO\n", 3, 19, "ret=<EAI code>"),
            (
                "chaos-plan 1\nentry connect\nnode 0 composite\ncase 1 host=example.com\nnode 1 fail errno=ECONNREFUSED\n",
                4, 13, "not an address"
            ),
            (
                "chaos-plan 1\nentry connect\nnode 0 fail errno=ENOSPC\n", 3, 19,
                "ENOSPC is not an errno connect can return"
            ),
            (
                "chaos-plan 1\nentry files\nnode 0 probability p=1.5 child=1\nnode 1 fail errno=EIO\n", 3, 22,
                "p is a probability"
            ),
            (
                "chaos-plan 1\nentry files\nnode 0 delay by=-1s child=1\nnode 1 original\n", 3, 17,
                "by is a duration from 0"
            ),
            ("chaos-plan 1\nentry files label=\"open\n", 2, 19, "unterminated"),
            ("chaos-plan 1\nseed 1\nseed 2\n", 3, 1, "second seed"),
            ("chaos-plan 1\nentry files\n", 2, 0, "has no nodes"),
            ("chaos-plan 1\nnode 0 original\n", 2, 1, "before any entry"),
            ("chaos-plan 1\nentry files\nnode 0 composite\n", 3, 8, "has no case"),
            ("chaos-plan 1\nentry files\nnode 0 fail errno=EIO errno=EIO\n", 3, 23, "given twice"),
            ("chaos-plan 1\nentry files\nnode 0 ask\n", 3, 0, "needs id="),
            ("chaos-plan 1\nentry files\nnode 0 ask id=4294967296\n", 3, 15, "id is the number"),
            ("chaos-plan 1\nentry files\nnode 0 ask id=-1\n", 3, 15, "id is the number"),
            ("chaos-plan 1\nentry files\nnode 0 ask id=1 child=2\n", 3, 17, "unknown key"),
            ("chaos-plan 1\nentry clock\nnode 0 ask id=1\n", 0, 0, ""),
            ("chaos-plan 1\nentry getenv\nnode 0 ask id=1\n", 0, 0, ""),
            ("chaos-plan 1\nentry files\nnode 0 at calls=2,5 child=1\nnode 1 fail errno=EIO\n", 0, 0, ""),
            ("chaos-plan 1\nentry files\nnode 0 at calls=none child=1\nnode 1 fail errno=EIO\n", 0, 0, ""),
            ("chaos-plan 1\nentry files\nnode 0 at calls=5,2 child=1\nnode 1 fail errno=EIO\n", 3, 19, "rising list"),
            ("chaos-plan 1\nentry files\nnode 0 at calls=0 child=1\nnode 1 fail errno=EIO\n", 3, 17, "counted from 1"),
            ("chaos-plan 1\nentry files\nnode 0 at calls=3\nnode 1 fail errno=EIO\n", 3, 0, "needs child="),
            ("chaos-plan 1\nentry dns\nnode 0 delay by=1ms child=1\nnode 1 ask id=2\n", 0, 0, ""),
            // Labels and names are text: bytes that are not UTF-8 are refused where they are
            // written (an escape's column), whatever makes them ill-formed.
            (
                "chaos-plan 1\nentry files label=\"ab\\xff\"\nnode 0 original\n", 2, 22,
                "a label is not UTF-8 text (byte 0xff)"
            ),
            ("chaos-plan 1\nentry files label=\"\\xc0\\xaf\"\nnode 0 original\n", 2, 20, "not UTF-8 text (byte 0xc0)"),
            ("chaos-plan 1\nentry files label=\"x\\xed\\xa0\\x80\"\nnode 0 original\n", 2, 21, "not UTF-8"),
            ("chaos-plan 1\nentry files label=\"\\xf4\\x90\\x80\\x80\"\nnode 0 original\n", 2, 20, "not UTF-8"),
            ("chaos-plan 1\nentry files label=\"caf\\xc3\"\nnode 0 original\n", 2, 23, "write it in UTF-8"),
            ("chaos-plan 1\nentry files label=\"caf\\xc3\\xa9\"\nnode 0 original\n", 0, 0, ""),
            (
                "chaos-plan 1\nentry getenv\nnode 0 composite\ncase 1 name=\"A\\xff\"\nnode 1 unset\n", 4, 15,
                "a variable's name is not UTF-8 text"
            ),
        ] as [(String, Int, Int, String)])
    func parseErrorsAreLocatedAndSayWhatToFix(text: String, line: Int, column: Int, fragment: String) {
        let error = Self.error(text)
        if fragment.isEmpty {
            #expect(error == nil, "\(String(describing: error))")
            return
        }
        #expect(error?.line == Int32(line) && error?.column == Int32(column), "\(String(describing: error))")
        #expect(error?.message.contains(fragment) == true, "\(String(describing: error))")
    }

    @Test func aLabelWithARawByteThatIsNotUTF8IsRefusedAtThatByte() {
        let text = Array("chaos-plan 1\nentry files label=ab".utf8) + [0xFF] + Array("\nnode 0 original\n".utf8)
        guard case .failure(let error) = Self.parse(bytes: text) else {
            Issue.record("a label holding 0xff was accepted")
            return
        }
        #expect(error.line == 2 && error.column == 21, "\(error)")
        #expect(error.message.contains("not UTF-8"), "\(error)")
    }

    @Test func pathsAndValuesKeepAnyBytesAndTheirCanonicalTextIsUTF8() throws {
        let text = """
            chaos-plan 1
            entry files
            node 0 composite
            case 1 path="/a\\xff\\xc3\\xa9"
            node 1 fail errno=EIO
            entry getenv
            node 0 composite
            case 1 name=HOME
            node 1 set value="\\xfe\\xc3"
            """
        let plan = try Self.parse(text).get()
        defer { chaos_plan_free(plan) }
        let length = chaos_plan_format(plan, nil, 0)
        var buffer = [UInt8](repeating: 0, count: Int(length) + 1)
        _ = buffer.withUnsafeMutableBufferPointer {
            $0.baseAddress!.withMemoryRebound(to: CChar.self, capacity: $0.count) {
                chaos_plan_format(plan, $0, Int(length) + 1)
            }
        }
        let canonical = try #require(String(validating: buffer.prefix(Int(length)), as: UTF8.self))
        #expect(canonical.contains(#"path="/a\xffé""#), "\(canonical)")
        #expect(canonical.contains(#"value="\xfe\xc3""#), "\(canonical)")
        let again = try Self.parse(canonical).get()
        defer { chaos_plan_free(again) }
        #expect(Self.format(again) == canonical)
    }

    @Test func utf8IsCutAndMeasuredAtCharacters() {
        func bytes(_ text: [UInt8], _ body: (UnsafePointer<CChar>, Int) -> Int) -> Int {
            text.withUnsafeBufferPointer { buffer in
                buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(buffer.count, 1)) {
                    body($0, buffer.count)
                }
            }
        }
        let enye: [UInt8] = Array(String(repeating: "ñ", count: 9).utf8)
        // The kernel keeps 15 bytes of a program's name: 7 ñ and half of the 8th.
        #expect(bytes(Array(enye.prefix(15))) { chaos_utf8_trim_incomplete($0, $1) } == 14)
        #expect(bytes(enye) { chaos_utf8_trim_incomplete($0, $1) } == 18)
        #expect(bytes(enye) { chaos_utf8_cut($0, $1, 15) } == 14)
        #expect(bytes([0x61, 0xFF]) { chaos_utf8_trim_incomplete($0, $1) } == 2, "a wrong byte is not a cut")
        // Each ill-formed part is as long as Swift's decoder finds it, so one U+FFFD for each
        // matches what Swift (and Python) show.
        struct SplitMix: RandomNumberGenerator {
            var state: UInt64
            mutating func next() -> UInt64 {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                return z ^ (z >> 31)
            }
        }
        var random = SplitMix(state: 0x0123_4567)
        // Bytes at the edges of table 3-7's ranges, and any byte.
        let edges: [UInt8] =
            [0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEF]
            + [0xF0, 0xF1, 0xF4, 0xF5, 0xFF]
        var checked = 0
        for _ in 0..<20_000 {
            var input: [UInt8] = []
            for _ in 0..<Int.random(in: 1...12, using: &random) {
                input.append(
                    Bool.random(using: &random)
                        ? edges.randomElement(using: &random)! : UInt8.random(in: 0...255, using: &random))
            }
            var replaced = 0
            var offset = 0
            while offset < input.count {
                var valid: Int32 = 0
                let count = bytes(Array(input[offset...])) { chaos_utf8_next($0, $1, &valid) }
                if valid == 0 { replaced += 1 }
                offset += count
            }
            let swift = String(decoding: input, as: UTF8.self).unicodeScalars.filter { $0 == "\u{FFFD}" }.count
            #expect(replaced == swift, "\(input)")
            let isValid = bytes(input) { Int(chaos_utf8_valid($0, $1, nil)) } == 1
            #expect(isValid == (String(validating: input, as: UTF8.self) != nil), "\(input)")
            checked += 1
        }
        #expect(checked == 20_000)
    }

    @Test func theParserEndsInAValueOrAnErrorOnEveryMutatedInput() throws {
        // A seeded mutation loop over valid plans: byte flips, insertions of syntax
        // characters, deletions, truncations and line swaps. 100,000 inputs.
        var state: UInt64 = 0x5EED
        func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let seeds = [Array(Self.sample.utf8), Array(Preload.filesPlan("/tmp/x y", ops: "write,sync").utf8)]
        let alphabet = Array(" =\"\\,*/#\n\t-.0123456789xnodecasentry".utf8) + [0, 0xff, 0x7f, 0x01]
        var parsed = 0
        var refused = 0
        for round in 0..<100_000 {
            var bytes = seeds[round % seeds.count]
            for _ in 0...(next() % 4) {
                guard !bytes.isEmpty else { break }
                let at = Int(next() % UInt64(bytes.count))
                switch next() % 6 {
                case 0: bytes[at] = UInt8(truncatingIfNeeded: next())
                case 1: bytes.insert(alphabet[Int(next() % UInt64(alphabet.count))], at: at)
                case 2: bytes.remove(at: at)
                case 3: bytes.removeSubrange(at...)
                case 4: bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + Int(next() % 40))], at: at)
                default: bytes[at] = alphabet[Int(next() % UInt64(alphabet.count))]
                }
            }
            var error = chaos_plan_error()
            let plan = bytes.withUnsafeBufferPointer { buffer in
                buffer.baseAddress.map { base in
                    base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                        chaos_plan_parse($0, buffer.count, &error)
                    }
                }
                    ?? chaos_plan_parse("", 0, &error)
            }
            if let plan {
                parsed += 1
                // What parses also formats and parses back to the same text.
                let text = Self.format(plan)
                if let again = try? Self.parse(text).get() {
                    #expect(Self.format(again) == text)
                    chaos_plan_free(again)
                } else {
                    Issue.record("formatted plan does not parse back: \(text)")
                }
                chaos_plan_free(plan)
            } else {
                refused += 1
                #expect(error.line >= 1 && error.message.0 != 0)
            }
        }
        #expect(parsed > 1000 && refused > 1000, "parsed \(parsed), refused \(refused)")
    }

    // MARK: Paths

    @Test(
        arguments: [
            ("/a/io", "/a/io", true), ("/a/io", "/a/io/x", true), ("/a/io", "/a/io2/x", false),
            ("/a/io", "/a/i", false),
            ("/", "/anything/at/all", true), ("/a/*.db", "/a/x.db", true), ("/a/*.db", "/a/b/x.db", false),
            ("/a/**/x.db", "/a/x.db", true), ("/a/**/x.db", "/a/b/c/x.db", true), ("/a/?", "/a/b", true),
            ("/a/?", "/a/bc", false),
            ("/a/**", "/a", true), ("/a/**", "/ab", false), ("/**", "/dev/null", false), ("/", "/proc/self/fd", false),
            ("/dev", "/dev/null", true), ("/dev/null", "/dev/null", true), ("/sys/**", "/sys/x", true),
        ] as [(String, String, Bool)])
    func patternsMatchByWholeComponents(pattern: String, path: String, matches: Bool) {
        #expect((chaos_path_match(pattern, path, 0) != 0) == matches)
    }

    @Test func anInheritedStandardDescriptorMatchesOnlyItsExactPath() {
        #expect(chaos_path_match("/tmp/out.log", "/tmp/out.log", 1) != 0)
        #expect(chaos_path_match("/tmp", "/tmp/out.log", 1) == 0)
        #expect(chaos_path_match("/tmp/*.log", "/tmp/out.log", 1) == 0)
    }

    @Test func pathsFoldLexicallyFromTheCwdAndFromDirectoryDescriptors() throws {
        func resolve(_ dirfd: Int32, _ path: String) -> String? {
            var buffer = [CChar](repeating: 0, count: 4096)
            guard chaos_path_resolve(dirfd, path, &buffer, buffer.count) >= 0 else { return nil }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        #expect(resolve(AT_FDCWD, "/a//b/./c/../d/") == "/a/b/d")
        #expect(resolve(AT_FDCWD, "/../..") == "/")
        let cwd = FileManager.default.currentDirectoryPath
        #expect(resolve(AT_FDCWD, "x/../y") == (cwd == "/" ? "/y" : cwd + "/y"))
        let folder = try Preload.directory("resolve")
        defer { Preload.remove(folder) }
        let fd = open(folder, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        #expect(resolve(fd, "sub/../f") == folder + "/f")
        #expect(resolve(fd, "../" + (folder as NSString).lastPathComponent + "/g") == folder + "/g")
    }

    @Test func pathsReachWhatTheKernelReachesThroughLinksDotDotAndNewNames() throws {
        func text(_ buffer: [CChar]) -> String {
            String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        func physical(_ dirfd: Int32, _ path: String, follow: Bool = true) -> String? {
            var buffer = [CChar](repeating: 0, count: 4096)
            guard chaos_path_physical(dirfd, path, follow ? 1 : 0, &buffer, buffer.count) >= 0 else { return nil }
            return text(buffer)
        }
        let folder = try Preload.directory("physical")
        defer { Preload.remove(folder) }
        try FileManager.default.createDirectory(atPath: folder + "/real/sub", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: folder + "/lnk", withDestinationPath: "real")
        try FileManager.default.createSymbolicLink(atPath: folder + "/deep", withDestinationPath: folder + "/real/sub")
        #expect(physical(AT_FDCWD, folder + "/lnk") == folder + "/real")
        #expect(physical(AT_FDCWD, folder + "/lnk", follow: false) == folder + "/lnk", "the link itself")
        #expect(physical(AT_FDCWD, folder + "/lnk/not-yet") == folder + "/real/not-yet")
        #expect(physical(AT_FDCWD, folder + "/deep/../x") == folder + "/real/x", "`..` of the link's target")
        #expect(physical(AT_FDCWD, folder + "/no/such/x") == nil, "no directory to reach")
        let fd = open(folder, O_RDONLY | O_DIRECTORY)
        defer { close(fd) }
        #expect(physical(fd, "deep/../../lnk/sub/y") == folder + "/real/sub/y")
        #expect(physical(fd, "new") == folder + "/new")
        if (try? FileManager.default.destinationOfSymbolicLink(atPath: "/var/run")) != nil {
            #expect(physical(AT_FDCWD, "/var/run") == physical(AT_FDCWD, "/run"))
        }
        // Decisions: the plan names the link (compiled to the real path); calls name either.
        try Self.install(Preload.filesPlan(folder + "/real", ops: "write"))
        defer { chaos_plan_clear() }
        for name in ["/lnk/a", "/deep/../b", "/real/sub/c"] {
            var buffer = [CChar](repeating: 0, count: 4096)
            #expect(
                chaos_path_reached(Int32(CHAOS_FN_WRITE.rawValue), AT_FDCWD, folder + name, &buffer, buffer.count) >= 0)
            let reached = text(buffer)
            #expect(Self.decide(Self.fileCall(reached)).action == Int32(CHAOS_ACT_FAIL.rawValue), "\(name): \(reached)")
        }
        var buffer = [CChar](repeating: 0, count: 4096)
        #expect(
            chaos_path_reached(
                Int32(CHAOS_FN_WRITE.rawValue), AT_FDCWD, folder + "/deep/../../c", &buffer, buffer.count) >= 0)
        #expect(Self.decide(Self.fileCall(text(buffer))).action == 0)
        // An operation no path selector names is folded without asking the kernel.
        #expect(
            chaos_path_reached(Int32(CHAOS_FN_OPEN.rawValue), AT_FDCWD, folder + "/lnk/a", &buffer, buffer.count) >= 0)
        #expect(text(buffer) == folder + "/lnk/a")
    }

    // MARK: Errno table

    @Test func theErrnoTableFollowsWhatEachCallCanReturn() {
        func allowed(_ fn: chaos_fn, _ code: Int32) -> Bool { chaos_fault_errno_allowed(Int32(fn.rawValue), code) != 0 }
        #expect(
            allowed(CHAOS_FN_PWRITE, ENOSPC) && allowed(CHAOS_FN_WRITEV, ENOSPC) && allowed(CHAOS_FN_FDATASYNC, ENOSPC))
        #expect(allowed(CHAOS_FN_FALLOCATE, ENOSPC) && allowed(CHAOS_FN_COPY_FILE_RANGE, ENOSPC))
        #expect(!allowed(CHAOS_FN_READ, ENOSPC) && !allowed(CHAOS_FN_SENDFILE, ENOSPC))
        #expect(allowed(CHAOS_FN_READ, EIO) && allowed(CHAOS_FN_WRITE, EIO) && allowed(CHAOS_FN_FSYNC, EIO))
        #expect(allowed(CHAOS_FN_OPENAT, EACCES) && allowed(CHAOS_FN_MKDIR, EACCES) && allowed(CHAOS_FN_UNLINK, EACCES))
        #expect(allowed(CHAOS_FN_RENAME, EACCES) && !allowed(CHAOS_FN_WRITE, EACCES))
        #expect(allowed(CHAOS_FN_CONNECT, ECONNREFUSED) && !allowed(CHAOS_FN_RECV, ENOSPC))
        #expect(allowed(CHAOS_FN_GETADDRINFO, EAI_NONAME) && !allowed(CHAOS_FN_GETHOSTBYNAME, EAI_SERVICE))
        var codes = [Int32](repeating: 0, count: 64)
        let count = chaos_fault_errnos(Int32(CHAOS_FN_FSYNC.rawValue), &codes, 64)
        #expect(Array(codes.prefix(Int(count))) == [EBADF, EINTR, EIO, EINVAL, ENOSPC, EROFS, EDQUOT].sorted())
        #expect(String(cString: chaos_fault_errno_name(ENOSPC)) == "ENOSPC")
        #expect(chaos_fault_errno_value("enospc") == ENOSPC && chaos_fault_errno_value("EAI_AGAIN") == EAI_AGAIN)
        // Every function of the table names its point and, for files, one operation.
        for fn in 0..<Int32(CHAOS_FN_COUNT.rawValue) {
            let info = chaos_fault_fn_info(fn)!.pointee
            #expect(info.point >= 0 && info.point < Int32(CHAOS_POINT_COUNT.rawValue))
            if info.point == Int32(CHAOS_POINT_FILES.rawValue) { #expect(chaos_fault_op_name(info.op) != nil) }
        }
    }

    @Test func theErrnoTableOfTheDocumentationIsTheEnginesTable() throws {
        let page = try String(contentsOf: Preload.root.appendingPathComponent("Docs/FaultPlan.md"), encoding: .utf8)
        func text(_ pointer: UnsafePointer<CChar>?) -> String {
            guard let pointer else { return "?" }
            return String(
                decoding: UnsafeBufferPointer(start: pointer, count: strlen(pointer)).map { UInt8(bitPattern: $0) },
                as: UTF8.self)
        }
        for fn in 0..<Int32(CHAOS_FN_COUNT.rawValue) {
            let info = chaos_fault_fn_info(fn)!.pointee
            var codes = [Int32](repeating: 0, count: 64)
            let count = Int(chaos_fault_errnos(fn, &codes, 64))
            let errnos =
                count == 0 ? "—" : codes.prefix(count).map { text(chaos_fault_errno_name($0)) }.joined(separator: " ")
            let place =
                text(chaos_fault_point_name(info.point))
                + (info.op != 0 ? " / " + text(chaos_fault_op_name(info.op)) : "")
            let row = "| `\(text(info.name))` | \(text(info.covers)) | \(place) | \(errnos) |"
            #expect(page.contains(row), "Docs/FaultPlan.md lacks or differs on: \(row)")
        }
    }

    // MARK: Decisions

    static func decide(_ call: chaos_call) -> chaos_outcome {
        var call = call
        var outcome = chaos_outcome()
        _ = chaos_fault_decide(&call, &outcome)
        return outcome
    }

    static func fileCall(_ path: String, _ fn: chaos_fn = CHAOS_FN_WRITE) -> chaos_call {
        var call = chaos_call()
        call.point = Int32(CHAOS_POINT_FILES.rawValue)
        call.fn = Int32(fn.rawValue)
        call.fd = -1
        return path.withCString { pointer in
            call.path = UnsafePointer(strdup(pointer))
            return call
        }
    }

    @Test func sequentialTimesCompositeAndEntryOrderDecideAsDocumented() throws {
        defer { chaos_plan_clear() }
        try Self.install(
            """
            chaos-plan 1
            entry files
            node 0 composite
            case 1 path=/data ops=write
            node 1 sequential children=2*2,3,4
            node 2 original
            node 3 fail errno=EIO
            node 4 times n=1 child=5
            node 5 fail errno=ENOSPC
            entry files
            node 0 composite
            case 1 path=/data
            node 1 fail errno=EACCES
            """)
        #expect(chaos_fault_point_active(Int32(CHAOS_POINT_FILES.rawValue)) == 1)
        #expect(chaos_fault_point_active(Int32(CHAOS_POINT_CLOCK.rawValue)) == 0)
        let write = Self.fileCall("/data/x")
        let actions = (0..<6).map { _ in Self.decide(write) }
        // calls 0,1 original (final: the second entry is not asked); 2 EIO; 3 ENOSPC (times 1); then times passes → entry 1 (EACCES not a write errno → pass)
        #expect(actions.map(\.action) == [0, 0, 2, 2, 0, 0].map(Int32.init))
        #expect(actions[2].err == EIO && actions[3].err == ENOSPC)
        // An open under /data passes the first entry (no case) and the second fails it.
        let open = Self.decide(Self.fileCall("/data/y", CHAOS_FN_OPENAT))
        #expect(open.action == Int32(CHAOS_ACT_FAIL.rawValue) && open.err == EACCES && open.entry == 1)
        #expect(Self.decide(Self.fileCall("/database", CHAOS_FN_OPENAT)).action == 0)
        var counters = chaos_entry_counters()
        #expect(chaos_fault_counters(0, &counters) == 0)
        // /database is outside both entries' paths: it reaches neither.
        #expect(counters.seen == 7 && counters.acted == 2 && counters.passed == 5, "\(counters)")
        #expect(counters.last_fire_call == 3 && counters.last_fire_ns > 0)
        #expect(chaos_fault_counters(1, &counters) == 0)
        #expect(counters.seen == 3 && counters.acted == 1, "\(counters)")
        #expect(chaos_fault_counters(2, &counters) == -1)
    }

    @Test func anAtNodeActsAtItsCallsAndPassesTheOthersToTheNextEntry() throws {
        defer { chaos_plan_clear() }
        try Self.install(
            """
            chaos-plan 1
            entry files
            node 0 composite
            case 1 path=/data ops=write
            node 1 at calls=2,4 child=2
            node 2 fail errno=ENOSPC
            entry files
            node 0 composite
            case 1 path=/data ops=write
            node 1 fail errno=EIO
            entry files
            node 0 at calls=none child=1
            node 1 fail errno=EIO
            """)
        let write = Self.fileCall("/data/x")
        let actions = (0..<5).map { _ in Self.decide(write) }
        #expect(actions.map(\.err) == [EIO, ENOSPC, EIO, ENOSPC, EIO])
        #expect(actions.map(\.entry) == [1, 0, 1, 0, 1])
        var counters = chaos_entry_counters()
        #expect(chaos_fault_counters(0, &counters) == 0)
        #expect(counters.seen == 5 && counters.acted == 2 && counters.last_fire_call == 3, "\(counters)")
        // An entry of `calls=none` counts its calls and never acts: what a baseline reads.
        _ = Self.decide(Self.fileCall("/elsewhere"))
        #expect(chaos_fault_counters(2, &counters) == 0)
        #expect(counters.seen == 1 && counters.acted == 0, "\(counters)")
    }

    @Test func anOriginalInAnEarlierEntryIsFinalAndDrawsFollowTheNodesAskedCount() throws {
        defer { chaos_plan_clear() }
        try Self.install(
            """
            chaos-plan 1
            seed 99
            entry files label="keep the config"
            node 0 composite
            case 1 path=/srv/app/config
            node 1 original
            entry files
            node 0 composite
            case 1 path=/srv/app
            node 1 probability p=0.5 child=2 salt=5
            node 2 fail errno=EIO
            """)
        for _ in 0..<20 { #expect(Self.decide(Self.fileCall("/srv/app/config/x")).action == 0) }
        var outcomes: [Bool] = []
        for _ in 0..<40 {
            outcomes.append(Self.decide(Self.fileCall("/srv/app/data")).action == Int32(CHAOS_ACT_FAIL.rawValue))
        }
        // The config calls never reached entry 1, so its probability node's k-th call is the
        // k-th data call.
        let entrySeed = chaos_fault_entry_seed(99, Int32(CHAOS_POINT_FILES.rawValue))
        #expect(outcomes == (0..<40).map { chaos_fault_draw(entrySeed, 5, UInt64($0)) < 0.5 })
        var counters = chaos_entry_counters()
        #expect(chaos_fault_counters(1, &counters) == 0)
        #expect(counters.seen == 40 && counters.acted == UInt64(outcomes.filter { $0 }.count))
        // The replay pair: the last acted call index with the seed draws below p.
        #expect(
            chaos_fault_draw(
                chaos_fault_entry_seed(counters.seed, Int32(CHAOS_POINT_FILES.rawValue)), 5, counters.last_fire_call)
                < 0.5 && counters.seed == 99)
        #expect(
            chaos_fault_counters(0, &counters) == 0 && counters.seen == 20 && counters.acted == 0
                && counters.passed == 20)
    }

    @Test func specialTargetsAreOutsideMatchesUnlessNamed() throws {
        defer { chaos_plan_clear() }
        try Self.install("chaos-plan 1\nentry files\nnode 0 fail errno=EIO\n")
        #expect(Self.decide(Self.fileCall("/srv/x")).action == Int32(CHAOS_ACT_FAIL.rawValue))
        #expect(Self.decide(Self.fileCall("/dev/null")).action == 0)
        var inherited = Self.fileCall("/srv/log")
        inherited.special = 1
        #expect(Self.decide(inherited).action == 0)
        try Self.install(
            "chaos-plan 1\nentry files\nnode 0 composite\ncase 1 path=/dev/null\ncase 1 path=/srv/log\nnode 1 fail errno=EIO\n"
        )
        #expect(Self.decide(Self.fileCall("/dev/null")).action == Int32(CHAOS_ACT_FAIL.rawValue))
        #expect(Self.decide(inherited).action == Int32(CHAOS_ACT_FAIL.rawValue))
        try Self.install("chaos-plan 1\nentry files\nnode 0 composite\ncase 1 path=/dev\nnode 1 fail errno=EIO\n")
        #expect(Self.decide(Self.fileCall("/dev/shm/x")).action == Int32(CHAOS_ACT_FAIL.rawValue))
        #expect(Self.decide(Self.fileCall("/proc/x")).action == 0)
    }

    @Test func descriptorDecisionsFollowTheTableAndANewPlan() throws {
        defer { chaos_plan_clear() }
        let folder = try Preload.directory("table")
        defer { Preload.remove(folder) }
        try FileManager.default.createDirectory(atPath: folder + "/io", withIntermediateDirectories: true)
        try Self.install(Preload.filesPlan(folder + "/io", ops: "write"))
        func decide(_ fd: Int32) -> Int32 {
            var outcome = chaos_outcome()
            _ = chaos_fault_decide_fd(
                fd, Int32(CHAOS_FN_WRITE.rawValue), Int32(CHAOS_POINT_SEND.rawValue),
                Int32(CHAOS_FN_SOCKET_WRITE.rawValue), &outcome)
            return outcome.err
        }
        let inside = open(folder + "/io/a", O_WRONLY | O_CREAT, 0o644)
        let outside = open(folder + "/b", O_WRONLY | O_CREAT, 0o644)
        defer { close(inside) }
        #expect(decide(inside) == ENOSPC)
        #expect(decide(outside) == 0 && decide(outside) == 0, "remembered as out of reach")
        // A new plan reaches the same descriptor at once.
        try Self.install(Preload.filesPlan(folder, ops: "write"))
        #expect(decide(outside) == ENOSPC)
        // After close (as a delivery reports it) the number is looked up afresh.
        close(outside)
        chaos_fd_closed(outside)
        try Self.install(Preload.filesPlan(folder + "/io", ops: "write"))
        let reused = open(folder + "/c", O_WRONLY | O_CREAT, 0o644)
        defer { close(reused) }
        #expect(decide(reused) == 0)
        var pipes: [Int32] = [0, 0]
        #expect(pipe(&pipes) == 0)
        #expect(decide(pipes[1]) == 0, "a pipe is no file")
        close(pipes[0])
        close(pipes[1])
    }

    @Test func anAskNodeDecidesAskWithItsIdOnEveryPoint() throws {
        defer { chaos_plan_clear() }
        try Self.install(
            """
            chaos-plan 1
            entry files
            node 0 composite
            case 1 path=/srv/app ops=write
            node 1 delay by=5ms child=2
            node 2 ask id=7
            entry getenv
            node 0 ask id=8
            entry clock
            node 0 sequential children=1,2
            node 1 ask id=9
            node 2 offset by=1s
            """)
        let write = Self.decide(Self.fileCall("/srv/app/db"))
        #expect(
            write.action == Int32(CHAOS_ACT_ASK.rawValue) && write.ask_id == 7 && write.delay_ns == 5_000_000
                && write.entry == 0)
        // Out of the entry's path scope, and special targets, the ask node is not reached.
        #expect(Self.decide(Self.fileCall("/srv/other")).action == 0)
        #expect(Self.decide(Self.fileCall("/srv/app/db", CHAOS_FN_OPENAT)).action == 0)
        var getenvCall = chaos_call()
        getenvCall.point = Int32(CHAOS_POINT_GETENV.rawValue)
        getenvCall.fn = Int32(CHAOS_FN_GETENV.rawValue)
        getenvCall.name = UnsafePointer(strdup("HOME"))
        let asked = Self.decide(getenvCall)
        #expect(asked.action == Int32(CHAOS_ACT_ASK.rawValue) && asked.ask_id == 8 && asked.entry == 1)
        var clockCall = chaos_call()
        clockCall.point = Int32(CHAOS_POINT_CLOCK.rawValue)
        clockCall.fn = Int32(CHAOS_FN_TIME.rawValue)
        clockCall.clock_source = Int32(CHAOS_CLOCKSRC_REALTIME)
        #expect(Self.decide(clockCall).ask_id == 9)
        #expect(Self.decide(clockCall).action == Int32(CHAOS_ACT_OFFSET.rawValue), "the sequence moved on")
        // A descriptor whose path an ask node can decide is not remembered as out of reach.
        let folder = try Preload.directory("ask")
        defer { Preload.remove(folder) }
        try Self.install(
            Preload.filesPlan(folder, ops: "write").replacingOccurrences(of: "fail errno=ENOSPC", with: "ask id=3"))
        let fd = open(folder + "/x", O_WRONLY | O_CREAT, 0o644)
        defer { close(fd) }
        var outcome = chaos_outcome()
        #expect(chaos_fault_decide_fd(fd, Int32(CHAOS_FN_WRITE.rawValue), -1, 0, &outcome) == 1)
        #expect(outcome.action == Int32(CHAOS_ACT_ASK.rawValue) && outcome.ask_id == 3)
    }

    @Test func clockOutcomesApplyInvertAndPeekWithoutCounting() throws {
        defer { chaos_plan_clear() }
        try Self.install(
            "chaos-plan 1\nentry clock\nnode 0 sequential children=1,2\nnode 1 offset by=-10s\nnode 2 frozen at=100s\n")
        var outcome = chaos_outcome()
        #expect(chaos_fault_peek_clock(Int32(CHAOS_CLOCKSRC_REALTIME), &outcome) == 1)
        #expect(outcome.action == Int32(CHAOS_ACT_OFFSET.rawValue))
        #expect(chaos_fault_peek_clock(Int32(CHAOS_CLOCKSRC_REALTIME), &outcome) == 1)
        #expect(outcome.action == Int32(CHAOS_ACT_OFFSET.rawValue), "peeking does not advance the sequence")
        #expect(chaos_fault_apply_clock(&outcome, 50_000_000_000) == 40_000_000_000)
        var call = chaos_call()
        call.point = Int32(CHAOS_POINT_CLOCK.rawValue)
        call.fn = Int32(CHAOS_FN_CLOCK_GETTIME.rawValue)
        call.clock_source = Int32(CHAOS_CLOCKSRC_REALTIME)
        #expect(Self.decide(call).action == Int32(CHAOS_ACT_OFFSET.rawValue))
        let second = Self.decide(call)
        #expect(
            second.action == Int32(CHAOS_ACT_FROZEN.rawValue) && chaos_fault_apply_clock([second], 5) == 100_000_000_000
        )
        call.clock_source = Int32(CHAOS_CLOCKSRC_MONOTONIC)
        #expect(Self.decide(call).action == 0, "monotonic clocks are not reached without monotonic=yes")
        var speed = chaos_outcome()
        speed.action = Int32(CHAOS_ACT_SPEED.rawValue)
        speed.factor = 2
        speed.anchor_ns = 1000
        #expect(chaos_fault_apply_clock(&speed, 1500) == 2000)
    }

    /// The outcome layer both deliveries carry out (chaos_outcomes.h): what a sleep, a timed
    /// wait's deadline and file times become under each kind of clock entry.
    @Test func sleepsDeadlinesAndFileTimesFollowTheClockOutcome() throws {
        defer { chaos_plan_clear() }
        let second: Int64 = 1_000_000_000
        var sleep = chaos_sleep()
        var instant: Int64 = 0

        // No clock entry: every sleep and deadline is left alone, file times too.
        chaos_plan_clear()
        #expect(chaos_outcome_sleep(CLOCK_REALTIME, 0, second, &sleep) == CHAOS_SLEEP_AS_ASKED)
        #expect(chaos_outcome_real_deadline(CLOCK_REALTIME, 5 * second, &instant) == 0)
        #expect(chaos_outcome_file_time_shift() == 0)

        // An offset: a relative sleep is unchanged; an absolute one waits until the faked
        // clock reads the target, so "faked now + 1 s" is one real second, not ten days.
        try Self.install("chaos-plan 1\nentry clock\nnode 0 offset by=10d\n")
        let tenDays = 10 * 86_400 * second
        #expect(chaos_outcome_sleep(CLOCK_REALTIME, 0, second, &sleep) == CHAOS_SLEEP_AS_ASKED)
        let fakedNow = chaos_fault_real_ns(CLOCK_REALTIME) + tenDays
        #expect(chaos_outcome_sleep(CLOCK_REALTIME, 1, fakedNow + second, &sleep) == CHAOS_SLEEP_REAL)
        #expect(sleep.ns > second / 2 && sleep.ns <= second, "left: \(sleep.ns) ns")
        #expect(chaos_outcome_sleep(CLOCK_REALTIME, 1, fakedNow - second, &sleep) == CHAOS_SLEEP_REAL)
        #expect(sleep.ns == 0, "a target the faked clock has passed is due at once")
        #expect(chaos_outcome_real_deadline(CLOCK_REALTIME, fakedNow + second, &instant) == 1)
        let realLeft = instant - chaos_fault_real_ns(CLOCK_REALTIME)
        #expect(realLeft > second / 2 && realLeft <= second, "left: \(realLeft) ns")
        let shift = chaos_outcome_file_time_shift()
        #expect(abs(shift - tenDays) < second, "file times move with the clock: \(shift)")
        // Monotonic clocks are not the entry's without monotonic=yes.
        #expect(chaos_outcome_sleep(CLOCK_MONOTONIC, 1, second, &sleep) == CHAOS_SLEEP_AS_ASKED)
        #expect(chaos_outcome_real_deadline(CLOCK_MONOTONIC, second, &instant) == 0)

        // stat=no and sleep=no keep file times and sleeps real.
        try Self.install("chaos-plan 1\nentry clock stat=no sleep=no\nnode 0 offset by=10d\n")
        #expect(chaos_outcome_file_time_shift() == 0)
        #expect(chaos_outcome_sleep(CLOCK_REALTIME, 1, fakedNow + second, &sleep) == CHAOS_SLEEP_AS_ASKED)

        // Speed: a relative sleep of 4 s on any clock lasts 1 s at factor 4, and a remainder
        // the kernel reports counts four times as long on the faked clock.
        try Self.install("chaos-plan 1\nentry clock\nnode 0 speed factor=4\n")
        #expect(chaos_outcome_sleep(CLOCK_MONOTONIC, 0, 4 * second, &sleep) == CHAOS_SLEEP_REAL)
        #expect(sleep.ns == second && sleep.factor == 4)
        #expect(chaos_outcome_virtual_timeout(second) == 0, "timeouts follow only virtual time")
        var seconds: Int64 = -1
        var nanoseconds: UInt32 = 900_000_000
        chaos_outcome_shift_parts(&seconds, &nanoseconds, 200_000_000)
        #expect(seconds == 0 && nanoseconds == 100_000_000)
        var time = timespec(tv_sec: 0, tv_nsec: 100)
        chaos_outcome_shift_timespec(&time, -200)
        #expect(time.tv_sec == -1 && time.tv_nsec == 999_999_900)
    }

    @Test func fastClockReadingsCountOnEveryThreadAlsoAfterItExits() throws {
        defer { chaos_plan_clear() }
        try Self.install("chaos-plan 1\nentry clock\nnode 0 offset by=-10s\n")
        var fake: Int64 = 0
        #expect(chaos_fault_clock_constant(50_000_000_000, &fake) == 1 && fake == 40_000_000_000)
        // Each thread counts in words of its own; these exit before the counters are read.
        let finished = DispatchSemaphore(value: 0)
        for _ in 0..<4 {
            Thread {
                var reading: Int64 = 0
                for index in 0..<1000 { _ = chaos_fault_clock_constant(Int64(index + 1), &reading) }
                finished.signal()
            }.start()
        }
        for _ in 0..<4 { finished.wait() }
        var counters = chaos_entry_counters()
        #expect(chaos_fault_counters(0, &counters) == 0)
        #expect(counters.seen == 4001 && counters.acted == 4001, "\(counters)")
        #expect(counters.last_fire_ns == 50_000_000_000, "the latest real time any thread stamped")
        // A new plan starts every thread's count again.
        try Self.install("chaos-plan 1\nentry clock\nnode 0 offset by=-20s\n")
        #expect(chaos_fault_counters(0, &counters) == 0 && counters.seen == 0, "\(counters)")
        _ = chaos_fault_clock_constant(7, &fake)
        #expect(chaos_fault_counters(0, &counters) == 0 && counters.seen == 1, "\(counters)")
    }

    @Test func countsGivenToTheNextPlanMissNoDecisionWhilePlansAreReplaced() throws {
        defer { chaos_plan_clear() }
        let text = "chaos-plan 1\nentry files\nnode 0 probability p=0.5 child=1\nnode 1 fail errno=EIO\n"
        let first = try Self.parse(text).get()
        let counts = try #require(chaos_plan_counts(first, 0))
        defer { chaos_counts_release(counts) }
        chaos_plan_install(first)
        let stop = Flag()
        // NSLock, not Mutex: ThreadSanitizer on Linux does not see Mutex's futex locking.
        let made = NSLockedCounts()  // calls, acts
        let workers = (0..<2).map { _ in
            Thread {
                let call = Self.fileCall("/x/y")
                var calls = 0
                var acts = 0
                while !stop.isSet {
                    if Self.decide(call).action != 0 { acts += 1 }
                    calls += 1
                }
                made.add([calls, acts, 0])
            }
        }
        workers.forEach { $0.start() }
        var counters = chaos_entry_counters()
        var wrong: [String] = []
        var lastSeen: UInt64 = 0
        for _ in 0..<300 {
            usleep(100)  // time for decisions under each plan
            let next = try Self.parse(text).get()
            #expect(chaos_plan_count_into(next, 0, counts) == 0)
            chaos_plan_install(next)
            #expect(chaos_plan_count_into(next, 0, counts) == -1, "an installed plan keeps its counts")
            chaos_counts_read(counts, &counters)
            if counters.seen != counters.acted + counters.passed || counters.seen < lastSeen {
                wrong.append("\(counters)")
            }
            lastSeen = counters.seen
        }
        stop.set()
        while workers.contains(where: { !$0.isFinished }) { usleep(1000) }
        chaos_counts_read(counts, &counters)
        let sums = made.total
        let total = (calls: sums[0], acts: sums[1])
        #expect(wrong.isEmpty, "\(wrong.count) reads did not add up, e.g. \(wrong.prefix(3))")
        #expect(total.calls > 0)
        #expect(
            counters.seen == total.calls && counters.acted == total.acts,
            "\(total.calls) decisions, \(total.acts) acted; counted \(counters)")
        let clock = try Self.parse("chaos-plan 1\nentry clock\nnode 0 offset by=1s\n").get()
        defer { chaos_plan_free(clock) }
        #expect(chaos_plan_count_into(clock, 0, counts) == -1, "counts are for one point")
    }

    @Test func fastReadingsCountForTheEntryThatAnsweredThemAcrossPlans() throws {
        defer { chaos_plan_clear() }
        let texts = [
            "chaos-plan 1\nentry clock\nnode 0 offset by=-10s\n", "chaos-plan 1\nentry clock\nnode 0 offset by=-20s\n",
        ]
        let firsts = try texts.map { try Self.parse($0).get() }
        let counts = try firsts.map { try #require(chaos_plan_counts($0, 0)) }
        defer { counts.forEach { chaos_counts_release($0) } }
        chaos_plan_free(firsts[1])
        chaos_plan_install(firsts[0])
        let stop = Flag()
        // NSLock, not Mutex: ThreadSanitizer on Linux does not see Mutex's futex locking.
        let answered = NSLockedCounts()  // by -10 s, by -20 s, otherwise
        let real: Int64 = 100_000_000_000
        let workers = (0..<2).map { _ in
            Thread {
                var mine = [0, 0, 0]
                var fake: Int64 = 0
                while !stop.isSet {
                    guard chaos_fault_clock_constant(real, &fake) == 1 else { continue }
                    mine[fake == real - 10_000_000_000 ? 0 : fake == real - 20_000_000_000 ? 1 : 2] += 1
                }
                answered.add(mine)
            }
        }
        workers.forEach { $0.start() }
        for round in 1...400 {
            let next = try Self.parse(texts[round % 2]).get()
            #expect(chaos_plan_count_into(next, 0, counts[round % 2]) == 0)
            chaos_plan_install(next)
            usleep(250)  // time for readings under each plan
        }
        stop.set()
        while workers.contains(where: { !$0.isFinished }) { usleep(1000) }
        let total = answered.total
        #expect(total[2] == 0 && total[0] > 0 && total[1] > 0, "\(total)")
        // Each reading counts for the entry whose words answered it, even when the plan
        // changed between the reading and its count.
        for index in 0..<2 {
            var counters = chaos_entry_counters()
            chaos_counts_read(counts[index], &counters)
            #expect(
                counters.seen == total[index] && counters.acted == total[index] && counters.passed == 0,
                "\(texts[index]): \(total[index]) readings, counted \(counters)")
            #expect(counters.last_fire_ns == real)
        }
    }

    @Test func replacingThePlanWhileOtherThreadsDecideIsSafe() throws {
        defer { chaos_plan_clear() }
        let plans = [
            "chaos-plan 1\nentry files\nnode 0 fail errno=EIO\n",
            "chaos-plan 1\nentry files\nnode 0 probability p=0.5 child=1\nnode 1 fail errno=ENOSPC\n",
            "chaos-plan 1\nentry clock\nnode 0 offset by=1s\n",
        ]
        let stop = Flag()
        let workers = (0..<2).map { _ in
            Thread {
                let call = Self.fileCall("/x/y")
                while !stop.isSet {
                    let outcome = Self.decide(call)
                    precondition(outcome.action == 0 || outcome.err == EIO || outcome.err == ENOSPC)
                }
            }
        }
        workers.forEach { $0.start() }
        for round in 0..<300 { try Self.install(plans[round % plans.count]) }
        stop.set()
        while workers.contains(where: { !$0.isFinished }) { usleep(1000) }
        #expect(chaos_fault_plan_generation() > 300)
    }
}

final class Flag: @unchecked Sendable {
    private let value = Mutex(false)
    var isSet: Bool { value.withLock { $0 } }
    func set() { value.withLock { $0 = true } }
}

/// Three counts under an NSLock, which ThreadSanitizer sees.
final class NSLockedCounts: @unchecked Sendable {  // `values` is guarded by `lock`
    private let lock = NSLock()
    private var values = [0, 0, 0]

    func add(_ more: [Int]) {
        lock.lock()
        for index in 0..<3 { values[index] += more[index] }
        lock.unlock()
    }

    var total: [Int] {
        lock.lock()
        defer { lock.unlock() }
        return values
    }
}
