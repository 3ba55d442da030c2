import ChaosKit
import Foundation
import TestHelpers
import Testing

@testable import ChaosHooks

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
extension ProcessWideHookTests {
    /// `system.memory` in-process: only the C image an entry names allocates through the
    /// interceptors; the Swift runtime, Foundation and this test allocate as ever.
    @Suite(.serialized, .disabled(if: Sanitizers.thread, Sanitizers.threadReason))
    struct MemoryPointTests {
        /// A small C library, built with cc and loaded: its `probe_malloc` calls malloc
        /// through its own GOT slot and reports NULL's errno.
        private static func probeLibrary() throws -> (String, @convention(c) (Int) -> Int32) {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "chaoskit-memory-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let name = "libchaosmemprobe\(UInt32.random(in: 0...UInt32.max)).so"
            let source = folder.appendingPathComponent("probe.c").path
            try """
            #include <errno.h>
            #include <stdlib.h>
            /* 0 when malloc gave memory, else the errno of its NULL (-1 for none). */
            int probe_malloc(size_t size) {
                errno = 0;
                void *p = malloc(size);
                if (p) { free(p); return 0; }
                return errno ? errno : -1;
            }
            """.write(toFile: source, atomically: true, encoding: .utf8)
            let library = folder.appendingPathComponent(name).path
            let process = Process()
            process.executableURL = URL(fileURLWithPath: try #require(DataFixture.compiler))
            process.arguments = ["-shared", "-fPIC", "-O0", "-o", library, source]
            try process.runWithSignalsUnblocked()
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "the probe library did not build")
            let handle = try #require(dlopen(library, RTLD_NOW))
            let symbol = try #require(dlsym(handle, "probe_malloc"))
            return (name, unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self))
        }

        private static func memoryEntry(_ parameters: [String: ProfileValue]) -> ProfileEntry {
            ProfileEntry(point: "system.memory", .catalogue("enomem", ProfileParameters(parameters)))
        }

        @Test(.enabled(if: DataFixture.compiler != nil, "no C compiler"))
        func theNamedImagesLargeAllocationsFailAndNothingElses() throws {
            SystemPoints.register()
            let (name, probeMalloc) = try Self.probeLibrary()
            #expect(probeMalloc(4 << 20) == 0, "without the entry the large allocation succeeds")
            try withApplied(
                Self.memoryEntry(["images": .array([.string(name)]), "above": .number(1_048_576)])
            ) {
                #expect(probeMalloc(4 << 20) == ENOMEM, "above the size: NULL with ENOMEM")
                #expect(probeMalloc(64) == 0, "below the size the allocation succeeds")
                // This process's own allocations (Swift, Foundation, libc's callers) go on.
                let large = [UInt8](repeating: 1, count: 4 << 20)
                #expect(large.count == 4 << 20)
                #expect(malloc(4 << 20).map { free($0) } != nil)
            }
            #expect(probeMalloc(4 << 20) == 0, "reverted: the large allocation succeeds again")
            try withApplied(Self.memoryEntry(["images": .array([.string(name)]), "after": .number(2)])) {
                #expect(probeMalloc(64) == 0)
                #expect(probeMalloc(64) == 0)
                #expect(probeMalloc(64) == ENOMEM, "after 2 successes the third fails")
            }
        }

        @Test func anEntryThatNamesNoImageIsRefusedWhenApplied() throws {
            SystemPoints.register()
            let chaos = Chaos(seed: 1)
            defer { chaos.revertAll() }
            #expect {
                try chaos.profile([Self.memoryEntry(["above": .number(1_048_576)])]).apply()
            } throws: { error in
                "\(error)".contains("add images") && "\(error)".contains("system.memory")
            }
        }
    }
}
#endif
