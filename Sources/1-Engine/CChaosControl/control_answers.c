// The control endpoint's answers: errors, entries, status, virtual time, and the advance
// of virtual time the worker carries out.
#define _GNU_SOURCE
#include "control.h"
#include "CChaosRules.h"

#if defined(__linux__)

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// The advance in progress (on the worker thread), for `status`, `/v1/time` and cancelling.
// Atomics: the worker writes them, the endpoint thread reads them and sets `stop`.
struct ctl_advancing ctl_advancing;

/// An error answer; `subject` may be NULL. Quotes of input are cut to 80 bytes by callers.
HIDDEN void ctl_fail(answer *a, int status, const char *kind, const char *subject, const char *message) {
    a->status = status;
    a->body.length = 0;
    ctl_put(&a->body, "{\"error\":{\"kind\":");
    ctl_put_json_string(&a->body, kind);
    if (subject) {
        // A character split by the caller's cut at 80 bytes is left out, not shown as U+FFFD.
        ctl_put(&a->body, ",\"subject\":");
        ctl_put_json(&a->body, subject, chaos_utf8_trim_incomplete(subject, strlen(subject)));
    }
    ctl_put(&a->body, ",\"message\":");
    ctl_put_json_string(&a->body, message);
    ctl_put(&a->body, "}}");
}

static const char *point_display(int point) {
    const char *name = chaos_fault_point_public_name(point);
    return name ? name : "system";
}

HIDDEN void ctl_put_date(buffer *b, int64_t ns) {
    time_t seconds = (time_t)(ns / 1000000000);
    struct tm parts;
    gmtime_r(&seconds, &parts);
    ctl_put(b, "\"%04d-%02d-%02dT%02d:%02d:%02d.%03dZ\"", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
            parts.tm_hour, parts.tm_min, parts.tm_sec, (int)(ns / 1000000 % 1000));
}

HIDDEN const char *ctl_entry_provider(const control_entry *entry, char *root, size_t capacity) {
    // The provider as the profile wrote it: the part of a `chaos run` label after the arrow.
    if (entry->label) {
        const char *arrow = strstr(entry->label, "\xE2\x86\x90 ");
        return arrow ? arrow + 4 : entry->label;
    }
    snprintf(root, capacity, "plan entry");
    const char *node = strstr(entry->text, "\nnode 0 ");
    if (node) {
        size_t length = strcspn(node + 8, " \n");
        snprintf(root, capacity, "%.*s", (int)(length < 60 ? length : 60), node + 8);
    }
    return root;
}

HIDDEN const char *ctl_point_display(int point) { return point_display(point); }

HIDDEN void ctl_put_entry(buffer *b, const control_entry *entry) {
    chaos_entry_counters counters;
    chaos_counts_read(entry->counts, &counters); // zeros for NULL
    uint64_t seen = counters.seen, acted = counters.acted, passed = counters.passed,
             last_call = counters.last_fire_call;
    int64_t last_ns = counters.last_fire_ns;
    int has_last = last_ns != 0;
    char root[64];
    const char *provider = ctl_entry_provider(entry, root, sizeof root);
    ctl_put(b, "{\"id\":%d,\"point\":", entry->id);
    ctl_put_json_string(b, point_display(entry->point));
    ctl_put(b, ",\"provider\":");
    ctl_put_json_string(b, provider);
    ctl_put(b, ",\"enabled\":%s,\"seen\":%llu,\"acted\":%llu,\"passed\":%llu", entry->enabled ? "true" : "false",
            (unsigned long long)seen, (unsigned long long)acted, (unsigned long long)passed);
    if (has_last) {
        ctl_put(b, ",\"lastAct\":{\"callIndex\":%llu,\"entrySeed\":\"%llu\",\"chaosSeed\":\"%llu\",\"date\":",
                (unsigned long long)last_call, (unsigned long long)ctl_plan_seed, (unsigned long long)ctl_plan_seed);
        ctl_put_date(b, last_ns);
        ctl_put(b, "}");
    }
    ctl_put(b, ",\"chaosSeed\":\"%llu\"", (unsigned long long)ctl_plan_seed);
    if (entry->label) {
        ctl_put(b, ",\"label\":");
        ctl_put_json_string(b, entry->label);
    }
    ctl_put(b, ",\"plan\":");
    ctl_put_json_string(b, entry->text);
    ctl_put(b, "}");
}

static void put_advance_progress(buffer *b);

HIDDEN void ctl_status_body(answer *a) {
    int enabled = 0;
    for (int i = 0; i < ctl_entry_count; i++) enabled += ctl_entries[i].enabled;
    a->status = 200;
    ctl_put(&a->body, "{\"version\":1,\"pid\":%d,", (int)ctl_public_pid);
    if (ctl_runner_pid > 0) ctl_put(&a->body, "\"runner\":%d,", (int)ctl_runner_pid);
    ctl_put(&a->body, "\"program\":");
    ctl_put_json_string(&a->body, ctl_program);
    ctl_put(&a->body, ",\"kind\":\"%s\",\"entries\":%d,\"enabledEntries\":%d,\"waiting\":false,\"features\":[]",
            ctl_kind, ctl_entry_count, enabled);
    put_advance_progress(&a->body);
    ctl_put(&a->body, "}");
}

/// What `status` and `/v1/time` show of an advance while it runs.
static void put_advance_progress(buffer *b) {
    if (!atomic_load(&ctl_advancing.running)) return;
    int64_t left = atomic_load(&ctl_advancing.target) - chaos_vt_monotonic_ns();
    ctl_put(b, ",\"advance\":{\"steps\":%lld,\"remainingNanoseconds\":%lld}",
            (long long)((int64_t)chaos_vt_steps() - atomic_load(&ctl_advancing.from_steps)),
            (long long)(left > 0 ? left : 0));
}

/// The answer of /v1/time: virtual time in this process (`steps`: of the advance just made,
/// or -1; `stopped`: for a DELETE of the advance, whether it stopped one).
HIDDEN void ctl_time_body(answer *a, int64_t steps, const char *stopped) {
    a->status = 200;
    int running = chaos_vt_running();
    ctl_put(&a->body, "{\"running\":%s", running ? "true" : "false");
    if (running) {
        int64_t wall = chaos_vt_reading_ns(CLOCK_REALTIME);
        time_t seconds = (time_t)(wall / 1000000000 - (wall % 1000000000 < 0));
        struct tm parts;
        char text[40] = "";
        if (gmtime_r(&seconds, &parts)) strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &parts);
        ctl_put(&a->body,
                ",\"now\":\"%s.%03dZ\",\"nanosecondsSince1970\":%lld,\"offsetNanoseconds\":%lld,\"pending\":%d", text,
                (int)((wall - (int64_t)seconds * 1000000000) / 1000000), (long long)wall,
                (long long)(wall - chaos_fault_real_ns(CLOCK_REALTIME)), (int)chaos_vt_pending_count());
    }
    if (steps >= 0) ctl_put(&a->body, ",\"steps\":%lld", (long long)steps);
    if (stopped) ctl_put(&a->body, ",\"stopped\":%s", stopped);
    put_advance_progress(&a->body);
    if (atomic_load(&ctl_exit.requested))
        ctl_put(&a->body, ",\"exited\":{\"status\":%d}", atomic_load(&ctl_exit.status));
    ctl_put(&a->body, "}");
}

/// An advance goes on without a limit of its own only as far as this many steps (each step
/// wakes what is due at one deadline): a program that wakes every 0.2 s takes 432,000 steps
/// for a day. `?steps=N` sets another limit.
#define DEFAULT_ADVANCE_STEPS 1000000

static int advance_should_stop(void *unused) {
    (void)unused;
    return atomic_load(&ctl_advancing.stop);
}

/// POST /v1/time/advance?by=DURATION[&steps=N] (on the worker thread): moves virtual time
/// forward, through every deadline on the way, and answers once the last has been taken;
/// or, stopped or cut short by its step limit, says where virtual time stays.
HIDDEN void ctl_advance(answer *a, const char *by, const char *steps_text) {
    int64_t nanoseconds;
    if (!by[0] || chaos_rules_parse_duration(by, &nanoseconds) != 0) {
        char subject[100];
        snprintf(subject, sizeof subject, "by=%.80s", by);
        ctl_fail(a, 400, "badRequest", subject,
                 "give how far to advance as ?by=DURATION, e.g. 1h, 1h30m, 30s or 250ms (forward only)");
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
            ctl_fail(a, 400, "badRequest", subject,
                     "give the most steps the advance may take as ?steps=N, a positive whole number");
            return;
        }
    }
    if (!chaos_vt_running()) {
        ctl_fail(a, 409, "notRunning", "virtual time",
                 "this process does not run on virtual time; apply the system.clock item virtual (chaos run --profile, "
                 "or chaos ctl apply)");
        return;
    }
    int64_t now = chaos_vt_monotonic_ns();
    int64_t target = nanoseconds > INT64_MAX - now ? INT64_MAX : now + nanoseconds;
    atomic_store(&ctl_advancing.target, target);
    int64_t steps = chaos_vt_advance_to_unless(target, limit, advance_should_stop, NULL);
    if (chaos_vt_running() && chaos_vt_monotonic_ns() < target) {
        int stopped = atomic_load(&ctl_advancing.stop);
        if (stopped) atomic_fetch_add(&ctl_advancing.stopped, 1);
        buffer reached = {0};
        ctl_put_date(&reached, chaos_vt_reading_ns(CLOCK_REALTIME));
        char message[600];
        snprintf(message, sizeof message,
                 stopped ? "the advance was stopped after %lld steps, before its target; virtual time stays at %s"
                         : "the advance reached its limit of %lld steps before its target; virtual time stays at %s; "
                           "advance again, or allow more steps (chaos ctl advance --max-steps)",
                 (long long)steps, reached.data ? reached.data : "?");
        free(reached.data);
        ctl_fail(a, 409, stopped ? "advanceStopped" : "stepLimit", "virtual time", message);
        return;
    }
    ctl_time_body(a, steps, NULL);
}

#endif
