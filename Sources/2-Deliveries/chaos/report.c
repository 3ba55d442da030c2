// The exit report of `chaos run`. Lines on standard error are for people; the JSON file
// (--report FILE) is for CI jobs and says the same.
#define _GNU_SOURCE
#include "report.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/// Writes `text` as a JSON string (quotes included).
static void json_string(FILE *out, const char *text) {
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

/// "exit 3" or "signal SIGTERM".
static void describe_status(int status, char *out, size_t capacity) {
    if (WIFSIGNALED(status))
        snprintf(out, capacity, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(out, capacity, "exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : 0);
}

/// What an event of the tree was, for people and (`json`) for the JSON report.
static const char *event_text(int32_t kind, int json) {
    switch (kind) {
    case CHAOS_TREE_EXEC_REFUSED: return json ? "exec-refused" : "exec refused: chaos cannot reach the program";
    case CHAOS_TREE_EXEC_UNREACHED: return json ? "exec-unreached" : "ran without chaos (--allow-unreached)";
    case CHAOS_TREE_IO_URING_REFUSED: return json ? "io-uring-refused" : "io_uring refused with ENOSYS";
    case CHAOS_TREE_IO_URING_ALLOWED:
        return json ? "io-uring-allowed" : "io_uring allowed: its reads and writes were out of reach";
    case CHAOS_TREE_SETUID_UNPRIVILEGED:
        return json ? "setuid-unprivileged" : "a set-user-ID program, run without its privileges (no_new_privs)";
    case CHAOS_TREE_DEADLINE_REAL:
        return json ? "deadline-real" : "a futex wait or kernel timer kept real time (seccomp delivery)";
    case CHAOS_TREE_VDSO_UNPATCHED:
        return json ? "vdso-unpatched"
                    : "its vDSO could not be patched while no clock entry was active: its clock stayed real";
    case CHAOS_TREE_VDSO_HIDDEN:
        return json ? "vdso-hidden"
                    : "its vDSO could not be patched: hidden, its clock readings were system calls (slow)";
    default: return json ? "unknown" : "an event this report does not know";
    }
}

static uint64_t kept_events(const struct chaos_report_run *run) {
    return run->events ? (run->event_count < CHAOS_TALLY_EVENTS ? run->event_count : CHAOS_TALLY_EVENTS) : 0;
}

static int write_json(const char *path, const struct chaos_report_run *run, const struct chaos_report_entry *entries,
                      int count) {
    FILE *out = fopen(path, "w");
    if (!out) return -1;
    fprintf(out, "{\"program\":");
    json_string(out, run->program);
    fprintf(out, ",\"delivery\":\"%s\",\"seed\":%llu,", run->delivery, (unsigned long long)run->seed);
    if (WIFSIGNALED(run->status))
        fprintf(out, "\"status\":{\"signal\":%d}", WTERMSIG(run->status));
    else
        fprintf(out, "\"status\":{\"exit\":%d}", WIFEXITED(run->status) ? WEXITSTATUS(run->status) : 0);
    fprintf(out, ",\"entries\":[");
    for (int i = 0; i < count; i++) {
        const struct chaos_report_entry *e = &entries[i];
        fprintf(out, "%s{\"entry\":%d,\"point\":\"%s\",", i ? "," : "", e->number,
                chaos_fault_point_public_name(e->point));
        if (e->label) {
            fprintf(out, "\"label\":");
            json_string(out, e->label);
            fputc(',', out);
        }
        fprintf(out, "\"seen\":%llu,\"acted\":%llu,\"passed\":%llu,\"neverActed\":%s", (unsigned long long)e->seen,
                (unsigned long long)e->acted, (unsigned long long)(e->seen - e->acted), e->acted ? "false" : "true");
        const chaos_fn_info *info = e->last_fn > 0 ? chaos_fault_fn_info(e->last_fn - 1) : NULL;
        if (info) {
            fprintf(out, ",\"lastAct\":{\"function\":");
            json_string(out, info->name);
            fprintf(out, ",\"target\":");
            json_string(out, e->last_target);
            fputc('}', out);
        }
        fputc('}', out);
    }
    fprintf(out, "]");
    if (run->applied_later) fprintf(out, ",\"uncountedAppliedEntries\":%llu", (unsigned long long)run->applied_later);
    if (run->event_count) {
        fprintf(out, ",\"treeEvents\":[");
        for (uint64_t i = 0; i < kept_events(run); i++) {
            const chaos_tree_event *event = &run->events[i];
            fprintf(out, "%s{\"event\":\"%s\",\"pid\":%d,\"program\":", i ? "," : "", event_text(event->kind, 1),
                    (int)event->pid);
            json_string(out, event->program);
            fputc('}', out);
        }
        fprintf(out, "],\"treeEventCount\":%llu", (unsigned long long)run->event_count);
    }
    if (run->processes) fprintf(out, ",\"processes\":%llu", (unsigned long long)run->processes);
    if (run->vdso_processes)
        fprintf(out, ",\"vdso\":{\"patchedProcesses\":%d,\"readings\":%llu}", run->vdso_processes,
                (unsigned long long)run->vdso_readings);
    if (run->power_loss) {
        fprintf(out, ",\"powerLoss\":");
        json_string(out, run->power_loss);
    }
    if (run->still_running) {
        fprintf(out, ",\"stillRunning\":{\"count\":%d,\"processes\":", run->still_running);
        json_string(out, run->running ? run->running : "");
        fprintf(out, ",\"waitedOut\":%s}", run->waited_out ? "true" : "false");
    }
    fprintf(out, "}\n");
    return fclose(out) == 0 ? 0 : -1;
}

/// The entry's number in its profile: ChaosKit labels entries "#N point ← provider" and
/// may order a plan's entries otherwise than its profile does. 0 when the label has none.
static int profile_number(const char *label) {
    int number = 0;
    if (!label || label[0] != '#') return 0;
    for (const char *c = label + 1; *c >= '0' && *c <= '9' && number < 1000000; c++) number = number * 10 + (*c - '0');
    return number;
}

static int by_profile_number(const void *left, const void *right) {
    const struct chaos_report_entry *a = left, *b = right;
    return a->number - b->number;
}

int chaos_report_write(const struct chaos_report_run *run, struct chaos_report_entry *entries, int count,
                       const struct chaos_report_options *options) {
    // Numbered as the profile numbers them, when every label says it and no two say the
    // same (entries `chaos ctl` added come from profiles of their own); else in plan order.
    int numbered = 1;
    for (int i = 0; i < count; i++) numbered &= (entries[i].number = profile_number(entries[i].label)) > 0;
    for (int i = 0; i < count && numbered; i++)
        for (int j = i + 1; j < count; j++) numbered &= entries[i].number != entries[j].number;
    for (int i = 0; i < count && !numbered; i++) entries[i].number = i + 1;
    qsort(entries, (size_t)count, sizeof *entries, by_profile_number);
    int never = 0;
    for (int i = 0; i < count; i++) never += entries[i].acted == 0;
    if (!options->quiet) {
        char status[96];
        describe_status(run->status, status, sizeof status);
        fprintf(stderr, "chaos run: %s ended (%s); %s delivery, seed %llu:\n", run->program, status, run->delivery,
                (unsigned long long)run->seed);
        for (int i = 0; i < count; i++) {
            const struct chaos_report_entry *e = &entries[i];
            // ChaosKit labels entries "#N point ← provider"; a plan written by hand may not.
            if (e->label)
                fprintf(stderr, "  %s", e->label);
            else
                fprintf(stderr, "  #%d %s", e->number, chaos_fault_point_public_name(e->point));
            fprintf(stderr, ": seen %llu, acted %llu%s\n", (unsigned long long)e->seen, (unsigned long long)e->acted,
                    e->acted ? "" : "  <- NEVER ACTED");
        }
        if (run->power_loss) fprintf(stderr, "  %s\n", run->power_loss);
        if (run->vdso_processes)
            fprintf(stderr, "  %llu clock readings answered inside the program (%d process%s with a patched vDSO)\n",
                    (unsigned long long)run->vdso_readings, run->vdso_processes, run->vdso_processes == 1 ? "" : "es");
        if (run->applied_later)
            fprintf(stderr, "  and %llu %s applied through chaos ctl while it ran: not counted in this report\n",
                    (unsigned long long)run->applied_later, run->applied_later == 1 ? "entry" : "entries");
        for (uint64_t i = 0; i < kept_events(run); i++)
            fprintf(stderr, "  process %d (%s): %s\n", (int)run->events[i].pid, run->events[i].program,
                    event_text(run->events[i].kind, 0));
        if (run->event_count > kept_events(run))
            fprintf(stderr, "  and %llu more such events\n", (unsigned long long)(run->event_count - kept_events(run)));
        if (run->processes > 1 && run->places_calls)
            fprintf(stderr,
                    "  several processes decided from counts the tree shares: calls made at the same time count "
                    "in the order they reached them, so a placement by count may not replay exactly\n");
        if (run->still_running)
            fprintf(stderr, "  %d process%s of the tree still running%s: %s; %s later calls are not counted\n",
                    run->still_running, run->still_running == 1 ? "" : "es",
                    run->waited_out ? " after --wait-tree's bound" : "", run->running ? run->running : "",
                    run->still_running == 1 ? "its" : "their");
    }
    if (options->path && write_json(options->path, run, entries, count) != 0) {
        fprintf(stderr, "chaos run: cannot write the report to %s: %s\n", options->path, strerror(errno));
        return -1;
    }
    return never;
}
