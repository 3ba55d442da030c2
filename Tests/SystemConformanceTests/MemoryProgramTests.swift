import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// system.memory under `chaos run`: the preload library's malloc family fails a whole
/// program's allocations; the seccomp delivery refuses such an entry (malloc is no system
/// call). Each assertion is also checked without the entry, where it must not hold.
extension ProgramConformanceTests {
    private static let largeAllocations =
        #"{"entries": [{"point": "system.memory", "provider": {"item": "enomem", "parameters": {"above": 1048576}}}]}"#
    /// A profile that names no memory entry (its path is nowhere): the program runs as is.
    private static let noMemoryEntry =
        #"{"entries": [{"point": "system.files", "provider": {"item": "eio", "parameters": {"path": "/nowhere"}}}]}"#

    /// A C program that checks what malloc returns for 64 bytes and for 4 MiB.
    private func mallocChecker(in folder: String) throws -> String {
        let source = folder + "/malloc-check.c"
        try """
        #include <errno.h>
        #include <stdio.h>
        #include <stdlib.h>
        int main(void) {
            errno = 0;
            void *small = malloc(64);
            printf("small %s\\n", small ? "ok" : errno == ENOMEM ? "NULL ENOMEM" : "NULL");
            errno = 0;
            void *large = malloc(4 << 20);
            printf("large %s\\n", large ? "ok" : errno == ENOMEM ? "NULL ENOMEM" : "NULL");
            free(small);
            free(large);
            return 0;
        }
        """.write(toFile: source, atomically: true, encoding: .utf8)
        let binary = folder + "/malloc-check"
        let built = try Command.run(["cc", "-O0", "-o", binary, source])
        try #require(built.status == 0, "\(built)")
        return binary
    }

    @Test(.enabled(if: Needs.cc, "cc is missing"), arguments: ["preload", "auto"])
    func aCProgramSeesNullAndENOMEMForALargeMallocOnly(delivery: String) throws {
        let folder = try workspace("malloc-check", folders: [])
        defer { remove(folder) }
        let binary = try mallocChecker(in: folder)
        let plain = try chaosRun(Self.noMemoryEntry, [binary], folder: folder, delivery: delivery)
        #expect(plain.status == 0 && plain.lines == ["small ok", "large ok"], "without the entry: \(plain)")
        let failing = try chaosRun(Self.largeAllocations, [binary], folder: folder, delivery: delivery)
        #expect(failing.status == 0 && failing.lines == ["small ok", "large NULL ENOMEM"], "\(delivery): \(failing)")
    }

    @Test(.enabled(if: Needs.cc, "cc is missing"))
    func theSeccompDeliveryRefusesAMemoryEntryLoudly() throws {
        let folder = try workspace("malloc-seccomp", folders: [])
        defer { remove(folder) }
        let binary = try mallocChecker(in: folder)
        let refused = try chaosRun(Self.largeAllocations, [binary], folder: folder, delivery: "seccomp")
        #expect(refused.status == 125, "\(refused)")
        #expect(refused.output.isEmpty, "the program must not run: \(refused)")
        #expect(refused.errors.contains("system.memory"), "\(refused)")
        #expect(refused.errors.contains("malloc and its family are no system calls"), "\(refused)")
        // The same program with an entry the supervisor carries runs.
        let carried = try chaosRun(Self.noMemoryEntry, [binary], folder: folder, delivery: "seccomp")
        #expect(carried.status == 0 && carried.lines == ["small ok", "large ok"], "\(carried)")
    }

    @Test(.enabled(if: Needs.program("sqlite3"), "sqlite3 is not installed (.ci/install-system-test-deps installs it)"))
    func sqlite3ReportsOutOfMemoryAndTheDatabaseStaysIntact() throws {
        let folder = try workspace("sqlite3-memory", folders: ["db"])
        defer { remove(folder) }
        let database = folder + "/db/shop.db"
        let setup = try Command.run(["sqlite3", database, "create table t(x); insert into t values (1), (2), (3);"])
        #expect(setup.status == 0, "\(setup)")
        // A 200 kB blob needs allocations above 100 kB; the rows 1 to 3 do not.
        let profile =
            #"{"entries": [{"point": "system.memory", "provider": {"item": "enomem", "parameters": {"above": 100000}}}]}"#
        let insert = ["sqlite3", database, "insert into t select randomblob(200000);"]
        let failed = try chaosRun(profile, insert, folder: folder)
        #expect(failed.status != 0, "\(failed)")
        #expect(failed.errors.contains("out of memory"), "\(failed)")
        let check = try Command.run(["sqlite3", database, "pragma integrity_check; select x from t order by x;"])
        #expect(check.lines == ["ok", "1", "2", "3"], "\(check)")
        // The program still starts and works under a memory entry that fails nothing it asks.
        let small = try chaosRun(profile, ["sqlite3", database, "select count(*) from t;"], folder: folder)
        #expect(small.status == 0 && small.lines == ["3"], "\(small)")
        // Without the entry the same insert succeeds.
        let plain = try chaosRun(Self.noMemoryEntry, insert, folder: folder)
        #expect(plain.status == 0 && !plain.errors.contains("out of memory"), "\(plain)")
        #expect(try Command.run(["sqlite3", database, "select count(*) from t;"]).lines == ["4"])
    }
}
#endif
