// Events at the edges of a process tree (chaos_tally.h): written by any process of the tree
// into memory they all map, read by `chaos run` for its report. A slot is claimed by an
// atomic count and published by storing its kind last, so a reader never takes a half
// written slot for a whole one.
#define _GNU_SOURCE
#include "internal.h"

#include <stdatomic.h>
#include <string.h>

void chaos_tree_event_record(uint64_t *count, chaos_tree_event *events, chaos_tree_event_kind kind, int32_t pid,
                             const char *program) {
    if (!count || !events) return;
    uint64_t slot = atomic_fetch_add_explicit((_Atomic uint64_t *)count, 1, memory_order_relaxed);
    if (slot >= CHAOS_TALLY_EVENTS) return; // counted, not kept
    chaos_tree_event *event = &events[slot];
    event->pid = pid;
    size_t length = program ? strnlen(program, sizeof event->program - 1) : 0;
    if (length) memcpy(event->program, program, length);
    event->program[length] = 0;
    atomic_store_explicit((_Atomic int32_t *)&event->kind, (int32_t)kind, memory_order_release);
}

/// The bytes of the header, the pairs and the shared counters of `plan`'s tally.
static size_t counted_size(const chaos_plan *plan) {
    int32_t count = chaos_plan_entry_count(plan);
    size_t counters = 0;
    for (int32_t e = 0; e < count; e++) counters += (size_t)chaos_plan_shared_counter_count(plan, e);
    return sizeof(chaos_tally_header) + ((size_t)count * 2 + counters) * sizeof(uint64_t);
}

size_t chaos_tally_size(const chaos_plan *plan) {
    return counted_size(plan) + (size_t)chaos_plan_entry_count(plan) * sizeof(chaos_last_act);
}

chaos_last_act *chaos_tally_last_acts(chaos_tally_header *header, const chaos_plan *plan) {
    return (chaos_last_act *)((char *)header + counted_size(plan));
}
