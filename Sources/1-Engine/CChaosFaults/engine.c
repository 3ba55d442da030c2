// The active plan: installing it (and the clock's fast path it publishes), and the clock
// the engine reads itself. Read sections are sections.c's, decisions decide.c's.
#define _GNU_SOURCE
#include "internal.h"
#include "chaos_fast_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// The plan decisions read, inside read sections (sections.c); swapped under install_lock.
_Atomic(chaos_plan *) cf_active_plan;
// What the active plan asks of the deliveries (chaos_fast_clock.h, chaos_fast_fd.h read them inline):
// atomics, written under install_lock.
_Atomic uint32_t cf_active_points;
static _Atomic uint32_t clock_flags;
_Atomic uint64_t cf_plan_generation;
/// The operations (CHAOS_OP_* bits) a `path=` condition of the active plan selects: names
/// of other calls cannot meet a selector, so physical.c resolves them cheaply. Written
/// under install_lock before the plan is published.
_Atomic uint32_t cf_path_selectors;
_Atomic int cf_descriptor_selectors; // set while installing a plan, under install_lock
_Atomic int cf_stream_addresses;     // set while installing a plan, under install_lock
_Atomic int cf_stream_lingers;       // set while installing a plan, under install_lock
// Serializes installs (a spin lock: installs are rare and short).
static _Atomic int install_lock;
// Set by a delivery before it installs (atomics: read by install and decisions).
static _Atomic int64_t start_anchor;
static _Atomic(chaos_real_clock_fn) real_clock;

// MARK: - Clock of the engine itself

void chaos_fault_set_real_clock(chaos_real_clock_fn function) { atomic_store(&real_clock, function); }

int64_t cf_now_realtime(void) {
    chaos_real_clock_fn function = atomic_load_explicit(&real_clock, memory_order_relaxed);
    if (function) {
        struct timespec now;
        if (function(CLOCK_REALTIME, &now) == 0) return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    }
    return cf_real_ns(CLOCK_REALTIME);
}

void chaos_fault_set_start_anchor(int64_t realtime_ns) { atomic_store(&start_anchor, realtime_ns); }

// MARK: - The clock's constant fast path (chaos_fast_clock.h)

// Read inline by the interceptors under its sequence lock; written by install only, under
// install_lock.
cf_fast_clock cf_fast;

/// Publishes the fast path of `plan` (none when its clock entries are anything else).
/// Called under the install lock, before the plan becomes active.
static void publish_fast_clock(const chaos_plan *plan) {
    const cf_entry *only = NULL;
    int32_t clock_entries = 0;
    for (int32_t e = 0; plan && e < plan->count; e++) {
        if (plan->entries[e].point != CHAOS_POINT_CLOCK) continue;
        clock_entries++;
        only = &plan->entries[e];
    }
    int32_t kind = 0;
    if (clock_entries == 1 && only->nodes[0].kind == CHAOS_NODE_VIRTUAL) {
        kind = CHAOS_ACT_VIRTUAL;
    } else if (clock_entries == 1 && !only->monotonic) {
        switch (only->nodes[0].kind) {
        case CHAOS_NODE_OFFSET: kind = CHAOS_ACT_OFFSET; break;
        case CHAOS_NODE_FROZEN: kind = CHAOS_ACT_FROZEN; break;
        case CHAOS_NODE_SPEED: kind = CHAOS_ACT_SPEED; break;
        default: break;
        }
    }
    if (kind) cf_counts_publish(only->counts); // before any reading can name them
    uint64_t sequence = atomic_load_explicit(&cf_fast.sequence, memory_order_relaxed);
    atomic_store_explicit(&cf_fast.sequence, sequence + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&cf_fast.kind, kind, memory_order_relaxed);
    if (kind) {
        const cf_node *node = &only->nodes[0];
        uint64_t bits;
        memcpy(&bits, &node->factor, sizeof bits);
        atomic_store_explicit(&cf_fast.counts, only->counts->id, memory_order_relaxed);
        atomic_store_explicit(&cf_fast.ns, node->ns, memory_order_relaxed);
        int64_t seconds = node->ns / 1000000000 - (node->ns % 1000000000 < 0);
        atomic_store_explicit(&cf_fast.seconds, seconds, memory_order_relaxed);
        atomic_store_explicit(&cf_fast.nanoseconds, node->ns - seconds * 1000000000, memory_order_relaxed);
        atomic_store_explicit(&cf_fast.factor_bits, bits, memory_order_relaxed);
    }
    atomic_store_explicit(&cf_fast.sequence, sequence + 2, memory_order_release);
}

int chaos_fault_clock_constant(int64_t real_ns, int64_t *fake_ns) { return cf_fast_clock_reading(real_ns, fake_ns); }

// MARK: - Install

/// The operations the path selectors of `plan` select (a case without ops: all of them).
static uint32_t path_selector_ops(const chaos_plan *plan) {
    uint32_t ops = 0;
    for (int32_t e = 0; plan && e < plan->count; e++) {
        const cf_entry *entry = &plan->entries[e];
        for (int32_t i = 0; entry->point == CHAOS_POINT_FILES && i < entry->count; i++) {
            const cf_node *node = &entry->nodes[i];
            for (int32_t c = 0; node->kind == CHAOS_NODE_COMPOSITE && c < node->count; c++)
                if (node->cases[c].path) ops |= node->cases[c].ops ? node->cases[c].ops : UINT32_MAX;
        }
    }
    return ops;
}

/// Whether some entry of `plan` has a node of `kind`.
static int plan_has_kind(const chaos_plan *plan, int32_t kind) {
    for (int32_t e = 0; plan && e < plan->count; e++)
        for (int32_t i = 0; i < plan->entries[e].count; i++)
            if (plan->entries[e].nodes[i].kind == kind) return 1;
    return 0;
}

/// Whether a send or recv case of `plan` names an address or a port.
static int names_stream_addresses(const chaos_plan *plan) {
    for (int32_t e = 0; plan && e < plan->count; e++) {
        const cf_entry *entry = &plan->entries[e];
        if (entry->point != CHAOS_POINT_SEND && entry->point != CHAOS_POINT_RECV) continue;
        for (int32_t i = 0; i < entry->count; i++) {
            const cf_node *node = &entry->nodes[i];
            for (int32_t c = 0; node->kind == CHAOS_NODE_COMPOSITE && c < node->count; c++)
                if (node->cases[c].has_address || node->cases[c].port >= 0) return 1;
        }
    }
    return 0;
}

/// Whether a files case of `plan` names descriptors (`fd=`, `kind=`); marks each entry
/// that has one.
static int names_descriptors(chaos_plan *plan) {
    int any = 0;
    for (int32_t e = 0; plan && e < plan->count; e++) {
        cf_entry *entry = &plan->entries[e];
        for (int32_t i = 0; entry->point == CHAOS_POINT_FILES && i < entry->count; i++) {
            const cf_node *node = &entry->nodes[i];
            for (int32_t c = 0; node->kind == CHAOS_NODE_COMPOSITE && c < node->count; c++)
                if (node->cases[c].fds || node->cases[c].descriptor_kinds) entry->names_descriptors = any = 1;
        }
    }
    return any;
}

int chaos_plan_install(chaos_plan *plan) {
    if (plan && plan == atomic_load(&cf_active_plan)) return -1; // already active: it must not be freed
    if (plan) {
        int64_t anchor = atomic_load(&start_anchor);
        if (anchor == 0) anchor = cf_now_realtime();
        for (int32_t e = 0; e < plan->count; e++) {
            cf_entry *entry = &plan->entries[e];
            for (int32_t i = 0; i < entry->count; i++) {
                cf_node *node = &entry->nodes[i];
                if (node->kind == CHAOS_NODE_SPEED && node->anchor_start) node->ns = anchor;
                if ((node->kind == CHAOS_NODE_SET || node->kind == CHAOS_NODE_OMIT) && node->owned_value)
                    node->value = cf_intern(node->owned_value);
                atomic_store(&node->counter, 0); // a shared counter is the tree's, not this install's
            }
        }
        plan->generation = atomic_fetch_add(&cf_plan_generation, 1) + 1;
    } else {
        atomic_fetch_add(&cf_plan_generation, 1);
    }
    // A virtual node makes its entry fake monotonic clocks and sleeps too, and starts
    // virtual time before the plan that reads it is active.
    int has_virtual = 0, flow = 0;
    int64_t virtual_at = 0;
    for (int32_t e = 0; plan && e < plan->count; e++) {
        cf_entry *entry = &plan->entries[e];
        for (int32_t i = 0; entry->point == CHAOS_POINT_CLOCK && i < entry->count; i++) {
            if (entry->nodes[i].kind != CHAOS_NODE_VIRTUAL) continue;
            entry->monotonic = entry->sleeps = 1;
            if (!has_virtual) {
                virtual_at = entry->nodes[i].ns;
                flow = entry->nodes[i].anchor_start;
            }
            has_virtual = 1;
        }
    }
    if (has_virtual) cf_vt_plan_installed(1, virtual_at, flow);
    cf_spin_lock(&install_lock);
    uint32_t points = plan ? plan->points : 0, flags = 0;
    // The flags the seccomp filter is built from are the ones the deliveries act on.
    for (int32_t e = 0; plan && e < plan->count; e++)
        flags |= chaos_plan_entry_clock_flags(plan, e) & ~(uint32_t)CHAOS_CLOCK_FLAG_VIRTUAL;
    atomic_store(&clock_flags, flags);
    publish_fast_clock(plan);
    atomic_store(&cf_path_selectors, path_selector_ops(plan));
    atomic_store(&cf_descriptor_selectors, names_descriptors(plan));
    atomic_store(&cf_stream_addresses, names_stream_addresses(plan));
    atomic_store(&cf_stream_lingers, plan_has_kind(plan, CHAOS_NODE_LINGER));
    uint32_t fd_points = 1u << CHAOS_POINT_FILES | 1u << CHAOS_POINT_SEND | 1u << CHAOS_POINT_RECV |
                         1u << CHAOS_POINT_CONNECT | 1u << CHAOS_POINT_ACCEPT | 1u << CHAOS_POINT_STAT;
    cf_fd_tracking_set((points & fd_points) != 0);
    chaos_plan *old = atomic_exchange(&cf_active_plan, plan);
    atomic_store(&cf_active_points, points);
    cf_synchronize();
    cf_spin_unlock(&install_lock);
    if (!has_virtual) cf_vt_plan_installed(0, 0, 0);
    cf_clock_changed();
    chaos_plan_free(old);
    return 0;
}

void chaos_plan_clear(void) { chaos_plan_install(NULL); }

int chaos_fault_point_active(int32_t point) {
    if (point < 0 || point >= CHAOS_POINT_COUNT) return 0;
    return (atomic_load_explicit(&cf_active_points, memory_order_acquire) >> point) & 1;
}

uint32_t chaos_fault_active_points(void) { return atomic_load_explicit(&cf_active_points, memory_order_acquire); }

uint32_t chaos_fault_clock_flags(void) { return atomic_load_explicit(&clock_flags, memory_order_relaxed); }

uint64_t chaos_fault_plan_generation(void) { return atomic_load(&cf_plan_generation); }

// MARK: - What the active plan counts (counters.c keeps the counts)

int chaos_fault_counters(int32_t entry, chaos_entry_counters *out) {
    if (!out) return -1;
    memset(out, 0, sizeof *out);
    int result = -1;
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load(&cf_active_plan);
    if (plan && entry >= 0 && entry < plan->count) {
        chaos_counts_read(plan->entries[entry].counts, out);
        out->seed = plan->seed;
        out->generation = plan->generation;
        result = 0;
    }
    cf_read_leave(parity);
    return result;
}

int chaos_fault_entry_label(int32_t entry, char *out, size_t capacity) {
    if (!out || !capacity) return -1;
    out[0] = 0;
    int result = -1;
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load(&cf_active_plan);
    if (plan && entry >= 0 && entry < plan->count) {
        const char *label = plan->entries[entry].label;
        if (label) snprintf(out, capacity, "%s", label);
        result = label ? 1 : 0;
    }
    cf_read_leave(parity);
    return result;
}

int32_t chaos_fault_entry_count(void) {
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load(&cf_active_plan);
    int32_t count = plan ? plan->count : 0;
    cf_read_leave(parity);
    return count;
}

uint64_t chaos_fault_seed(void) {
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load(&cf_active_plan);
    uint64_t seed = plan ? plan->seed : 0;
    cf_read_leave(parity);
    return seed;
}
