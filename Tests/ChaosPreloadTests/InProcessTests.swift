import CChaosELF
import CChaosFaults
import CChaosIntercept
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
typealias WriteFunction = @convention(c) (Int32, UnsafeRawPointer?, Int) -> Int
typealias ReadFunction = @convention(c) (Int32, UnsafeMutableRawPointer?, Int) -> Int
typealias PwriteFunction = @convention(c) (Int32, UnsafeRawPointer?, Int, Int) -> Int
typealias FdFunction = @convention(c) (Int32) -> Int32
typealias CreatFunction = @convention(c) (UnsafePointer<CChar>?, mode_t) -> Int32
typealias Dup2Function = @convention(c) (Int32, Int32) -> Int32
typealias GetenvFunction = @convention(c) (UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>?
typealias TimeFunction = @convention(c) (UnsafeMutablePointer<time_t>?) -> time_t
typealias ClockGettimeFunction = @convention(c) (clockid_t, UnsafeMutablePointer<timespec>?) -> Int32
typealias StreamPointer = UnsafeMutablePointer<FILE>
typealias FopenFunction = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> StreamPointer?
typealias StreamFunction = @convention(c) (StreamPointer?) -> Int32
typealias LineBuffer = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
typealias GetlineFunction = @convention(c) (LineBuffer?, UnsafeMutablePointer<Int>?, StreamPointer?) -> Int

/// The in-process interceptor of `symbol`, as a function of type `T`.
func interceptor<T>(_ symbol: String, as type: T.Type) throws -> T {
    let element = try #require(chaos_intercept_find(symbol), "no in-process interceptor for \(symbol)")
    return unsafeBitCast(try #require(element.pointee.replacement), to: type)
}

/// What the ask function of the tests saw (it runs on the intercepting thread).
final class AskRecord: @unchecked Sendable {
    struct Call: Equatable {
        let point: Int32, fn: Int32, fd: Int32, path: String?, name: String?, entry: Int32, id: UInt32
    }
    private let lock = NSLock()
    private var storedCalls: [Call] = []
    private var storedThreads: [pthread_t] = []
    private var storedNested: [Int] = []
    var calls: [Call] { lock.withLock { storedCalls } }
    var threads: [pthread_t] { lock.withLock { storedThreads } }
    var nested: [Int] { lock.withLock { storedNested } }
    func record(_ call: Call) {
        lock.withLock {
            storedCalls.append(call)
            storedThreads.append(pthread_self())
        }
    }
    func recordNested(_ result: Int) { lock.withLock { storedNested.append(result) } }
    func reset() {
        lock.withLock {
            storedCalls = []
            storedThreads = []
            storedNested = []
        }
    }
    static let shared = AskRecord()
}

let interceptedWrite: WriteFunction? = try? interceptor("write", as: WriteFunction.self)

/// Answers by id: 1 fail EIO, 2 short to 3 bytes, 3 declines (original), 4 writes through
/// the interceptor itself (which must reach the real write) and fails EDQUOT, 5 a getenv
/// answer, 6 a clock a day behind, 7 answers ASK (the original).
let testAsk: chaos_ask_fn = { call, entry, id, out in
    guard let call, let out else { return 0 }
    let c = call.pointee
    AskRecord.shared.record(
        .init(
            point: c.point, fn: c.fn, fd: c.fd, path: c.path.map { String(cString: $0) },
            name: c.name.map { String(cString: $0) },
            entry: entry, id: id))
    errno = EXDEV  // must not leak to the intercepted caller
    switch id {
    case 1:
        out.pointee.action = Int32(CHAOS_ACT_FAIL.rawValue)
        out.pointee.ret = -1
        out.pointee.err = EIO
    case 2:
        out.pointee.action = Int32(CHAOS_ACT_SHORT.rawValue)
        out.pointee.max_bytes = 3
    case 3:
        return 0
    case 4:
        AskRecord.shared.recordNested(interceptedWrite?(c.fd, "zz", 2) ?? -2)
        out.pointee.action = Int32(CHAOS_ACT_FAIL.rawValue)
        out.pointee.ret = -1
        out.pointee.err = EDQUOT
    case 5:
        out.pointee.action = Int32(CHAOS_ACT_SET.rawValue)
        out.pointee.value = chaos_fault_intern("answered")
    case 6:
        out.pointee.action = Int32(CHAOS_ACT_OFFSET.rawValue)
        out.pointee.clock_ns = -86_400_000_000_000
    default:
        out.pointee.action = Int32(CHAOS_ACT_ASK.rawValue)
    }
    return 1
}

extension EngineTests {
    /// The in-process delivery (CChaosIntercept): the preload's interceptors under their
    /// own names, called directly or through slots rebound to them. Inside EngineTests:
    /// the active plan is process-wide.
    @Suite struct InProcessDeliveryTests {
        @Test func theTableListsEveryInterceptorOnceAndThePreloadInterposesTheSameSymbols() throws {
            var symbols: [String] = []
            var replacements = Set<UInt>()
            var element = chaos_intercepts()!
            while let name = element.pointee.symbol {
                let symbol = String(cString: name)
                symbols.append(symbol)
                let replacement = UInt(bitPattern: element.pointee.replacement)
                #expect(
                    replacement != 0 && replacements.insert(replacement).inserted, "\(symbol): one interceptor each")
                #expect(
                    replacement != UInt(bitPattern: dlsym(UnsafeMutableRawPointer(bitPattern: 0), name)),
                    "\(symbol) is ours, not libc's")
                #expect(dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) != nil, "libc defines \(symbol)")
                let point = element.pointee.point
                #expect(
                    point >= 0 && point < Int32(CHAOS_POINT_COUNT.rawValue)
                        && element.pointee.points & (1 << UInt32(point)) != 0, "\(symbol)")
                element += 1
            }
            #expect(Set(symbols).count == symbols.count, "every symbol once")
            for name in [
                "open", "open64", "openat", "creat", "pwrite", "pwrite64", "writev", "pwritev2", "fdatasync",
                "sync_file_range",
                "ftruncate", "posix_fallocate", "copy_file_range", "sendfile", "dup2", "fcntl", "close", "fopen",
                "fwrite",
                "fflush", "fclose", "socket", "connect", "accept4", "sendmsg", "recvfrom", "getaddrinfo",
                "gethostbyname_r",
                "getenv", "secure_getenv", "clock_gettime", "timespec_get", "ftime", "stat", "__xstat", "statx",
                "nanosleep", "fgetc", "getc", "__uflow", "getdelim", "fscanf", "__isoc99_fscanf", "__fgets_chk",
            ] {
                #expect(symbols.contains(name), "\(name) is intercepted in-process")
            }
            func points(_ symbol: String) -> UInt32 { chaos_intercept_find(symbol)?.pointee.points ?? 0 }
            func bit(_ point: chaos_point) -> UInt32 { 1 << point.rawValue }
            #expect(points("write") == bit(CHAOS_POINT_FILES) | bit(CHAOS_POINT_SEND))
            #expect(points("readv") == bit(CHAOS_POINT_FILES) | bit(CHAOS_POINT_RECV))
            #expect(
                points("close") == bit(CHAOS_POINT_FILES) | bit(CHAOS_POINT_SEND) | bit(CHAOS_POINT_RECV)
                    | bit(CHAOS_POINT_CONNECT) | bit(CHAOS_POINT_ACCEPT) | bit(CHAOS_POINT_STAT))
            #expect(chaos_intercept_find("clock_gettime")?.pointee.point == Int32(CHAOS_POINT_CLOCK.rawValue))
            #expect(chaos_intercept_find("fstatat64")?.pointee.point == Int32(CHAOS_POINT_STAT.rawValue))
            #expect(points("fstatat64") == bit(CHAOS_POINT_CLOCK) | bit(CHAOS_POINT_STAT))
            #expect(chaos_intercept_find("no_such_function") == nil && chaos_intercept_find(nil) == nil)

            // One source, two deliveries: the preload library defines every symbol of the table
            // (looked up in the library itself, which stays out of the global scope).
            let library = try #require(dlopen(Preload.library, RTLD_NOW | RTLD_LOCAL), "cannot load \(Preload.library)")
            defer { dlclose(library) }
            for symbol in symbols {
                var image: UnsafePointer<CChar>?
                let address = try #require(dlsym(library, symbol), "the preload library lacks \(symbol)")
                _ = chaos_elf_describe_address(address, &image)
                #expect(
                    image.map { String(cString: $0) }?.hasSuffix("libChaosPreload.so") == true,
                    "\(symbol) comes from libc in the preload")
            }
        }

        @Test func interceptorsDecideWithThePlanUnderTheirOwnNames() throws {
            defer { chaos_plan_clear() }
            let folder = try Preload.directory("inprocess")
            defer { Preload.remove(folder) }
            try FileManager.default.createDirectory(atPath: folder + "/io", withIntermediateDirectories: true)
            let creat = try interceptor("creat", as: CreatFunction.self)
            let write = try interceptor("write", as: WriteFunction.self)
            let pwrite = try interceptor("pwrite64", as: PwriteFunction.self)
            let fdatasync = try interceptor("fdatasync", as: FdFunction.self)
            let read = try interceptor("read", as: ReadFunction.self)
            let close = try interceptor("close", as: FdFunction.self)
            let dup2 = try interceptor("dup2", as: Dup2Function.self)

            // Nothing applied: the real calls.
            let plain = creat(folder + "/io/plain", 0o644)
            #expect(plain >= 0 && write(plain, "abc", 3) == 3)
            #expect(close(plain) == 0)

            try EngineTests.install(Preload.filesPlan(folder + "/io", ops: "write,sync"))
            let before = chaos_intercept_chaotic_calls()
            let faulty = creat(folder + "/io/db", 0o644)
            let outside = creat(folder + "/other", 0o644)
            #expect(faulty >= 0 && outside >= 0, "open is not in ops")
            errno = 0
            #expect(write(faulty, "x", 1) == -1 && errno == ENOSPC)
            errno = 0
            #expect(pwrite(faulty, "x", 1, 0) == -1 && errno == ENOSPC)
            #expect(fdatasync(faulty) == -1 && errno == ENOSPC)
            #expect(write(outside, "x", 1) == 1, "a file out of the path scope")
            var byte: UInt8 = 0
            let reader = open(folder + "/io/plain", O_RDONLY)
            #expect(read(reader, &byte, 1) == 1 && byte == UInt8(ascii: "a"), "reads are not in ops")
            #expect(close(reader) == 0)
            // A copy of a faulty descriptor is faulty; a number made a copy of another file is
            // not any more. (Only numbers this test owns are reused: other tests run meanwhile.)
            let spare = Glibc.dup(outside)
            #expect(dup2(faulty, spare) == spare)
            #expect(write(spare, "x", 1) == -1 && errno == ENOSPC)
            #expect(dup2(outside, spare) == spare)
            #expect(write(spare, "y", 1) == 1)
            #expect(close(spare) == 0 && close(faulty) == 0 && close(outside) == 0)
            #expect(chaos_intercept_chaotic_calls() >= before + 4)

            try EngineTests.install(
                "chaos-plan 1\nentry getenv\nnode 0 composite\ncase 1 name=CHAOS_IN_X\nnode 1 set value=in-process\nentry clock\nnode 0 offset by=-1000s\n"
            )
            let getenv = try interceptor("getenv", as: GetenvFunction.self)
            let time = try interceptor("time", as: TimeFunction.self)
            #expect(getenv("CHAOS_IN_X").map { String(cString: $0) } == "in-process")
            #expect(getenv("PATH").map { String(cString: $0) } == ProcessInfo.processInfo.environment["PATH"])
            #expect(abs(Int(time(nil)) + 1000 - Int(Glibc.time(nil))) <= 2)
            // clock_gettime calls the vDSO itself: its -errno comes back as libc's -1 and errno.
            let clockGettime = try interceptor("clock_gettime", as: ClockGettimeFunction.self)
            var reading = timespec()
            #expect(
                clockGettime(CLOCK_REALTIME, &reading) == 0
                    && abs(Int(reading.tv_sec) + 1000 - Int(Glibc.time(nil))) <= 2)
            errno = 0
            #expect(clockGettime(clockid_t(12345), &reading) == -1 && errno == EINVAL)
        }

        @Test func streamReadsFailWhereTheyWouldReadTheFileAndLineReadsOnEachCall() throws {
            defer { chaos_plan_clear() }
            let folder = try Preload.directory("inprocess-stdio")
            defer { Preload.remove(folder) }
            let file = folder + "/data"
            try "first\nsecond\n".write(toFile: file, atomically: false, encoding: .utf8)
            // Opened and closed through the interceptors, so the descriptor table knows the file.
            let fopen = try interceptor("fopen", as: FopenFunction.self)
            let fclose = try interceptor("fclose", as: StreamFunction.self)
            let fgetc = try interceptor("fgetc", as: StreamFunction.self)
            let uflow = try interceptor("__uflow", as: StreamFunction.self)
            let getline = try interceptor("getline", as: GetlineFunction.self)
            let buffered = try #require(fopen(file, "r"))
            let fresh = try #require(fopen(file, "r"))
            defer { _ = (fclose(buffered), fclose(fresh)) }
            #expect(fgetc(buffered) == Int32(UInt8(ascii: "f")), "no plan yet: the buffer is filled")

            try EngineTests.install(Preload.filesPlan(file, ops: "read", errno: "EIO"))
            #expect(fgetc(buffered) == Int32(UInt8(ascii: "i")), "from the buffer: nothing to read from the file")
            #expect(uflow(buffered) == Int32(UInt8(ascii: "r")), "__uflow with characters left takes one")
            errno = 0
            #expect(fgetc(fresh) == EOF && errno == EIO && ferror(fresh) != 0, "an empty buffer reads: it fails")
            clearerr(fresh)
            errno = 0
            #expect(uflow(fresh) == EOF && errno == EIO && ferror(fresh) != 0)
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(line) }
            errno = 0
            #expect(getline(&line, &capacity, buffered) == -1 && errno == EIO, "a line read decides on each call")
            chaos_plan_clear()
            clearerr(buffered)
            #expect(getline(&line, &capacity, buffered) == 3 && line.map { String(cString: $0) } == "st\n")
        }

        @Test func aPathSelectorReachesItsDirectoryThroughLinksAndDotDot() throws {
            defer { chaos_plan_clear() }
            let folder = try Preload.directory("inprocess-links")
            defer { Preload.remove(folder) }
            try FileManager.default.createDirectory(atPath: folder + "/real/sub", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: folder + "/lnk", withDestinationPath: "real")
            try FileManager.default.createSymbolicLink(
                atPath: folder + "/deep", withDestinationPath: folder + "/real/sub")
            let creat = try interceptor("creat", as: CreatFunction.self)
            let close = try interceptor("close", as: FdFunction.self)
            try EngineTests.install(Preload.filesPlan(folder + "/real", ops: "open"))
            for name in ["/lnk/new", "/lnk/sub/new", "/deep/../new2", "/real/new3"] {
                errno = 0
                let fd = creat(folder + name, 0o644)
                #expect(fd == -1 && errno == ENOSPC, "\(name)")
                if fd >= 0 { _ = close(fd) }
            }
            let outside = creat(folder + "/deep/../../outside", 0o644)
            #expect(outside >= 0, "outside the selected directory")
            #expect(close(outside) == 0)
        }

        @Test func askNodesAreAnsweredOnTheCallingThreadAndTheAnswerIsExecuted() throws {
            defer {
                chaos_plan_clear()
                chaos_fault_set_ask(nil)
                AskRecord.shared.reset()
            }
            let folder = try Preload.directory("ask")
            defer { Preload.remove(folder) }
            let write = try interceptor("write", as: WriteFunction.self)
            let creat = try interceptor("creat", as: CreatFunction.self)
            let getenv = try interceptor("getenv", as: GetenvFunction.self)
            let time = try interceptor("time", as: TimeFunction.self)
            try EngineTests.install(
                """
                chaos-plan 1
                entry files
                node 0 composite
                case 1 path="\(folder)" ops=write
                node 1 delay by=20ms child=2
                node 2 sequential children=3,4,5,6,7
                node 3 ask id=1
                node 4 ask id=2
                node 5 ask id=3
                node 6 ask id=4
                node 7 ask id=7
                entry getenv
                node 0 composite
                case 1 name=CHAOS_ASKED
                node 1 ask id=5
                entry clock
                node 0 ask id=6
                """)
            let fd = creat(folder + "/file", 0o644)
            defer { _ = Glibc.close(fd) }
            setenv("CHAOS_ASKED", "real", 1)
            defer { unsetenv("CHAOS_ASKED") }
            // Nobody registered: an ask is the original call.
            #expect(getenv("CHAOS_ASKED").map { String(cString: $0) } == "real")
            #expect(AskRecord.shared.calls.isEmpty)

            chaos_fault_set_ask(testAsk)
            let start = DispatchTime.now().uptimeNanoseconds
            errno = 0
            #expect(write(fd, "0123456789", 10) == -1 && errno == EIO)
            #expect(DispatchTime.now().uptimeNanoseconds - start >= 20_000_000, "the delay node above the ask waited")
            #expect(write(fd, "0123456789", 10) == 3, "short")
            errno = 0
            #expect(
                write(fd, "0123456789", 10) == 10 && errno == 0,
                "declined: the original, and the ask's errno did not leak")
            #expect(write(fd, "0123456789", 10) == -1 && errno == EDQUOT)
            #expect(AskRecord.shared.nested == [2], "a call made inside the ask reaches the real function")
            #expect(write(fd, "0123456789", 10) == 10, "an answer of ASK is the original")
            let written = try String(contentsOfFile: folder + "/file", encoding: .utf8)
            #expect(written == "012" + "0123456789" + "zz" + "0123456789")
            let calls = AskRecord.shared.calls
            #expect(calls.map(\.id) == [1, 2, 3, 4, 7])
            #expect(
                calls.allSatisfy {
                    $0
                        == .init(
                            point: Int32(CHAOS_POINT_FILES.rawValue), fn: Int32(CHAOS_FN_WRITE.rawValue), fd: fd,
                            path: folder + "/file",
                            name: nil, entry: 0, id: $0.id)
                }, "\(calls)")
            #expect(AskRecord.shared.threads.allSatisfy { pthread_equal($0, pthread_self()) != 0 })

            #expect(getenv("CHAOS_ASKED").map { String(cString: $0) } == "answered")
            #expect(
                AskRecord.shared.calls.last
                    == .init(
                        point: Int32(CHAOS_POINT_GETENV.rawValue), fn: Int32(CHAOS_FN_GETENV.rawValue),
                        fd: -1, path: nil, name: "CHAOS_ASKED", entry: 1, id: 5))
            #expect(abs(Int(time(nil)) + 86_400 - Int(Glibc.time(nil))) <= 2)
            #expect(AskRecord.shared.calls.last?.id == 6 && AskRecord.shared.calls.last?.entry == 2)
        }

        @Test(.enabled(if: SQLite.library != nil, "libsqlite3.so.0 is not installed (apt-get install libsqlite3-0)"))
        func sqliteFailsAnInsertThroughItsSyscallTableAndTheDatabaseStaysIntact() throws {
            defer { chaos_plan_clear() }
            let sqlite = try SQLite(try #require(SQLite.library))
            let folder = try Preload.directory("sqlite-inprocess")
            defer { Preload.remove(folder) }
            let db = try sqlite.open(folder + "/shop.db")
            defer { sqlite.close(db) }
            #expect(sqlite.exec(db, "create table t(x); insert into t values(1),(2),(3);") == 0)

            // SQLite calls write/pwrite64 through its own table (aSyscall), filled by data
            // relocations: rebind those slots in libsqlite3 to the in-process interceptors.
            final class Found {
                var slots: [(symbol: Int, slot: UnsafeMutablePointer<UnsafeMutableRawPointer?>, kind: Int32)] = []
            }
            let found = Found()
            let names = ["pwrite64", "write"]
            let status = names.withCStringArray { symbols in
                withExtendedLifetime(found) {
                    chaos_elf_find_slots_many(
                        symbols, 2, { _, image, _ in image.map { strstr($0, "libsqlite3") != nil } == true ? 1 : 0 },
                        { context, which, info in
                            let found = Unmanaged<Found>.fromOpaque(context!).takeUnretainedValue()
                            found.slots.append((Int(which), info!.pointee.slot, info!.pointee.kind))
                        }, Unmanaged.passUnretained(found).toOpaque())
                }
            }
            #expect(status == 0)
            let data = found.slots.filter { $0.kind == Int32(CHAOS_ELF_SLOT_DATA) }
            #expect(data.contains { $0.symbol == 0 }, "libsqlite3 keeps pwrite64 in a data slot: \(found.slots)")
            let before = found.slots.map { (chaos_elf_read_slot($0.slot), chaos_elf_protection($0.slot)) }

            try EngineTests.install(Preload.filesPlan(folder, ops: "write"))
            var writes = try data.map {
                chaos_elf_write(
                    slot: $0.slot, value: try #require(chaos_intercept_find(names[$0.symbol])).pointee.replacement,
                    previous: nil, result: 0)
            }
            #expect(writes.withUnsafeMutableBufferPointer { chaos_elf_write_slots($0.baseAddress, $0.count) } == 0)
            let failed = sqlite.exec(db, "insert into t values(4);")
            let message = sqlite.message(db)
            for index in writes.indices { writes[index].value = writes[index].previous }
            #expect(writes.withUnsafeMutableBufferPointer { chaos_elf_write_slots($0.baseAddress, $0.count) } == 0)
            chaos_plan_clear()

            #expect(failed == 13 && message == "database or disk is full", "\(failed): \(message)")
            let after = found.slots.map { (chaos_elf_read_slot($0.slot), chaos_elf_protection($0.slot)) }
            #expect(after.map(\.0) == before.map(\.0), "every slot holds its exact bytes again")
            #expect(after.map(\.1) == before.map(\.1), "and its page its protection")
            #expect(sqlite.rows(db, "select x from t order by x;") == ["1", "2", "3"])
            #expect(sqlite.rows(db, "pragma integrity_check;") == ["ok"])
            #expect(sqlite.exec(db, "insert into t values(4);") == 0, "writes reach the disk again")
            #expect(sqlite.rows(db, "select count(*) from t;") == ["4"])
        }
    }
}

/// The few functions of libsqlite3 the in-process test needs, looked up with dlsym.
struct SQLite {
    nonisolated(unsafe) static let library: UnsafeMutableRawPointer? = dlopen("libsqlite3.so.0", RTLD_NOW | RTLD_LOCAL)

    typealias Callback =
        @convention(c) (
            UnsafeMutableRawPointer?, Int32, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
            UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        ) -> Int32
    let openFunction: @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    let closeFunction: @convention(c) (OpaquePointer?) -> Int32
    let execFunction:
        @convention(c) (
            OpaquePointer?, UnsafePointer<CChar>?, Callback?, UnsafeMutableRawPointer?,
            UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        ) -> Int32
    let errmsgFunction: @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?

    init(_ handle: UnsafeMutableRawPointer) throws {
        func function<T>(_ name: String, _ type: T.Type) throws -> T {
            unsafeBitCast(try #require(dlsym(handle, name), "libsqlite3 lacks \(name)"), to: type)
        }
        openFunction = try function(
            "sqlite3_open",
            (@convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32).self)
        closeFunction = try function("sqlite3_close", (@convention(c) (OpaquePointer?) -> Int32).self)
        execFunction = try function(
            "sqlite3_exec",
            (@convention(c) (
                OpaquePointer?, UnsafePointer<CChar>?, Callback?, UnsafeMutableRawPointer?,
                UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
            ) -> Int32).self)
        errmsgFunction = try function("sqlite3_errmsg", (@convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?).self)
    }

    func open(_ path: String) throws -> OpaquePointer {
        var db: OpaquePointer?
        let status = openFunction(path, &db)
        try #require(status == 0 && db != nil, "sqlite3_open: \(status)")
        return db!
    }

    func close(_ db: OpaquePointer) { _ = closeFunction(db) }
    func exec(_ db: OpaquePointer, _ sql: String) -> Int32 { execFunction(db, sql, nil, nil, nil) }
    func message(_ db: OpaquePointer) -> String { errmsgFunction(db).map { String(cString: $0) } ?? "" }

    /// The first column of every row `sql` returns.
    func rows(_ db: OpaquePointer, _ sql: String) -> [String] {
        final class Rows { var values: [String] = [] }
        let rows = Rows()
        let status = withExtendedLifetime(rows) {
            execFunction(
                db, sql,
                { context, count, values, _ in
                    let rows = Unmanaged<Rows>.fromOpaque(context!).takeUnretainedValue()
                    rows.values.append(count > 0 ? values?[0].map { String(cString: $0) } ?? "NULL" : "")
                    return 0
                }, Unmanaged.passUnretained(rows).toOpaque(), nil)
        }
        return status == 0 ? rows.values : ["error \(status): \(message(db))"]
    }
}

extension Array where Element == String {
    /// Calls `body` with the strings as a C array of C strings.
    func withCStringArray<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
#endif
