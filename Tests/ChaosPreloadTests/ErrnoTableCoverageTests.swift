import CChaosFaults
import Foundation
import TestHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

#if os(Linux)
/// The errno table promises no more than the interceptors do: every function a files row
/// of the table names is called for real, on a real file, under `LD_PRELOAD` with a plan
/// failing that row's operation there, and must fail with an errno of the row. A name the
/// probe has no caller for fails the test, so a name added to the table needs an
/// interceptor and a caller here.
@Suite(.disabled(if: Sanitizers.thread, Sanitizers.preloadReason)) struct ErrnoTableCoverageTests {
    /// One function row of the files point, as the engine's table has it.
    struct Row: CustomStringConvertible {
        let name: String
        let functions: [String]
        let operation: String
        let errno: Int32
        let errnoName: String
        var description: String { "\(name) (\(operation), \(errnoName))" }
    }

    /// The function names of a row's `covers` text, without its parenthesised remarks.
    static func functionNames(_ covers: String) -> [String] {
        var text = ""
        var depth = 0
        for character in covers {
            if character == "(" {
                depth += 1
                text.append(" ")
            } else if character == ")" {
                depth = max(0, depth - 1)
            } else if depth == 0 {
                text.append(character)
            }
        }
        return text.split(whereSeparator: \.isWhitespace).map(String.init)
    }

    static func text(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "?" }

    /// The files rows: EIO, else ENOSPC, else the first errno the row allows.
    static var filesRows: [Row] {
        (0..<Int32(CHAOS_FN_COUNT.rawValue)).compactMap { fn in
            guard let info = chaos_fault_fn_info(fn)?.pointee, info.point == Int32(CHAOS_POINT_FILES.rawValue) else {
                return nil
            }
            var codes = [Int32](repeating: 0, count: 64)
            let count = Int(chaos_fault_errnos(fn, &codes, Int32(codes.count)))
            let allowed = codes.prefix(count)
            guard let chosen = [EIO, ENOSPC].first(where: allowed.contains) ?? allowed.first else { return nil }
            return Row(
                name: text(info.name), functions: functionNames(text(info.covers)),
                operation: text(chaos_fault_op_name(info.op)), errno: chosen,
                errnoName: text(chaos_fault_errno_name(chosen)))
        }
    }

    @Test func aRowsCoversTextSplitsIntoFunctionNamesWithoutItsRemarks() {
        #expect(Self.functionNames("fread fread_unlocked") == ["fread", "fread_unlocked"])
        #expect(
            Self.functionNames("fflush fflush_unlocked fclose (with output pending)")
                == ["fflush", "fflush_unlocked", "fclose"])
        #expect(Self.functionNames("rmdir unlinkat(AT_REMOVEDIR)") == ["rmdir", "unlinkat"])
        #expect(
            Self.functionNames("sendfile sendfile64 (write on the target; read on the source)")
                == ["sendfile", "sendfile64"])
        let rows = Self.filesRows
        #expect(rows.count >= 30, "\(rows)")
        #expect(rows.first { $0.name == "fread" }?.functions.contains("__uflow") == true)
        #expect(rows.first { $0.name == "fread" }?.errnoName == "EIO")
        #expect(rows.first { $0.name == "mkdir" }?.errnoName == "ENOSPC", "mkdir cannot return EIO")
    }

    @Test(.enabled(if: Needs.program("cc"), "no C compiler (cc) to build the probe program"))
    func everyFunctionAFilesRowNamesFailsWithTheRowsErrnoUnderThePreload() throws {
        let folder = try Preload.directory("table")
        defer { Preload.remove(folder) }
        let probe = try Preload.compile("table_probe", Self.probe)
        for row in Self.filesRows {
            let faulty = "\(folder)/faulty/\(row.name)"
            let plain = "\(folder)/plain/\(row.name)"
            for path in [faulty, plain] {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            }
            let plan = Preload.filesPlan(faulty, ops: row.operation, errno: row.errnoName)
            let failed = try Self.results(Preload.under(plan, [probe, row.name, faulty] + row.functions))
            // Without the preload every caller does its job: the failures are the plan's.
            let succeeded = try Self.results(Preload.plain([probe, row.name, plain] + row.functions))
            for function in row.functions {
                if failed[function] == "nocaller" {
                    let fix = "intercept it and add a caller to the probe (or take it out of the table)"
                    Issue.record("the errno table's row \(row.name) lists \(function), which no caller calls: \(fix)")
                    continue
                }
                #expect(failed[function] == "\(row.errno)", "\(function) under a fail of \(row): \(failed)")
                #expect(succeeded[function] == "0", "\(function) without the preload: \(succeeded)")
            }
        }
    }

    /// The probe's "NAME RESULT" lines by name (the whole outcome when it did not end well).
    static func results(_ outcome: Preload.Outcome) -> [String: String] {
        #expect(outcome.status == 0, "\(outcome)")
        return outcome.results
    }

    static let probe = #"""
        // Calls each function the errno table names for a files row, on its own file under DIR:
        //   table_probe ROW DIR NAME...
        // prints "NAME RESULT" per name: the errno the call failed with, 0 when it did its job,
        // "nocaller" when this program has no caller for the row's NAME, "unexpected" when the
        // call neither failed nor did its job, "setup" when preparing it failed.
        // Every caller runs in a child of its own (redirected stdin/stdout stay there). Setup uses
        // raw system calls, which no interposer sees, so a plan can fail only the call itself.
        #define _GNU_SOURCE
        #include <errno.h>
        #include <fcntl.h>
        #include <stdarg.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <sys/sendfile.h>
        #include <sys/syscall.h>
        #include <sys/uio.h>
        #include <sys/wait.h>
        #include <unistd.h>

        // Each symbol by its own name: headers inline or rename several of them (getline is
        // __getdelim, fscanf is __isoc99_fscanf, getc_unlocked is a macro when optimizing).
        #define SYMBOL(type, name, parameters) extern type c_##name parameters __asm__(#name)
        SYMBOL(int, open, (const char *, int, ...));
        SYMBOL(int, open64, (const char *, int, ...));
        SYMBOL(int, openat, (int, const char *, int, ...));
        SYMBOL(int, openat64, (int, const char *, int, ...));
        SYMBOL(int, creat, (const char *, mode_t));
        SYMBOL(int, creat64, (const char *, mode_t));
        SYMBOL(FILE *, fopen, (const char *, const char *));
        SYMBOL(FILE *, fopen64, (const char *, const char *));
        SYMBOL(FILE *, fdopen, (int, const char *));
        SYMBOL(FILE *, freopen, (const char *, const char *, FILE *));
        SYMBOL(FILE *, freopen64, (const char *, const char *, FILE *));
        SYMBOL(ssize_t, read, (int, void *, size_t));
        SYMBOL(ssize_t, pread, (int, void *, size_t, off_t));
        SYMBOL(ssize_t, pread64, (int, void *, size_t, off_t));
        SYMBOL(ssize_t, __read_chk, (int, void *, size_t, size_t));
        SYMBOL(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t));
        SYMBOL(ssize_t, __pread64_chk, (int, void *, size_t, off_t, size_t));
        SYMBOL(ssize_t, readv, (int, const struct iovec *, int));
        SYMBOL(ssize_t, preadv, (int, const struct iovec *, int, off_t));
        SYMBOL(ssize_t, preadv64, (int, const struct iovec *, int, off_t));
        SYMBOL(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int));
        SYMBOL(ssize_t, preadv64v2, (int, const struct iovec *, int, off_t, int));
        SYMBOL(size_t, fread, (void *, size_t, size_t, FILE *));
        SYMBOL(size_t, fread_unlocked, (void *, size_t, size_t, FILE *));
        SYMBOL(size_t, __fread_chk, (void *, size_t, size_t, size_t, FILE *));
        SYMBOL(size_t, __fread_unlocked_chk, (void *, size_t, size_t, size_t, FILE *));
        SYMBOL(char *, fgets, (char *, int, FILE *));
        SYMBOL(char *, fgets_unlocked, (char *, int, FILE *));
        SYMBOL(char *, __fgets_chk, (char *, size_t, int, FILE *));
        SYMBOL(char *, __fgets_unlocked_chk, (char *, size_t, int, FILE *));
        SYMBOL(int, fgetc, (FILE *));
        SYMBOL(int, getc, (FILE *));
        SYMBOL(int, _IO_getc, (FILE *));
        SYMBOL(int, getchar, (void));
        SYMBOL(int, fgetc_unlocked, (FILE *));
        SYMBOL(int, getc_unlocked, (FILE *));
        SYMBOL(int, getchar_unlocked, (void));
        SYMBOL(int, __uflow, (FILE *));
        SYMBOL(int, __underflow, (FILE *));
        SYMBOL(ssize_t, getline, (char **, size_t *, FILE *));
        SYMBOL(ssize_t, getdelim, (char **, size_t *, int, FILE *));
        SYMBOL(ssize_t, __getdelim, (char **, size_t *, int, FILE *));
        SYMBOL(int, fscanf, (FILE *, const char *, ...));
        SYMBOL(int, vfscanf, (FILE *, const char *, va_list));
        SYMBOL(int, scanf, (const char *, ...));
        SYMBOL(int, vscanf, (const char *, va_list));
        SYMBOL(int, __isoc99_fscanf, (FILE *, const char *, ...));
        SYMBOL(int, __isoc99_vfscanf, (FILE *, const char *, va_list));
        SYMBOL(int, __isoc99_scanf, (const char *, ...));
        SYMBOL(int, __isoc99_vscanf, (const char *, va_list));
        SYMBOL(ssize_t, write, (int, const void *, size_t));
        SYMBOL(ssize_t, pwrite, (int, const void *, size_t, off_t));
        SYMBOL(ssize_t, pwrite64, (int, const void *, size_t, off_t));
        SYMBOL(ssize_t, writev, (int, const struct iovec *, int));
        SYMBOL(ssize_t, pwritev, (int, const struct iovec *, int, off_t));
        SYMBOL(ssize_t, pwritev64, (int, const struct iovec *, int, off_t));
        SYMBOL(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int));
        SYMBOL(ssize_t, pwritev64v2, (int, const struct iovec *, int, off_t, int));
        SYMBOL(size_t, fwrite, (const void *, size_t, size_t, FILE *));
        SYMBOL(size_t, fwrite_unlocked, (const void *, size_t, size_t, FILE *));
        SYMBOL(int, fputs, (const char *, FILE *));
        SYMBOL(int, fputs_unlocked, (const char *, FILE *));
        SYMBOL(int, fputc, (int, FILE *));
        SYMBOL(int, fputc_unlocked, (int, FILE *));
        SYMBOL(int, putc, (int, FILE *));
        SYMBOL(int, putc_unlocked, (int, FILE *));
        SYMBOL(int, fprintf, (FILE *, const char *, ...));
        SYMBOL(int, vfprintf, (FILE *, const char *, va_list));
        SYMBOL(int, printf, (const char *, ...));
        SYMBOL(int, vprintf, (const char *, va_list));
        SYMBOL(int, puts, (const char *));
        SYMBOL(int, putchar, (int));
        SYMBOL(int, fflush, (FILE *));
        SYMBOL(int, fflush_unlocked, (FILE *));
        SYMBOL(int, fclose, (FILE *));
        SYMBOL(ssize_t, copy_file_range, (int, off_t *, int, off_t *, size_t, unsigned));
        SYMBOL(ssize_t, sendfile, (int, int, off_t *, size_t));
        SYMBOL(ssize_t, sendfile64, (int, int, off_t *, size_t));
        SYMBOL(int, fsync, (int));
        SYMBOL(int, fdatasync, (int));
        SYMBOL(int, sync_file_range, (int, off_t, off_t, unsigned));
        SYMBOL(int, ftruncate, (int, off_t));
        SYMBOL(int, ftruncate64, (int, off_t));
        SYMBOL(int, fallocate, (int, int, off_t, off_t));
        SYMBOL(int, fallocate64, (int, int, off_t, off_t));
        SYMBOL(int, posix_fallocate, (int, off_t, off_t));
        SYMBOL(int, posix_fallocate64, (int, off_t, off_t));
        SYMBOL(int, rename, (const char *, const char *));
        SYMBOL(int, renameat, (int, const char *, int, const char *));
        SYMBOL(int, renameat2, (int, const char *, int, const char *, unsigned));
        SYMBOL(int, unlink, (const char *));
        SYMBOL(int, unlinkat, (int, const char *, int));
        SYMBOL(int, rmdir, (const char *));
        SYMBOL(int, mkdir, (const char *, mode_t));
        SYMBOL(int, mkdirat, (int, const char *, mode_t));
        SYMBOL(int, link, (const char *, const char *));
        SYMBOL(int, linkat, (int, const char *, int, const char *, int));
        SYMBOL(int, symlink, (const char *, const char *));
        SYMBOL(int, symlinkat, (const char *, int, const char *));
        SYMBOL(int, truncate, (const char *, off_t));
        SYMBOL(int, truncate64, (const char *, off_t));
        SYMBOL(int, close, (int));

        #define SETUP 1000
        #define UNEXPECTED 1001

        static char path[4096], other[4096 + 16];

        static int raw_open(const char *name, int flags) {
            return (int)syscall(SYS_openat, AT_FDCWD, name, flags, 0644);
        }
        static void raw_close(int fd) { syscall(SYS_close, fd); }
        /// The call's file, holding a line of text.
        static int made(void) {
            int fd = raw_open(path, O_WRONLY | O_CREAT | O_TRUNC);
            if (fd < 0 || syscall(SYS_write, fd, "hello 42\n", 9) != 9) return 0;
            raw_close(fd);
            return 1;
        }
        static int reader(void) { return made() ? raw_open(path, O_RDONLY) : -1; }
        static int writer(void) { return made() ? raw_open(path, O_WRONLY) : -1; }
        static FILE *stream(const char *mode) { return made() ? c_fopen(path, mode) : NULL; }

        // What a call's result says: the errno when it failed, 0 when it did its job.
        static int by_value(long result) { return result < 0 ? errno : 0; }
        static int by_pointer(const void *result) { return result ? 0 : errno; }
        static int by_count(size_t count, FILE *f) { return count > 0 ? 0 : ferror(f) ? errno : UNEXPECTED; }
        static int by_character(int c, FILE *f) { return c != EOF ? 0 : ferror(f) ? errno : UNEXPECTED; }
        static int by_conversions(int n, FILE *f) { return n == 1 ? 0 : n == EOF && ferror(f) ? errno : UNEXPECTED; }

        static int v_fscanf(FILE *f, const char *format, ...) {
            va_list list;
            va_start(list, format);
            int n = c_vfscanf(f, format, list);
            va_end(list);
            return n;
        }
        static int v_isoc99_fscanf(FILE *f, const char *format, ...) {
            va_list list;
            va_start(list, format);
            int n = c___isoc99_vfscanf(f, format, list);
            va_end(list);
            return n;
        }
        static int v_scanf(const char *format, ...) {
            va_list list;
            va_start(list, format);
            int n = c_vscanf(format, list);
            va_end(list);
            return n;
        }
        static int v_isoc99_scanf(const char *format, ...) {
            va_list list;
            va_start(list, format);
            int n = c___isoc99_vscanf(format, list);
            va_end(list);
            return n;
        }
        static int v_fprintf(FILE *f, const char *format, ...) {
            va_list list;
            va_start(list, format);
            int n = c_vfprintf(f, format, list);
            va_end(list);
            return n;
        }
        static int v_printf(const char *format, ...) {
            va_list list;
            va_start(list, format);
            int n = c_vprintf(format, list);
            va_end(list);
            return n;
        }

        /// Runs the caller of `name` in the row `row`; returns its result, or -1 without one.
        static int call(const char *row, const char *name) {
            char buffer[64], *line = NULL, word[16];
            size_t capacity = 0;
            struct iovec into = {buffer, sizeof buffer}, from = {"data", 4};
            FILE *f;
            int fd, source;
            off_t offset = 0;
        #define IS(r, n) (strcmp(row, r) == 0 && strcmp(name, n) == 0)
        #define NEED(condition) do { if (!(condition)) return SETUP; } while (0)
        #define READER NEED(made()); errno = 0
        #define FD(open_) NEED((fd = open_) >= 0); errno = 0
        #define STREAM(mode) NEED((f = stream(mode)) != NULL); errno = 0
        #define STDIN NEED(made() && c_freopen(path, "r", stdin) != NULL); f = stdin; errno = 0
        #define STDOUT NEED(made() && c_freopen(path, "w", stdout) != NULL); f = stdout; errno = 0
            // A source for copies, beside the row's folder (outside the plan's path).
        #define SOURCE NEED(made()); snprintf(other, sizeof other, "%s.source", path); \
            NEED((source = raw_open(other, O_RDWR | O_CREAT | O_TRUNC)) >= 0); \
            NEED(syscall(SYS_write, source, "data", 4) == 4); \
            FD(raw_open(path, O_WRONLY))

            // files / open
            if (IS("open", "open")) { READER; return by_value(c_open(path, O_RDONLY)); }
            if (IS("open", "open64")) { READER; return by_value(c_open64(path, O_RDONLY)); }
            if (IS("openat", "openat")) { READER; return by_value(c_openat(AT_FDCWD, path, O_RDONLY)); }
            if (IS("openat", "openat64")) { READER; return by_value(c_openat64(AT_FDCWD, path, O_RDONLY)); }
            if (IS("creat", "creat")) { READER; return by_value(c_creat(path, 0644)); }
            if (IS("creat", "creat64")) { READER; return by_value(c_creat64(path, 0644)); }
            if (IS("fopen", "fopen")) { READER; return by_pointer(c_fopen(path, "r")); }
            if (IS("fopen", "fopen64")) { READER; return by_pointer(c_fopen64(path, "r")); }
            if (IS("fdopen", "fdopen")) { FD(reader()); return by_pointer(c_fdopen(fd, "r")); }
            if (IS("freopen", "freopen") || IS("freopen", "freopen64")) {
                NEED(made() && (f = c_fopen("/dev/null", "r")) != NULL);
                errno = 0;
                return by_pointer(strcmp(name, "freopen") == 0 ? c_freopen(path, "r", f) : c_freopen64(path, "r", f));
            }
            // files / read
            if (IS("read", "read")) { FD(reader()); return by_value(c_read(fd, buffer, sizeof buffer)); }
            if (IS("pread", "pread")) { FD(reader()); return by_value(c_pread(fd, buffer, sizeof buffer, 0)); }
            if (IS("pread", "pread64")) { FD(reader()); return by_value(c_pread64(fd, buffer, sizeof buffer, 0)); }
            if (IS("read", "__read_chk")) {
                FD(reader());
                return by_value(c___read_chk(fd, buffer, sizeof buffer, sizeof buffer));
            }
            if (IS("pread", "__pread_chk")) {
                FD(reader());
                return by_value(c___pread_chk(fd, buffer, sizeof buffer, 0, sizeof buffer));
            }
            if (IS("pread", "__pread64_chk")) {
                FD(reader());
                return by_value(c___pread64_chk(fd, buffer, sizeof buffer, 0, sizeof buffer));
            }
            if (IS("readv", "readv")) { FD(reader()); return by_value(c_readv(fd, &into, 1)); }
            if (IS("preadv", "preadv")) { FD(reader()); return by_value(c_preadv(fd, &into, 1, 0)); }
            if (IS("preadv", "preadv64")) { FD(reader()); return by_value(c_preadv64(fd, &into, 1, 0)); }
            if (IS("preadv", "preadv2")) { FD(reader()); return by_value(c_preadv2(fd, &into, 1, 0, 0)); }
            if (IS("preadv", "preadv64v2")) { FD(reader()); return by_value(c_preadv64v2(fd, &into, 1, 0, 0)); }
            if (IS("fread", "fread")) { STREAM("r"); return by_count(c_fread(buffer, 1, sizeof buffer, f), f); }
            if (IS("fread", "fread_unlocked")) {
                STREAM("r");
                return by_count(c_fread_unlocked(buffer, 1, sizeof buffer, f), f);
            }
            if (IS("fread", "__fread_chk")) {
                STREAM("r");
                return by_count(c___fread_chk(buffer, sizeof buffer, 1, sizeof buffer, f), f);
            }
            if (IS("fread", "__fread_unlocked_chk")) {
                STREAM("r");
                return by_count(c___fread_unlocked_chk(buffer, sizeof buffer, 1, sizeof buffer, f), f);
            }
            if (IS("fread", "fgets")) { STREAM("r"); return by_count(c_fgets(buffer, sizeof buffer, f) != NULL, f); }
            if (IS("fread", "fgets_unlocked")) {
                STREAM("r");
                return by_count(c_fgets_unlocked(buffer, sizeof buffer, f) != NULL, f);
            }
            if (IS("fread", "__fgets_chk")) {
                STREAM("r");
                return by_count(c___fgets_chk(buffer, sizeof buffer, sizeof buffer, f) != NULL, f);
            }
            if (IS("fread", "__fgets_unlocked_chk")) {
                STREAM("r");
                return by_count(c___fgets_unlocked_chk(buffer, sizeof buffer, sizeof buffer, f) != NULL, f);
            }
            if (IS("fread", "fgetc")) { STREAM("r"); return by_character(c_fgetc(f), f); }
            if (IS("fread", "getc")) { STREAM("r"); return by_character(c_getc(f), f); }
            if (IS("fread", "_IO_getc")) { STREAM("r"); return by_character(c__IO_getc(f), f); }
            if (IS("fread", "getchar")) { STDIN; return by_character(c_getchar(), f); }
            if (IS("fread", "fgetc_unlocked")) { STREAM("r"); return by_character(c_fgetc_unlocked(f), f); }
            if (IS("fread", "getc_unlocked")) { STREAM("r"); return by_character(c_getc_unlocked(f), f); }
            if (IS("fread", "getchar_unlocked")) { STDIN; return by_character(c_getchar_unlocked(), f); }
            if (IS("fread", "__uflow")) { STREAM("r"); return by_character(c___uflow(f), f); }
            if (IS("fread", "__underflow")) { STREAM("r"); return by_character(c___underflow(f), f); }
            if (IS("fread", "getline")) { STREAM("r"); return by_count(c_getline(&line, &capacity, f) > 0, f); }
            if (IS("fread", "getdelim")) { STREAM("r"); return by_count(c_getdelim(&line, &capacity, ' ', f) > 0, f); }
            if (IS("fread", "__getdelim")) {
                STREAM("r");
                return by_count(c___getdelim(&line, &capacity, ' ', f) > 0, f);
            }
            if (IS("fread", "fscanf")) { STREAM("r"); return by_conversions(c_fscanf(f, "%15s", word), f); }
            if (IS("fread", "vfscanf")) { STREAM("r"); return by_conversions(v_fscanf(f, "%15s", word), f); }
            if (IS("fread", "scanf")) { STDIN; return by_conversions(c_scanf("%15s", word), f); }
            if (IS("fread", "vscanf")) { STDIN; return by_conversions(v_scanf("%15s", word), f); }
            if (IS("fread", "__isoc99_fscanf")) {
                STREAM("r");
                return by_conversions(c___isoc99_fscanf(f, "%15s", word), f);
            }
            if (IS("fread", "__isoc99_vfscanf")) {
                STREAM("r");
                return by_conversions(v_isoc99_fscanf(f, "%15s", word), f);
            }
            if (IS("fread", "__isoc99_scanf")) { STDIN; return by_conversions(c___isoc99_scanf("%15s", word), f); }
            if (IS("fread", "__isoc99_vscanf")) { STDIN; return by_conversions(v_isoc99_scanf("%15s", word), f); }
            // files / write
            if (IS("write", "write")) { FD(writer()); return by_value(c_write(fd, "x", 1)); }
            if (IS("pwrite", "pwrite")) { FD(writer()); return by_value(c_pwrite(fd, "x", 1, 0)); }
            if (IS("pwrite", "pwrite64")) { FD(writer()); return by_value(c_pwrite64(fd, "x", 1, 0)); }
            if (IS("writev", "writev")) { FD(writer()); return by_value(c_writev(fd, &from, 1)); }
            if (IS("pwritev", "pwritev")) { FD(writer()); return by_value(c_pwritev(fd, &from, 1, 0)); }
            if (IS("pwritev", "pwritev64")) { FD(writer()); return by_value(c_pwritev64(fd, &from, 1, 0)); }
            if (IS("pwritev", "pwritev2")) { FD(writer()); return by_value(c_pwritev2(fd, &from, 1, 0, 0)); }
            if (IS("pwritev", "pwritev64v2")) { FD(writer()); return by_value(c_pwritev64v2(fd, &from, 1, 0, 0)); }
            if (IS("fwrite", "fwrite")) { STREAM("w"); return by_count(c_fwrite("x", 1, 1, f), f); }
            if (IS("fwrite", "fwrite_unlocked")) { STREAM("w"); return by_count(c_fwrite_unlocked("x", 1, 1, f), f); }
            if (IS("fwrite", "fputs")) { STREAM("w"); return by_character(c_fputs("x", f), f); }
            if (IS("fwrite", "fputs_unlocked")) { STREAM("w"); return by_character(c_fputs_unlocked("x", f), f); }
            if (IS("fwrite", "fputc")) { STREAM("w"); return by_character(c_fputc('x', f), f); }
            if (IS("fwrite", "fputc_unlocked")) { STREAM("w"); return by_character(c_fputc_unlocked('x', f), f); }
            if (IS("fwrite", "putc")) { STREAM("w"); return by_character(c_putc('x', f), f); }
            if (IS("fwrite", "putc_unlocked")) { STREAM("w"); return by_character(c_putc_unlocked('x', f), f); }
            if (IS("fwrite", "fprintf")) { STREAM("w"); return by_value(c_fprintf(f, "%d", 1)); }
            if (IS("fwrite", "vfprintf")) { STREAM("w"); return by_value(v_fprintf(f, "%d", 1)); }
            if (IS("fwrite", "printf")) { STDOUT; return by_value(c_printf("%d", 1)); }
            if (IS("fwrite", "vprintf")) { STDOUT; return by_value(v_printf("%d", 1)); }
            if (IS("fwrite", "puts")) { STDOUT; return by_character(c_puts("x"), f); }
            if (IS("fwrite", "putchar")) { STDOUT; return by_character(c_putchar('x'), f); }
            // Output pending on the file: written to /dev/null (outside every plan), then the
            // stream's descriptor made a copy of the file's.
            if (IS("fflush", "fflush") || IS("fflush", "fflush_unlocked") || IS("fflush", "fclose")) {
                FD(writer());
                NEED((f = c_fopen("/dev/null", "w")) != NULL && c_fputs("pending", f) >= 0 && dup2(fd, fileno(f)) >= 0);
                errno = 0;
                int result = strcmp(name, "fflush") == 0   ? c_fflush(f)
                             : strcmp(name, "fclose") == 0 ? c_fclose(f)
                                                           : c_fflush_unlocked(f);
                return result == 0 ? 0 : errno;
            }
            if (IS("copy_file_range", "copy_file_range")) {
                SOURCE;
                return by_value(c_copy_file_range(source, &offset, fd, NULL, 4, 0));
            }
            if (IS("sendfile", "sendfile")) { SOURCE; return by_value(c_sendfile(fd, source, &offset, 4)); }
            if (IS("sendfile", "sendfile64")) { SOURCE; return by_value(c_sendfile64(fd, source, &offset, 4)); }
            // files / sync, truncate
            if (IS("fsync", "fsync")) { FD(writer()); return by_value(c_fsync(fd)); }
            if (IS("fdatasync", "fdatasync")) { FD(writer()); return by_value(c_fdatasync(fd)); }
            if (IS("sync_file_range", "sync_file_range")) {
                FD(writer());
                return by_value(c_sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE));
            }
            if (IS("ftruncate", "ftruncate")) { FD(writer()); return by_value(c_ftruncate(fd, 0)); }
            if (IS("ftruncate", "ftruncate64")) { FD(writer()); return by_value(c_ftruncate64(fd, 0)); }
            if (IS("fallocate", "fallocate")) { FD(writer()); return by_value(c_fallocate(fd, 0, 0, 4096)); }
            if (IS("fallocate", "fallocate64")) { FD(writer()); return by_value(c_fallocate64(fd, 0, 0, 4096)); }
            if (IS("posix_fallocate", "posix_fallocate")) { FD(writer()); return c_posix_fallocate(fd, 0, 4096); }
            if (IS("posix_fallocate", "posix_fallocate64")) { FD(writer()); return c_posix_fallocate64(fd, 0, 4096); }
            // files / rename, unlink, mkdir (names in the row's folder)
            snprintf(other, sizeof other, "%s.renamed", path);
            if (IS("rename", "rename")) { READER; return by_value(c_rename(path, other)); }
            if (IS("rename", "renameat")) { READER; return by_value(c_renameat(AT_FDCWD, path, AT_FDCWD, other)); }
            if (IS("rename", "renameat2")) { READER; return by_value(c_renameat2(AT_FDCWD, path, AT_FDCWD, other, 0)); }
            if (IS("unlink", "unlink")) { READER; return by_value(c_unlink(path)); }
            if (IS("unlink", "unlinkat")) { READER; return by_value(c_unlinkat(AT_FDCWD, path, 0)); }
            if (IS("rmdir", "rmdir") || IS("rmdir", "unlinkat")) {
                NEED(syscall(SYS_mkdirat, AT_FDCWD, path, 0755) == 0);
                errno = 0;
                return by_value(strcmp(name, "rmdir") == 0 ? c_rmdir(path) : c_unlinkat(AT_FDCWD, path, AT_REMOVEDIR));
            }
            if (IS("mkdir", "mkdir")) { errno = 0; return by_value(c_mkdir(path, 0755)); }
            if (IS("mkdir", "mkdirat")) { errno = 0; return by_value(c_mkdirat(AT_FDCWD, path, 0755)); }
            // files / link, symlink (the new name is the row's), truncate by name
            if (IS("link", "link") || IS("link", "linkat")) {
                int source = raw_open(other, O_WRONLY | O_CREAT);
                NEED(source >= 0 && close(source) == 0);
                errno = 0;
                return by_value(strcmp(name, "link") == 0 ? c_link(other, path) : c_linkat(AT_FDCWD, other, AT_FDCWD, path, 0));
            }
            if (IS("symlink", "symlink")) { errno = 0; return by_value(c_symlink("target", path)); }
            if (IS("symlink", "symlinkat")) { errno = 0; return by_value(c_symlinkat("target", AT_FDCWD, path)); }
            if (IS("truncate", "truncate")) { READER; return by_value(c_truncate(path, 0)); }
            if (IS("truncate", "truncate64")) { READER; return by_value(c_truncate64(path, 0)); }
            // files / close
            if (IS("close", "close")) { FD(reader()); return by_value(c_close(fd)); }
            if (IS("fclose", "fclose")) { STREAM("r"); return c_fclose(f) == 0 ? 0 : errno; }
            return -1;
        }

        int main(int argc, char **argv) {
            if (argc < 3) return 2;
            for (int i = 3; i < argc; i++) {
                fflush(stdout);
                pid_t child = fork();
                if (child == 0) {
                    snprintf(path, sizeof path, "%s/%s", argv[2], argv[i]);
                    int result = call(argv[1], argv[i]);
                    _exit(result < 0 ? 250 : result == SETUP ? 251 : result == UNEXPECTED ? 252 : result);
                }
                int status = 0;
                if (child < 0 || waitpid(child, &status, 0) != child) return 3;
                int code = WIFEXITED(status) ? WEXITSTATUS(status) : 253;
                const char *words[] = {"nocaller", "setup", "unexpected", "crashed"};
                if (code >= 250) printf("%s %s\n", argv[i], words[code - 250]);
                else printf("%s %d\n", argv[i], code);
            }
            return 0;
        }
        """#
}
#endif
