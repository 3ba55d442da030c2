#if os(Linux)
import CChaosELF
import ChaosKit
import Foundation
import TestHelpers
import Testing

@testable import ChaosHooks

#if canImport(Glibc)
import Glibc
#endif

/// A shared library built by the test: tables of function pointers that the dynamic linker
/// fills from libc symbols at load time (R_X86_64_64 / R_AARCH64_ABS64 data relocations),
/// one writable (.data) and one read-only after relocation (.data.rel.ro, under RELRO).
/// The library never calls `write` or `getenv` directly, so it has no GOT slot for them.
enum DataFixture {
    static let source = """
        #include <stdlib.h>
        #include <unistd.h>
        typedef ssize_t (*write_fn)(int, const void *, size_t);
        typedef char *(*getenv_fn)(const char *);
        struct entry { const char *name; void *current; };
        static struct entry syscalls[] = {{"write", (void *)write}, {"getenv", (void *)getenv}};
        static void *const constants[] = {(void *)write, (void *)getenv};
        /* 16 KiB more of RELRO (relative relocations, naming no symbol): the read-only
           segment spans several pages, as a real library's does. */
        static const char marker = 0;
        const void *const fx_relro_padding[2048] = {[0 ... 2047] = &marker};
        void **fx_syscall_slot(int i) { return &syscalls[i].current; }
        void *const *fx_constant_slot(int i) { return &constants[i]; }
        long fx_write_via_table(int fd, const void *b, size_t n) { return ((write_fn)syscalls[0].current)(fd, b, n); }
        long fx_write_via_constant(int fd, const void *b, size_t n) {
            void *const *volatile at = &constants[0]; /* read the slot, never fold it into a call */
            return ((write_fn)*at)(fd, b, n);
        }
        const char *fx_getenv_via_table(const char *name) { return ((getenv_fn)syscalls[1].current)(name); }
        const char *fx_getenv_via_constant(const char *name) {
            void *const *volatile at = &constants[1];
            return ((getenv_fn)*at)(name);
        }
        void fx_set_getenv(void *function) { syscalls[1].current = function; }
        """

    static var compiler: String? { ["cc", "clang", "gcc"].lazy.compactMap(which).first }

    static func which(_ program: String) -> String? {
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(folder)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    /// Builds a fresh copy of the library (its own path, so every copy is a new image).
    static func build(_ name: String) throws -> String {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent(
            "chaos-data-fixture-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("fixture.c")
        try source.write(to: file, atomically: true, encoding: .utf8)
        let library = folder.appendingPathComponent("lib\(name)-\(UUID().uuidString).so").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(compiler))
        process.arguments = ["-shared", "-fPIC", "-O0", "-Wl,-z,relro,-z,now", "-o", library, file.path]
        let errors = Pipe()
        process.standardError = errors
        try process.runWithSignalsUnblocked()
        process.waitUntilExit()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        try #require(process.terminationStatus == 0, "the fixture did not build: \(message)")
        return library
    }

    /// A loaded copy of the fixture and its functions.
    final class Loaded {
        let path: String
        let handle: UnsafeMutableRawPointer
        init(_ path: String) throws {
            self.path = path
            handle = try #require(dlopen(path, RTLD_NOW | RTLD_LOCAL), "dlopen: \(String(cString: dlerror()))")
        }
        func function<T>(_ name: String, as type: T.Type) throws -> T {
            unsafeBitCast(try #require(dlsym(handle, name), "no \(name) in the fixture"), to: type)
        }
        var tableSlot: (Int32) -> UInt {
            get throws {
                let f = try function("fx_syscall_slot", as: (@convention(c) (Int32) -> UnsafeMutableRawPointer?).self)
                return { UInt(bitPattern: f($0)) }
            }
        }
        var constantSlot: (Int32) -> UInt {
            get throws {
                let f = try function("fx_constant_slot", as: (@convention(c) (Int32) -> UnsafeMutableRawPointer?).self)
                return { UInt(bitPattern: f($0)) }
            }
        }
        func close() { dlclose(handle) }
    }
}

/// Every slot CChaosELF reports for `symbol` in images whose path is `path`.
private func slots(of symbol: String, in path: String) -> [(address: UInt, kind: Int32)] {
    final class Box {
        var found: [(UInt, Int32)] = []
        let path: String
        init(_ path: String) { self.path = path }
    }
    let box = Box(path)
    let status = withExtendedLifetime(box) {
        chaos_elf_find_slots(
            symbol,
            { context, image, _ in
                Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue().path == String(cString: image!) ? 1 : 0
            },
            { context, info in
                Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue().found.append(
                    (UInt(bitPattern: info!.pointee.slot), info!.pointee.kind))
            }, Unmanaged.passUnretained(box).toOpaque())
    }
    #expect(status == 0)
    return box.found.map { (address: $0.0, kind: $0.1) }
}

private let fakeWrite: @convention(c) (Int32, UnsafeRawPointer?, Int) -> Int = { _, _, count in -1000 - count }
private let fakeWriteBits = UInt(bitPattern: unsafeBitCast(fakeWrite, to: UnsafeRawPointer.self))

/// The mapping protections /proc/self/maps lists, parsed here independently of CChaosELF.
private func mapsProtection(_ address: UInt) -> Int32? {
    mapsLine(address)?.protection
}

/// The mapping /proc/self/maps lists for `address`: its range and protection.
private func mapsLine(_ address: UInt) -> (start: UInt, end: UInt, protection: Int32)? {
    // Read with read(2) until the end: the file reports a size of 0.
    let fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let got = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if got < 0 && errno == EINTR { continue }
        if got <= 0 { break }
        bytes += chunk[0..<got]
    }
    let text = String(decoding: bytes, as: UTF8.self)
    for line in text.split(separator: "\n") {
        let fields = line.split(separator: " ", maxSplits: 2)
        let range = fields[0].split(separator: "-")
        guard fields.count >= 2, range.count == 2, let start = UInt(range[0], radix: 16),
            let end = UInt(range[1], radix: 16)
        else { continue }
        guard address >= start && address < end else { continue }
        let perms = Array(fields[1])
        return (
            start, end,
            (perms[0] == "r" ? PROT_READ : 0) | (perms[1] == "w" ? PROT_WRITE : 0) | (perms[2] == "x" ? PROT_EXEC : 0)
        )
    }
    return nil
}

extension ProcessWideHookTests {
    @Suite(.serialized) struct DataRelocationTests {
        /// Both ways of learning a page's protection: PROCMAP_QUERY (Linux 6.11+) and the text
        /// of /proc/self/maps (what older kernels use).
        @Test(
            .enabled(if: DataFixture.compiler != nil, "no C compiler (cc, clang or gcc) to build the fixture library"),
            arguments: [false, true])
        func dataSlotsAreFoundRewrittenAndRestoredByteForByteWithTheirProtection(mapsText: Bool) throws {
            chaos_elf_use_maps_text(mapsText ? 1 : 0)
            defer { chaos_elf_use_maps_text(0) }
            let fixture = try DataFixture.Loaded(try DataFixture.build("chaosdata"))
            defer { fixture.close() }
            let viaTable = try fixture.function(
                "fx_write_via_table", as: (@convention(c) (Int32, UnsafeRawPointer?, Int) -> Int).self)
            let viaConstant = try fixture.function(
                "fx_write_via_constant", as: (@convention(c) (Int32, UnsafeRawPointer?, Int) -> Int).self)
            let table = try fixture.tableSlot(0)
            let constant = try fixture.constantSlot(0)

            let found = slots(of: "write", in: fixture.path)
            #expect(Set(found.map(\.address)) == [table, constant], "\(found)")
            #expect(found.allSatisfy { $0.kind == Int32(CHAOS_ELF_SLOT_DATA) }, "\(found)")
            let real = UInt(bitPattern: chaos_elf_dlsym_default("write"))
            #expect(SlotMemory.read(table) == real && SlotMemory.read(constant) == real)
            // .data is writable, .data.rel.ro read-only after relocation (RELRO).
            #expect(SlotMemory.protection(table) == PROT_READ | PROT_WRITE)
            #expect(SlotMemory.protection(constant) == PROT_READ)
            #expect(
                SlotMemory.protection(constant) == mapsProtection(constant)
                    && SlotMemory.protection(table) == mapsProtection(table))

            var writes = [table, constant].map {
                chaos_elf_write(
                    slot: UnsafeMutableRawPointer(bitPattern: $0)!.assumingMemoryBound(
                        to: UnsafeMutableRawPointer?.self),
                    value: UnsafeMutableRawPointer(bitPattern: fakeWriteBits), previous: nil, result: 0)
            }
            #expect(writes.withUnsafeMutableBufferPointer { chaos_elf_write_slots($0.baseAddress, $0.count) } == 0)
            #expect(writes.allSatisfy { $0.result == 0 && UInt(bitPattern: $0.previous) == real })
            #expect(viaTable(-1, nil, 5) == -1005 && viaConstant(-1, nil, 6) == -1006)
            #expect(
                SlotMemory.protection(table) == PROT_READ | PROT_WRITE && SlotMemory.protection(constant) == PROT_READ)

            for index in writes.indices { writes[index].value = writes[index].previous }
            #expect(writes.withUnsafeMutableBufferPointer { chaos_elf_write_slots($0.baseAddress, $0.count) } == 0)
            #expect(SlotMemory.read(table) == real && SlotMemory.read(constant) == real)
            #expect(
                SlotMemory.protection(table) == PROT_READ | PROT_WRITE && SlotMemory.protection(constant) == PROT_READ)
            #expect(SlotMemory.protection(constant) == mapsProtection(constant))
            // The read-only page became a mapping of its own (MADV_NOHUGEPAGE), so that later
            // writes change its protection without splitting and merging mappings.
            let page = constant & ~UInt(getpagesize() - 1)
            let mapping = try #require(mapsLine(constant))
            #expect(mapping.start == page && mapping.end == page + UInt(getpagesize()), "\(mapping)")
            errno = 0
            #expect(viaConstant(-1, nil, 1) == -1 && errno == EBADF, "the real write again")
        }

        @Test func aBatchReportsEachFailedWriteAndStillWritesTheOthers() throws {
            let memory = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 2)
            defer { memory.deallocate() }
            memory.initialize(repeating: nil, count: 2)
            let misaligned = UnsafeMutableRawPointer(memory).advanced(by: 1).assumingMemoryBound(
                to: UnsafeMutableRawPointer?.self)
            let unmapped = UnsafeMutablePointer<UnsafeMutableRawPointer?>(bitPattern: 0x8)!
            var writes = [memory, misaligned, unmapped, memory + 1].map {
                chaos_elf_write(slot: $0, value: UnsafeMutableRawPointer(bitPattern: 0x1234), previous: nil, result: 0)
            }
            #expect(writes.withUnsafeMutableBufferPointer { chaos_elf_write_slots($0.baseAddress, $0.count) } == 2)
            #expect(writes.map(\.result) == [0, EINVAL, ENOENT, 0])
            #expect(
                memory[0] == UnsafeMutableRawPointer(bitPattern: 0x1234)
                    && memory[1] == UnsafeMutableRawPointer(bitPattern: 0x1234))
            #expect(chaos_elf_write_slots(nil, 0) == 0)
        }

        @Test(arguments: [false, true])
        func protectionsAreTheKernelsForCodeDataStackAndUnmappedAddresses(mapsText: Bool) {
            chaos_elf_use_maps_text(mapsText ? 1 : 0)
            defer { chaos_elf_use_maps_text(0) }
            var local = 0
            let heap = UnsafeMutablePointer<Int>.allocate(capacity: 1)
            defer { heap.deallocate() }
            let addresses: [UInt] = [
                UInt(bitPattern: chaos_elf_dlsym_default("getenv")),  // code
                withUnsafeMutablePointer(to: &local) { UInt(bitPattern: $0) }, UInt(bitPattern: heap),
            ]
            for address in addresses {
                #expect(SlotMemory.protection(address) == mapsProtection(address), "\(SlotMemory.hex(address))")
            }
            #expect(SlotMemory.protection(UInt(bitPattern: chaos_elf_dlsym_default("getenv"))) == PROT_READ | PROT_EXEC)
            #expect(SlotMemory.protection(0x1000) == -1 && mapsProtection(0x1000) == nil)
        }

        @Test(
            .enabled(if: DataFixture.compiler != nil, "no C compiler (cc, clang or gcc) to build the fixture library"))
        func imagesLoadedOrUnloadedSinceTheLastScanAreSeen() throws {
            let path = try DataFixture.build("chaoscache")
            #expect(slots(of: "write", in: path).isEmpty, "not loaded yet")
            _ = slots(of: "getenv", in: "")  // the index of the images loaded now
            let first = try DataFixture.Loaded(path)
            #expect(slots(of: "write", in: path).count == 2, "a dlopen after the last scan")
            first.close()
            #expect(slots(of: "write", in: path).isEmpty, "a dlclose after the last scan")
            let again = try DataFixture.Loaded(path)
            defer { again.close() }
            let found = slots(of: "write", in: path)
            #expect(Set(found.map(\.address)) == [try again.tableSlot(0), try again.constantSlot(0)])
            // Several symbols in one walk.
            final class Box {
                var hits: [(Int, UInt)] = []
                let path: String
                init(_ path: String) { self.path = path }
            }
            let box = Box(path)
            let names = ["getenv", "no_such_symbol_here", "write"]
            let status = names.withCStringArray { symbols in
                withExtendedLifetime(box) {
                    chaos_elf_find_slots_many(
                        symbols, 3,
                        { context, image, _ in
                            Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue().path == String(cString: image!)
                                ? 1 : 0
                        },
                        { context, which, info in
                            Unmanaged<Box>.fromOpaque(context!).takeUnretainedValue().hits.append(
                                (which, UInt(bitPattern: info!.pointee.slot)))
                        }, Unmanaged.passUnretained(box).toOpaque())
                }
            }
            #expect(status == 0)
            #expect(
                Set(box.hits.map { "\($0.0)@\($0.1)" })
                    == Set([
                        "0@\(try again.tableSlot(1))", "0@\(try again.constantSlot(1))", "2@\(try again.tableSlot(0))",
                        "2@\(try again.constantSlot(0))",
                    ]))
        }

        @Test(
            .enabled(if: DataFixture.compiler != nil, "no C compiler (cc, clang or gcc) to build the fixture library"))
        func aSymbolRebindingRebindsDataPointersAndLeavesOnesTheProgramChanged() throws {
            let fixture = try DataFixture.Loaded(try DataFixture.build("chaosrebind"))
            defer { fixture.close() }
            let viaTable = try fixture.function(
                "fx_getenv_via_table", as: (@convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<CChar>?).self)
            let viaConstant = try fixture.function(
                "fx_getenv_via_constant", as: (@convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<CChar>?).self)
            let setGetenv = try fixture.function("fx_set_getenv", as: (@convention(c) (UnsafeRawPointer?) -> Void).self)
            let hooked = strdup("hooked")!
            defer { free(hooked) }
            let hookedBits = UInt(bitPattern: hooked)
            let rebinding = try SymbolRebinding(
                symbol: "getenv", signature: CSignature(returns: .cString, arguments: [.cString]),
                images: .pathContains(fixture.path)
            ) { call in try call.setReturn(UnsafeRawPointer(bitPattern: hookedBits)) }
            let table = try fixture.tableSlot(1)
            let constant = try fixture.constantSlot(1)
            let before = [table: SlotMemory.read(table), constant: SlotMemory.read(constant)]

            try rebinding.apply()
            #expect(Set(rebinding.patchedSlots.map(\.addressBits)) == [table, constant])
            #expect(rebinding.patchedSlots.allSatisfy { $0.isData && !$0.isJumpSlot })
            #expect(viaTable("HOME").map { String(cString: $0) } == "hooked")
            #expect(viaConstant("HOME").map { String(cString: $0) } == "hooked")
            #expect(SlotMemory.protection(constant) == PROT_READ, "RELRO is read-only again")
            try rebinding.revert()
            #expect(SlotMemory.read(table) == before[table] && SlotMemory.read(constant) == before[constant])
            #expect(
                SlotMemory.protection(constant) == PROT_READ
                    && SlotMemory.protection(constant) == mapsProtection(constant))

            // A pointer the program changed at run time is its own: left alone, no refusal.
            let other: @convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<CChar>? = { _ in nil }
            setGetenv(unsafeBitCast(other, to: UnsafeRawPointer.self))
            defer { setGetenv(UnsafeRawPointer(bitPattern: before[table]!)) }
            try rebinding.apply()
            #expect(rebinding.patchedSlots.map(\.addressBits) == [constant])
            #expect(viaTable("HOME") == nil)
            try rebinding.revert()
            #expect(SlotMemory.read(constant) == before[constant])
        }
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
