// Case conditions: whether a call meets the conditions of a `case` line, in a plan's
// composite node or alone (chaos_case_test, for Swift's conditions).
#define _GNU_SOURCE
#include "internal.h"
#include "chaos_fast_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static bool address_matches(const cf_case *c, const chaos_call *call) {
    if (!call->address || call->address_length != c->address_length) return false;
    int bits = c->prefix_bits;
    for (int i = 0; i < c->address_length && bits > 0; i++, bits -= 8) {
        uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
        if ((call->address[i] & mask) != (c->address[i] & mask)) return false;
    }
    return true;
}

bool cf_case_matches(const cf_case *c, const chaos_call *call, const char *path, int special, bool *named) {
    if (c->ops) {
        const chaos_fn_info *info = chaos_fault_fn_info(call->fn);
        if (!info || !(cf_call_ops(call, info) & c->ops)) return false;
    }
    if (c->fds || c->descriptor_kinds) {
        // Descriptors named by number or kind: a call on one names it as a path would.
        if (call->fd < 0) return false;
        if (c->fds && (call->fd > 63 || !(c->fds >> call->fd & 1))) return false;
        int32_t kind = call->descriptor_kind ? call->descriptor_kind : chaos_descriptor_kind(call->fd);
        if (c->descriptor_kinds && !(c->descriptor_kinds & (uint32_t)kind)) return false;
        if (!c->path) *named = true;
    }
    if (c->families && !(c->families & (uint32_t)call->family)) return false;
    if (c->roles && !(c->roles & (uint32_t)call->role)) return false;
    if (c->clocks && !(c->clocks & (uint32_t)call->clock_source)) return false;
    if (c->has_address && !address_matches(c, call)) return false;
    if (c->port >= 0 && call->port != c->port) return false;
    if (c->host && (!call->name || !cf_glob_component(c->host, strlen(c->host), call->name, strlen(call->name), true)))
        return false;
    if (c->above && call->size <= c->above) return false;
    if (c->name && (!call->name || strcmp(c->name, call->name) != 0)) return false;
    if (c->path) {
        // An inherited 0–2 matches only its exact path; /dev, /proc and /sys only patterns
        // naming them (chaos_path_match checks that itself).
        bool hit = path && chaos_path_match(c->path, path, special && !cf_special_path(path));
        if (!hit && call->path2) hit = chaos_path_match(c->path, call->path2, 0);
        if (!hit) return false;
        *named = true;
    }
    return true;
}

// MARK: - Conditions outside a plan

struct chaos_case_test {
    chaos_plan *plan; ///< a one-entry plan whose root composite holds the case
};

chaos_case_test *chaos_case_test_make(int32_t point, const char *conditions, chaos_plan_error *error) {
    const char *name = chaos_fault_point_name(point);
    if (!name || !conditions) {
        if (error) {
            error->line = 0;
            error->column = 0;
            snprintf(error->message, sizeof error->message, "no such point or no conditions");
        }
        return NULL;
    }
    size_t capacity = strlen(conditions) + 96;
    char *text = malloc(capacity);
    if (!text) return NULL;
    bool socket = point == CHAOS_POINT_CONNECT || point == CHAOS_POINT_ACCEPT || point == CHAOS_POINT_SEND ||
                  point == CHAOS_POINT_RECV;
    snprintf(text, capacity, "chaos-plan 1\nentry %s%s\nnode 0 composite\ncase 1 %s\nnode 1 original\n", name,
             socket ? " family=any" : "", conditions);
    chaos_plan *plan = chaos_plan_parse(text, strlen(text), error);
    free(text);
    if (!plan) return NULL;
    chaos_case_test *test = malloc(sizeof *test);
    if (!test) {
        chaos_plan_free(plan);
        return NULL;
    }
    test->plan = plan;
    return test;
}

int chaos_case_test_holds(const chaos_case_test *test, const chaos_call *call) {
    if (!test || !call) return 0;
    const cf_entry *entry = &test->plan->entries[0];
    if (call->point != entry->point) return 0;
    bool named = false;
    int special = call->special || (call->path && cf_special_path(call->path));
    return cf_case_matches(&entry->nodes[0].cases[0], call, call->path, special, &named) ? 1 : 0;
}

void chaos_case_test_free(chaos_case_test *test) {
    if (!test) return;
    chaos_plan_free(test->plan);
    free(test);
}
