import CChaosFaults
import CHookFixtures
import ChaosKit
import Dispatch
import Foundation
import Synchronization
import TestHelpers
import Testing

@testable import ChaosHooks

#if canImport(Glibc)
import Glibc
#endif

/// Every suite that patches process-wide slots (the fixture table, GOT entries, the
/// system points) is nested here, so they run one at a time.
@Suite(.serialized, .processWideSystemChaos) struct ProcessWideHookTests {}

#if os(Linux)
private let addSignature = try! CSignature(returns: .int32, arguments: [.int32, .int32])
private let failSignature = try! CSignature(returns: .int32, arguments: [.int32])

private func addSlot() -> UnsafeMutablePointer<(@convention(c) (Int32, Int32) -> Int32)?> {
    withUnsafeMutablePointer(to: &chaos_fx_table_address().pointee.add) { $0 }
}

private func failSlot() -> UnsafeMutablePointer<(@convention(c) (Int32) -> Int32)?> {
    withUnsafeMutablePointer(to: &chaos_fx_table_address().pointee.fail) { $0 }
}

private func addHook(_ name: String = "test.fx.add") throws -> CFunctionHook {
    try CFunctionHook(name: name, slot: addSlot(), signature: addSignature)
}

private func rawSlotValue(_ slot: UnsafeMutablePointer<(@convention(c) (Int32, Int32) -> Int32)?>) -> UInt {
    UnsafeRawPointer(slot).load(as: UInt.self)
}

/// Applies `entries`, runs `body`, reverts (the system point suites share it).
func withApplied(_ entries: ProfileEntry..., seed: UInt64 = 7, body: () throws -> Void) throws {
    let chaos = Chaos(seed: seed)
    try chaos.profile(entries).apply()
    defer { chaos.revertAll() }
    try body()
}

/// A value a hook's block writes and the test reads (hooked calls run on the test's thread).
private final class Recorded<Value: Sendable>: @unchecked Sendable {
    // Written inside a hooked call and read after it, on the same thread.
    var value: Value?
}

private func realNowSeconds() -> Double {
    Double(chaos_fault_real_ns(CLOCK_REALTIME)) / 1e9
}

extension ProcessWideHookTests {
    @Suite(.serialized) struct HookPointTests {
        @Test func callbackTableDrivenByProviderAndReverted() throws {
            let hook = try addHook()
            let before = rawSlotValue(addSlot())
            #expect(!hook.isPatched)
            #expect(chaos_fx_call_add(2, 3) == 5)
            try withApplied(hook.entry(.constant(40))) {
                #expect(hook.isPatched)
                #expect(rawSlotValue(addSlot()) == UInt(bitPattern: hook.closure.functionPointer))
                #expect(chaos_fx_call_add(2, 3) == 40)
            }
            #expect(!hook.isPatched)
            #expect(rawSlotValue(addSlot()) == before)
            #expect(chaos_fx_call_add(2, 3) == 5)
        }

        @Test func everyProviderOnACHook() throws {
            let hook = try addHook()
            try withApplied(hook.entry(.original)) { #expect(chaos_fx_call_add(2, 3) == 5) }
            try withApplied(hook.entry(.nil)) { #expect(chaos_fx_call_add(2, 3) == 0) }
            try withApplied(
                hook.entry(
                    .block { env in
                        let a = try! env.arguments.argument(0, as: Int32.self)
                        try! env.arguments.setArgument(1, a * 10)
                        let original = env.callOriginal()
                        return .int32(Int32(original.integerValue!) + 1)
                    })
            ) {
                #expect(chaos_fx_call_add(2, 3) == 23)  // 2 + 20, plus 1
            }
            // random: a value of the return type, the same for the same seed.
            var first: [Int32] = []
            try withApplied(hook.entry(.random()), seed: 99) { first = (0..<5).map { _ in chaos_fx_call_add(1, 1) } }
            var second: [Int32] = []
            try withApplied(hook.entry(.random()), seed: 99) { second = (0..<5).map { _ in chaos_fx_call_add(1, 1) } }
            #expect(first == second)
            #expect(Set(first).count > 1)
            try withApplied(hook.entry(.sequential([.constant(1), .original, .constant(3)]))) {
                #expect(
                    [
                        chaos_fx_call_add(2, 3), chaos_fx_call_add(2, 3), chaos_fx_call_add(2, 3),
                        chaos_fx_call_add(2, 3),
                    ] == [1, 5, 3, 3])
            }
            try withApplied(
                hook.entry(
                    .composite(
                        [
                            .when({ (try? $0.argument(0, as: Int32.self)) == 100 }, .constant(-100))
                        ], otherwise: .constant(7)))
            ) {
                #expect(chaos_fx_call_add(100, 1) == -100)
                #expect(chaos_fx_call_add(1, 1) == 7)
            }
            try withApplied(hook.entry(CHookProvider.constant(9).times(2))) {
                #expect([chaos_fx_call_add(1, 1), chaos_fx_call_add(1, 1), chaos_fx_call_add(1, 1)] == [9, 9, 2])
            }
            try withApplied(hook.entry(CHookProvider.constant(9).probability(0))) {
                #expect(chaos_fx_call_add(1, 1) == 2)
            }
            try withApplied(hook.entry(CHookProvider.constant(9).delayed(by: .milliseconds(20)))) {
                let start = DispatchTime.now().uptimeNanoseconds
                #expect(chaos_fx_call_add(1, 1) == 9)
                #expect(DispatchTime.now().uptimeNanoseconds - start >= 20_000_000)
            }
            // failing: the C analogue of throwing.
            let fail = try CFunctionHook(name: "test.fx.fail", slot: failSlot(), signature: failSignature)
            try withApplied(fail.entry(.failing(returning: -7, errno: ECONNREFUSED))) {
                var seen: Int32 = 0
                #expect(chaos_fx_call_fail(5, &seen) == -7)
                #expect(seen == ECONNREFUSED)
            }
            var seen: Int32 = 0
            #expect(chaos_fx_call_fail(5, &seen) == -1)
            #expect(seen == 5)
            #expect(!hook.isPatched && !fail.isPatched)
        }

        @Test func taskScopeSeesItsChaosAndNothingOutside() throws {
            let hook = try addHook()
            try Chaos.with(hook.entry(.constant(11))) {
                #expect(hook.isPatched)
                #expect(chaos_fx_call_add(1, 1) == 11)
                // Another thread, outside the scope, gets the original.
                let other = Mutex<Int32>(0)
                let done = DispatchSemaphore(value: 0)
                Thread {
                    other.withLock { $0 = chaos_fx_call_add(1, 1) }
                    done.signal()
                }.start()
                done.wait()
                #expect(other.withLock { $0 } == 2)
            }
            #expect(!hook.isPatched)
            #expect(chaos_fx_call_add(1, 1) == 2)
        }

        @Test(.disabled(if: Sanitizers.thread, Sanitizers.threadReason)) func dateMovesWithTheClockPointAndComesBack()
            throws
        {
            SystemPoints.register()
            let day = 86_400.0
            try withApplied(ProfileEntry(SystemPoints.clock, .constant(.offset(seconds: -day)))) {
                #expect(abs(Date().timeIntervalSince1970 - (realNowSeconds() - day)) < 1)
                #expect(abs(Double(time(nil)) - (realNowSeconds() - day)) < 2)
                var value = timeval()
                gettimeofday(&value, nil)
                #expect(abs(Double(value.tv_sec) - (realNowSeconds() - day)) < 2)
            }
            #expect(abs(Date().timeIntervalSince1970 - realNowSeconds()) < 1)

            let frozen = Date(timeIntervalSince1970: 2_000_000_000)
            try withApplied(ProfileEntry(SystemPoints.clock, .constant(.frozen(at: frozen)))) {
                #expect(Date() == frozen)
                Thread.sleep(forTimeInterval: 0.01)
                #expect(Date() == frozen)
            }
            try withApplied(ProfileEntry(SystemPoints.clock, .constant(.speed(100)))) {
                let start = Date()
                Thread.sleep(forTimeInterval: 0.05)
                #expect(Date().timeIntervalSince(start) > 2)  // 50 ms at ×100 ≈ 5 s
            }
            // A jump after one reading. The reading that triggers it is the process's first
            // after apply, and another suite's thread may take it before this one does: so
            // the first reading here is real or already jumped, and the second is jumped.
            try withApplied(
                ProfileEntry(point: "system.clock", .catalogue("jump", ProfileParameters(["by": .string("+2h")])))
            ) {
                let first = Date().timeIntervalSince1970 - realNowSeconds()
                let second = Date().timeIntervalSince1970 - realNowSeconds()
                #expect(abs(first) < 1 || abs(first - 7200) < 1, "real or jumped, nothing between: \(first)")
                #expect(abs(second - 7200) < 1)
            }
            #expect(abs(Date().timeIntervalSince1970 - realNowSeconds()) < 1)
            #expect(
                chaos_fault_point_active(Int32(CHAOS_POINT_CLOCK.rawValue)) == 0, "nothing left in the engine's plan")
        }

        @Test func aProfileGivesACHookAConstant() throws {
            let hook = try addHook("test.fx.add.profile")
            let profile = try ChaosProfile.decode(
                json: #"{"entries": [{"point": "test.fx.add.profile", "provider": {"constant": -1}}]}"#)
            let chaos = try profile.apply()
            #expect(chaos_fx_call_add(2, 3) == -1, "the JSON number became the C int32 return value")
            chaos.revertAll()
            #expect(chaos_fx_call_add(2, 3) == 5)
            let tooBig = try ChaosProfile.decode(
                json: #"{"entries": [{"point": "test.fx.add.profile", "provider": {"constant": 3000000000}}]}"#,
                file: "big.json")
            let error = #expect(throws: ChaosError.self) { try tooBig.apply() }
            #expect(error?.subject == "big.json:1:14 at $.entries[0]", "\(String(describing: error))")
            #expect(error?.message.contains("int32") == true, "\(String(describing: error))")
            #expect(!hook.isPatched, "a constant the C type cannot hold applies nothing")
            let text = try JSONDecoder().decode(CValue.self, from: Data(#""chaos""#.utf8))
            let pointer = try #require(text.pointerValue ?? nil)
            #expect(String(cString: pointer.assumingMemoryBound(to: CChar.self)) == "chaos")
            #expect(try JSONDecoder().decode(CValue.self, from: Data("null".utf8)) == nil)
            #expect(try JSONDecoder().decode(CValue.self, from: Data("2.5".utf8)) == .double(2.5))
        }

        @Test func argumentsReadTheStructAPointerPointsAt() throws {
            let hook = try CFunctionHook(
                name: "test.fx.fill.pointee",
                slot: withUnsafeMutablePointer(to: &chaos_fx_table_address().pointee.fill) { $0 },
                signature: CSignature(returns: .int32, arguments: [.pointer, .cString])
            )
            let seen = Recorded<Int32?>()
            try withApplied(
                hook.entry(
                    .block { env in
                        seen.value = try? env.arguments.pointee(0, as: Int32.self)
                        return env.callOriginal()
                    })
            ) {
                var value: Int32 = 41
                _ = chaos_fx_call_fill(&value, "x")
                #expect(seen.value == 41, "the Int32 the first argument pointed at before the call")
                _ = chaos_fx_call_fill(nil, "x")
                #expect(seen.value == .some(nil), "NULL reads as nil")
            }
        }

        @Test func typedSystemPointHelpersMatchTheirCatalogueItems() throws {
            SystemPoints.register()
            setenv("CHAOSKIT_TYPED_VAR", "real", 1)
            defer { unsetenv("CHAOSKIT_TYPED_VAR") }
            try withApplied(
                SystemPoints.getenv.entry(.on(try .variable("CHAOSKIT_TYPED_VAR"), .constant(.set("typed"))))
            ) {
                #expect(getenv("CHAOSKIT_TYPED_VAR").map { String(cString: $0) } == "typed")
            }
            try withApplied(SystemPoints.getenv.entry(.on(try .variable("CHAOSKIT_TYPED_VAR"), .constant(.unset)))) {
                #expect(getenv("CHAOSKIT_TYPED_VAR") == nil)
            }
            try withApplied(
                SystemPoints.clock.entry(
                    .constant(.offset(seconds: try ClockOffset.parse("-1d").seconds(from: Date()))))
            ) {
                #expect(abs(Date().timeIntervalSince1970 - (realNowSeconds() - 86_400)) < 1)
            }
            #expect(getenv("CHAOSKIT_TYPED_VAR").map { String(cString: $0) } == "real")
        }

        @Test func clockProfileEntryByName() throws {
            SystemPoints.register()
            let entry = ProfileEntry(
                point: "system.clock", .catalogue("offset", ProfileParameters(["by": .string("-30y")])))
            try withApplied(entry) {
                // Calendar years: the same day and time of day, thirty years ago.
                var calendar = Calendar(identifier: .gregorian)
                calendar.timeZone = TimeZone(identifier: "UTC")!
                let expected = calendar.date(
                    byAdding: .year, value: -30, to: Date(timeIntervalSince1970: realNowSeconds()))!
                #expect(abs(Date().timeIntervalSince(expected)) < 2)
            }
            #expect(abs(Date().timeIntervalSince1970 - realNowSeconds()) < 1)
            // Inside a task scope the C hooks ask the point, which sees the scope.
            try Chaos.with(
                ProfileEntry(
                    point: "system.clock",
                    .catalogue("frozen", ProfileParameters(["date": .string("2001-01-01T00:00:00Z")])))
            ) {
                #expect(Date().timeIntervalSinceReferenceDate == 0)
            }
            #expect(abs(Date().timeIntervalSince1970 - realNowSeconds()) < 1)
        }

        @Test func getenvAnswerChanges() throws {
            SystemPoints.register()
            setenv("CHAOSKIT_HOOK_POINT_VAR", "real", 1)
            defer { unsetenv("CHAOSKIT_HOOK_POINT_VAR") }
            let set = ProfileEntry(
                point: "system.getenv",
                .catalogue(
                    "set", ProfileParameters(["name": .string("CHAOSKIT_HOOK_POINT_VAR"), "value": .string("chaos")])))
            try withApplied(set) {
                #expect(chaos_fx_getenv("CHAOSKIT_HOOK_POINT_VAR").map { String(cString: $0) } == "chaos")
                #expect(getenv("CHAOSKIT_HOOK_POINT_VAR").map { String(cString: $0) } == "chaos")
                #expect(getenv("PATH") != nil)
            }
            let unset = ProfileEntry(
                point: "system.getenv",
                .catalogue("unset", ProfileParameters(["name": .string("CHAOSKIT_HOOK_POINT_VAR")])))
            try withApplied(unset) {
                #expect(chaos_fx_getenv("CHAOSKIT_HOOK_POINT_VAR") == nil)
            }
            #expect(chaos_fx_getenv("CHAOSKIT_HOOK_POINT_VAR").map { String(cString: $0) } == "real")
        }

        @Test(.disabled(if: Sanitizers.thread, Sanitizers.threadReason)) func tcpConnectRefusedThenSucceeds() throws {
            SystemPoints.register()
            let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            #expect(listener >= 0)
            defer { close(listener) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            try withUnsafeMutablePointer(to: &address) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                    #expect(bind(listener, raw, length) == 0)
                    #expect(getsockname(listener, raw, &length) == 0)
                    let listening = listen(listener, 4)
                    try #require(listening == 0)
                }
            }
            func connectOnce() -> (Int32, Int32) {
                let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(client) }
                var target = address
                errno = 0
                let status = withUnsafePointer(to: &target) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
                }
                return (status, errno)
            }
            // Only this listener's port: other suites run in parallel and connect too.
            let port = Double(UInt16(bigEndian: address.sin_port))
            try withApplied(
                ProfileEntry(
                    point: "system.connect",
                    .catalogue("refused", ProfileParameters(["host": .string("127.0.0.1"), "port": .number(port)])))
            ) {
                let (status, code) = connectOnce()
                #expect(status == -1)
                #expect(code == ECONNREFUSED)
            }
            #expect(connectOnce().0 == 0)
        }

        @Test(.disabled(if: Sanitizers.thread, Sanitizers.threadReason)) func fileWriteFailsWithENOSPCUnderPrefix()
            throws
        {
            SystemPoints.register()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-files-\(getpid())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("data.bin").path
            let outside = FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-outside-\(getpid())")
                .path
            defer { unlink(outside) }
            func writeOnce(_ path: String) -> (Int, Int32) {
                let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                guard fd >= 0 else { return (-2, errno) }
                defer { close(fd) }
                errno = 0
                let written = write(fd, "hello", 5)
                return (written, errno)
            }
            let entry = ProfileEntry(
                point: "system.files", .catalogue("enospc", ProfileParameters(["path": .string(directory.path)])))
            try withApplied(entry) {
                let (written, code) = writeOnce(path)
                #expect(written == -1)
                #expect(code == ENOSPC)
                #expect(writeOnce(outside).0 == 5)  // outside the prefix: untouched
            }
            #expect(writeOnce(path).0 == 5)
            try withApplied(
                ProfileEntry(
                    point: "system.files",
                    .catalogue(
                        "eacces",
                        ProfileParameters(["path": .string(directory.path), "operations": .array([.string("open")])])))
            ) {
                #expect(writeOnce(path) == (-2, EACCES))
            }
            try withApplied(
                ProfileEntry(
                    point: "system.files",
                    .catalogue("short-write", ProfileParameters(["path": .string(directory.path)])))
            ) {
                #expect(writeOnce(path).0 == 2)
            }
        }

        /// `corrupt` in-process: a read returns its bytes with `bytes` of them flipped at the
        /// offset given; a write stores them so, and the caller's own buffer is left alone.
        @Test(.disabled(if: Sanitizers.thread, Sanitizers.threadReason))
        func corruptChangesTheBytesAReadReturnsAndAWriteStores() throws {
            SystemPoints.register()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "chaoskit-corrupt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("file").path
            let original = [UInt8](repeating: 0x41, count: 64)
            try Data(original).write(to: URL(fileURLWithPath: path))
            let entry = ProfileEntry(
                point: "system.files",
                .catalogue(
                    "corrupt",
                    ProfileParameters([
                        "path": .string(directory.path), "offset": .number(10), "bytes": .number(3),
                    ])))
            var read = [UInt8](repeating: 0, count: 64)
            var written = [UInt8](repeating: 0x42, count: 64)
            try withApplied(entry) {
                let fd = open(path, O_RDWR)
                defer { close(fd) }
                #expect(Glibc.read(fd, &read, 64) == 64)
                #expect(pwrite(fd, &written, 64, 0) == 64)
            }
            let changed = read.indices.filter { read[$0] != original[$0] }
            #expect(changed == [10, 11, 12], "\(read)")
            #expect(changed.allSatisfy { read[$0] == ~original[$0] })
            #expect(written.allSatisfy { $0 == 0x42 }, "the caller's buffer is its own")
            let stored = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(stored.indices.filter { stored[$0] != 0x42 } == [10, 11, 12], "\(stored)")
        }

        /// `system.stat` in-process: stat, fstat and Foundation see the attributes an entry
        /// names, a file beside it keeps its own, `enoent` hides the file, and revert restores.
        @Test(.disabled(if: Sanitizers.thread, Sanitizers.threadReason))
        func statAnswersTheAttributesAnEntryNames() throws {
            SystemPoints.register()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "chaoskit-stat-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("named").path
            let beside = directory.appendingPathComponent("beside").path
            try Data("six b\n".utf8).write(to: URL(fileURLWithPath: path))
            try Data("six b\n".utf8).write(to: URL(fileURLWithPath: beside))
            func status(_ path: String) -> stat? {
                var answer = stat()
                return lstat(path, &answer) == 0 ? answer : nil  // stat's name is its struct's in Swift
            }
            let before = try #require(status(path))
            let entry = ProfileEntry(
                point: "system.stat",
                .catalogue(
                    "attributes",
                    ProfileParameters([
                        "path": .string(path), "size": .number(1_048_576), "mtime": .string("2001-02-03T04:05:06Z"),
                        "mode": .string("600"), "nlink": .number(7),
                    ])))
            try withApplied(entry) {
                let seen = try #require(status(path))
                #expect(seen.st_size == 1 << 20)
                #expect(seen.st_mtim.tv_sec == 981_173_106)
                #expect(seen.st_mode == S_IFREG | 0o600)
                #expect(seen.st_nlink == 7)
                #expect(seen.st_ino == before.st_ino, "what the entry does not name stays the file's")
                let fd = open(path, O_RDONLY)
                defer { close(fd) }
                var byDescriptor = stat()
                #expect(fstat(fd, &byDescriptor) == 0)
                #expect(byDescriptor.st_size == 1 << 20, "fstat names the file it was opened on")
                let attributes = try FileManager.default.attributesOfItem(atPath: path)
                #expect((attributes[.size] as? NSNumber)?.intValue == 1 << 20)
                #expect(status(beside)?.st_size == 6)
            }
            #expect(status(path)?.st_size == 6, "reverted: the file's own size")
            let hidden = ProfileEntry(
                point: "system.stat", .catalogue("enoent", ProfileParameters(["path": .string(path)])))
            try withApplied(hidden) {
                var answer = stat()
                #expect(lstat(path, &answer) == -1 && errno == ENOENT)
                #expect(!FileManager.default.fileExists(atPath: path))
                #expect(status(beside) != nil)
            }
            #expect(FileManager.default.fileExists(atPath: path))
        }

        /// A descriptor named by kind: reads from a pipe fail, reads from a file do not.
        @Test(.disabled(if: Sanitizers.thread, Sanitizers.threadReason))
        func aPipeNamedByItsKindFailsAndAFileDoesNot() throws {
            SystemPoints.register()
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            defer {
                close(ends[0])
                close(ends[1])
            }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-kind-\(getpid())").path
            try Data("file".utf8).write(to: URL(fileURLWithPath: file))
            defer { unlink(file) }
            let entry = ProfileEntry(
                point: "system.files",
                .catalogue(
                    "eio",
                    ProfileParameters(["kinds": .array([.string("pipe")]), "operations": .array([.string("read")])])))
            var buffer = [UInt8](repeating: 0, count: 8)
            try withApplied(entry) {
                #expect(Glibc.write(ends[1], "p", 1) == 1)
                errno = 0
                #expect(Glibc.read(ends[0], &buffer, 8) == -1 && errno == EIO)
                let fd = open(file, O_RDONLY)
                defer { close(fd) }
                #expect(Glibc.read(fd, &buffer, 8) == 4)
            }
            #expect(Glibc.read(ends[0], &buffer, 8) == 1, "reverted: the byte is still there")
        }

        /// `"errno": "any"` in-process: the engine draws each call's errno from the entry's
        /// seed among those write can return, so the same seed fails the same way.
        @Test(.disabled(if: Sanitizers.thread, Sanitizers.threadReason))
        func anyErrnoDrawsFromTheSeedAmongWhatWriteCanReturn() throws {
            SystemPoints.register()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "chaoskit-any-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("file").path
            func errnos(seed: UInt64) throws -> [Int32] {
                var seen: [Int32] = []
                try withApplied(
                    ProfileEntry(
                        point: "system.files",
                        .catalogue(
                            "fail",
                            ProfileParameters([
                                "errno": .string("any"), "path": .string(directory.path),
                                "operations": .array([.string("write")]),
                            ]))),
                    seed: seed
                ) {
                    let fd = open(path, O_WRONLY | O_CREAT, 0o644)
                    defer { close(fd) }
                    for _ in 0..<30 {
                        errno = 0
                        seen.append(write(fd, "x", 1) == -1 ? errno : 0)
                    }
                }
                return seen
            }
            var allowed = [Int32](repeating: 0, count: 64)
            let count = Int(chaos_fault_errnos(Int32(CHAOS_FN_WRITE.rawValue), &allowed, 64))
            let first = try errnos(seed: 11)
            #expect(first.allSatisfy { allowed.prefix(count).contains($0) }, "\(first)")
            #expect(Set(first).count >= 4, "\(first)")
            #expect(try errnos(seed: 11) == first)
            #expect(try errnos(seed: 12) != first)
        }

        /// `Chaos.explore` over a system point: process-wide, so one placement at a time; the
        /// fault engine counts the calls the entry targets, and places the fault at each.
        @Test(.disabled(if: Sanitizers.thread, Sanitizers.threadReason))
        func exploringASystemPointPlacesTheFaultAtEachWriteOneAtATime() throws {
            SystemPoints.register()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "chaoskit-explore-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            struct Failed: Error { let write: Int }
            // Three writes; the second one's failure is handled (retried), the others are not.
            let body: @Sendable () throws -> Void = {
                let fd = open(directory.appendingPathComponent("log").path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                guard fd >= 0 else { throw Failed(write: 0) }
                defer { close(fd) }
                for line in 1...3 where write(fd, "x", 1) != 1 {
                    guard line == 2, write(fd, "x", 1) == 1 else { throw Failed(write: line) }
                }
            }
            let entry = ProfileEntry(
                point: "system.files",
                .catalogue(
                    "enospc",
                    ProfileParameters(["path": .string(directory.path), "operations": .array([.string("write")])])))
            let result = try Chaos.explore(entry, seed: 3, body)
            #expect(!result.ranInParallel)
            #expect(result.candidates.map(\.calls) == [3], "\(result)")
            #expect(result.failures.map(\.call) == [1, 3], "\(result)")
            #expect(result.failures.map { ($0.error as? Failed)?.write } == [1, 3])
            // The replay fails the same write.
            #expect(throws: Failed.self) { try Chaos.with(result.failures[1].replay, seed: 3, operation: body) }
        }

        /// The engine executes at most 256 entries: the one past that is refused, named,
        /// and nothing of its profile applied; a plan over the limit would silence them all.
        @Test(.disabled(if: Sanitizers.thread, Sanitizers.threadReason)) func theEntryPastTheEnginesLimitIsRefused()
            throws
        {
            SystemPoints.register()
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chaoskit-limit-\(getpid())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let path = directory.appendingPathComponent("data.bin").path
            func writeOnce() -> (Int, Int32) {
                let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
                guard fd >= 0 else { return (-2, errno) }
                defer { close(fd) }
                errno = 0
                return (write(fd, "hello", 5), errno)
            }
            func elsewhere(_ number: Int) -> ProfileEntry {
                ProfileEntry(
                    point: "system.files",
                    .catalogue("enospc", ProfileParameters(["path": .string("/nonexistent/chaoskit-\(number)")])))
            }
            let acting = ProfileEntry(
                point: "system.files", .catalogue("enospc", ProfileParameters(["path": .string(directory.path)])))
            let limit = Int(CHAOS_PLAN_MAX_ENTRIES)
            let full = Chaos(seed: 7)
            try full.profile([acting] + (1..<limit).map(elsewhere)).apply()
            defer { full.revertAll() }
            let crossing = elsewhere(limit)
            let more = Chaos(seed: 7)
            do {
                try more.profile([crossing, elsewhere(limit + 1)]).apply()
                Issue.record("entry \(limit + 1) of the process's system entries was applied")
            } catch {
                #expect(error.message.contains("at most \(limit)"), "\(error)")
                #expect(
                    error.subject?.hasPrefix("entry \(crossing.id) (") == true,
                    "the refusal names another entry: \(error)")
            }
            #expect(Chaos.liveEntries.filter { $0.entry.pointName == "system.files" }.count == limit)
            let (written, code) = writeOnce()
            #expect(written == -1 && code == ENOSPC, "the oldest entry stopped acting: \(written), errno \(code)")
            full.revertAll()
            #expect(writeOnce().0 == 5)
            // The count went down with the revert: a full plan's worth can be applied again.
            let again = Chaos(seed: 7)
            try again.profile((1...limit).map(elsewhere)).apply()
            again.revertAll()
        }

        @Test func concurrentCallsWhileApplyAndRevertToggle() throws {
            let hook = try addHook()
            let stop = Atomic<Bool>(false)
            let bad = Atomic<Int>(0)
            let calls = Atomic<Int>(0)
            let group = DispatchGroup()
            for _ in 0..<3 {
                group.enter()
                Thread {
                    while !stop.load(ordering: .relaxed) {
                        let value = chaos_fx_call_add(20, 22)
                        if value != 42 && value != 99 { bad.add(1, ordering: .relaxed) }
                        calls.add(1, ordering: .relaxed)
                    }
                    group.leave()
                }.start()
            }
            while calls.load(ordering: .relaxed) < 100 { usleep(100) }
            for _ in 0..<300 {
                let chaos = Chaos(seed: 1)
                try chaos.profile(hook.entry(.constant(99))).apply()
                chaos.revertAll()
            }
            stop.store(true, ordering: .relaxed)
            group.wait()
            #expect(bad.load(ordering: .relaxed) == 0)
            #expect(!hook.isPatched)
            #expect(chaos_fx_call_add(20, 22) == 42)
        }

        @Test func badInputFailsWithNothingChanged() throws {
            let hook = try addHook()
            let before = rawSlotValue(addSlot())
            // Symbol imported by no image: the error names it and the images searched.
            let strfry = try CFunctionHook(
                name: "test.strfry", symbol: "strfry", signature: CSignature(returns: .cString, arguments: [.pointer]))
            let chaos = Chaos(seed: 1)
            let notImported = #expect(throws: ChaosError.self) {
                try chaos.profile(hook.entry(.constant(1)), strfry.entry(.nil)).apply()
            }
            #expect(notImported?.kind == .symbolNotFound)
            #expect(notImported?.message.contains("strfry") == true)
            #expect(notImported?.message.contains("image(s) searched") == true)
            #expect(rawSlotValue(addSlot()) == before)  // the add hook was undone
            #expect(!hook.isPatched && chaos.appliedEntries.isEmpty)

            // A constant that does not fit the return type.
            let tooBig = #expect(throws: ChaosError.self) {
                try chaos.profile(hook.entry(.sequential([.original, .constant(.int64(1 << 40))]))).apply()
            }
            #expect(tooBig?.kind == .valueTypeMismatch)
            #expect(rawSlotValue(addSlot()) == before)

            // Arity mismatch against the slot's type.
            let arity = #expect(throws: ChaosError.self) {
                _ = try CFunctionHook(
                    name: "test.fx.add.bad", slot: addSlot(),
                    signature: CSignature(returns: .int32, arguments: [.int32, .int32, .int32]))
            }
            #expect(arity?.kind == .signatureMismatch)
            #expect(arity?.message.contains("takes 2 argument(s)") == true)
            let wrongType = #expect(throws: ChaosError.self) {
                _ = try CFunctionHook(
                    name: "test.fx.add.bad2", slot: addSlot(),
                    signature: CSignature(returns: .double, arguments: [.int32, .int32]))
            }
            #expect(wrongType?.kind == .signatureMismatch)

            // Already hooked by something else.
            let foreign = try FFIClosure(signature: addSignature) { call in try call.setReturn(Int32(-5)) }
            let slot = try FunctionPointerSlot(addSlot())
            try slot.bind(to: foreign)
            let hooked = #expect(throws: ChaosError.self) { try chaos.profile(hook.entry(.constant(1))).apply() }
            #expect(hooked?.kind == .alreadyHooked)
            #expect(chaos_fx_call_add(1, 1) == -5)
            try slot.revert()
            #expect(rawSlotValue(addSlot()) == before)
            #expect(chaos.appliedEntries.isEmpty)
            // Name-based random works through the hook's own catalogue item.
            try withApplied(ProfileEntry(point: "test.fx.add", .random)) { _ = chaos_fx_call_add(1, 1) }
        }

        @Test func droppedHookStaysAliveUntilReverted() throws {
            let chaos = Chaos(seed: 3)
            let before = rawSlotValue(addSlot())
            do {
                let hook = try addHook("test.fx.add.dropped")
                try chaos.profile(hook.entry(.constant(77))).apply()
            }
            #expect(chaos_fx_call_add(1, 1) == 77)
            chaos.revertAll()
            #expect(rawSlotValue(addSlot()) == before)
            #expect(chaos_fx_call_add(1, 1) == 2)
        }

        @Test func createBindRevertCycles() throws {
            let before = rawSlotValue(addSlot())
            for index in 0..<2_000 {
                let hook = try addHook("test.fx.cycle")
                let chaos = Chaos(seed: UInt64(index))
                try chaos.profile(hook.entry(.constant(1))).apply()
                #expect(chaos_fx_call_add(1, 1) == 1)
                chaos.revertAll()
            }
            #expect(rawSlotValue(addSlot()) == before)
        }
    }
}
#endif
