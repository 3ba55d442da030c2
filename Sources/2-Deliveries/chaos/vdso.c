// The vDSO of a supervised program (vdso.h): patched at its exec stop when this machine
// allows it, hidden otherwise, and said.
//
// Patching redirects rather than rewrites: programs (Go's runtime, glibc, musl) look the
// vDSO's clock functions up in its dynamic symbol table after they start, so the
// supervisor rewrites the `st_value` of `__vdso_clock_gettime`, `__vdso_gettimeofday`,
// `__vdso_time` and their unprefixed aliases to point at wrappers (vdso_code.c) in a page
// it maps into the program. A wrapper calls the vDSO's own function, untouched, and
// applies what the shared page says (vdso_page.h). The vDSO is a private mapping the
// kernel lets a tracer write (PTRACE_POKEDATA forces it): the written page becomes this
// process's own copy, and its forks inherit it.
//
// At the exec stop (inject.c makes the system calls): an anonymous page for the wrappers;
// openat, mmap MAP_SHARED and close of the shared page's file, which `chaos run` keeps in
// a private folder of its own; the wrappers and the vDSO's addresses written into the
// page, which then becomes read-only and executable; the symbols rewritten.
//
// The shared page holds, per clock id, what a wrapper does: the vDSO's own reading (no
// entry fakes it), the system call (the plan decides each reading: counted modifiers,
// probabilities, windows, several entries), or a steady answer read from the page (an
// offset, a frozen instant, virtual time): exactly what the engine's fast path answers
// in-process (chaos_fast_clock.h). It is rewritten whenever the plan changes or virtual
// time moves (cf_clock_listen). The wrappers count their readings in the page; they are
// moved into the entry's counts (cf_fast_count_many) when the plan changes and before any
// report.
#define _GNU_SOURCE
#include "vdso.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "CChaosFaults.h"
#include "answer.h"
#include "chaos_fast_clock.h"
#include "inject.h"
#include "tracee.h"
#include "vdso_elf.h"
#include "vdso_page.h"

#define PAGE 4096

// Everything below is guarded by `lock`: the main thread patches at exec stops, and the
// listener runs on whichever thread installs a plan or moves virtual time.
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int started;                           ///< chaos_vdso_start was called
static const char *refusal;                   ///< why nothing is patched in this run (NULL: it may be)
static char folder[PATH_MAX], file[PATH_MAX]; ///< the shared page's private folder and file ("": none yet)
static struct chaos_vdso_shared *shared;      ///< the supervisor's mapping of it
static uint64_t page_counts;                  ///< the counts the page's readings are for
static uint64_t readings;                     ///< readings moved into counts so far
static int processes;                         ///< processes patched

static int64_t realtime_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

// MARK: - The shared page

/// Moves the readings counted in the page into the counts they are for. Under lock.
static void settle_locked(void) {
    if (!shared) return;
    uint64_t calls = __atomic_exchange_n(&shared->calls, 0, __ATOMIC_RELAXED);
    if (!calls) return;
    readings += calls;
    cf_fast_count_many(page_counts, calls, realtime_ns());
}

/// What the page should say now (its words but the sequence and the calls), and the
/// counts its steady answers are for.
static void page_words(struct chaos_vdso_shared *out, uint64_t *counts) {
    memset(out, 0, sizeof *out);
    *counts = 0;
    if (!chaos_fault_point_active(CHAOS_POINT_CLOCK)) return;
    // What the plan may fake traps; what it never fakes stays the vDSO's (as the filter has it).
    uint32_t flags = chaos_fault_clock_flags();
    for (int clock = 0; clock < CHAOS_VDSO_CLOCKS; clock++) {
        int32_t source = chaos_clock_source(clock);
        int moves = source && (source != CHAOS_CLOCKSRC_MONOTONIC || (flags & CHAOS_CLOCK_FLAG_MONOTONIC));
        out->mode[clock] = moves ? CHAOS_VDSO_TRAP : CHAOS_VDSO_ORIGINAL;
    }
    // The engine's fast path, read under its sequence lock (written by installs only).
    for (int tries = 0; tries < 100; tries++) {
        uint64_t sequence = atomic_load_explicit(&cf_fast.sequence, memory_order_acquire);
        if (sequence & 1) continue;
        int32_t kind = atomic_load_explicit(&cf_fast.kind, memory_order_relaxed);
        int64_t seconds = atomic_load_explicit(&cf_fast.seconds, memory_order_relaxed);
        int64_t nanoseconds = atomic_load_explicit(&cf_fast.nanoseconds, memory_order_relaxed);
        int64_t ns = atomic_load_explicit(&cf_fast.ns, memory_order_relaxed);
        uint64_t factor_bits = atomic_load_explicit(&cf_fast.factor_bits, memory_order_relaxed);
        uint64_t id = atomic_load_explicit(&cf_fast.counts, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&cf_fast.sequence, memory_order_relaxed) != sequence) continue;
        if (kind == CHAOS_ACT_OFFSET || kind == CHAOS_ACT_FROZEN) {
            uint8_t mode = kind == CHAOS_ACT_OFFSET ? CHAOS_VDSO_OFFSET : CHAOS_VDSO_FROZEN;
            out->mode[CLOCK_REALTIME] = out->mode[CLOCK_REALTIME_COARSE] = mode;
            out->seconds = seconds;
            out->nanoseconds = nanoseconds;
            *counts = id;
        } else if (kind == CHAOS_ACT_SPEED) {
            out->mode[CLOCK_REALTIME] = out->mode[CLOCK_REALTIME_COARSE] = CHAOS_VDSO_SPEED;
            out->speed_anchor = ns;
            memcpy(&out->factor, &factor_bits, sizeof out->factor);
            out->zero = 0;
            out->half = 0.5;
            out->minus_half = -0.5;
            out->limit = 9.2e18; // decide.c's round_ns
            out->minus_limit = -9.2e18;
            *counts = id;
        } else if (kind == CHAOS_ACT_VIRTUAL && atomic_load_explicit(&cf_vt.running, memory_order_acquire)) {
            // As chaos_vt_reading_ns: the virtual monotonic time plus the clock's offset.
            static const int clocks[] = {CLOCK_REALTIME,  CLOCK_REALTIME_COARSE, CLOCK_REALTIME_ALARM,
                                         CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW,   CLOCK_MONOTONIC_COARSE,
                                         CLOCK_BOOTTIME,  CLOCK_BOOTTIME_ALARM};
            int64_t wall = atomic_load_explicit(&cf_vt.wall_minus_mono, memory_order_relaxed);
            int64_t boot = atomic_load_explicit(&cf_vt.boot_minus_mono, memory_order_relaxed);
            for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
                int clock = clocks[i];
                out->mode[clock] = CHAOS_VDSO_VIRTUAL;
                out->offset[clock] =
                    clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE || clock == CLOCK_REALTIME_ALARM ? wall
                    : clock == CLOCK_BOOTTIME || clock == CLOCK_BOOTTIME_ALARM                                 ? boot
                                                                                                               : 0;
            }
            out->base = atomic_load_explicit(&cf_vt.base, memory_order_acquire);
            out->anchor = atomic_load_explicit(&cf_vt.anchor, memory_order_relaxed);
            out->flowing = atomic_load_explicit(&cf_vt.flowing, memory_order_relaxed);
            *counts = id;
        }
        return;
    }
}

/// Rewrites the shared page when what it should say changed. Under lock.
static void publish_locked(void) {
    if (!shared) return;
    struct chaos_vdso_shared next;
    uint64_t counts;
    page_words(&next, &counts);
    if (counts != page_counts) settle_locked(); // the readings so far are the old counts'
    page_counts = counts;
    size_t from = offsetof(struct chaos_vdso_shared, mode), to = offsetof(struct chaos_vdso_shared, pad);
    if (memcmp((char *)shared + from, (char *)&next + from, to - from) == 0) return;
    uint64_t sequence = __atomic_load_n(&shared->sequence, __ATOMIC_RELAXED);
    __atomic_store_n(&shared->sequence, sequence + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    for (int clock = 0; clock < CHAOS_VDSO_CLOCKS; clock++) {
        __atomic_store_n(&shared->mode[clock], next.mode[clock], __ATOMIC_RELAXED);
        __atomic_store_n(&shared->offset[clock], next.offset[clock], __ATOMIC_RELAXED);
    }
    __atomic_store_n(&shared->seconds, next.seconds, __ATOMIC_RELAXED);
    __atomic_store_n(&shared->nanoseconds, next.nanoseconds, __ATOMIC_RELAXED);
    __atomic_store_n(&shared->base, next.base, __ATOMIC_RELAXED);
    __atomic_store_n(&shared->anchor, next.anchor, __ATOMIC_RELAXED);
    __atomic_store_n(&shared->flowing, next.flowing, __ATOMIC_RELAXED);
    __atomic_store_n(&shared->speed_anchor, next.speed_anchor, __ATOMIC_RELAXED);
    __atomic_store(&shared->factor, &next.factor, __ATOMIC_RELAXED);
    __atomic_store(&shared->zero, &next.zero, __ATOMIC_RELAXED);
    __atomic_store(&shared->half, &next.half, __ATOMIC_RELAXED);
    __atomic_store(&shared->minus_half, &next.minus_half, __ATOMIC_RELAXED);
    __atomic_store(&shared->limit, &next.limit, __ATOMIC_RELAXED);
    __atomic_store(&shared->minus_limit, &next.minus_limit, __ATOMIC_RELAXED);
    __atomic_store_n(&shared->sequence, sequence + 2, __ATOMIC_RELEASE);
}

static void collect(void) {
    pthread_mutex_lock(&lock);
    settle_locked();
    pthread_mutex_unlock(&lock);
}

static void clock_changed(void) {
    pthread_mutex_lock(&lock);
    publish_locked();
    pthread_mutex_unlock(&lock);
}

/// Makes the shared page's file (once). Its folder is private to this run (mkdtemp) but
/// traversable, and the file readable and writable by all, so that a program that drops
/// root (setpriv, PostgreSQL) still maps it at its next exec. Under lock. 0, or -1 with
/// the reason in `why`.
static int make_page_locked(const char **why) {
    if (shared) return 0;
    // As the tally's (parent.c): $TMPDIR when set, else memory, else /tmp.
    const char *temporary = getenv("TMPDIR");
    if (!temporary || temporary[0] != '/' || access(temporary, W_OK) != 0)
        temporary = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(folder, sizeof folder, "%s/chaos-clock-XXXXXX", temporary);
    if (!mkdtemp(folder)) {
        folder[0] = 0;
        *why = "cannot make the clock page's folder";
        return -1;
    }
    chmod(folder, 0711);
    snprintf(file, sizeof file, "%s/clock", folder);
    int fd = open(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    void *mapped = MAP_FAILED;
    if (fd >= 0 && fchmod(fd, 0666) == 0 && ftruncate(fd, PAGE) == 0)
        mapped = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0) close(fd);
    if (mapped == MAP_FAILED) {
        unlink(file);
        rmdir(folder);
        file[0] = folder[0] = 0;
        *why = "cannot make the clock page";
        return -1;
    }
    shared = mapped;
    publish_locked();
    return 0;
}

// Set once, before any other thread starts (chaos_vdso_start); read by every thread after.
static int wanted;

int chaos_vdso_wanted(void) { return wanted; }

void chaos_vdso_start(int clocks) {
    wanted = clocks;
    pthread_mutex_lock(&lock);
    started = 1;
#if defined(__x86_64__)
    const char *asked = getenv("CHAOS_VDSO");
    if (asked && strcmp(asked, "hide") == 0) refusal = "CHAOS_VDSO=hide asks for the fallback";
#else
    refusal = "patching the vDSO is done on x86_64 only";
#endif
    pthread_mutex_unlock(&lock);
    cf_clock_listen(clock_changed);
    cf_fast_collect_with(collect);
}

uint64_t chaos_vdso_readings(int *patched) {
    pthread_mutex_lock(&lock);
    settle_locked();
    uint64_t total = readings;
    if (patched) *patched = processes;
    pthread_mutex_unlock(&lock);
    return total;
}

void chaos_vdso_end(void) {
    cf_clock_listen(NULL); // the counts still collect what processes left running read
    pthread_mutex_lock(&lock);
    settle_locked();
    if (file[0]) unlink(file);
    if (folder[0]) rmdir(folder);
    file[0] = folder[0] = 0;
    pthread_mutex_unlock(&lock);
}

// MARK: - At the exec stop

/// Reads the vDSO of `pid` mapped at `base` (page by page, up to its end) into `image`;
/// its length, or 0.
static size_t read_image(pid_t pid, uint64_t base, unsigned char *image, size_t capacity) {
    size_t length = 0;
    while (length + PAGE <= capacity && chaos_tracee_read(pid, base + length, image + length, PAGE) == 0)
        length += PAGE;
    return length;
}

/// One system call made in the process: its result, or a negative errno (-EIO when the
/// process could not be made to run it).
static long call(struct chaos_injection *injection, long number, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                 uint64_t e, uint64_t f) {
    uint64_t arguments[6] = {a, b, c, d, e, f};
    long result;
    return chaos_inject_call(injection, number, arguments, &result) == 0 ? result : -EIO;
}

/// Patches the vDSO of `pid`, stopped after its exec's return (inject.c). 0, or -1 with
/// the reason in `*why` (the program's vDSO is then unchanged, or changed so that hiding
/// it still works).
static int patch(struct chaos_injection *injection, const char **why) {
    pid_t pid = injection->pid;
    uint64_t base = 0;
    int found = chaos_tracee_vdso_base(pid, &base);
    if (found <= 0) return *why = found == 0 ? "it has no vDSO" : "its auxiliary vector cannot be read", -1;
    static unsigned char image[64 * PAGE]; // the main thread's only
    size_t length = read_image(pid, base, image, sizeof image);
    struct chaos_vdso_image vdso;
    if (chaos_vdso_parse(image, length, base, &vdso, why) != 0) return -1;
    struct chaos_vdso_code code;
    chaos_vdso_code_get(&code);
    if (!code.length || CHAOS_VDSO_CODE_AT + code.length > PAGE) return *why = "the wrappers do not fit a page", -1;
    pthread_mutex_lock(&lock);
    int made = make_page_locked(why);
    size_t name_length = strlen(file) + 1;
    pthread_mutex_unlock(&lock);
    if (made != 0) return -1;
    injection->instruction = vdso.instruction;
    // The private page: the file's name first (where the code goes later), then the rest.
    long local =
        call(injection, SYS_mmap, 0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0);
    if (local < 0 && local > -4096) return *why = "mmap failed in it", -1;
    uint64_t at = (uint64_t)local;
    if (chaos_tracee_write(pid, at + CHAOS_VDSO_CODE_AT, file, name_length) != 0)
        return *why = "its new page cannot be written", -1;
    long fd = call(injection, SYS_openat, (uint64_t)AT_FDCWD, at + CHAOS_VDSO_CODE_AT, O_RDWR | O_CLOEXEC, 0, 0, 0);
    if (fd < 0) return *why = "it cannot open the clock page (another mount namespace, or no access)", -1;
    long mapped = call(injection, SYS_mmap, 0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, (uint64_t)fd, 0);
    call(injection, SYS_close, (uint64_t)fd, 0, 0, 0, 0, 0);
    if (mapped < 0 && mapped > -4096) return *why = "it cannot map the clock page", -1;
    struct chaos_vdso_local header = {
        .clock_gettime = (int (*)(int, void *))(uintptr_t)vdso.function[CHAOS_VDSO_CLOCK_GETTIME],
        .gettimeofday = (int (*)(void *, void *))(uintptr_t)vdso.function[CHAOS_VDSO_GETTIMEOFDAY],
        .time = (long (*)(long *))(uintptr_t)vdso.function[CHAOS_VDSO_TIME],
        .shared = (struct chaos_vdso_shared *)(uintptr_t)mapped,
    };
    if (chaos_tracee_write(pid, at, &header, sizeof header) != 0 ||
        chaos_tracee_write(pid, at + CHAOS_VDSO_CODE_AT, code.bytes, code.length) != 0)
        return *why = "its new page cannot be written", -1;
    if (call(injection, SYS_mprotect, at, PAGE, PROT_READ | PROT_EXEC, 0, 0, 0) != 0)
        return *why = "mprotect failed in it", -1;
    // Last, the symbols: a forced write (the vDSO is not writable), which gives the process
    // its own copy of the page.
    size_t wrappers[3] = {code.clock_gettime, code.gettimeofday, code.time};
    for (int i = 0; i < vdso.slot_count; i++) {
        uint64_t target = at + CHAOS_VDSO_CODE_AT + wrappers[vdso.slots[i].function];
        uint64_t value = target - vdso.load_offset, check = 0;
        if (ptrace(PTRACE_POKEDATA, pid, (void *)(uintptr_t)vdso.slots[i].address, (void *)(uintptr_t)value) != 0 ||
            chaos_tracee_read(pid, vdso.slots[i].address, &check, sizeof check) != 0 || check != value)
            return *why = "its vDSO cannot be written", -1;
    }
    return 0;
}

/// The program process `pid` runs, for the report.
static void program_of(pid_t pid, char *out, size_t capacity) {
    char link[64];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t length = readlink(link, out, capacity - 1);
    out[length > 0 ? length : 0] = 0;
}

int chaos_vdso_exec_stop(pid_t pid) {
    pthread_mutex_lock(&lock);
    const char *why = started ? refusal : "the supervisor did not start it";
    pthread_mutex_unlock(&lock);
    struct chaos_injection injection;
    memset(&injection, 0, sizeof injection);
    if (!why) {
        if (chaos_inject_begin(&injection, pid) != 0) {
            why = "it cannot be stopped after its exec";
        } else {
            if (patch(&injection, &why) == 0) why = NULL;
            if (chaos_inject_end(&injection) != 0) why = "its registers cannot be given back";
        }
    }
    if (!why) {
        pthread_mutex_lock(&lock);
        processes++;
        pthread_mutex_unlock(&lock);
        return injection.signal;
    }
    char program[256];
    program_of(pid, program, sizeof program);
    if (!chaos_fault_point_active(CHAOS_POINT_CLOCK)) {
        // Nothing to hide it from now; a clock entry `chaos ctl` enables later misses it.
        fprintf(stderr,
                "chaos run: warning: cannot patch the vDSO of process %d (%s: %s); no clock entry is active, so "
                "its clock stays real even if one is applied later\n",
                (int)pid, program, why);
        chaos_answer_record_event(CHAOS_TREE_VDSO_UNPATCHED, pid, program);
        return injection.signal;
    }
    // The fallback: no vDSO at all, so that every reading is a system call the filter traps.
    int hidden = chaos_tracee_hide_vdso(pid);
    if (hidden < 0)
        fprintf(stderr,
                "chaos run: warning: cannot patch the vDSO of process %d (%s: %s), nor hide it; its clock readings "
                "may stay real\n",
                (int)pid, program, why);
    else if (hidden > 0)
        fprintf(stderr,
                "chaos run: warning: cannot patch the vDSO of process %d (%s: %s); it is hidden instead, so its "
                "clock readings are system calls the supervisor answers (microseconds each, not nanoseconds)\n",
                (int)pid, program, why);
    if (hidden != 0) chaos_answer_record_event(CHAOS_TREE_VDSO_HIDDEN, pid, program);
    return injection.signal;
}
