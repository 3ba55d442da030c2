// The control endpoint's entries: every `entry` of the starting plan and of each plan
// applied since, the plan made of the enabled ones, and the changes `route` asks for
// (apply, revert, enable, disable). Everything here is under control_connections.c's
// state lock, or runs before the endpoint's threads start.
#define _GNU_SOURCE
#include "control.h"

#if defined(__linux__)

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// The entries in the order they were applied; under the state lock.
control_entry *ctl_entries;
int ctl_entry_count;
// The seed of the plan applied last; under the state lock.
uint64_t ctl_plan_seed;
// Room in ctl_entries, and the id and plan group the next entries get; under the state lock.
static int entry_capacity, next_id = 1, next_group = 1;
// The start anchor of `speed anchor=start` was chosen (by the constructor, or the first plan
// asking for it); under the state lock.
static int anchor_chosen;

HIDDEN void chaos_control_anchor_chosen(void) { anchor_chosen = 1; }

// Set by the constructor, before the endpoint's thread starts.
static _Atomic uint64_t *applied_counter;

HIDDEN void chaos_control_count_applied_into(uint64_t *counter) { applied_counter = (_Atomic uint64_t *)counter; }

// Set once before the endpoint starts (chaos_control_check_plans), read by the worker.
static chaos_control_check_fn plan_check;

HIDDEN void chaos_control_check_plans(chaos_control_check_fn check) { plan_check = check; }

// MARK: - Entries from plan text

/// Unescapes a quoted plan value starting after its opening quote; NULL when out of memory.
static char *unquote(const char *from) {
    size_t length = strlen(from);
    char *out = malloc(length + 1), *to = out;
    if (!out) return NULL;
    for (const char *p = from; *p && *p != '"' && *p != '\n'; p++) {
        if (*p != '\\' || !p[1]) {
            *to++ = *p;
            continue;
        }
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
    if (!text || chaos_plan_format(plan, text, (size_t)need + 1) < 0) {
        free(text);
        return -1;
    }
    int count = chaos_plan_entry_count(plan);
    control_entry *list = calloc(count > 0 ? (size_t)count : 1, sizeof *list);
    if (!list) {
        free(text);
        return -1;
    }
    int current = -1;
    buffer lines = {0};
    for (char *line = text; *line;) {
        char *end = strchr(line, '\n');
        size_t length = end ? (size_t)(end - line) + 1 : strlen(line);
        if (strncmp(line, "seed ", 5) == 0) {
            *seed = strtoull(line + 5, NULL, 0);
        } else if (strncmp(line, "entry ", 6) == 0 && current + 1 < count) {
            if (current >= 0) {
                list[current].text = lines.data;
                lines = (buffer){0};
            }
            current++;
            list[current].point = point_of(line);
            list[current].slot = -1;
            list[current].enabled = 1;
            const char *label = strstr(line, " label=\"");
            if (label && label < line + length) list[current].label = unquote(label + 8);
            ctl_put_bytes(&lines, line, length);
        } else if (current >= 0) {
            ctl_put_bytes(&lines, line, length);
        }
        line += length;
    }
    if (current >= 0) list[current].text = lines.data;
    free(text);
    for (int i = 0; i < count; i++)
        if (!list[i].text || lines.failed) {
            free_entries(list, count);
            return -1;
        }
    *out = list;
    return count;
}

HIDDEN void chaos_control_adopt(const chaos_plan *plan) {
    control_entry *list;
    int count = split(plan, &list, &ctl_plan_seed);
    if (count <= 0) return;
    ctl_entries = list;
    ctl_entry_count = entry_capacity = count;
    for (int i = 0; i < count; i++) {
        ctl_entries[i].id = next_id++;
        ctl_entries[i].slot = i; // the constructor installs this very plan
        ctl_entries[i].counts = chaos_plan_counts(plan, i);
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

static void append_text(control_entry *entry, void *context) {
    ctl_put_bytes(context, entry->text, strlen(entry->text));
}

static void take_slot(control_entry *entry, void *context) { entry->slot = (*(int *)context)++; }

/// The plan of the enabled entries of `list` (the seed `seed`), parsed; NULL with `error`.
static chaos_plan *combine(control_entry *list, int count, uint64_t seed, chaos_plan_error *error) {
    buffer text = {0};
    ctl_put(&text, "chaos-plan 1\nseed %llu\n", (unsigned long long)seed);
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
    for (int i = 0; i < ctl_entry_count; i++) ctl_entries[i].slot = -1;
    int slot = 0;
    in_plan_order(ctl_entries, ctl_entry_count, take_slot, &slot);
    for (int i = 0; i < ctl_entry_count; i++) {
        control_entry *entry = &ctl_entries[i];
        if (entry->slot < 0) continue;
        if (entry->counts)
            chaos_plan_count_into(plan, entry->slot, entry->counts);
        else
            entry->counts = chaos_plan_counts(plan, entry->slot);
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

HIDDEN control_entry *ctl_find(int id) {
    for (int i = 0; i < ctl_entry_count; i++)
        if (ctl_entries[i].id == id) return &ctl_entries[i];
    return NULL;
}

HIDDEN void ctl_not_applied(answer *a, const char *text) {
    char subject[100];
    snprintf(subject, sizeof subject, "entry %.80s", text);
    ctl_fail(a, 404, "notApplied", subject, "no live entry has this id; `chaos ctl status PID` lists them");
}

/// POST /v1/entries: the plan text, all or nothing.
HIDDEN void ctl_apply(answer *a, const char *body, size_t length, const char *source) {
    chaos_plan_error error;
    memset(&error, 0, sizeof error);
    chaos_plan *alone = chaos_plan_parse(body, length, &error);
    char subject[160];
    if (!alone) {
        snprintf(subject, sizeof subject, "%.*s:%d:%d", (int)chaos_utf8_cut(source, strlen(source), 80), source,
                 (int)error.line, (int)error.column);
        ctl_fail(a, 422, "invalidProfile", subject, error.message);
        return;
    }
    control_entry *added;
    uint64_t seed = ctl_plan_seed;
    int count = split(alone, &added, &seed);
    chaos_plan_free(alone);
    if (count < 0) {
        ctl_fail(a, 500, "systemFailure", NULL, "out of memory while reading the plan");
        return;
    }
    if (ctl_entry_count + count > entry_capacity) {
        int capacity = (ctl_entry_count + count) * 2;
        control_entry *grown = realloc(ctl_entries, (size_t)capacity * sizeof *grown);
        if (!grown) {
            free_entries(added, count);
            ctl_fail(a, 500, "systemFailure", NULL, "out of memory while adding the entries");
            return;
        }
        ctl_entries = grown;
        entry_capacity = capacity;
    }
    // Tried on the whole list first: the combination can break limits the parts keep.
    for (int i = 0; i < count; i++) {
        ctl_entries[ctl_entry_count + i] = added[i];
        ctl_entries[ctl_entry_count + i].group = next_group;
    }
    chaos_plan *plan = combine(ctl_entries, ctl_entry_count + count, seed, &error);
    if (!plan) {
        free_entries(added, count);
        snprintf(subject, sizeof subject, "%.80s", source);
        char message[400];
        snprintf(message, sizeof message, "with the entries already applied the plan is refused: %s; revert some first",
                 error.message);
        ctl_fail(a, 422, "invalidProfile", subject, message);
        return;
    }
    char why[512];
    if (plan_check && plan_check(plan, why, sizeof why) != 0) {
        chaos_plan_free(plan);
        free_entries(added, count);
        snprintf(subject, sizeof subject, "%.80s", source);
        ctl_fail(a, 422, "unreachable", subject, why);
        return;
    }
    free(added); // the strings now belong to `entries`
    for (int i = 0; i < count; i++) ctl_entries[ctl_entry_count + i].id = next_id++;
    ctl_entry_count += count;
    next_group++;
    ctl_plan_seed = seed;
    install(plan);
    if (applied_counter) atomic_fetch_add(applied_counter, (uint64_t)count);
    a->status = 201;
    ctl_put(&a->body, "{\"entries\":[");
    for (int i = 0; i < count; i++)
        ctl_put(&a->body, "%s%d", i ? "," : "", ctl_entries[ctl_entry_count - count + i].id);
    ctl_put(&a->body, "],\"seed\":\"%llu\"}", (unsigned long long)seed);
}

/// Installs the entry list as it now is; an error answer when it cannot. `enabled` names
/// an entry just enabled: the entries enabled with it may break the engine's limits, which
/// is the user's to change, not a failure of the endpoint's.
static int reinstall(answer *a, const char *enabled) {
    chaos_plan_error error;
    memset(&error, 0, sizeof error);
    chaos_plan *plan = combine(ctl_entries, ctl_entry_count, ctl_plan_seed, &error);
    if (!plan && enabled && strcmp(error.message, "out of memory") != 0) {
        char subject[100], message[400];
        snprintf(subject, sizeof subject, "entry %.80s", enabled);
        snprintf(message, sizeof message,
                 "with the entries already enabled the plan is refused: %s; disable or revert some first",
                 error.message);
        ctl_fail(a, 422, "invalidProfile", subject, message);
        return -1;
    }
    if (!plan) {
        ctl_fail(a, 500, "systemFailure", NULL, error.message);
        return -1;
    }
    install(plan);
    return 0;
}

/// Whether a revert of all removes `entry` (see ctl_revert).
static int reverted_by(const control_entry *entry, int id, int include_clock) {
    return id ? entry->id == id : include_clock || entry->point != CHAOS_POINT_CLOCK;
}

HIDDEN void ctl_revert(answer *a, int id, const char *text, int include_clock) {
    if (id && !ctl_find(id)) {
        ctl_not_applied(a, text);
        return;
    }
    buffer ids = {0};
    ctl_put(&ids, "{\"entries\":[");
    int kept = 0, removed = 0;
    control_entry *gone = calloc((size_t)(ctl_entry_count > 0 ? ctl_entry_count : 1), sizeof *gone);
    if (!gone) {
        free(ids.data);
        ctl_fail(a, 500, "systemFailure", NULL, "out of memory");
        return;
    }
    // Left out of the plan before they are freed; the old plan holds their counts until the
    // engine frees it, so calls it still decides are counted, in counts nobody reads.
    int *was_enabled = calloc((size_t)(ctl_entry_count > 0 ? ctl_entry_count : 1), sizeof *was_enabled);
    if (!was_enabled) {
        free(gone);
        free(ids.data);
        ctl_fail(a, 500, "systemFailure", NULL, "out of memory");
        return;
    }
    for (int i = 0; i < ctl_entry_count; i++) {
        was_enabled[i] = ctl_entries[i].enabled;
        if (reverted_by(&ctl_entries[i], id, include_clock)) ctl_entries[i].enabled = 0;
    }
    if (reinstall(a, NULL) != 0) {
        for (int i = 0; i < ctl_entry_count; i++) ctl_entries[i].enabled = was_enabled[i];
        free(was_enabled);
        free(gone);
        free(ids.data);
        return;
    }
    free(was_enabled);
    buffer clock = {0}; // the clock entries kept, as `#ID system.clock ← PROVIDER`
    int clock_kept = 0;
    for (int i = 0; i < ctl_entry_count; i++) {
        if (reverted_by(&ctl_entries[i], id, include_clock)) {
            ctl_put(&ids, "%s%d", removed ? "," : "", ctl_entries[i].id);
            gone[removed++] = ctl_entries[i];
        } else {
            if (!id && ctl_entries[i].point == CHAOS_POINT_CLOCK) {
                char root[64];
                ctl_put(&clock, "%s#%d %s \xE2\x86\x90 %s", clock_kept++ ? ", " : "", ctl_entries[i].id,
                        ctl_point_display(ctl_entries[i].point),
                        ctl_entry_provider(&ctl_entries[i], root, sizeof root));
            }
            ctl_entries[kept++] = ctl_entries[i];
        }
    }
    ctl_entry_count = kept;
    free_entries(gone, removed);
    ctl_put(&ids, "]");
    if (clock_kept) {
        ctl_put(&ids, ",\"kept\":[");
        for (int i = 0, n = 0; i < ctl_entry_count; i++)
            if (ctl_entries[i].point == CHAOS_POINT_CLOCK) ctl_put(&ids, "%s%d", n++ ? "," : "", ctl_entries[i].id);
        int one = clock_kept == 1;
        ctl_put(&ids, "],\"note\":");
        buffer text_note = {0};
        ctl_put(
            &text_note,
            "kept %s: the program's time runs on %s, and its waits go on in real time if %s reverted; revert %s by id, "
            "or all with includeClock=true (chaos ctl revert PID --include-clock)",
            clock.data ? clock.data : "", one ? "it" : "them", one ? "it is" : "they are", one ? "it" : "them");
        ctl_put_json_string(&ids, text_note.data ? text_note.data : "");
        free(text_note.data);
    }
    free(clock.data);
    ctl_put(&ids, "}");
    a->status = 200;
    a->body = ids;
}

HIDDEN void ctl_set_enabled(answer *a, int id, const char *text, int enabled) {
    control_entry *entry = ctl_find(id);
    if (!entry) {
        ctl_not_applied(a, text);
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
    ctl_put_entry(&a->body, entry);
}

#endif
