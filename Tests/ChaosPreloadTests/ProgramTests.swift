import CChaosFaults
import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// Real programs (Debian's sqlite3, coreutils, dash, python3, and small C programs built
/// here) under `LD_PRELOAD=libChaosPreload.so` with hand-written plans.
@Suite(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct ProgramTests {
    // MARK: Files

    @Test(.enabled(if: Needs.program("sqlite3"), "sqlite3 is not installed (.ci/install-system-test-deps installs it)"))
    func sqliteInsertUnderENOSPCFailsAndTheDatabaseKeepsExactlyTheCommittedRows() throws {
        let folder = try Preload.directory("sqlite")
        defer { Preload.remove(folder) }
        let database = folder + "/shop.db"
        let setup = try Preload.plain(["sqlite3", database, "create table t(x); insert into t values(1),(2),(3);"])
        #expect(setup.status == 0, "\(setup)")
        // pwrite64 (the journal and the pages), then fdatasync alone.
        for ops in ["write", "sync"] {
            let insert = try Preload.under(
                Preload.filesPlan(folder, ops: ops), ["sqlite3", database, "insert into t values(4);"])
            #expect(insert.status != 0, "ops=\(ops): \(insert)")
            #expect(
                insert.errors.contains("database or disk is full") || insert.errors.contains("disk I/O error"),
                "ops=\(ops): \(insert)")
            let check = try Preload.plain(["sqlite3", database, "select count(*) from t; pragma integrity_check;"])
            #expect(check.lines == ["3", "ok"], "ops=\(ops): \(check)")
        }
        // A plan on a sibling folder leaves the same insert alone.
        let sibling = try Preload.under(
            Preload.filesPlan(folder + "-other"), ["sqlite3", database, "insert into t values(4);"])
        #expect(sibling.status == 0, "\(sibling)")
        #expect(try Preload.plain(["sqlite3", database, "select count(*) from t;"]).lines == ["4"])
    }

    @Test(.enabled(if: Needs.coreutils, "coreutils (cp, dd, tee) or sh is missing"))
    func copiesRedirectionsAndPipesFailWithTheErrnoMessageAndExitStatus() throws {
        let folder = try Preload.directory("coreutils")
        defer { Preload.remove(folder) }
        let io = folder + "/io"
        let sibling = folder + "/io2"
        for path in [io, sibling] {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }
        try "source data\n".write(toFile: folder + "/source", atomically: true, encoding: .utf8)
        let plan = Preload.filesPlan(io)

        let cp = try Preload.under(plan, ["cp", folder + "/source", io + "/copy"])
        #expect(cp.status == 1 && cp.errors.contains("No space left on device"), "\(cp)")
        let dd = try Preload.under(plan, ["dd", "if=/dev/zero", "of=\(io)/dd", "bs=4096", "count=8"])
        #expect(dd.status == 1 && dd.errors.contains("No space left on device"), "\(dd)")
        let tee = try Preload.under(plan, ["tee", io + "/tee"], input: "hello\n")
        #expect(tee.status == 1 && tee.errors.contains("No space left on device"), "\(tee)")
        #expect(tee.output == "hello\n", "tee's own stdout (a pipe) is outside the match")
        let shell = try Preload.under(plan, ["sh", "-c", "echo x > \(io)/shell"])
        #expect(shell.status != 0, "\(shell)")
        #expect((try? String(contentsOfFile: io + "/shell", encoding: .utf8)) == "")
        if Needs.program("bash") {
            let bash = try Preload.under(plan, ["bash", "-c", "echo x > \(io)/bash"])
            #expect(bash.status == 1 && bash.errors.contains("No space left on device"), "\(bash)")
        }
        let eio = try Preload.under(Preload.filesPlan(io, errno: "EIO"), ["tee", io + "/eio"], input: "x\n")
        #expect(eio.status == 1 && eio.errors.contains("Input/output error"), "\(eio)")

        // The sibling /…/io2 shares the prefix "io" but not the component: never hit.
        #expect(try Preload.under(plan, ["cp", folder + "/source", sibling + "/copy"]).status == 0)
        #expect(
            try Preload.under(plan, ["dd", "if=/dev/zero", "of=\(sibling)/dd", "bs=4096", "count=8", "status=none"])
                .status == 0)
        #expect(try Preload.under(plan, ["tee", sibling + "/tee"], input: "hello\n").status == 0)
        #expect(try Preload.under(plan, ["sh", "-c", "echo x > \(sibling)/shell"]).status == 0)
        #expect((try? String(contentsOfFile: sibling + "/copy", encoding: .utf8)) == "source data\n")
        #expect((try? String(contentsOfFile: sibling + "/shell", encoding: .utf8)) == "x\n")
        #expect((try? FileManager.default.attributesOfItem(atPath: sibling + "/dd")[.size] as? Int) == 32768)
    }

    static let coverageProbe = #"""
        #define _GNU_SOURCE
        #include <errno.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <string.h>
        #include <sys/sendfile.h>
        #include <sys/stat.h>
        #include <sys/uio.h>
        #include <unistd.h>
        #define REPORT(name, call) do { errno = 0; long r_ = (long)(call); printf("%s %d\n", name, r_ < 0 ? errno : 0); } while (0)
        int main(int argc, char **argv) {
            (void)argc;
            char faulty[4096], fine[4096], path[4096];
            snprintf(faulty, sizeof faulty, "%s/io", argv[1]);
            snprintf(fine, sizeof fine, "%s/ok", argv[1]);
            snprintf(path, sizeof path, "%s/ok/source", argv[1]);
            int source = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
            if (write(source, "0123456789", 10) != 10) return 1;
            snprintf(path, sizeof path, "%s/io/target", argv[1]);
            int target = creat(path, 0644);
            struct iovec parts[2] = {{"ab", 2}, {"cd", 2}};
            char buffer[16];
            struct iovec into = {buffer, sizeof buffer};
            REPORT("pwrite", pwrite(target, "x", 1, 0));
            REPORT("writev", writev(target, parts, 2));
            REPORT("pwritev", pwritev(target, parts, 2, 0));
            REPORT("fdatasync", fdatasync(target));
            REPORT("sync_file_range", sync_file_range(target, 0, 0, SYNC_FILE_RANGE_WRITE));
            REPORT("ftruncate", ftruncate(target, 0));
            REPORT("fallocate", fallocate(target, 0, 0, 4096));
            printf("posix_fallocate %d\n", posix_fallocate(target, 0, 4096)); // EIO is not one of its errnos: left alone
            off64_t in_offset = 0;
            REPORT("copy_file_range", copy_file_range(source, &in_offset, target, NULL, 4, 0));
            off_t offset = 0;
            REPORT("sendfile", sendfile(target, source, &offset, 4));
            int reader = open(path, O_RDONLY);
            REPORT("preadv2", preadv2(reader, &into, 1, 0, 0));
            REPORT("readv", readv(reader, &into, 1));
            REPORT("read-fine", pread(source, buffer, 4, 0));
            char from[4096], to[4096];
            snprintf(from, sizeof from, "%s/ok/source", argv[1]);
            snprintf(to, sizeof to, "%s/io/moved", argv[1]);
            REPORT("rename-into", rename(from, to));
            REPORT("renameat2-within", renameat2(AT_FDCWD, from, AT_FDCWD, strcat(strcpy(path, fine), "/moved"), 0));
            snprintf(path, sizeof path, "%s/io/dir", argv[1]);
            REPORT("mkdir", mkdir(path, 0755));
            snprintf(path, sizeof path, "%s/io/target", argv[1]);
            REPORT("unlink", unlink(path));
            int base = open(argv[1], O_RDONLY | O_DIRECTORY);
            REPORT("unlinkat", unlinkat(base, "io/target", 0));
            REPORT("mkdirat-fine", mkdirat(base, "ok/dir", 0755));
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func everyFileFamilyFailsWithAnErrnoItCanReturn() throws {
        let folder = try Preload.directory("coverage")
        defer { Preload.remove(folder) }
        for path in ["io", "ok"] {
            try FileManager.default.createDirectory(atPath: folder + "/" + path, withIntermediateDirectories: true)
        }
        let probe = try Preload.compile("coverage_probe", Self.coverageProbe)
        let plan = """
            chaos-plan 1
            entry files
            node 0 composite
            case 1 path="\(folder)/io" ops=read,write,sync,truncate
            case 2 path="\(folder)/io" ops=rename,unlink,mkdir
            node 1 fail errno=EIO
            node 2 fail errno=EACCES
            """
        let outcome = try Preload.under(plan, [probe, folder])
        #expect(
            outcome.lines == [
                "pwrite \(EIO)", "writev \(EIO)", "pwritev \(EIO)", "fdatasync \(EIO)", "sync_file_range \(EIO)",
                "ftruncate \(EIO)", "fallocate \(EIO)", "posix_fallocate 0", "copy_file_range \(EIO)",
                "sendfile \(EIO)",
                "preadv2 \(EIO)", "readv \(EIO)", "read-fine 0", "rename-into \(EACCES)", "renameat2-within 0",
                "mkdir \(EACCES)", "unlink \(EACCES)", "unlinkat \(EACCES)", "mkdirat-fine 0",
            ], "\(outcome)")
        // Without the preload the same calls succeed (the probe starts from scratch each run).
        Preload.remove(folder + "/io")
        Preload.remove(folder + "/ok")
        for path in ["io", "ok"] {
            try FileManager.default.createDirectory(atPath: folder + "/" + path, withIntermediateDirectories: true)
        }
        let plain = try Preload.plain([probe, folder])
        for name in [
            "pwrite", "writev", "pwritev", "fdatasync", "ftruncate", "copy_file_range", "sendfile", "preadv2",
            "rename-into", "mkdir",
        ] {
            #expect(plain.lines.contains("\(name) 0"), "\(name): \(plain)")
        }
    }

    static let openatProbe = #"""
        #include <errno.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>
        static void attempt(const char *label, int dirfd, const char *path) {
            int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            errno = 0;
            ssize_t wrote = fd < 0 ? -2 : write(fd, "x", 1);
            printf("%s %zd %d\n", label, wrote, wrote < 0 ? errno : 0);
            if (fd >= 0) close(fd);
        }
        int main(int argc, char **argv) {
            (void)argc;
            int base = open(argv[1], O_RDONLY | O_DIRECTORY);
            int sibling = open(argv[2], O_RDONLY | O_DIRECTORY);
            attempt("dirfd", base, "io/a");
            attempt("dotdot", sibling, "../io/b");
            attempt("slashes", base, ".//io//./c");
            attempt("sibling", base, "io2/d");
            attempt("cwd", AT_FDCWD, "io/e");
            attempt("cwd-sibling", AT_FDCWD, "io2/../io2/f");
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func relativePathsDirfdsAndDotsAreResolvedTheWayTheKernelSeesThem() throws {
        let folder = try Preload.directory("relative")
        defer { Preload.remove(folder) }
        for path in ["io", "io2", "io/sub"] {
            try FileManager.default.createDirectory(atPath: folder + "/" + path, withIntermediateDirectories: true)
        }
        let plan = Preload.filesPlan(folder + "/io")
        let probe = try Preload.compile("openat_probe", Self.openatProbe)
        let outcome = try Preload.under(plan, [probe, folder, folder + "/io2"], in: folder)
        #expect(
            outcome.lines == [
                "dirfd -1 28", "dotdot -1 28", "slashes -1 28", "sibling 1 0", "cwd -1 28", "cwd-sibling 1 0",
            ], "\(outcome)")
        // A shell in the folder, writing through a relative path with `..` in it.
        let shell = try Preload.under(plan, ["sh", "-c", "cd io/sub && echo x > ../rel"], in: folder)
        #expect(shell.status != 0, "\(shell)")
        let fine = try Preload.under(plan, ["sh", "-c", "cd io/sub && echo x > ../../io2/rel"], in: folder)
        #expect(fine.status == 0, "\(fine)")
    }

    static let reuseProbe = #"""
        #include <errno.h>
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>
        static int writes(int fd) { errno = 0; return write(fd, "x", 1) == 1 ? 0 : errno; }
        int main(int argc, char **argv) {
            (void)argc;
            int faulty = open(argv[1], O_WRONLY | O_CREAT, 0644);
            int first = writes(faulty);
            close(faulty);
            int reused = open(argv[2], O_WRONLY | O_CREAT, 0644);   // the same number, another file
            int second = writes(reused);
            int again = open(argv[1], O_WRONLY | O_CREAT, 0644);
            int copy = dup(again), copied = writes(copy);
            int high = fcntl(again, F_DUPFD_CLOEXEC, 50), high_copied = writes(high);
            dup2(reused, again);                                      // now refers to the good file
            int redirected = writes(again);
            printf("%d %d %d %d %d %d\n", reused == faulty, first, second, copied, high_copied, redirected);
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func aReusedOrRedirectedDescriptorIsNotFaultyAndACopyOfAFaultyOneIs() throws {
        let folder = try Preload.directory("reuse")
        defer { Preload.remove(folder) }
        for path in ["io", "ok"] {
            try FileManager.default.createDirectory(atPath: folder + "/" + path, withIntermediateDirectories: true)
        }
        let probe = try Preload.compile("reuse_probe", Self.reuseProbe)
        let outcome = try Preload.under(
            Preload.filesPlan(folder + "/io", ops: "write"), [probe, folder + "/io/bad", folder + "/ok/good"])
        #expect(outcome.lines == ["1 \(ENOSPC) 0 \(ENOSPC) \(ENOSPC) 0"], "\(outcome)")
        let plain = try Preload.plain([probe, folder + "/io/bad2", folder + "/ok/good2"])
        #expect(plain.lines == ["1 0 0 0 0 0"], "\(plain)")
    }

    static let manyWrites = #"""
        #include <fcntl.h>
        #include <stdio.h>
        #include <unistd.h>
        int main(int argc, char **argv) {
            (void)argc;
            char path[4096];
            for (int i = 0; i < 64; i++) {
                snprintf(path, sizeof path, "%s/f%d", argv[1], i);
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (write(fd, "x", 1) != 1) printf("%d\n", i);
                close(fd);
            }
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func aSeededProbabilityReplaysExactlyAndMatchesTheEnginesDraws() throws {
        let folder = try Preload.directory("seeded")
        defer { Preload.remove(folder) }
        let probe = try Preload.compile("many_writes", Self.manyWrites)
        func plan(_ seed: UInt64) -> String {
            """
            chaos-plan 1
            seed \(seed)
            entry files
            node 0 composite
            case 1 path="\(folder)" ops=write
            node 1 probability p=0.3 child=2 salt=11
            node 2 fail errno=EIO
            """
        }
        func failing(_ seed: UInt64) throws -> [Int] {
            let outcome = try Preload.under(plan(seed), [probe, folder])
            #expect(outcome.status == 0, "\(outcome)")
            return outcome.lines.compactMap { Int($0) }
        }
        let first = try failing(7)
        let again = try failing(7)
        let other = try failing(8)
        #expect(first == again)
        #expect(first != other)
        #expect(first.count > 5 && first.count < 40, "\(first)")
        // The indexes are the engine's draws for (the entry's seed, salt 11, the node's
        // asked count): each round is an open, a write and a close in the folder, but only
        // writes are the entry's, so the write of round i is the node's call i.
        let entrySeed = chaos_fault_entry_seed(7, Int32(CHAOS_POINT_FILES.rawValue))
        let expected = (0..<64).filter { chaos_fault_draw(entrySeed, 11, UInt64($0)) < 0.3 }
        #expect(first == expected)
    }

    // MARK: Clock

    static let clockProbe = #"""
        #define _GNU_SOURCE
        #include <stdio.h>
        #include <sys/syscall.h>
        #include <sys/time.h>
        #include <sys/timeb.h>
        #include <time.h>
        #include <unistd.h>
        static double raw(clockid_t id) {
            struct timespec t;
            if (syscall(SYS_clock_gettime, id, &t) != 0) return -1;
            return t.tv_sec + t.tv_nsec / 1e9;
        }
        static void clock_id(const char *name, clockid_t id) {
            struct timespec t;
            double real = raw(id);
            if (real < 0 || clock_gettime(id, &t) != 0) { printf("%s unsupported\n", name); return; }
            printf("%s %.0f\n", name, t.tv_sec + t.tv_nsec / 1e9 - real);
        }
        int main(void) {
            clock_id("realtime", CLOCK_REALTIME);
            clock_id("realtime_coarse", CLOCK_REALTIME_COARSE);
            clock_id("tai", CLOCK_TAI);
            clock_id("realtime_alarm", CLOCK_REALTIME_ALARM);
            clock_id("monotonic", CLOCK_MONOTONIC);
            clock_id("boottime", CLOCK_BOOTTIME);
            struct timeval tv;
            gettimeofday(&tv, NULL);
            printf("gettimeofday %.0f\n", tv.tv_sec + tv.tv_usec / 1e6 - raw(CLOCK_REALTIME));
            double whole = raw(CLOCK_REALTIME);
            printf("time %.0f\n", (double)time(NULL) - (double)(long)whole);
            struct timespec ts;
            timespec_get(&ts, TIME_UTC);
            printf("timespec_get %.0f\n", ts.tv_sec + ts.tv_nsec / 1e9 - raw(CLOCK_REALTIME));
            struct timeb tb;
            ftime(&tb);
            printf("ftime %.0f\n", tb.time + tb.millitm / 1e3 - raw(CLOCK_REALTIME));
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func aCProgramSeesTheOffsetThroughEveryRealtimeClockAndMonotonicOnlyWhenAsked() throws {
        let probe = try Preload.compile("clock_probe", Self.clockProbe)
        func shifts(monotonic: Bool) throws -> [String: String] {
            let plan = "chaos-plan 1\nentry clock monotonic=\(monotonic ? "yes" : "no")\nnode 0 offset by=-1d\n"
            let outcome = try Preload.under(plan, [probe])
            #expect(outcome.status == 0, "\(outcome)")
            return outcome.results
        }
        let day = "-86400"
        let shifted = try shifts(monotonic: false)
        for name in ["realtime", "realtime_coarse", "tai", "gettimeofday", "timespec_get", "ftime"] {
            #expect(shifted[name] == day, "\(name): \(shifted)")
        }
        // time() counts whole seconds of a clock that may lag the precise one by a tick: at a
        // second's turn it reads one less.
        #expect(["-86400", "-86401"].contains(shifted["time"] ?? ""), "time: \(shifted)")
        // CLOCK_REALTIME_ALARM needs an RTC with alarms; where the kernel has one it moves too.
        #expect(shifted["realtime_alarm"] == day || shifted["realtime_alarm"] == "unsupported", "\(shifted)")
        #expect(
            shifted["monotonic"] == "0" && shifted["boottime"] == "0",
            "monotonic clocks stay real by default: \(shifted)")
        let both = try shifts(monotonic: true)
        #expect(both["monotonic"] == day && both["boottime"] == day && both["realtime"] == day, "\(both)")
        // Without the preload nothing moves (so the comparisons above can fail).
        let plain = try Preload.plain([probe])
        #expect(
            plain.lines.contains("realtime 0") && (plain.lines.contains("time 0") || plain.lines.contains("time -1")),
            "\(plain)")
    }

    @Test(.enabled(if: Needs.program("python3"), "python3 is not installed (.ci/install-system-test-deps installs it)"))
    func pythonSeesTheShiftedClockAndShiftedFileTimes() throws {
        let folder = try Preload.directory("python")
        defer { Preload.remove(folder) }
        let file = folder + "/stamp"
        try "x".write(toFile: file, atomically: false, encoding: .utf8)
        var status = stat()
        #expect(stat(file, &status) == 0)
        let realModified = Double(status.st_mtim.tv_sec) + Double(status.st_mtim.tv_nsec) / 1e9
        let script =
            "import time, os, sys; print(repr(time.time())); print(repr(os.stat(sys.argv[1]).st_mtime)); print(time.strftime('%Y', time.gmtime()))"
        let outcome = try Preload.under(
            "chaos-plan 1\nentry clock\nnode 0 offset by=-946080000s\n", ["python3", "-c", script, file])
        #expect(outcome.status == 0, "\(outcome)")
        let lines = outcome.lines
        try #require(lines.count == 3, "\(outcome)")
        let now = Date().timeIntervalSince1970
        let seen = try #require(Double(lines[0]))
        let modified = try #require(Double(lines[1]))
        #expect(abs(seen - (now - 946_080_000)) < 10, "time.time() \(seen)")
        #expect(abs(modified - (realModified - 946_080_000)) < 0.001, "st_mtime \(modified) for \(realModified)")
        let year = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!, from: Date()).year!
        #expect(lines[2] == String(year - 30))
    }

    @Test(.enabled(if: Needs.program("python3"), "python3 is not installed (.ci/install-system-test-deps installs it)"))
    func aChildProcessContinuesItsParentsClockUnderSpeed() throws {
        // The parent spends 0.3 s of real time (a busy loop on the real monotonic clock) at
        // 50× speed, so its clock is ~15 s ahead; a child that restarted the clock would
        // read less than the parent did before starting it.
        let script = """
            import time, subprocess, sys, os
            start = time.monotonic()
            while time.monotonic() - start < 0.3: pass
            before = time.time()
            child = float(subprocess.run([sys.executable, "-c", "import time; print(repr(time.time()))"], capture_output=True, text=True).stdout)
            after = time.time()
            print(repr(before)); print(repr(child)); print(repr(after)); print(os.environ.get("CHAOS_CLOCK_ANCHOR", "none"))
            """
        let started = Date().timeIntervalSince1970
        let outcome = try Preload.under(
            "chaos-plan 1\nentry clock\nnode 0 speed factor=50\n", ["python3", "-c", script])
        #expect(outcome.status == 0, "\(outcome)")
        let lines = outcome.lines
        try #require(lines.count == 4, "\(outcome)")
        let before = try #require(Double(lines[0]))
        let child = try #require(Double(lines[1]))
        let after = try #require(Double(lines[2]))
        #expect(before <= child && child <= after, "parent \(before), child \(child), parent again \(after)")
        #expect(before - started > 10, "the parent's clock runs 50× (\(before - started) s ahead)")
        let anchor = try #require(Double(lines[3]))
        #expect(abs(anchor / 1e9 - started) < 5, "the anchor is the real start of the tree")
    }

    @Test(.enabled(if: Needs.program("sleep"), "coreutils sleep is missing"))
    func sleepsScaleUnderSpeedAndNotUnderAnOffset() throws {
        let started = Date()
        let fast = try Preload.under("chaos-plan 1\nentry clock\nnode 0 speed factor=20\n", ["sleep", "2"])
        let fastElapsed = Date().timeIntervalSince(started)
        #expect(fast.status == 0, "\(fast)")
        #expect(fastElapsed < 1.0, "sleep 2 at 20× took \(fastElapsed) s")
        let again = Date()
        let offset = try Preload.under("chaos-plan 1\nentry clock\nnode 0 offset by=-1d\n", ["sleep", "0.3"])
        #expect(offset.status == 0 && Date().timeIntervalSince(again) >= 0.3)
    }

    // MARK: Sockets, DNS, getenv

    static let socketProbe = #"""
        #include <arpa/inet.h>
        #include <errno.h>
        #include <netinet/in.h>
        #include <stdio.h>
        #include <sys/socket.h>
        #include <time.h>
        #include <unistd.h>
        int main(void) {
            int listener = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = 0, .sin_addr = { htonl(INADDR_LOOPBACK) } };
            bind(listener, (struct sockaddr *)&address, sizeof address);
            listen(listener, 4);
            socklen_t length = sizeof address;
            getsockname(listener, (struct sockaddr *)&address, &length);
            int client = socket(AF_INET, SOCK_STREAM, 0);
            int connected = connect(client, (struct sockaddr *)&address, sizeof address);
            int server = accept(listener, NULL, NULL);
            errno = 0;
            ssize_t sent = write(client, "hi", 2);
            int send_errno = errno;
            char buffer[8];
            errno = 0;
            ssize_t received = read(server, buffer, sizeof buffer);
            int recv_errno = errno;
            ssize_t answered = send(server, "ok", 2, 0);
            ssize_t got = recv(client, buffer, sizeof buffer, 0);
            // A connect to a port in the timeout plan: it waits, then ETIMEDOUT.
            struct sockaddr_in closed = { .sin_family = AF_INET, .sin_port = htons(9), .sin_addr = { htonl(INADDR_LOOPBACK) } };
            int other = socket(AF_INET, SOCK_STREAM, 0);
            struct timespec t0, t1;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            errno = 0;
            int timed = connect(other, (struct sockaddr *)&closed, sizeof closed);
            int timed_errno = errno;
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double waited = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
            printf("%d %zd %d %zd %d %zd %zd %d %d %d\n", connected, sent, send_errno, received, recv_errno, answered, got,
                   timed, timed_errno, waited >= 0.3);
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func socketsAreSplitByDirectionAndATimeoutWaitsItsDuration() throws {
        let probe = try Preload.compile("socket_probe", Self.socketProbe)
        let plan = """
            chaos-plan 1
            entry recv label="server side reads"
            node 0 composite
            case 1 role=server
            node 1 fail errno=ECONNRESET
            entry connect
            node 0 composite
            case 1 host=127.0.0.1 port=9
            node 1 delay by=300ms child=2
            node 2 fail errno=ETIMEDOUT
            """
        let outcome = try Preload.under(plan, [probe])
        #expect(outcome.lines == ["0 2 0 -1 \(ECONNRESET) 2 2 -1 \(ETIMEDOUT) 1"], "\(outcome)")
        let plain = try Preload.plain([probe])
        #expect(plain.lines == ["0 2 0 2 0 2 2 -1 \(ECONNREFUSED) 0"], "\(plain)")
    }

    static let acceptProbe = #"""
        #include <arpa/inet.h>
        #include <errno.h>
        #include <netinet/in.h>
        #include <stdio.h>
        #include <string.h>
        #include <sys/socket.h>
        #include <unistd.h>
        int main(void) {
            int listener = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = 0, .sin_addr = { htonl(INADDR_LOOPBACK) } };
            bind(listener, (struct sockaddr *)&address, sizeof address);
            listen(listener, 4);
            socklen_t length = sizeof address;
            getsockname(listener, (struct sockaddr *)&address, &length);
            // Two clients wait, so that the second accept never blocks, chaos or not.
            int client = socket(AF_INET, SOCK_STREAM, 0), other = socket(AF_INET, SOCK_STREAM, 0);
            connect(client, (struct sockaddr *)&address, sizeof address);
            connect(other, (struct sockaddr *)&address, sizeof address);
            errno = 0;
            int first = accept(listener, NULL, NULL);
            int first_errno = errno;
            int server = accept4(listener, NULL, NULL, 0);
            ssize_t sent = send(client, "hello", 5, 0);
            if (send(other, "hello", 5, 0) < 0) return 1;
            char buffer[16] = {0};
            struct iovec part = {buffer, sizeof buffer};
            struct msghdr message = {0};
            message.msg_iov = &part;
            message.msg_iovlen = 1;
            ssize_t received = recvmsg(server, &message, 0);
            printf("%d %d %d %zd %zd %s\n", first, first_errno, server >= 0, sent, received, buffer);
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func acceptFailsOnceAndTransfersAreShortened() throws {
        let probe = try Preload.compile("accept_probe", Self.acceptProbe)
        let plan = """
            chaos-plan 1
            entry accept
            node 0 composite
            case 1 host=127.0.0.1
            node 1 times n=1 child=2
            node 2 fail errno=ECONNABORTED
            entry send
            node 0 short max=3
            entry recv
            node 0 composite
            case 1 role=server
            node 1 short max=2
            """
        let outcome = try Preload.under(plan, [probe])
        // accept fails once (the first client is still waiting and goes to accept4); sends
        // move at most 3 bytes, the server side's reads at most 2.
        #expect(outcome.lines == ["-1 \(ECONNABORTED) 1 3 2 he"], "\(outcome)")
        let plain = try Preload.plain([probe])
        #expect(plain.lines.first?.hasSuffix(" 0 1 5 5 hello") == true, "\(plain)")
    }

    static let lookupProbe = #"""
        #include <netdb.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        int main(void) {
            struct addrinfo hints = {0}, *result = NULL;
            hints.ai_family = AF_INET;
            int named = getaddrinfo("localhost", NULL, &hints, &result);
            if (result) freeaddrinfo(result), result = NULL;
            int numeric = getaddrinfo("127.0.0.1", NULL, &hints, &result);
            if (result) freeaddrinfo(result);
            struct hostent *host = gethostbyname("localhost");
            const char *home = getenv("HOME"), *chaos = getenv("CHAOS_GREETING");
            printf("%d %d %s %d %s %s\n", named, numeric, host ? "found" : "none", host ? 0 : h_errno,
                   home ? "home" : "no-home", chaos ? chaos : "unset");
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func dnsFailuresMatchTheHostAndGetenvAnswersFromThePlan() throws {
        let probe = try Preload.compile("lookup_probe", Self.lookupProbe)
        let plan = """
            chaos-plan 1
            entry dns
            node 0 composite
            case 1 host=localhost
            node 1 fail ret=EAI_NONAME
            entry getenv
            node 0 composite
            case 1 name=HOME
            case 2 name=CHAOS_GREETING
            node 1 unset
            node 2 set value="hello \\"chaos\\""
            """
        let outcome = try Preload.under(plan, [probe])
        #expect(outcome.lines == ["\(EAI_NONAME) 0 none \(HOST_NOT_FOUND) no-home hello \"chaos\""], "\(outcome)")
        let plain = try Preload.plain([probe])
        #expect(plain.lines == ["0 0 found 0 home unset"], "\(plain)")
    }

    @Test(
        .enabled(
            if: Needs.program("cc") && Needs.coreutils,
            "no C compiler (cc) to build the probe program, or coreutils are missing"))
    func askNodesCallTheOriginalUnderThePreload() throws {
        // Only the in-process delivery has someone to ask; here every ask is the real call
        // (a getenv answered NULL or a failed write would show).
        let probe = try Preload.compile("lookup_probe", Self.lookupProbe)
        let asked = try Preload.under(
            "chaos-plan 1\nentry dns\nnode 0 ask id=1\nentry getenv\nnode 0 ask id=2\n", [probe])
        #expect(asked.status == 0 && asked.lines == ["0 0 found 0 home unset"], "\(asked)")
        let folder = try Preload.directory("ask")
        defer { Preload.remove(folder) }
        let plan = Preload.filesPlan(folder, ops: "write").replacingOccurrences(
            of: "fail errno=ENOSPC", with: "delay by=1ms child=2\nnode 2 ask id=3")
        let tee = try Preload.under(plan, ["tee", folder + "/out"], input: "kept\n")
        #expect(tee.status == 0, "\(tee)")
        #expect((try? String(contentsOfFile: folder + "/out", encoding: .utf8)) == "kept\n")
    }

    @Test(.enabled(if: Needs.program("curl"), "curl is not installed (.ci/install-system-test-deps installs it)"))
    func curlSeesAConnectTimeoutAfterItsDurationAndAFailedLookup() throws {
        let timeout = """
            chaos-plan 1
            entry connect
            node 0 composite
            case 1 host=127.0.0.0/8 port=1
            node 1 delay by=300ms child=2
            node 2 fail errno=ETIMEDOUT
            """
        let started = Date()
        let timedOut = try Preload.under(timeout, ["curl", "-sS", "http://127.0.0.1:1/"])
        #expect(Date().timeIntervalSince(started) >= 0.3)
        #expect(timedOut.status == 28, "\(timedOut)")
        let refused = try Preload.plain(["curl", "-sS", "http://127.0.0.1:1/"])
        #expect(refused.status == 7, "\(refused)")
        let lookup = "chaos-plan 1\nentry dns\nnode 0 composite\ncase 1 host=*.invalid\nnode 1 fail ret=EAI_NONAME\n"
        let unresolved = try Preload.under(lookup, ["curl", "-sS", "http://chaos-test.invalid/"])
        #expect(unresolved.status == 6 && unresolved.errors.contains("Could not resolve host"), "\(unresolved)")
        // The host condition is a glob on the name: another name goes through to the real
        // lookup (numeric here, so no network is needed) and on to the refused port.
        let other = try Preload.under(lookup, ["curl", "-sS", "http://127.0.0.1:1/"])
        #expect(other.status == 7, "\(other)")
    }

    static let stdioProbe = #"""
        #include <errno.h>
        #include <stdio.h>
        int main(int argc, char **argv) {
            (void)argc;
            FILE *faulty = fopen(argv[1], "w"), *fine = fopen(argv[2], "w");
            errno = 0;
            int printed = fprintf(faulty, "%s\n", "data");
            int print_errno = errno, flagged = ferror(faulty) != 0;
            int put = fputs("more\n", fine);
            size_t wrote = fwrite("abc", 1, 3, fine);
            int closed = fclose(faulty), closed_fine = fclose(fine);
            printf("%d %d %d %d %zu %d %d\n", printed, print_errno, flagged, put >= 0, wrote, closed, closed_fine);
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func stdioStreamsFailAtTheStdioLevel() throws {
        let folder = try Preload.directory("stdio")
        defer { Preload.remove(folder) }
        for path in ["io", "ok"] {
            try FileManager.default.createDirectory(atPath: folder + "/" + path, withIntermediateDirectories: true)
        }
        let probe = try Preload.compile("stdio_probe", Self.stdioProbe)
        let outcome = try Preload.under(
            Preload.filesPlan(folder + "/io", ops: "write"), [probe, folder + "/io/f", folder + "/ok/g"])
        #expect(outcome.lines == ["-1 \(ENOSPC) 1 1 3 0 0"], "\(outcome)")
        #expect((try? String(contentsOfFile: folder + "/ok/g", encoding: .utf8)) == "more\nabc")
        #expect((try? String(contentsOfFile: folder + "/io/f", encoding: .utf8)) == "")
        // Output left in the buffer is lost when the flush at fclose fails.
        let buffered = #"""
            #include <errno.h>
            #include <stdio.h>
            #include <string.h>
            int main(int argc, char **argv) {
                (void)argc;
                FILE *f = fopen(argv[1], "w");
                setvbuf(f, NULL, _IOFBF, 4096);
                fwrite("pending", 1, 7, f);
                errno = 0;
                int closed = fclose(f);
                printf("%d %d\n", closed, errno);
                return 0;
            }
            """#
        let flush = try Preload.compile("stdio_flush_probe", buffered)
        // fwrite itself fails under ops=write; with only the flush failing (second write-op
        // call: sequential pass then fail) the pending bytes are dropped and fclose reports.
        let flushPlan = """
            chaos-plan 1
            entry files
            node 0 composite
            case 1 path="\(folder)/io" ops=write
            node 1 sequential children=2,3
            node 2 pass
            node 3 fail errno=EIO
            """
        let flushed = try Preload.under(flushPlan, [flush, folder + "/io/h"])
        #expect(flushed.lines == ["-1 \(EIO)"], "\(flushed)")
        #expect((try? String(contentsOfFile: folder + "/io/h", encoding: .utf8)) == "")
    }

    // MARK: Stdio reads

    /// Debian's python3 rather than a version manager's shim, when it is there.
    static let python =
        FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3" : "python3"

    /// Runs `command(file)` on a two-line file: without a plan it prints `expected`; under a
    /// plan failing reads of the file with EIO it must fail, say so, and print none of it.
    static func expectReadFailure(_ expected: String, _ command: (String) -> [String]) throws {
        let folder = try Preload.directory("reads")
        defer { Preload.remove(folder) }
        let file = folder + "/data"
        try "alpha beta\ngamma delta\n".write(toFile: file, atomically: false, encoding: .utf8)
        let plain = try Preload.plain(command(file))
        #expect(plain.status == 0 && plain.output == expected, "\(plain)")
        let failed = try Preload.under(Preload.filesPlan(file, ops: "read", errno: "EIO"), command(file))
        #expect(failed.status != 0, "\(failed)")
        #expect(failed.errors.contains("Input/output error"), "\(failed)")
        #expect(!failed.output.contains("alpha"), "nothing of the file reaches stdout: \(failed)")
    }

    @Test(.enabled(if: Needs.program("sed"), "sed is not installed"))
    func sedFailsWhenItsGetdelimCannotReadTheFile() throws {
        try Self.expectReadFailure("alpha beta\ngamma delta\n") { ["sed", "-n", "p", $0] }
    }

    @Test(.enabled(if: Needs.program("cut"), "coreutils cut is missing"))
    func cutFailsWhenItsGetcMacroRefillsThroughUflow() throws {
        try Self.expectReadFailure("alp\ngam\n") { ["cut", "-c1-3", $0] }
    }

    @Test(.enabled(if: Needs.program("fold"), "coreutils fold is missing"))
    func foldFailsWhenItsGetcMacroRefillsThroughUflow() throws {
        try Self.expectReadFailure("alpha\n beta\ngamma\n delt\na\n") { ["fold", "-w", "5", $0] }
    }

    @Test(.enabled(if: Needs.program("sort"), "coreutils sort is missing"))
    func sortFailsWhenItsFreadCannotReadTheFile() throws {
        try Self.expectReadFailure("alpha beta\ngamma delta\n") { ["sort", $0] }
    }

    @Test(.enabled(if: Needs.program("head"), "coreutils head is missing"))
    func headFailsWhenItsReadCannotReadTheFile() throws {
        try Self.expectReadFailure("alpha beta\ngamma delta\n") { ["head", $0] }
    }

    @Test(.enabled(if: Needs.program("python3"), "python3 is not installed (.ci/install-system-test-deps installs it)"))
    func pythonFailsWhenItsReadCannotReadTheFile() throws {
        try Self.expectReadFailure("alpha beta\ngamma delta\n\n") {
            [Self.python, "-c", "print(open('\($0)').read())"]
        }
    }

    static let refillProbe = #"""
        #include <errno.h>
        #include <stdio.h>
        #include <string.h>
        int main(int argc, char **argv) {
            (void)argc;
            static char buffer[1000]; // glibc sizes a buffer it allocates itself as it likes
            FILE *f = fopen(argv[1], "r");
            if (!f || setvbuf(f, buffer, _IOFBF, sizeof buffer) != 0) return 1;
            long count = 0;
            errno = 0;
            // Optimized, getc_unlocked is glibc's macro: it calls __uflow only on an empty buffer.
            if (strcmp(argv[2], "macro") == 0) while (getc_unlocked(f) != EOF) count++;
            else while (fgetc(f) != EOF) count++;
            printf("%ld %d %d\n", count, ferror(f), ferror(f) ? errno : 0);
            return 0;
        }
        """#

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func characterReadsDecideOncePerRefillOfTheBuffer() throws {
        let folder = try Preload.directory("refill")
        defer { Preload.remove(folder) }
        let file = folder + "/data"
        try String(repeating: "x", count: 2500).write(toFile: file, atomically: false, encoding: .utf8)
        let probe = try Preload.compile("refill_probe", Self.refillProbe)
        // The first two decisions pass, the third fails: decided per character, the third
        // character would fail; decided per refill of the 1000-byte buffer, the third refill.
        let plan = """
            chaos-plan 1
            entry files
            node 0 composite
            case 1 path="\(file)" ops=read
            node 1 sequential children=2*2,3
            node 2 pass
            node 3 fail errno=EIO
            """
        for mode in ["macro", "fgetc"] {
            let plain = try Preload.plain([probe, file, mode])
            #expect(plain.lines == ["2500 0 0"], "\(mode): \(plain)")
            let failed = try Preload.under(plan, [probe, file, mode])
            #expect(failed.lines == ["2000 1 \(EIO)"], "\(mode): \(failed)")
        }
    }

    // MARK: Loading

    @Test(.enabled(if: Needs.program("true"), "coreutils true is missing"))
    func aPlanThatDoesNotParseStopsTheProgramWithALocatedError() throws {
        let outcome = try Preload.under("chaos-plan 1\nentry files\nnode 0 fail errno=ENOSPCC\n", ["true"])
        #expect(outcome.status == 125, "\(outcome)")
        #expect(outcome.errors.contains("CHAOS_PLAN_TEXT line 3, column 19"), "\(outcome)")
        #expect(outcome.errors.contains("ENOSPCC"), "\(outcome)")
    }

    @Test(.enabled(if: Needs.program("date"), "coreutils date is missing"))
    func aPlanFileIsReadFromChaosPlan() throws {
        let folder = try Preload.directory("planfile")
        defer { Preload.remove(folder) }
        try "chaos-plan 1\nentry clock\nnode 0 frozen at=946684799s\n".write(
            toFile: folder + "/plan", atomically: true, encoding: .utf8)
        var environment = ["CHAOS_PLAN": folder + "/plan"]
        environment["LD_PRELOAD"] = Preload.library
        let outcome = try Preload.run(
            ["date", "-u", "+%Y-%m-%dT%H:%M:%S"], environment: environment, in: nil, input: nil)
        #expect(outcome.lines == ["1999-12-31T23:59:59"], "\(outcome)")
    }

    @Test(.enabled(if: Needs.program("readelf"), "readelf (binutils) is not installed"))
    func theLibraryNeedsNoSwiftRuntimeAndHasNoAbsoluteRunpath() throws {
        let dynamic = try Preload.plain(["readelf", "-d", Preload.library])
        #expect(dynamic.status == 0, "\(dynamic)")
        let needed = dynamic.lines.filter { $0.contains("(NEEDED)") }
        #expect(!needed.isEmpty && needed.allSatisfy { !$0.contains("swift") && !$0.contains("stdc++") }, "\(needed)")
        for line in dynamic.lines where line.contains("RUNPATH") || line.contains("RPATH") {
            let paths = line.split(separator: "[").last.map { $0.dropLast() }.map(String.init) ?? ""
            #expect(paths.split(separator: ":").allSatisfy { $0.hasPrefix("$ORIGIN") }, "\(line)")
        }
    }
}
#endif
