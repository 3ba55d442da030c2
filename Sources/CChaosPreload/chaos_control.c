// The control endpoint of a `chaos run` child (Docs/Console.md, "The protocol (version 1)"):
// the required subset of the protocol over a Unix socket, switched on by CHAOS_CONTROL.
//
// Two threads. The endpoint thread accepts connections and answers them all at once from
// one poll loop (see "Connections"); the worker carries out, one at a time, the requests that
// change something. Their own I/O is made with raw system calls, and the interposer marks
// both threads busy (`quiet`), so nothing this endpoint does is ever decided by the plan it
// serves: a plan that refuses every socket must not lock the controller out.
//
// The endpoint thread keeps a descriptor table of its own (unshare(CLONE_FILES)), holding nothing but
// its socket and its connections. A daemon closes every descriptor it did not open and
// reuses the numbers: in a shared table the endpoint would then accept on the program's own
// listener. Here the program cannot close the endpoint's descriptors, the endpoint cannot
// touch the program's, and a forked child inherits none of the endpoint's.
//
// Entries: every `entry` of the starting plan and of each applied plan is one control
// entry. The plan installed is made of the enabled entries, those of the plan applied last
// first (as profiles stack in-process), with the seed of the last plan applied. Each entry
// keeps the engine's counts it was first installed with, and every later plan counts its
// calls there too: switching plans moves no count and loses none.
#define _GNU_SOURCE
#include "chaos_control.h"

#if defined(__linux__)

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436  // the same number on every architecture
#endif

#define HIDDEN __attribute__((visibility("hidden")))
#define MAX_BODY (1 << 20)
#define MAX_HEAD 16384

// MARK: - Text buffers

typedef struct buffer {
    char *data;
    size_t length, capacity;
    int failed;
} buffer;

static void reserve(buffer *b, size_t more) {
    if (b->failed || b->length + more + 1 <= b->capacity) return;
    size_t capacity = b->capacity ? b->capacity : 256;
    while (capacity < b->length + more + 1) capacity *= 2;
    char *grown = realloc(b->data, capacity);
    if (!grown) { b->failed = 1; return; }
    b->data = grown;
    b->capacity = capacity;
}

static void put_bytes(buffer *b, const char *bytes, size_t count) {
    reserve(b, count);
    if (b->failed) return;
    memcpy(b->data + b->length, bytes, count);
    b->length += count;
    b->data[b->length] = 0;
}

static void put(buffer *b, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void put(buffer *b, const char *format, ...) {
    va_list list;
    va_start(list, format);
    char small[256];
    int need = vsnprintf(small, sizeof small, format, list);
    va_end(list);
    if (need < 0) { b->failed = 1; return; }
    if ((size_t)need < sizeof small) { put_bytes(b, small, (size_t)need); return; }
    reserve(b, (size_t)need);
    if (b->failed) return;
    va_start(list, format);
    vsnprintf(b->data + b->length, (size_t)need + 1, format, list);
    va_end(list);
    b->length += (size_t)need;
}

/// A JSON string (quotes included), always valid UTF-8 whatever `text` holds: each part
/// that is not UTF-8 (a request's bytes quoted in an error, a name cut at a byte count)
/// becomes one U+FFFD, as Swift's and Python's decoders would read it.
static void put_json(buffer *b, const char *text, size_t count) {
    put_bytes(b, "\"", 1);
    for (size_t i = 0; i < count; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c >= 0x80) {
            int valid;
            size_t length = chaos_utf8_next(text + i, count - i, &valid);
            put_bytes(b, valid ? text + i : "\xEF\xBF\xBD", valid ? length : 3);
            i += length - 1;
        } else if (c == '"' || c == '\\') {
            char pair[2] = {'\\', (char)c};
            put_bytes(b, pair, 2);
        } else if (c == '\n') {
            put_bytes(b, "\\n", 2);
        } else if (c == '\t') {
            put_bytes(b, "\\t", 2);
        } else if (c < 0x20 || c == 0x7F) {
            put(b, "\\u%04x", c);
        } else {
            put_bytes(b, (const char *)&c, 1);
        }
    }
    put_bytes(b, "\"", 1);
}

static void put_json_string(buffer *b, const char *text) { put_json(b, text, strlen(text)); }

// MARK: - Raw system calls

// Raw, so that neither the interposer nor anything else preloaded sees these calls.
static long sys_write_all(int fd, const char *data, size_t count) {
    size_t done = 0;
    while (done < count) {
        long wrote = syscall(SYS_sendto, fd, data + done, count - done, MSG_NOSIGNAL, NULL, 0);
        if (wrote < 0 && errno == ENOTSOCK) wrote = syscall(SYS_write, fd, data + done, count - done);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote <= 0) return -1;
        done += (size_t)wrote;
    }
    return (long)done;
}

static int sys_close(int fd) { return (int)syscall(SYS_close, fd); }

/// The whole of a small file (such as /proc/self/comm) into `out`; its length or -1.
static long read_small(const char *path, char *out, size_t capacity) {
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    long got = syscall(SYS_read, fd, out, capacity - 1);
    sys_close(fd);
    if (got < 0) return -1;
    out[got] = 0;
    return got;
}

// MARK: - State

typedef struct control_entry {
    int id;
    int point;
    int enabled;
    char *text;          // the entry's canonical plan lines, `entry …` first, each ending in \n
    char *label;         // the label, unescaped (NULL: none)
    int slot;            // its index in the installed plan, -1 when not installed
    int group;           // which plan brought it: later plans decide first
    chaos_counts *counts; // shared by every plan it is installed in (NULL: never installed)
} control_entry;

static control_entry *entries;
static int entry_count, entry_capacity, next_id = 1, next_group = 1;
static uint64_t plan_seed;
static int anchor_chosen;

static pid_t owner_pid;
static char directory[4096], socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)], file_path[4200];
static char token[65], program[256];
static int listener = -1;   // in the endpoint thread's own descriptor table only

// The advance in progress (on the worker thread), for `status`, `/v1/time` and cancelling.
static _Atomic int advance_running, advance_stop;
static _Atomic int64_t advance_target, advance_from_steps;
static _Atomic uint64_t advances_stopped; // cancelled, replaced or abandoned by their client

// The program's exit while requests are in flight (see "The program's exit").
static _Atomic int in_flight;       // connections queued for or held by the worker
static _Atomic int exit_requested, exit_answered;
static _Atomic int exit_status_value;
static int started;         // the endpoint file was written: the destructor removes it

/// The program's name, from /proc/self/comm, into `program`. The kernel keeps 15 bytes of
/// it and may cut a character in two (`ñ` is two bytes): what is left of one is dropped.
static void read_program_name(void) {
    long got = read_small("/proc/self/comm", program, sizeof program);
    if (got <= 0) snprintf(program, sizeof program, "program");
    program[strcspn(program, "\n")] = 0;
    program[chaos_utf8_trim_incomplete(program, strlen(program))] = 0;
    if (!program[0]) snprintf(program, sizeof program, "program");
}

HIDDEN int chaos_control_wanted(chaos_control_getenv_fn get) {
    const char *value = get("CHAOS_CONTROL");
    return value && *value && strcmp(value, "0") != 0 && strcasecmp(value, "off") != 0 && strcasecmp(value, "no") != 0;
}

HIDDEN void chaos_control_anchor_chosen(void) { anchor_chosen = 1; }

// MARK: - Entries from plan text

/// Unescapes a quoted plan value starting after its opening quote; NULL when out of memory.
static char *unquote(const char *from) {
    size_t length = strlen(from);
    char *out = malloc(length + 1), *to = out;
    if (!out) return NULL;
    for (const char *p = from; *p && *p != '"' && *p != '\n'; p++) {
        if (*p != '\\' || !p[1]) { *to++ = *p; continue; }
        p++;
        switch (*p) {
        case 'n': *to++ = '\n'; break;
        case 't': *to++ = '\t'; break;
        case 'x':
            if (p[1] && p[2]) {
                char hex[3] = {p[1], p[2], 0};
                *to++ = (char)strtol(hex, NULL, 16);
                p += 2;
            }
            break;
        default: *to++ = *p;
        }
    }
    *to = 0;
    return out;
}

static int point_of(const char *line) {
    for (int point = 0; point < CHAOS_POINT_COUNT; point++) {
        const char *name = chaos_fault_point_name(point);
        size_t length = strlen(name);
        if (strncmp(line + 6, name, length) == 0 && (line[6 + length] == ' ' || line[6 + length] == '\n')) return point;
    }
    return -1;
}

static void free_entries(control_entry *list, int count) {
    for (int i = 0; i < count; i++) {
        free(list[i].text);
        free(list[i].label);
        chaos_counts_release(list[i].counts);
    }
    free(list);
}

/// Splits a parsed plan into entries (canonical text, one per `entry` line) and reads its
/// seed; the entries get no id yet. Returns how many (-1 when out of memory).
static int split(const chaos_plan *plan, control_entry **out, uint64_t *seed) {
    *out = NULL;
    long need = chaos_plan_format(plan, NULL, 0);
    if (need < 0) return -1;
    char *text = malloc((size_t)need + 1);
    if (!text || chaos_plan_format(plan, text, (size_t)need + 1) < 0) { free(text); return -1; }
    int count = chaos_plan_entry_count(plan);
    control_entry *list = calloc(count > 0 ? (size_t)count : 1, sizeof *list);
    if (!list) { free(text); return -1; }
    int current = -1;
    buffer lines = {0};
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) + 1 : strlen(line);
        if (strncmp(line, "seed ", 5) == 0) {
            *seed = strtoull(line + 5, NULL, 0);
        } else if (strncmp(line, "entry ", 6) == 0 && current + 1 < count) {
            if (current >= 0) { list[current].text = lines.data; lines = (buffer){0}; }
            current++;
            list[current].point = point_of(line);
            list[current].slot = -1;
            list[current].enabled = 1;
            const char *label = strstr(line, " label=\"");
            if (label && label < line + length) list[current].label = unquote(label + 8);
            put_bytes(&lines, line, length);
        } else if (current >= 0) {
            put_bytes(&lines, line, length);
        }
        line += length;
    }
    if (current >= 0) list[current].text = lines.data;
    free(text);
    for (int i = 0; i < count; i++)
        if (!list[i].text || lines.failed) { free_entries(list, count); return -1; }
    *out = list;
    return count;
}

HIDDEN void chaos_control_adopt(const chaos_plan *plan) {
    control_entry *list;
    int count = split(plan, &list, &plan_seed);
    if (count <= 0) return;
    entries = list;
    entry_count = entry_capacity = count;
    for (int i = 0; i < count; i++) {
        entries[i].id = next_id++;
        entries[i].slot = i; // the constructor installs this very plan
        entries[i].counts = chaos_plan_counts(plan, i);
    }
}

/// Calls `visit` with the enabled entries of `list` in plan order: the entries of the plan
/// applied last first, as a profile applied in-process stacks on earlier ones, and each
/// plan's own entries in their order (its compiler already stacked them).
static void in_plan_order(control_entry *list, int count, void (*visit)(control_entry *, void *), void *context) {
    for (int group = next_group; group >= 0; group--)
        for (int i = 0; i < count; i++)
            if (list[i].group == group && list[i].enabled) visit(&list[i], context);
}

static void append_text(control_entry *entry, void *context) { put_bytes(context, entry->text, strlen(entry->text)); }

static void take_slot(control_entry *entry, void *context) { entry->slot = (*(int *)context)++; }

/// The plan of the enabled entries of `list` (the seed `seed`), parsed; NULL with `error`.
static chaos_plan *combine(control_entry *list, int count, uint64_t seed, chaos_plan_error *error) {
    buffer text = {0};
    put(&text, "chaos-plan 1\nseed %llu\n", (unsigned long long)seed);
    in_plan_order(list, count, append_text, &text);
    if (text.failed) {
        free(text.data);
        error->line = 0;
        error->column = 0;
        snprintf(error->message, sizeof error->message, "out of memory");
        return NULL;
    }
    chaos_plan *plan = chaos_plan_parse(text.data, text.length, error);
    free(text.data);
    return plan;
}

/// Makes `plan` (the enabled entries of `entries`, in order) the active plan, each entry
/// counting into its own counts.
static void install(chaos_plan *plan) {
    for (int i = 0; i < entry_count; i++) entries[i].slot = -1;
    int slot = 0;
    in_plan_order(entries, entry_count, take_slot, &slot);
    for (int i = 0; i < entry_count; i++) {
        control_entry *entry = &entries[i];
        if (entry->slot < 0) continue;
        if (entry->counts) chaos_plan_count_into(plan, entry->slot, entry->counts);
        else entry->counts = chaos_plan_counts(plan, entry->slot);
    }
    if (slot == 0) {
        chaos_plan_free(plan);
        chaos_plan_clear();
    } else {
        if (chaos_plan_needs_start_anchor(plan) && !anchor_chosen) {
            // The start of the process tree is long past; the first plan that asks for it
            // starts its clock now, and later ones keep that anchor.
            chaos_fault_set_start_anchor(chaos_fault_real_ns(CLOCK_REALTIME));
            anchor_chosen = 1;
        }
        chaos_plan_install(plan);
    }
}

// MARK: - Answers

typedef struct answer {
    int status;
    buffer body;
    const char *allow;
} answer;

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 409: return "Conflict";
    case 422: return "Unprocessable Content";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

/// An error answer; `subject` may be NULL. Quotes of input are cut to 80 bytes by callers.
static void fail(answer *a, int status, const char *kind, const char *subject, const char *message) {
    a->status = status;
    a->body.length = 0;
    put(&a->body, "{\"error\":{\"kind\":");
    put_json_string(&a->body, kind);
    if (subject) {
        // A character split by the caller's cut at 80 bytes is left out, not shown as U+FFFD.
        put(&a->body, ",\"subject\":");
        put_json(&a->body, subject, chaos_utf8_trim_incomplete(subject, strlen(subject)));
    }
    put(&a->body, ",\"message\":");
    put_json_string(&a->body, message);
    put(&a->body, "}}");
}

static const char *point_display(int point) {
    static const char *names[CHAOS_POINT_COUNT] = {
        "system.files", "system.connect", "system.accept", "system.send",
        "system.recv", "system.getaddrinfo", "system.getenv", "system.clock",
    };
    return point >= 0 && point < CHAOS_POINT_COUNT ? names[point] : "system";
}

static void put_date(buffer *b, int64_t ns) {
    time_t seconds = (time_t)(ns / 1000000000);
    struct tm parts;
    gmtime_r(&seconds, &parts);
    put(b, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
        parts.tm_min, parts.tm_sec, (int)(ns / 1000000 % 1000));
}

static void put_entry(buffer *b, const control_entry *entry) {
    chaos_entry_counters counters;
    chaos_counts_read(entry->counts, &counters); // zeros for NULL
    uint64_t seen = counters.seen, acted = counters.acted, passed = counters.passed, last_call = counters.last_fire_call;
    int64_t last_ns = counters.last_fire_ns;
    int has_last = last_ns != 0;
    // The provider as the profile wrote it: the part of a `chaos run` label after the arrow.
    const char *provider = NULL;
    if (entry->label) {
        const char *arrow = strstr(entry->label, "\xE2\x86\x90 ");
        provider = arrow ? arrow + 4 : entry->label;
    }
    char root[64] = "plan entry";
    if (!provider) {
        const char *node = strstr(entry->text, "\nnode 0 ");
        if (node) {
            size_t length = strcspn(node + 8, " \n");
            snprintf(root, sizeof root, "%.*s", (int)(length < 60 ? length : 60), node + 8);
        }
        provider = root;
    }
    put(b, "{\"id\":%d,\"point\":", entry->id);
    put_json_string(b, point_display(entry->point));
    put(b, ",\"provider\":");
    put_json_string(b, provider);
    put(b, ",\"enabled\":%s,\"seen\":%llu,\"acted\":%llu,\"passed\":%llu", entry->enabled ? "true" : "false",
        (unsigned long long)seen, (unsigned long long)acted, (unsigned long long)passed);
    if (has_last) {
        put(b, ",\"lastAct\":{\"callIndex\":%llu,\"entrySeed\":\"%llu\",\"chaosSeed\":\"%llu\",\"date\":", (unsigned long long)last_call,
            (unsigned long long)plan_seed, (unsigned long long)plan_seed);
        put_date(b, last_ns);
        put(b, "}");
    }
    put(b, ",\"chaosSeed\":\"%llu\"", (unsigned long long)plan_seed);
    if (entry->label) {
        put(b, ",\"label\":");
        put_json_string(b, entry->label);
    }
    put(b, ",\"plan\":");
    put_json_string(b, entry->text);
    put(b, "}");
}

static void put_advance_progress(buffer *b);

static void status_body(answer *a) {
    int enabled = 0;
    for (int i = 0; i < entry_count; i++) enabled += entries[i].enabled;
    a->status = 200;
    put(&a->body, "{\"version\":1,\"pid\":%d,\"program\":", (int)owner_pid);
    put_json_string(&a->body, program);
    put(&a->body, ",\"kind\":\"preload\",\"entries\":%d,\"enabledEntries\":%d,\"waiting\":false,\"features\":[]", entry_count, enabled);
    put_advance_progress(&a->body);
    put(&a->body, "}");
}

/// What `status` and `/v1/time` show of an advance while it runs.
static void put_advance_progress(buffer *b) {
    if (!atomic_load(&advance_running)) return;
    int64_t left = atomic_load(&advance_target) - chaos_vt_monotonic_ns();
    put(b, ",\"advance\":{\"steps\":%lld,\"remainingNanoseconds\":%lld}",
        (long long)((int64_t)chaos_vt_steps() - atomic_load(&advance_from_steps)), (long long)(left > 0 ? left : 0));
}

/// The answer of /v1/time: virtual time in this process (`steps`: of the advance just made,
/// or -1; `stopped`: for a DELETE of the advance, whether it stopped one).
static void time_body(answer *a, int64_t steps, const char *stopped) {
    a->status = 200;
    int running = chaos_vt_running();
    put(&a->body, "{\"running\":%s", running ? "true" : "false");
    if (running) {
        int64_t wall = chaos_vt_reading_ns(CLOCK_REALTIME);
        time_t seconds = (time_t)(wall / 1000000000 - (wall % 1000000000 < 0));
        struct tm parts;
        char text[40] = "";
        if (gmtime_r(&seconds, &parts)) strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
        put(&a->body, ",\"now\":\"%s.%03dZ\",\"nanosecondsSince1970\":%lld,\"pending\":%d", text,
            (int)((wall - (int64_t)seconds * 1000000000) / 1000000), (long long)wall, (int)chaos_vt_pending_count());
    }
    if (steps >= 0) put(&a->body, ",\"steps\":%lld", (long long)steps);
    if (stopped) put(&a->body, ",\"stopped\":%s", stopped);
    put_advance_progress(&a->body);
    if (atomic_load(&exit_requested)) put(&a->body, ",\"exited\":{\"status\":%d}", atomic_load(&exit_status_value));
    put(&a->body, "}");
}

/// An advance goes on without a limit of its own only as far as this many steps (each step
/// wakes what is due at one deadline): a program that wakes every 0.2 s takes 432,000 steps
/// for a day. `?steps=N` sets another limit.
#define DEFAULT_ADVANCE_STEPS 1000000

static int advance_should_stop(void *unused) {
    (void)unused;
    return atomic_load(&advance_stop);
}

/// POST /v1/time/advance?by=DURATION[&steps=N] (on the worker thread): moves virtual time
/// forward, through every deadline on the way, and answers once the last has been taken;
/// or, stopped or cut short by its step limit, says where virtual time stays.
static void advance(answer *a, const char *by, const char *steps_text) {
    int64_t nanoseconds;
    if (!by[0] || chaos_parse_duration(by, &nanoseconds) != 0 || nanoseconds < 0) {
        char subject[100];
        snprintf(subject, sizeof subject, "by=%.80s", by);
        fail(a, 400, "badRequest", subject, "give how far to advance as ?by=DURATION, e.g. 1h, 90m, 30s or 250ms (forward only)");
        return;
    }
    long long limit = DEFAULT_ADVANCE_STEPS;
    if (steps_text[0]) {
        char *end;
        errno = 0;
        limit = strtoll(steps_text, &end, 10);
        if (*end || errno || limit <= 0) {
            char subject[100];
            snprintf(subject, sizeof subject, "steps=%.80s", steps_text);
            fail(a, 400, "badRequest", subject, "give the most steps the advance may take as ?steps=N, a positive whole number");
            return;
        }
    }
    if (!chaos_vt_running()) {
        fail(a, 409, "notRunning", "virtual time",
             "this process does not run on virtual time; apply the system.clock item virtual (chaos run --profile, or chaos ctl apply)");
        return;
    }
    int64_t now = chaos_vt_monotonic_ns();
    int64_t target = nanoseconds > INT64_MAX - now ? INT64_MAX : now + nanoseconds;
    atomic_store(&advance_target, target);
    int64_t steps = chaos_vt_advance_to_unless(target, limit, advance_should_stop, NULL);
    if (chaos_vt_running() && chaos_vt_monotonic_ns() < target) {
        int stopped = atomic_load(&advance_stop);
        if (stopped) atomic_fetch_add(&advances_stopped, 1);
        buffer reached = {0};
        put_date(&reached, chaos_vt_reading_ns(CLOCK_REALTIME));
        char message[600];
        snprintf(message, sizeof message,
                 stopped ? "the advance was stopped after %lld steps, before its target; virtual time stays at %s"
                         : "the advance reached its limit of %lld steps before its target; virtual time stays at %s; "
                           "advance again, or allow more steps (chaos ctl advance --max-steps)",
                 (long long)steps, reached.data ? reached.data : "?");
        free(reached.data);
        fail(a, 409, stopped ? "advanceStopped" : "stepLimit", "virtual time", message);
        return;
    }
    time_body(a, steps, NULL);
}

static control_entry *find(int id) {
    for (int i = 0; i < entry_count; i++)
        if (entries[i].id == id) return &entries[i];
    return NULL;
}

static void not_applied(answer *a, const char *text) {
    char subject[100];
    snprintf(subject, sizeof subject, "entry %.80s", text);
    fail(a, 404, "notApplied", subject, "no live entry has this id; `chaos ctl status PID` lists them");
}

/// POST /v1/entries: the plan text, all or nothing.
static void apply(answer *a, const char *body, size_t length, const char *source) {
    chaos_plan_error error;
    memset(&error, 0, sizeof error);
    chaos_plan *alone = chaos_plan_parse(body, length, &error);
    char subject[160];
    if (!alone) {
        snprintf(subject, sizeof subject, "%.*s:%d:%d", (int)chaos_utf8_cut(source, strlen(source), 80), source,
                 (int)error.line, (int)error.column);
        fail(a, 422, "invalidProfile", subject, error.message);
        return;
    }
    control_entry *added;
    uint64_t seed = plan_seed;
    int count = split(alone, &added, &seed);
    chaos_plan_free(alone);
    if (count < 0) {
        fail(a, 500, "systemFailure", NULL, "out of memory while reading the plan");
        return;
    }
    if (entry_count + count > entry_capacity) {
        int capacity = (entry_count + count) * 2;
        control_entry *grown = realloc(entries, (size_t)capacity * sizeof *grown);
        if (!grown) {
            free_entries(added, count);
            fail(a, 500, "systemFailure", NULL, "out of memory while adding the entries");
            return;
        }
        entries = grown;
        entry_capacity = capacity;
    }
    // Tried on the whole list first: the combination can break limits the parts keep.
    for (int i = 0; i < count; i++) {
        entries[entry_count + i] = added[i];
        entries[entry_count + i].group = next_group;
    }
    chaos_plan *plan = combine(entries, entry_count + count, seed, &error);
    if (!plan) {
        free_entries(added, count);
        snprintf(subject, sizeof subject, "%.80s", source);
        char message[400];
        snprintf(message, sizeof message, "with the entries already applied the plan is refused: %s; revert some first", error.message);
        fail(a, 422, "invalidProfile", subject, message);
        return;
    }
    free(added); // the strings now belong to `entries`
    for (int i = 0; i < count; i++) entries[entry_count + i].id = next_id++;
    entry_count += count;
    next_group++;
    plan_seed = seed;
    install(plan);
    a->status = 201;
    put(&a->body, "{\"entries\":[");
    for (int i = 0; i < count; i++) put(&a->body, "%s%d", i ? "," : "", entries[entry_count - count + i].id);
    put(&a->body, "],\"seed\":\"%llu\"}", (unsigned long long)seed);
}

/// Installs the entry list as it now is; an error answer when it cannot. `enabled` names
/// an entry just enabled: the entries enabled with it may break the engine's limits, which
/// is the user's to change, not a failure of the endpoint's.
static int reinstall(answer *a, const char *enabled) {
    chaos_plan_error error;
    memset(&error, 0, sizeof error);
    chaos_plan *plan = combine(entries, entry_count, plan_seed, &error);
    if (!plan && enabled && strcmp(error.message, "out of memory") != 0) {
        char subject[100], message[400];
        snprintf(subject, sizeof subject, "entry %.80s", enabled);
        snprintf(message, sizeof message, "with the entries already enabled the plan is refused: %s; disable or revert some first", error.message);
        fail(a, 422, "invalidProfile", subject, message);
        return -1;
    }
    if (!plan) {
        fail(a, 500, "systemFailure", NULL, error.message);
        return -1;
    }
    install(plan);
    return 0;
}

/// Removes entries with `id` (0: all), answering with their ids.
static void revert(answer *a, int id, const char *text) {
    if (id && !find(id)) {
        not_applied(a, text);
        return;
    }
    buffer ids = {0};
    put(&ids, "{\"entries\":[");
    int kept = 0, removed = 0;
    control_entry *gone = calloc((size_t)(entry_count > 0 ? entry_count : 1), sizeof *gone);
    if (!gone) {
        free(ids.data);
        fail(a, 500, "systemFailure", NULL, "out of memory");
        return;
    }
    // Left out of the plan before they are freed; the old plan holds their counts until the
    // engine frees it, so calls it still decides are counted, in counts nobody reads.
    for (int i = 0; i < entry_count; i++) {
        if (id && entries[i].id != id) continue;
        entries[i].enabled = 0;
    }
    if (reinstall(a, NULL) != 0) { free(gone); free(ids.data); return; }
    for (int i = 0; i < entry_count; i++) {
        if (!id || entries[i].id == id) {
            put(&ids, "%s%d", removed ? "," : "", entries[i].id);
            gone[removed++] = entries[i];
        } else {
            entries[kept++] = entries[i];
        }
    }
    entry_count = kept;
    free_entries(gone, removed);
    put(&ids, "]}");
    a->status = 200;
    a->body = ids;
}

static void set_enabled(answer *a, int id, const char *text, int enabled) {
    control_entry *entry = find(id);
    if (!entry) {
        not_applied(a, text);
        return;
    }
    if (entry->enabled != enabled) {
        entry->enabled = enabled;
        if (reinstall(a, enabled ? text : NULL) != 0) {
            entry->enabled = !enabled;
            return;
        }
    }
    a->status = 200;
    put_entry(&a->body, entry);
}

// MARK: - Requests

typedef struct request {
    char method[16];
    char path[1024];
    char query[1024];
    const char *host, *authorization, *content_type, *origin, *transfer_encoding, *fetch_site;
    long long content_length;
    uint64_t stopped_before; // DELETE /v1/time/advance: advances_stopped when it arrived
    char *body;
    size_t body_length;
} request;

static int same_token(const char *offered) {
    size_t length = strlen(offered);
    unsigned char difference = (unsigned char)(length != 64);
    for (size_t i = 0; i < 64; i++) difference |= (unsigned char)((i < length ? offered[i] : 0) ^ token[i]);
    return difference == 0;
}

/// The value of `name` in a query string, percent-decoded into `out`.
static void query_value(const char *query, const char *name, char *out, size_t capacity) {
    size_t length = strlen(name);
    out[0] = 0;
    for (const char *p = query; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
        if (strncmp(p, name, length) != 0 || p[length] != '=') continue;
        size_t used = 0;
        for (const char *v = p + length + 1; *v && *v != '&' && used + 1 < capacity; v++) {
            if (*v == '%' && v[1] && v[2]) {
                char hex[3] = {v[1], v[2], 0};
                out[used++] = (char)strtol(hex, NULL, 16);
                v += 2;
            } else {
                out[used++] = *v == '+' ? ' ' : *v;
            }
        }
        out[used] = 0;
        return;
    }
}

static void route(answer *a, request *r) {
    const char *method = r->method, *path = r->path;
    int get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0, del = strcmp(method, "DELETE") == 0;
    if (strcmp(path, "/v1/status") == 0) {
        if (!get) { a->allow = "GET"; fail(a, 405, "methodNotAllowed", path, "use GET"); return; }
        status_body(a);
        return;
    }
    if (strcmp(path, "/v1/go") == 0) {
        // Nothing in a `chaos run` child waits for go; the answer is the status, as elsewhere.
        if (!post) { a->allow = "POST"; fail(a, 405, "methodNotAllowed", path, "use POST"); return; }
        status_body(a);
        return;
    }
    if (strcmp(path, "/v1/time") == 0) {
        if (!get) { a->allow = "GET"; fail(a, 405, "methodNotAllowed", path, "use GET"); return; }
        time_body(a, -1, NULL);
        return;
    }
    if (strcmp(path, "/v1/time/advance") == 0) {
        if (del) {
            // Queued behind the advance it stopped, so it answers once that one has ended.
            time_body(a, -1, atomic_load(&advances_stopped) > r->stopped_before ? "true" : "false");
            return;
        }
        if (!post) { a->allow = "POST, DELETE"; fail(a, 405, "methodNotAllowed", path, "use POST to advance, DELETE to stop an advance"); return; }
        char by[64], steps[32];
        query_value(r->query, "by", by, sizeof by);
        query_value(r->query, "steps", steps, sizeof steps);
        advance(a, by, steps);
        return;
    }
    if (strcmp(path, "/v1/entries") == 0) {
        if (get) {
            a->status = 200;
            put(&a->body, "[");
            for (int i = 0; i < entry_count; i++) {
                if (i) put(&a->body, ",");
                put_entry(&a->body, &entries[i]);
            }
            put(&a->body, "]");
        } else if (post) {
            const char *type = r->content_type ? r->content_type : "";
            if (strncasecmp(type, "text/x-chaos-plan", 17) != 0 && strncasecmp(type, "text/plain", 10) != 0) {
                char subject[100];
                snprintf(subject, sizeof subject, "Content-Type: %.80s", type);
                fail(a, 415, "unsupportedMediaType", subject,
                     "a chaos run child takes plan text (Content-Type: text/x-chaos-plan, Docs/FaultPlan.md); `chaos ctl apply` compiles a JSON profile to it");
                return;
            }
            char source[256];
            query_value(r->query, "source", source, sizeof source);
            apply(a, r->body ? r->body : "", r->body_length, source[0] ? source : "plan");
        } else if (del) {
            revert(a, 0, "");
        } else {
            a->allow = "GET, POST, DELETE";
            fail(a, 405, "methodNotAllowed", path, "use GET, POST or DELETE");
        }
        return;
    }
    if (strncmp(path, "/v1/entries/", 12) == 0) {
        const char *rest = path + 12;
        char *end;
        long id = strtol(rest, &end, 10);
        if (end == rest || id <= 0 || id > 1000000000 || (*end && *end != '/')) {
            char subject[100];
            snprintf(subject, sizeof subject, "%.80s", rest);
            fail(a, 404, "notFound", subject, "an entry id is a positive number, e.g. /v1/entries/3");
            return;
        }
        char text[32];
        snprintf(text, sizeof text, "%ld", id);
        if (!*end) {
            if (get) {
                control_entry *entry = find((int)id);
                if (!entry) { not_applied(a, text); return; }
                a->status = 200;
                put_entry(&a->body, entry);
            } else if (del) {
                revert(a, (int)id, text);
            } else {
                a->allow = "GET, DELETE";
                fail(a, 405, "methodNotAllowed", path, "use GET or DELETE");
            }
            return;
        }
        int enable = strcmp(end, "/enable") == 0, disable = strcmp(end, "/disable") == 0;
        if (enable || disable) {
            if (!post) { a->allow = "POST"; fail(a, 405, "methodNotAllowed", path, "use POST"); return; }
            set_enabled(a, (int)id, text, enable);
            return;
        }
    }
    char subject[100];
    snprintf(subject, sizeof subject, "%.80s", path);
    fail(a, 404, "notFound", subject,
         "no such route here; a chaos run child serves /v1/status, /v1/entries[/ID[/enable|/disable]], /v1/time[/advance] and /v1/go (no points, response sets, events or console)");
}

/// Copies a header's value (trimmed) into `r`'s head buffer in place.
static const char *header_value(char *value) {
    while (*value == ' ' || *value == '\t') value++;
    char *end = value + strlen(value);
    while (end > value && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) *--end = 0;
    return value;
}

/// The whole answer, head and body, ready to send.
static void render(answer *a, buffer *out) {
    if (a->body.failed) {
        free(a->body.data);
        a->body = (buffer){0};
        fail(a, 500, "systemFailure", NULL, "out of memory while answering");
    }
    put(out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\nCache-Control: no-store\r\n",
        a->status, reason(a->status), a->body.length);
    if (a->status == 401) put(out, "WWW-Authenticate: Bearer\r\n");
    if (a->status == 503) put(out, "Retry-After: 1\r\n");
    if (a->allow) put(out, "Allow: %s\r\n", a->allow);
    put(out, "\r\n");
    if (a->body.length) put_bytes(out, a->body.data, a->body.length);
}

// MARK: - Connections
//
// The endpoint thread serves every connection at once from one poll loop, so no client can
// hold up another: each request has REQUEST_LIMIT from its accept to arrive whole, and each
// answer ANSWER_LIMIT to be taken. At most MAX_CONNECTIONS are open; a new one beyond that
// turns away the oldest that is still sending its request or taking its answer (a slow
// client), with 503, or is itself turned away when every open one waits for the worker.
//
// Requests that change something (every method but GET) run on the worker thread, one at a
// time in the order they arrived, because they may touch the program's descriptors (virtual
// time re-arms the program's timerfds) and the endpoint thread has a descriptor table of its
// own. An advance runs there too, for as long as it takes, while the endpoint thread goes on
// answering reads; a second advance, a cancel, or the advancing client hanging up stops it.

#define MAX_CONNECTIONS 64
#define REQUEST_LIMIT_NS (5 * 1000000000LL)
#define ANSWER_LIMIT_NS (5 * 1000000000LL)
#define WORKER_POLL_MS 5

typedef enum phase { FREE, READING, QUEUED, WORKING, WRITING } phase;

typedef struct connection {
    int fd;
    phase phase;
    uint64_t order;       // accepted as the order-th connection: who is oldest, and queue order
    int64_t deadline;     // real monotonic: the request's while READING, the answer's while WRITING
    char *in;             // what arrived, NUL-terminated
    size_t used, capacity, head_length;
    request r;
    answer a;
    buffer out;
    size_t sent;
} connection;

static connection connections[MAX_CONNECTIONS];
static uint64_t accepted_count;

// The entry list and everything `route` changes, shared by the endpoint thread (reads) and
// the worker (changes).
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;

// What runs on the worker. `job` and `job_done` are under `worker.lock`; the connection's
// request and answer belong to the worker from the hand-over until `job_done`.
static struct {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    connection *job;
    int job_done;
} worker = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, 0};

static int64_t real_now(void) { return chaos_fault_real_ns(CLOCK_MONOTONIC); }

static int is_advance(const request *r) { return strcmp(r->path, "/v1/time/advance") == 0; }

/// POST /v1/time/advance: an advance to run.
static int starts_advance(const request *r) { return is_advance(r) && strcmp(r->method, "POST") == 0; }

/// DELETE /v1/time/advance: a stop of the advance running.
static int stops_advance(const request *r) { return is_advance(r) && strcmp(r->method, "DELETE") == 0; }

static void release(connection *c) {
    if (c->fd >= 0) sys_close(c->fd);
    free(c->in);
    free(c->a.body.data);
    free(c->out.data);
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->phase = FREE;
}

static void write_some(connection *c);

/// Starts sending `c->a`, which is complete. Most answers fit the socket at once: sent now,
/// they never wait for the next round while a newcomer turns away the oldest connection
/// still taking its answer, which would take this prompt client for a slow one.
static void answer_now(connection *c) {
    render(&c->a, &c->out);
    c->sent = 0;
    c->phase = WRITING;
    c->deadline = real_now() + ANSWER_LIMIT_NS;
    write_some(c);
}

static void refuse_now(connection *c, int status, const char *kind, const char *subject, const char *message) {
    fail(&c->a, status, kind, subject, message);
    answer_now(c);
}

/// Parses the head in `c->in` (complete: `c->head_length` bytes) into `c->r`. Returns 1 when
/// the request is good so far (its body may still be on its way), 0 when `c->a` holds the
/// refusal.
static int parse_head(connection *c) {
    request *r = &c->r;
    r->content_length = -1;
    char *head = c->in;
    head[c->head_length - 4] = 0;
    if (memchr(head, 0, c->head_length - 4)) {
        fail(&c->a, 400, "badRequest", NULL, "the request head holds a NUL byte");
        return 0;
    }
    char *line_end = strstr(head, "\r\n");
    if (line_end) *line_end = 0;
    char target[2048], version[16];
    if (sscanf(head, "%15s %2047s %15s", r->method, target, version) != 3 || strncmp(version, "HTTP/1.", 7) != 0) {
        fail(&c->a, 400, "badRequest", NULL, "the request line is not METHOD PATH HTTP/1.1");
        return 0;
    }
    char *question = strchr(target, '?');
    if (question) {
        *question = 0;
        snprintf(r->query, sizeof r->query, "%s", question + 1);
    }
    snprintf(r->path, sizeof r->path, "%s", target);
    int lengths = 0;
    for (char *line = line_end ? line_end + 2 : NULL; line && *line;) {
        char *next = strstr(line, "\r\n");
        if (next) *next = 0;
        char *colon = strchr(line, ':');
        if (colon) {
            *colon = 0;
            const char *value = header_value(colon + 1);
            if (strcasecmp(line, "Host") == 0) r->host = value;
            else if (strcasecmp(line, "Authorization") == 0) r->authorization = value;
            else if (strcasecmp(line, "Content-Type") == 0) r->content_type = value;
            else if (strcasecmp(line, "Content-Length") == 0) {
                char *end;
                errno = 0;
                long long length = strtoll(value, &end, 10);
                // Two lengths, or one that is not a plain number, is how requests get smuggled.
                if (lengths++ || end == value || *end || errno || length < 0) r->content_length = -2;
                else r->content_length = length;
            } else if (strcasecmp(line, "Origin") == 0) r->origin = value;
            else if (strcasecmp(line, "Transfer-Encoding") == 0) r->transfer_encoding = value;
            else if (strcasecmp(line, "Sec-Fetch-Site") == 0) r->fetch_site = value;
        }
        line = next ? next + 2 : NULL;
    }
    char subject[120];
    if (!r->host || strcasecmp(r->host, "localhost") != 0) {
        snprintf(subject, sizeof subject, "Host: %.80s", r->host ? r->host : "");
        fail(&c->a, 403, "forbiddenHost", r->host ? subject : "Host",
             "the request does not name this endpoint in its Host header; send Host: localhost");
    } else if (r->origin || (r->fetch_site && strcmp(r->fetch_site, "cross-site") == 0)) {
        snprintf(subject, sizeof subject, "Origin: %.80s", r->origin ? r->origin : "");
        fail(&c->a, 403, "forbiddenOrigin", subject, "requests from web pages are refused; use chaos ctl");
    } else if (!r->authorization || strncasecmp(r->authorization, "Bearer ", 7) != 0) {
        fail(&c->a, 401, "unauthorized", "Authorization",
             "the request carries no token; send Authorization: Bearer TOKEN with the token from this process's endpoint file (chaos ctl does)");
    } else if (!same_token(header_value((char *)r->authorization + 7))) {
        fail(&c->a, 401, "unauthorized", "Authorization",
             "the token is not this session's; read it again from the endpoint file (the token changes with every start)");
    } else if (r->transfer_encoding) {
        fail(&c->a, 400, "badRequest", "Transfer-Encoding", "send the body with Content-Length (at most 1 MiB), not chunked");
    } else if (r->content_length == -2) {
        fail(&c->a, 400, "badRequest", "Content-Length", "send one Content-Length, a plain decimal number");
    } else if (r->content_length > MAX_BODY) {
        fail(&c->a, 413, "payloadTooLarge", "Content-Length", "a body may hold at most 1 MiB");
    } else {
        return 1;
    }
    return 0;
}

/// What arrived so far decides: more to wait for, a refusal, or a request to route.
static void received(connection *c) {
    if (!c->head_length) {
        size_t searched = c->used < MAX_HEAD ? c->used : MAX_HEAD;
        char *end = memmem(c->in, searched, "\r\n\r\n", 4);
        if (!end) {
            if (c->used >= MAX_HEAD) refuse_now(c, 400, "badRequest", NULL, "the request head is longer than 16 KiB");
            return;
        }
        c->head_length = (size_t)(end - c->in) + 4;
        if (!parse_head(c)) {
            answer_now(c);
            return;
        }
    }
    size_t want = c->r.content_length > 0 ? (size_t)c->r.content_length : 0;
    if (c->used - c->head_length < want) return;
    c->r.body = c->in + c->head_length;
    c->r.body_length = want;
    c->r.body[want] = 0; // bytes after the body are a pipelined request: Connection: close drops it
    if (strcmp(c->r.method, "GET") == 0) {
        pthread_mutex_lock(&state_lock);
        route(&c->a, &c->r);
        pthread_mutex_unlock(&state_lock);
        answer_now(c);
    } else if (atomic_load(&advance_running) && starts_advance(&c->r)) {
        atomic_store(&advance_stop, 1); // the new advance replaces the one running (and counts it stopped)
        c->phase = QUEUED;
    } else if (atomic_load(&advance_running) && !stops_advance(&c->r)) {
        refuse_now(c, 409, "advancing", "virtual time",
                   "an advance of virtual time is running; wait for it, or stop it with `chaos ctl advance PID --cancel`");
    } else {
        if (stops_advance(&c->r)) {
            c->r.stopped_before = atomic_load(&advances_stopped);
            atomic_store(&advance_stop, 1);
        }
        c->phase = QUEUED;
    }
}

static void read_some(connection *c) {
    if (c->capacity - c->used < 4096 && c->capacity < MAX_HEAD + MAX_BODY + 1) {
        size_t capacity = c->capacity ? c->capacity * 2 : 8192;
        if (capacity > MAX_HEAD + MAX_BODY + 1) capacity = MAX_HEAD + MAX_BODY + 1;
        char *grown = realloc(c->in, capacity + 1);
        if (!grown) { refuse_now(c, 500, "systemFailure", NULL, "out of memory while reading the request"); return; }
        c->in = grown;
        c->capacity = capacity;
    }
    long got = syscall(SYS_recvfrom, c->fd, c->in + c->used, c->capacity - c->used, MSG_DONTWAIT, NULL, NULL);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (got <= 0) { release(c); return; } // gone, or half-closed before the request was whole
    c->used += (size_t)got;
    c->in[c->used] = 0;
    received(c);
}

static void write_some(connection *c) {
    if (c->out.failed) { release(c); return; }
    long wrote = syscall(SYS_sendto, c->fd, c->out.data + c->sent, c->out.length - c->sent, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
    if (wrote < 0 && (errno == EINTR || errno == EAGAIN)) return;
    if (wrote <= 0) { release(c); return; }
    c->sent += (size_t)wrote;
    if (c->sent == c->out.length) release(c);
}

/// Turns `c` away with 503, as far as its socket takes it at once.
/// Sends `a` on `fd` as far as the socket takes it at once, and frees it: for an answer that
/// is not the connection's own (`c->a` may be the worker's, or never used).
static void send_once(int fd, answer *a) {
    buffer out = {0};
    render(a, &out);
    if (!out.failed) syscall(SYS_sendto, fd, out.data, out.length, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
    free(out.data);
    free(a->body.data);
}

/// Turns `c` away with 503.
static void turn_away(connection *c, const char *message) {
    answer a = {0};
    fail(&a, 503, "busy", NULL, message);
    send_once(c->fd, &a);
    release(c);
}

static void accept_all(int listener_fd) {
    for (;;) {
        int fd = (int)syscall(SYS_accept4, listener_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) return; // EAGAIN: all taken; EMFILE and the like: try again on the next round
        // Only this user's processes may talk to it (the directory is private too).
        struct ucred peer;
        socklen_t size = sizeof peer;
        if (syscall(SYS_getsockopt, fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != geteuid()) {
            sys_close(fd);
            continue;
        }
        connection *slot = NULL, *oldest = NULL;
        for (int i = 0; i < MAX_CONNECTIONS && !slot; i++) {
            connection *c = &connections[i];
            if (c->phase == FREE) slot = c;
            else if ((c->phase == READING || c->phase == WRITING) && (!oldest || c->order < oldest->order)) oldest = c;
        }
        if (!slot && oldest) {
            turn_away(oldest, "too many connections at once, and this one was the slowest; send the request whole and read the answer");
            slot = oldest;
        }
        if (!slot) {
            connection refused = {.fd = fd};
            turn_away(&refused, "too many requests are waiting to be carried out; try again in a moment");
            continue;
        }
        slot->fd = fd;
        slot->phase = READING;
        slot->order = ++accepted_count;
        slot->deadline = real_now() + REQUEST_LIMIT_NS;
        // A client that sent its request whole is served now: left unread until the next
        // round, it would be the oldest connection still sending for the next newcomer.
        read_some(slot);
    }
}

/// Hands the oldest queued request to the worker when it is free, and takes its answer
/// when it is done.
static void exchange_with_worker(void) {
    pthread_mutex_lock(&worker.lock);
    if (worker.job && worker.job_done) {
        connection *c = worker.job;
        worker.job = NULL;
        worker.job_done = 0;
        if (c->fd >= 0) answer_now(c);
        else release(c); // its client hung up while it ran
    }
    if (!worker.job) {
        connection *next = NULL;
        for (int i = 0; i < MAX_CONNECTIONS; i++)
            if (connections[i].phase == QUEUED && (!next || connections[i].order < next->order)) next = &connections[i];
        if (next) {
            next->phase = WORKING;
            worker.job = next;
            pthread_cond_signal(&worker.ready);
        }
    }
    pthread_mutex_unlock(&worker.lock);
}

// MARK: - The program's exit
//
// An advance often lets the program finish: its client must learn that the advance did its
// work and the program exited, not find the connection closed without an answer. The
// program's exit handler (on_exit, which is given the status) hands the status to the
// endpoint thread and waits, briefly and only when requests are in flight, while it answers
// them: an advance with where virtual time got to and the status, a request still queued
// with 503 (nothing was changed). A change the worker is carrying out is answered when it
// is done, as usual.

static void answer_at_exit(void) {
    int busy = 0;
    for (int i = 0; i < MAX_CONNECTIONS; i++) {
        connection *c = &connections[i];
        if (c->fd < 0) continue;
        if (c->phase == QUEUED) {
            refuse_now(c, 503, "exiting", NULL, "the program is exiting; nothing was changed");
        } else if (c->phase == WORKING && starts_advance(&c->r)) {
            // The worker still owns c->a: this answer is the endpoint thread's own.
            answer a = {0};
            time_body(&a, (int64_t)chaos_vt_steps() - atomic_load(&advance_from_steps), NULL);
            send_once(c->fd, &a);
            sys_close(c->fd);
            c->fd = -1; // released when the worker hands the job back
        } else if (c->phase == WORKING) {
            busy = 1;
        }
    }
    if (!busy) atomic_store(&exit_answered, 1);
}

#if defined(__GLIBC__)
static void control_at_exit(int status, void *unused) {
    (void)unused;
    if (!started || (pid_t)syscall(SYS_getpid) != owner_pid || !atomic_load(&in_flight)) return;
    atomic_store(&exit_status_value, status & 0xFF);
    atomic_store(&exit_requested, 1);
    // The endpoint thread looks every WORKER_POLL_MS while requests are in flight.
    for (int waited = 0; waited < 500 && !atomic_load(&exit_answered); waited++) {
        struct timespec pause = {0, 1000000};
        syscall(SYS_nanosleep, &pause, NULL);
    }
}
#endif

static void serve_connections(int listener_fd) {
    for (int i = 0; i < MAX_CONNECTIONS; i++) connections[i].fd = -1;
    struct pollfd fds[MAX_CONNECTIONS + 1];
    connection *owner[MAX_CONNECTIONS + 1];
    for (;;) {
        int count = 0, working = 0;
        int64_t now = real_now(), next_deadline = INT64_MAX;
        fds[count] = (struct pollfd){listener_fd, POLLIN, 0};
        owner[count++] = NULL;
        for (int i = 0; i < MAX_CONNECTIONS; i++) {
            connection *c = &connections[i];
            if (c->phase == FREE) continue;
            if (c->phase == QUEUED || c->phase == WORKING) {
                working = 1;
                if (c->fd < 0) continue;
                fds[count] = (struct pollfd){c->fd, POLLRDHUP, 0}; // a hang-up cancels its advance
            } else {
                if (c->deadline <= now) { release(c); continue; } // too slow: its deadline passed
                if (c->deadline < next_deadline) next_deadline = c->deadline;
                fds[count] = (struct pollfd){c->fd, c->phase == READING ? POLLIN : POLLOUT, 0};
            }
            owner[count++] = c;
        }
        atomic_store(&in_flight, working);
        int64_t wait_ms = next_deadline == INT64_MAX ? -1 : (next_deadline - now) / 1000000 + 1;
        if (working && (wait_ms < 0 || wait_ms > WORKER_POLL_MS)) wait_ms = WORKER_POLL_MS; // the worker cannot wake this poll
        struct timespec timeout = {wait_ms / 1000, wait_ms % 1000 * 1000000};
        long ready = syscall(SYS_ppoll, fds, (unsigned long)count, wait_ms < 0 ? NULL : &timeout, NULL, 0);
        if (ready < 0 && errno != EINTR) {
            struct timespec pause = {0, 10000000};
            syscall(SYS_nanosleep, &pause, NULL);
        }
        for (int i = 1; ready > 0 && i < count; i++) {
            connection *c = owner[i];
            short events = fds[i].revents;
            if (!events || c->fd != fds[i].fd) continue;
            if (c->phase == QUEUED || c->phase == WORKING) {
                if (!(events & (POLLRDHUP | POLLHUP | POLLERR))) continue;
                if (starts_advance(&c->r) && c->phase == WORKING) atomic_store(&advance_stop, 1);
                sys_close(c->fd);
                c->fd = -1;
                if (c->phase == QUEUED) release(c);
            } else if (c->phase == READING) {
                read_some(c);
            } else if (c->phase == WRITING) {
                if (events & (POLLERR | POLLHUP)) release(c);
                else write_some(c);
            }
        }
        if (ready > 0 && fds[0].revents) accept_all(listener_fd);
        exchange_with_worker();
        if (atomic_load(&exit_requested) && !atomic_load(&exit_answered)) answer_at_exit();
    }
}

/// POST /v1/time/advance on the worker, outside the state lock (reads go on meanwhile), and
/// shown in `status` while it runs.
static void worker_advance(connection *c) {
    atomic_store(&advance_stop, 0);
    atomic_store(&advance_from_steps, (int64_t)chaos_vt_steps());
    atomic_store(&advance_target, INT64_MAX);
    atomic_store(&advance_running, 1);
    route(&c->a, &c->r);
    atomic_store(&advance_running, 0);
}

static void *work(void *argument) {
    void (*quiet)(void) = (void (*)(void))(uintptr_t)argument;
    if (quiet) quiet();
    for (;;) {
        pthread_mutex_lock(&worker.lock);
        while (!worker.job || worker.job_done) pthread_cond_wait(&worker.ready, &worker.lock);
        connection *c = worker.job;
        pthread_mutex_unlock(&worker.lock);
        if (starts_advance(&c->r)) {
            worker_advance(c);
        } else {
            pthread_mutex_lock(&state_lock);
            route(&c->a, &c->r);
            pthread_mutex_unlock(&state_lock);
        }
        pthread_mutex_lock(&worker.lock);
        worker.job_done = 1;
        pthread_mutex_unlock(&worker.lock);
    }
    return NULL;
}

// What the endpoint thread tells chaos_control_start once its socket listens, or why not.
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int done;
    char failure[300];
} startup = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, "" };

static void report_startup(const char *what, int error) {
    pthread_mutex_lock(&startup.lock);
    if (what) snprintf(startup.failure, sizeof startup.failure, "%s: %s", what, strerror(error));
    startup.done = 1;
    pthread_cond_signal(&startup.changed);
    pthread_mutex_unlock(&startup.lock);
}

// Gives this thread a descriptor table of its own, without the program's descriptors: the
// copies unshare makes would keep the program's pipes and sockets open after it closes them.
static int own_descriptor_table(void) {
    if (syscall(SYS_unshare, CLONE_FILES) != 0) return -1;
    if (syscall(SYS_close_range, 0U, ~0U, 0U) == 0) return 0;
    struct rlimit limit;  // close_range is Linux 5.9; before it, one by one
    unsigned long highest = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY ? limit.rlim_cur : 65536;
    for (unsigned long fd = 0; fd < highest && fd < (1UL << 20); fd++) sys_close((int)fd);
    return 0;
}

static int open_listener(void) {
    int fd = (int)syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    struct sockaddr_un address;
    memset(&address, 0, sizeof address);
    address.sun_family = AF_UNIX;
    memcpy(address.sun_path, socket_path, strlen(socket_path) + 1);
    syscall(SYS_unlinkat, AT_FDCWD, socket_path, 0); // left by an earlier process with this pid
    if (syscall(SYS_bind, fd, &address, sizeof address) != 0 || syscall(SYS_listen, fd, 128) != 0) {
        int error = errno;
        sys_close(fd);
        errno = error;
        return -1;
    }
    syscall(SYS_fchmodat, AT_FDCWD, socket_path, 0600);
    return fd;
}

static void *run(void *argument) {
    void (*quiet)(void) = (void (*)(void))(uintptr_t)argument;
    if (quiet) quiet();
    if (own_descriptor_table() != 0) {
        report_startup("cannot give the endpoint a descriptor table of its own (unshare)", errno);
        return NULL;
    }
    listener = open_listener();
    if (listener < 0) {
        report_startup(socket_path, errno);
        return NULL;
    }
    report_startup(NULL, 0);
    serve_connections(listener);
    return NULL;
}

// MARK: - Starting and stopping

static void say(const char *what, const char *detail) {
    char line[sizeof directory + 512];
    int length = snprintf(line, sizeof line, "chaos preload: no control endpoint: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    if (length > 0) syscall(SYS_write, 2, line, (size_t)(length < (int)sizeof line ? length : (int)sizeof line - 1));
}

/// Chooses the directory of the endpoint files for `path` (the one the environment names)
/// as ControlEndpoint does, so that `chaos ctl` looks where the files are, and leaves it in
/// `directory`. A missing directory is made (with its missing parents, mode 0700); an
/// existing one is never chmod'ed, since it may be anyone's (CHAOS_CONTROL_DIR=/tmp). A
/// shared sticky directory such as /tmp gets the private subdirectory chaoskit-UID; one that
/// others may write to without the sticky bit is refused, and so is one of another user.
static int private_directory(const char *path) {
    char partial[sizeof directory];
    snprintf(partial, sizeof partial, "%s", path);
    struct stat info;
    if (syscall(SYS_newfstatat, AT_FDCWD, partial, &info, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno != ENOENT) { say(partial, strerror(errno)); return -1; }
        for (char *slash = partial + 1; *slash; slash++) {
            if (*slash != '/') continue;
            *slash = 0;
            syscall(SYS_mkdirat, AT_FDCWD, partial, 0700);
            *slash = '/';
        }
        syscall(SYS_mkdirat, AT_FDCWD, partial, 0700);
        if (syscall(SYS_newfstatat, AT_FDCWD, partial, &info, AT_SYMLINK_NOFOLLOW) != 0) { say(partial, strerror(errno)); return -1; }
    }
    if (!S_ISDIR(info.st_mode)) { say(partial, "is not a directory (a symbolic link or a file is refused); set CHAOS_CONTROL_DIR"); return -1; }
    if ((info.st_mode & S_ISVTX) && (info.st_mode & 022)) {
        // Shared, as /tmp is: the sticky bit keeps others from renaming or removing what is
        // ours, so a subdirectory of our own, checked once made, is private.
        int length = snprintf(directory, sizeof directory, "%s/chaoskit-%u", partial, (unsigned)geteuid());
        if (length <= 0 || (size_t)length >= sizeof directory) { say(partial, "is too long a path; set CHAOS_CONTROL_DIR"); return -1; }
        if (syscall(SYS_mkdirat, AT_FDCWD, directory, 0700) != 0 && errno != EEXIST) { say(directory, strerror(errno)); return -1; }
        if (syscall(SYS_newfstatat, AT_FDCWD, directory, &info, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(info.st_mode) ||
            info.st_uid != geteuid() || (info.st_mode & 077)) {
            say(directory, "is not a private directory of yours (mode 0700, a real directory): someone else may have made it; remove it, or set CHAOS_CONTROL_DIR to a directory you own");
            return -1;
        }
        return 0;
    }
    if (info.st_uid != geteuid()) { say(partial, "belongs to another user; set CHAOS_CONTROL_DIR to a directory you own"); return -1; }
    if (info.st_mode & 022) {
        say(partial, "others may write to this directory, and without the sticky bit they could replace endpoint files; run chmod go-w on it (or chmod +t to share it), or set CHAOS_CONTROL_DIR to a private directory");
        return -1;
    }
    return 0;
}

__attribute__((destructor)) static void chaos_control_stop(void) {
    // A forked child shares the names but not the endpoint: only the owner removes them.
    if (!started || (pid_t)syscall(SYS_getpid) != owner_pid) return;
    syscall(SYS_unlinkat, AT_FDCWD, file_path, 0);
    syscall(SYS_unlinkat, AT_FDCWD, socket_path, 0);
}

HIDDEN void chaos_control_start(chaos_control_getenv_fn get, void (*quiet)(void)) {
    owner_pid = (pid_t)syscall(SYS_getpid);
    const char *explicit = get("CHAOS_CONTROL_DIR"), *runtime = get("XDG_RUNTIME_DIR"), *home = get("HOME");
    int length;
    if (explicit && *explicit) length = snprintf(directory, sizeof directory, "%s", explicit);
    else if (runtime && *runtime) length = snprintf(directory, sizeof directory, "%s/chaoskit", runtime);
    else if (home && *home) length = snprintf(directory, sizeof directory, "%s/.chaoskit/control", home);
    else { say("no directory for the endpoint file", "set CHAOS_CONTROL_DIR"); return; }
    if (length <= 0 || (size_t)length >= sizeof directory || directory[0] != '/') { say("CHAOS_CONTROL_DIR must be an absolute path", directory); return; }
    while (length > 1 && directory[length - 1] == '/') directory[--length] = 0;
    if (private_directory(directory) != 0) return;
    length = snprintf(socket_path, sizeof socket_path, "%s/%d.sock", directory, (int)owner_pid);
    if (length <= 0 || length >= 104) { say("the socket path would be 104 bytes or longer; choose a shorter CHAOS_CONTROL_DIR", directory); return; }
    snprintf(file_path, sizeof file_path, "%s/%d.json", directory, (int)owner_pid);

    unsigned char random[32];
    if (syscall(SYS_getrandom, random, sizeof random, 0) != (long)sizeof random) { say("getrandom failed", strerror(errno)); return; }
    for (int i = 0; i < 32; i++) snprintf(token + 2 * i, 3, "%02x", random[i]);
    read_program_name();

    // The program's signals are its own: the endpoint's thread never takes one.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 256 * 1024);
    pthread_t thread;
    // The worker first: it shares the program's descriptor table, which the endpoint thread
    // leaves for a table of its own.
    int failed = pthread_create(&thread, &attributes, work, (void *)(uintptr_t)quiet);
    if (!failed) failed = pthread_create(&thread, &attributes, run, (void *)(uintptr_t)quiet);
    pthread_attr_destroy(&attributes);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    if (failed) { say("cannot start its thread", strerror(failed)); return; }
    // The endpoint file names a socket that listens: wait until it does, or why it cannot.
    pthread_mutex_lock(&startup.lock);
    while (!startup.done) pthread_cond_wait(&startup.changed, &startup.lock);
    pthread_mutex_unlock(&startup.lock);
    if (startup.failure[0]) { say(startup.failure, NULL); return; }

    buffer record = {0};
    put(&record, "{\"version\":1,\"pid\":%d,\"program\":", (int)owner_pid);
    put_json_string(&record, program);
    put(&record, ",\"kind\":\"preload\",\"url\":");
    char url[sizeof socket_path + 8];
    snprintf(url, sizeof url, "unix:%s", socket_path);
    put_json_string(&record, url);
    put(&record, ",\"token\":\"%s\",\"started\":", token);
    put_date(&record, chaos_fault_real_ns(CLOCK_REALTIME));
    put(&record, "}\n");
    char temporary[sizeof file_path + 32];
    snprintf(temporary, sizeof temporary, "%s/.%d.%02x%02x%02x%02x.tmp", directory, (int)owner_pid, random[0], random[1], random[2], random[3]);
    int file = record.failed ? -1 : (int)syscall(SYS_openat, AT_FDCWD, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int written = file >= 0 && sys_write_all(file, record.data, record.length) == (long)record.length;
    if (file >= 0) sys_close(file);
    free(record.data);
    if (!written || syscall(SYS_renameat, AT_FDCWD, temporary, AT_FDCWD, file_path) != 0) {
        // The thread listens on, but nobody can find it: no endpoint, as far as users go.
        say(file_path, strerror(errno));
        syscall(SYS_unlinkat, AT_FDCWD, temporary, 0);
        syscall(SYS_unlinkat, AT_FDCWD, socket_path, 0);
        return;
    }
    started = 1;
#if defined(__GLIBC__)
    on_exit(control_at_exit, NULL);
#endif
}

#endif
