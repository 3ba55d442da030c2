// Interposition library for `chaos run` (LD_PRELOAD): a thin layer over CChaosFaults.
//
// The interceptors themselves are in Sources/2-Deliveries/Interceptors/interceptors.inc, compiled
// here under the libc names and in CChaosIntercept under prefixed names for the in-process
// delivery: one source, so the two deliveries cannot drift. Each describes its call to
// the engine (chaos_fault_decide) and executes the outcome: wait, then call the real
// function, fail with the errno the plan names, shorten the transfer, or report a shifted
// time. With no plan entry for a point, its functions cost one atomic load and a branch
// on top of the real call. An `ask` node (answered only in-process) calls the original.
//
// The plan comes from the environment, read once in the constructor:
//   CHAOS_PLAN        path of a plan file (Docs/FaultPlan.md)
//   CHAOS_PLAN_TEXT   the plan itself (wins over CHAOS_PLAN)
//   CHAOS_CLOCK_ANCHOR  real ns since 1970 that `speed anchor=start` scales from; set by
//                     the first process of a tree that needs it and inherited by children,
//                     so a process tree shares one clock.
// A plan that does not parse stops the program before main with exit status 125 and the
// located error on stderr: running it without the chaos it asked for would mislead.
//
// Real functions come from dlsym(RTLD_NEXT), resolved on first use, never from a GOT slot.
// Calls made before the constructor (other libraries' constructors) go straight to the
// real function; so do calls made while dlsym itself runs (a thread-local guard).
#define _GNU_SOURCE
// glibc defines some stdio functions inline when optimizing; this file defines them.
#define __NO_INLINE__ 1
#include "chaos_preload.h"

#if defined(__linux__)

#include "CChaosFaults.h"
#include "chaos_control.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timeb.h>
#include <sys/timerfd.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <mqueue.h>
#include <poll.h>
#include <semaphore.h>
#include <pthread.h>
#include <sys/uio.h>
#include <limits.h>
#include <spawn.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

// The interceptors (Sources/2-Deliveries/Interceptors/interceptors.inc, shared with the in-process
// delivery) under the libc names, exported; the real functions are the next definitions.
#define IX(name) name
#define IX_FN EXPORT
#define IX_LOOKUP(name) dlsym(RTLD_NEXT, (name))
#define IX_INPROCESS 0
#include "interceptors.inc"

EXPORT unsigned long chaos_preload_chaotic_calls(void) { return atomic_load(&ix_chaotic_calls); }

#include "process_tree.inc"

// MARK: - Loading the plan

/// Writes a line to stderr without stdio (the program's own stdio is not ready yet).
static void say(const char *a, const char *b, const char *c) {
    const char *parts[] = {"chaos preload: ", a, b, c, "\n"};
    for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (parts[i]) syscall(SYS_write, 2, parts[i], strlen(parts[i]));
}

/// Whether this library can carry `plan` (one it starts with, or one `chaos ctl` applies):
/// power loss must see every write, and writes libc makes inside itself (stdio flushes)
/// pass no interceptor here, so a rollback would miss them.
static int preload_carries(const chaos_plan *plan, char *why, size_t capacity) {
    for (int32_t e = 0; e < chaos_plan_entry_count(plan); e++) {
        if (!chaos_plan_entry_has_kind(plan, e, CHAOS_NODE_POWER_LOSS)) continue;
        snprintf(why, capacity,
                 "entry %d loses power, which needs every write the program makes, and the preload library does not "
                 "see writes inside the C library (stdio flushes); run the program with power-loss entries from the "
                 "start, so that chaos run chooses the seccomp delivery",
                 e + 1);
        return -1;
    }
    return 0;
}

/// Reads a plan file with raw system calls; NULL (and a message) when it cannot.
static char *read_plan_file(const char *path, size_t *length) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        say("cannot open CHAOS_PLAN ", path, strerror(errno));
        return NULL;
    }
    size_t capacity = 4096, used = 0;
    char *text = malloc(capacity);
    while (text) {
        if (used == capacity) {
            if (capacity >= CHAOS_PLAN_MAX_TEXT + 1) break;
            char *grown = realloc(text, capacity * 2);
            if (!grown) {
                free(text);
                text = NULL;
                break;
            }
            text = grown;
            capacity *= 2;
        }
        long got = syscall(SYS_read, fd, text + used, capacity - used);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        used += (size_t)got;
    }
    syscall(SYS_close, fd);
    *length = used;
    return text;
}

SLOT(setenv);

/// The tally this process counts into (NULL: none), for the fork handler.
static chaos_tally_header *tally_header;

/// A forked child decides from the same shared counters: one more process of the tree.
static void tally_after_fork(void) {
    if (tally_header) atomic_fetch_add((_Atomic uint64_t *)&tally_header->processes, 1);
}

/// Counts every entry of `plan` into the file `chaos run` reports from (CHAOS_RUN_TALLY)
/// as well, and has its entries decide from the counters the whole tree shares there;
/// returns its header (NULL: neither). A file that is gone means `chaos run` has ended and
/// reports nothing more; one of another shape is said, as its report would then be wrong.
/// With a control endpoint (`control`), entries it applies are counted there too, as not
/// reported.
static chaos_tally_header *mirror_into(const char *path, chaos_plan *plan, int control) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat info;
    int32_t count = chaos_plan_entry_count(plan);
    size_t size = chaos_tally_size(plan);
    void *mapped = syscall(SYS_fstat, fd, &info) == 0 && (size_t)info.st_size == size
                       ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                       : MAP_FAILED;
    syscall(SYS_close, fd);
    chaos_tally_header *header = mapped;
    if (mapped == MAP_FAILED || strncmp(header->magic, CHAOS_TALLY_MAGIC, sizeof header->magic) != 0 ||
        header->entries != (uint64_t)count) {
        if (mapped != MAP_FAILED) munmap(mapped, size);
        say("CHAOS_RUN_TALLY ", path, " is not the tally of this plan: chaos run's report will not count this process");
        return NULL;
    }
    uint64_t *pairs = (uint64_t *)(header + 1), *shared = pairs + 2 * count;
    chaos_last_act *last = chaos_tally_last_acts(header, plan);
    for (int32_t e = 0; e < count; e++) {
        chaos_plan_mirror_counts(plan, e, pairs + 2 * e);
        chaos_plan_mirror_last_act(plan, e, last + e);
        chaos_plan_share_counters(plan, e, shared);
        shared += chaos_plan_shared_counter_count(plan, e);
    }
    if (control) chaos_control_count_applied_into(&header->applied_later);
    atomic_fetch_add((_Atomic uint64_t *)&header->processes, 1);
    tally_header = header;
    pthread_atfork(NULL, NULL, tally_after_fork);
    return header;
}

/// The readings the clock's fast path answered reach the tally when the process ends.
__attribute__((destructor)) static void chaos_preload_flush(void) { chaos_fault_mirror_flush(); }

/// Takes the calling thread out of every interceptor for good: the control endpoint's
/// thread, whose own calls must never meet the faults it serves.
static void quiet_thread(void) { ix_busy++; }

// Whether CHAOS_CONTROL asked for an endpoint; set once, by the constructor.
static int control_wanted;

/// Why nobody can advance this process's virtual time (NULL: someone can).
static const char *advancer_gone(void) {
    if (!control_wanted) return "no control endpoint serves it; set CHAOS_CONTROL=unix to advance it with chaos ctl";
    return chaos_control_advancer_gone();
}

__attribute__((constructor)) static void chaos_preload_init(void) {
    char *(*get)(const char *) = REAL(getenv);
    if (!get) return;
    int control = control_wanted = chaos_control_wanted(get);
    chaos_fault_set_real_clock((chaos_real_clock_fn)REAL(clock_gettime));
    const char *inline_text = get("CHAOS_PLAN_TEXT"), *path = get("CHAOS_PLAN");
    char *owned = NULL;
    size_t length = 0;
    const char *text = NULL, *origin = NULL;
    if (inline_text) {
        text = inline_text;
        length = strlen(inline_text);
        origin = "CHAOS_PLAN_TEXT";
    } else if (path && *path) {
        owned = read_plan_file(path, &length);
        if (!owned) _exit(125);
        text = owned;
        origin = path;
    }
    if (control) chaos_control_check_plans(preload_carries);
    if (!text) {
        if (control) chaos_control_start(get, quiet_thread);
        return;
    }
    chaos_plan_error error;
    chaos_plan *plan = chaos_plan_parse(text, length, &error);
    char refusal[512];
    if (!plan) {
        char where[96];
        snprintf(where, sizeof where, " line %d, column %d: ", error.line, error.column);
        say(origin, where, error.message);
        _exit(125);
    }
    if (preload_carries(plan, refusal, sizeof refusal) != 0) {
        say(origin, ": ", refusal);
        _exit(125);
    }
    if (chaos_plan_needs_start_anchor(plan)) { // speed anchor=start: one anchor for the process tree
        const char *anchor = get("CHAOS_CLOCK_ANCHOR");
        int64_t anchor_ns = anchor ? strtoll(anchor, NULL, 10) : 0;
        if (anchor_ns <= 0) {
            anchor_ns = real_ns(CLOCK_REALTIME);
            char value[32];
            snprintf(value, sizeof value, "%lld", (long long)anchor_ns);
            int (*set)(const char *, const char *, int) = REAL(setenv);
            if (set) set("CHAOS_CLOCK_ANCHOR", value, 1);
        }
        chaos_fault_set_start_anchor(anchor_ns);
        if (control) chaos_control_anchor_chosen();
    }
    const char *stdio = get("CHAOS_RUN_STDIO"); // what chaos run was handed as 0–2
    for (int fd = 0; stdio && fd < 3; fd++) {
        char *end = NULL;
        unsigned long long device = strtoull(stdio, &end, 10), inode = 0;
        if (end && *end == ':') inode = strtoull(end + 1, &end, 10);
        chaos_fd_handed_down(fd, device, inode);
        stdio = end && *end == ',' ? end + 1 : NULL;
    }
    const char *tally = get("CHAOS_RUN_TALLY");
    chaos_tally_header *header = tally && *tally ? mirror_into(tally, plan, control) : NULL;
    tree_start(get, header, plan);
    if (control) chaos_control_adopt(plan);
    chaos_plan_install(plan);
    free(owned);
    if (control) chaos_control_start(get, quiet_thread);
    chaos_vt_set_advancer_probe(advancer_gone);
}

#else

unsigned long chaos_preload_chaotic_calls(void) { return 0; }

#endif

// SwiftPM links this library with the Swift driver, which names -lswiftCore right after
// the flags it extracts from the objects' .swift1_autolink_entries sections. Asking for
// --as-needed there keeps the runtime out of DT_NEEDED: nothing here uses it.
__attribute__((used, section(".swift1_autolink_entries"))) static const char chaos_preload_autolink[] =
    "-Xlinker\0--as-needed";
