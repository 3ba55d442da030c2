// Interposition library for `chaos run` (LD_PRELOAD): a thin layer over CChaosFaults.
//
// The interceptors themselves are in Sources/CChaosIntercept/interceptors.inc, compiled
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
//   CHAOS_PRELOAD_*   the older variables of `chaos run`, translated into a plan (see
//                     legacy_plan below) while the tool still writes them.
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
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timeb.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

// The interceptors (Sources/CChaosIntercept/interceptors.inc, shared with the in-process
// delivery) under the libc names, exported; the real functions are the next definitions.
#define IX(name) name
#define IX_FN EXPORT
#define IX_LOOKUP(name) dlsym(RTLD_NEXT, (name))
#define IX_INPROCESS 0
#include "interceptors.inc"

EXPORT unsigned long chaos_preload_chaotic_calls(void) { return atomic_load(&ix_chaotic_calls); }

// MARK: - Loading the plan

/// Writes a line to stderr without stdio (the program's own stdio is not ready yet).
static void say(const char *a, const char *b, const char *c) {
    const char *parts[] = {"chaos preload: ", a, b, c, "\n"};
    for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (parts[i]) syscall(SYS_write, 2, parts[i], strlen(parts[i]));
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
            if (!grown) { free(text); text = NULL; break; }
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

/// A probability as decimal text that does not depend on the locale.
static const char *chance(double probability, char *buffer) {
    if (!(probability > 0)) return "0";
    if (probability >= 1) return "1";
    snprintf(buffer, 24, "0.%09lld", (long long)(probability * 1e9 + 0.5));
    return buffer;
}

/// Builds plan text from the older CHAOS_PRELOAD_* variables (see the Swift `chaos run`
/// of before plans); NULL when none is set.
static char *legacy_plan(char *(*get)(const char *)) {
    const char *seed = get("CHAOS_PRELOAD_SEED"), *clock = get("CHAOS_PRELOAD_CLOCK"), *env = get("CHAOS_PRELOAD_GETENV");
    const char *connect_ = get("CHAOS_PRELOAD_CONNECT"), *latency = get("CHAOS_PRELOAD_CONNECT_LATENCY");
    const char *sockets = get("CHAOS_PRELOAD_SOCKETS"), *dns = get("CHAOS_PRELOAD_DNS"), *files = get("CHAOS_PRELOAD_FILES");
    if (!clock && !env && !connect_ && !latency && !sockets && !dns && !files) return NULL;
    size_t capacity = 65536, used = 0;
    char *text = malloc(capacity);
    if (!text) return NULL;
#define ADD(...) do { int n_ = snprintf(text + used, capacity - used, __VA_ARGS__); if (n_ > 0 && (size_t)n_ < capacity - used) used += (size_t)n_; } while (0)
    ADD("chaos-plan 1\nseed %llu\n", seed ? strtoull(seed, NULL, 10) : 0ull);
    // Numbers are written as integers so that the locale never matters.
    double value = 0;
    long after = 0;
    if (clock) {
        if (sscanf(clock, "offset:%lf", &value) == 1) ADD("entry clock\nnode 0 offset by=%lld\n", (long long)(value * 1e9));
        else if (sscanf(clock, "freeze:%lf", &value) == 1) ADD("entry clock\nnode 0 frozen at=%lld\n", (long long)(value * 1e9));
        else if (sscanf(clock, "speed:%lf", &value) == 1) ADD("entry clock\nnode 0 speed factor=%lld.%06lld\n", (long long)value, (long long)((value - (double)(long long)value) * 1e6));
        else if (sscanf(clock, "jump:%lf:%ld", &value, &after) == 2) {
            if (after > 0) ADD("entry clock\nnode 0 sequential children=1*%ld,2\nnode 1 original\nnode 2 offset by=%lld\n", after, (long long)(value * 1e9));
            else ADD("entry clock\nnode 0 offset by=%lld\n", (long long)(value * 1e9));
        }
    }
    if (env && *env) {
        ADD("entry getenv\nnode 0 composite\n");
        int count = 0;
        for (const char *c = env; *c && count < 64; count++) {
            const char *end = strchr(c, '\x1f');
            size_t n = end ? (size_t)(end - c) : strlen(c);
            const char *equals = memchr(c, '=', n);
            if (c[0] == '-') ADD("case %d name=\"%.*s\"\n", count + 1, (int)n - 1, c + 1);
            else if (equals) ADD("case %d name=\"%.*s\"\n", count + 1, (int)(equals - c), c);
            c += n + (end ? 1 : 0);
        }
        count = 0;
        for (const char *c = env; *c && count < 64; count++) {
            const char *end = strchr(c, '\x1f');
            size_t n = end ? (size_t)(end - c) : strlen(c);
            const char *equals = memchr(c, '=', n);
            if (c[0] == '-') ADD("node %d unset\n", count + 1);
            else if (equals) {
                ADD("node %d set value=\"", count + 1);
                for (const char *v = equals + 1; v < c + n; v++) {
                    if (*v == '"' || *v == '\\') ADD("\\%c", *v);
                    else if ((unsigned char)*v < 0x20) ADD("\\x%02x", (unsigned char)*v);
                    else ADD("%c", *v);
                }
                ADD("\"\n");
            }
            c += n + (end ? 1 : 0);
        }
    }
    int code = 0;
    double probability = 0;
    char p[24];
    long long ns = 0;
    if (latency || connect_) {
        ADD("entry connect\n");
        int next = 0;
        if (latency && (ns = strtoll(latency, NULL, 10)) > 0) { ADD("node 0 delay by=%lld child=1\n", ns); next = 1; }
        if (connect_ && sscanf(connect_, "%d:%lf", &code, &probability) == 2 && code > 0) {
            ADD("node %d probability p=%s child=%d\nnode %d fail errno=%d\n", next, chance(probability, p), next + 1, next + 1, code);
        } else if (next) {
            ADD("node 1 original\n");
        } else {
            ADD("node 0 original\n");
        }
    }
    if (sockets && sscanf(sockets, "%d:%lf:%lld", &code, &probability, &ns) == 3) {
        for (int side = 0; side < 2; side++) {
            ADD("entry %s family=any\n", side ? "recv" : "send");
            if (ns > 0) ADD("node 0 delay by=%lld child=1\n", ns);
            int at = ns > 0 ? 1 : 0;
            if (code > 0) ADD("node %d probability p=%s child=%d\nnode %d fail errno=%d\n", at, chance(probability, p), at + 1, at + 1, code);
            else ADD("node %d original\n", at);
        }
    }
    if (dns && sscanf(dns, "%d:%lf", &code, &probability) == 2 && code < 0)
        ADD("entry dns\nnode 0 probability p=%s child=1\nnode 1 fail ret=%d\n", chance(probability, p), code);
    if (files) {
        char ops[8] = {0};
        int consumed = 0;
        if (sscanf(files, "%d:%lf:%7[owrf]:%n", &code, &probability, ops, &consumed) >= 3 && consumed > 0) {
            char prefix[4096];
            if (chaos_path_resolve(AT_FDCWD, files + consumed, prefix, sizeof prefix) > 0) {
                ADD("entry files\nnode 0 composite\ncase 1 path=\"%s\" ops=", prefix);
                const char *names[] = {"open", "write", "read", "sync"};
                const char *letters = "owrf";
                int first = 1;
                for (int i = 0; i < 4; i++) if (strchr(ops, letters[i])) { ADD("%s%s", first ? "" : ",", names[i]); first = 0; }
                ADD("\nnode 1 probability p=%s child=2\n", chance(probability, p));
                if (code > 0) ADD("node 2 fail errno=%d\n", code); else ADD("node 2 short\n");
            }
        }
    }
#undef ADD
    return text;
}

SLOT(setenv);

__attribute__((constructor)) static void chaos_preload_init(void) {
    char *(*get)(const char *) = REAL(getenv);
    if (!get) return;
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
    } else if ((owned = legacy_plan(get))) {
        text = owned;
        length = strlen(owned);
        origin = "CHAOS_PRELOAD_* variables";
    }
    if (!text) return;
    chaos_plan_error error;
    chaos_plan *plan = chaos_plan_parse(text, length, &error);
    if (!plan) {
        char where[96];
        snprintf(where, sizeof where, " line %d, column %d: ", error.line, error.column);
        say(origin, where, error.message);
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
    }
    chaos_plan_install(plan);
    free(owned);
}

#else

unsigned long chaos_preload_chaotic_calls(void) { return 0; }

#endif

// SwiftPM links this library with the Swift driver, which names -lswiftCore right after
// the flags it extracts from the objects' .swift1_autolink_entries sections. Asking for
// --as-needed there keeps the runtime out of DT_NEEDED: nothing here uses it.
__attribute__((used, section(".swift1_autolink_entries"))) static const char chaos_preload_autolink[] = "-Xlinker\0--as-needed";
