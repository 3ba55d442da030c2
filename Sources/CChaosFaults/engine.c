// The active plan, its read sections, and decisions.
//
// Read sections: a reader adds itself to readers[epoch & 1] and re-checks the epoch (so it
// is counted under the parity it will be waited for); a writer swaps the plan pointer,
// flips the epoch and waits until the old parity has drained. Writers (install, clear and
// the descriptor table's retire list) are serialized by one lock; readers never wait.
#define _GNU_SOURCE
#include "internal.h"
#include "fast_clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic(chaos_plan *) active;
_Atomic uint32_t cf_active_points;
static _Atomic uint32_t clock_flags;
_Atomic uint64_t cf_plan_generation;
/// The operations (CHAOS_OP_* bits) a `path=` condition of the active plan selects: names
/// of other calls cannot meet a selector, so physical.c resolves them cheaply. Written
/// under install_lock before the plan is published.
_Atomic uint32_t cf_path_selectors;
static _Atomic uint64_t epoch;
static _Atomic int64_t readers[2];
static _Atomic int install_lock, sync_lock, intern_lock;
static _Atomic int64_t start_anchor;
static _Atomic(chaos_real_clock_fn) real_clock;

static void spin_lock(_Atomic int *l) {
    while (atomic_exchange_explicit(l, 1, memory_order_acquire)) syscall(SYS_sched_yield);
}
static void spin_unlock(_Atomic int *l) { atomic_store_explicit(l, 0, memory_order_release); }

_Thread_local int cf_section_depth __attribute__((tls_model("initial-exec")));

unsigned cf_read_enter(void) {
    cf_section_depth++;
    for (;;) {
        uint64_t e = atomic_load(&epoch);
        unsigned parity = (unsigned)(e & 1);
        atomic_fetch_add(&readers[parity], 1);
        if (atomic_load(&epoch) == e) return parity;
        atomic_fetch_sub(&readers[parity], 1);
    }
}

void cf_read_leave(unsigned parity) {
    atomic_fetch_sub(&readers[parity], 1);
    cf_section_depth--;
}

void cf_synchronize(void) {
    spin_lock(&sync_lock);
    uint64_t e = atomic_fetch_add(&epoch, 1);
    while (atomic_load(&readers[e & 1]) != 0) syscall(SYS_sched_yield);
    spin_unlock(&sync_lock);
}

// MARK: - Interned strings (getenv answers outlive every plan)

typedef struct interned {
    struct interned *next;
    char text[];
} interned;
static interned *interned_strings;

const char *cf_intern(const char *text) {
    spin_lock(&intern_lock);
    for (interned *i = interned_strings; i; i = i->next) {
        if (strcmp(i->text, text) == 0) {
            spin_unlock(&intern_lock);
            return i->text;
        }
    }
    size_t n = strlen(text);
    interned *made = malloc(sizeof(interned) + n + 1);
    if (!made) {
        spin_unlock(&intern_lock);
        return NULL;
    }
    memcpy(made->text, text, n + 1);
    made->next = interned_strings;
    interned_strings = made;
    spin_unlock(&intern_lock);
    return made->text;
}

const char *chaos_fault_intern(const char *text) { return text ? cf_intern(text) : NULL; }

// MARK: - Clock of the engine itself

void chaos_fault_set_real_clock(chaos_real_clock_fn function) { atomic_store(&real_clock, function); }

static int64_t now_realtime(void) {
    chaos_real_clock_fn function = atomic_load_explicit(&real_clock, memory_order_relaxed);
    if (function) {
        struct timespec now;
        if (function(CLOCK_REALTIME, &now) == 0) return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    }
    return cf_real_ns(CLOCK_REALTIME);
}

void chaos_fault_set_start_anchor(int64_t realtime_ns) { atomic_store(&start_anchor, realtime_ns); }

// MARK: - The clock's constant fast path (fast_clock.h)

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

int chaos_plan_install(chaos_plan *plan) {
    if (plan && plan == atomic_load(&active)) return -1; // already active: it must not be freed
    if (plan) {
        int64_t anchor = atomic_load(&start_anchor);
        if (anchor == 0) anchor = now_realtime();
        for (int32_t e = 0; e < plan->count; e++) {
            cf_entry *entry = &plan->entries[e];
            for (int32_t i = 0; i < entry->count; i++) {
                cf_node *node = &entry->nodes[i];
                if (node->kind == CHAOS_NODE_SPEED && node->anchor_start) node->ns = anchor;
                if (node->kind == CHAOS_NODE_SET && node->owned_value) node->value = cf_intern(node->owned_value);
                atomic_store(&node->counter, 0);
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
    spin_lock(&install_lock);
    uint32_t points = plan ? plan->points : 0, flags = 0;
    for (int32_t e = 0; plan && e < plan->count; e++) {
        const cf_entry *entry = &plan->entries[e];
        if (entry->point != CHAOS_POINT_CLOCK) continue;
        if (entry->monotonic) flags |= CHAOS_CLOCK_FLAG_MONOTONIC;
        if (entry->stat_times) flags |= CHAOS_CLOCK_FLAG_STAT;
        if (entry->sleeps) flags |= CHAOS_CLOCK_FLAG_SLEEP;
    }
    atomic_store(&clock_flags, flags);
    publish_fast_clock(plan);
    atomic_store(&cf_path_selectors, path_selector_ops(plan));
    uint32_t fd_points = 1u << CHAOS_POINT_FILES | 1u << CHAOS_POINT_SEND | 1u << CHAOS_POINT_RECV |
                         1u << CHAOS_POINT_CONNECT | 1u << CHAOS_POINT_ACCEPT;
    cf_fd_tracking_set((points & fd_points) != 0);
    chaos_plan *old = atomic_exchange(&active, plan);
    atomic_store(&cf_active_points, points);
    cf_synchronize();
    spin_unlock(&install_lock);
    if (!has_virtual) cf_vt_plan_installed(0, 0, 0);
    chaos_plan_free(old);
    return 0;
}

int chaos_plan_load_text(const char *text, size_t length, chaos_plan_error *error) {
    chaos_plan *plan = chaos_plan_parse(text, length, error);
    if (!plan) return -1;
    return chaos_plan_install(plan);
}

void chaos_plan_clear(void) { chaos_plan_install(NULL); }

int chaos_fault_point_active(int32_t point) {
    if (point < 0 || point >= CHAOS_POINT_COUNT) return 0;
    return (atomic_load_explicit(&cf_active_points, memory_order_acquire) >> point) & 1;
}

uint32_t chaos_fault_active_points(void) { return atomic_load_explicit(&cf_active_points, memory_order_acquire); }

uint32_t chaos_fault_clock_flags(void) { return atomic_load_explicit(&clock_flags, memory_order_relaxed); }

uint64_t chaos_fault_plan_generation(void) { return atomic_load(&cf_plan_generation); }

// MARK: - Draws

// The same arithmetic as Swift's SeededRandom (SplitMix64), so that an entry draws the
// same sequence whichever engine decides its calls.
static const uint64_t golden_gamma = 0x9E3779B97F4A7C15ull;

static uint64_t scramble(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t derive(uint64_t seed, uint64_t value) { return scramble(scramble(seed) ^ (value + golden_gamma)); }

uint64_t chaos_fault_entry_seed(uint64_t plan_seed, int32_t point) {
    const char *name = chaos_fault_point_public_name(point);
    uint64_t hash = 0xCBF29CE484222325ull; // FNV-1a, as Swift's stable hash of the point name
    for (const unsigned char *c = (const unsigned char *)(name ? name : ""); *c; c++) hash = (hash ^ *c) * 0x100000001B3ull;
    return derive(plan_seed, hash);
}

double chaos_fault_draw(uint64_t entry_seed, uint64_t salt, uint64_t asked) {
    // SeededRandom(seed: derive(entrySeed, asked, salt)).nextUnitInterval()
    uint64_t seed = scramble(derive(entry_seed, asked) ^ (salt + golden_gamma));
    return (double)(scramble(seed + golden_gamma) >> 11) * 0x1.0p-53;
}

// MARK: - Decisions

enum { R_PASS = 0, R_ORIGINAL = 1, R_ACT = 2 };

typedef struct walk {
    const chaos_plan *plan;
    const cf_entry *entry;
    int32_t entry_index;
    const chaos_call *call;
    const char *path;
    int special;
    bool named;
    bool peek;
    uint64_t index;      ///< the entry's call index of this call
    int64_t delay;
} walk;

static bool address_matches(const cf_case *c, const chaos_call *call) {
    if (!call->address || call->address_length != c->address_length) return false;
    int bits = c->prefix_bits;
    for (int i = 0; i < c->address_length && bits > 0; i++, bits -= 8) {
        uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
        if ((call->address[i] & mask) != (c->address[i] & mask)) return false;
    }
    return true;
}

static bool case_matches(walk *w, const cf_case *c) {
    const chaos_call *call = w->call;
    if (c->ops) {
        const chaos_fn_info *info = chaos_fault_fn_info(call->fn);
        if (!info || !(info->op & c->ops)) return false;
    }
    if (c->families && !(c->families & (uint32_t)call->family)) return false;
    if (c->roles && !(c->roles & (uint32_t)call->role)) return false;
    if (c->clocks && !(c->clocks & (uint32_t)call->clock_source)) return false;
    if (c->has_address && !address_matches(c, call)) return false;
    if (c->port >= 0 && call->port != c->port) return false;
    if (c->host && (!call->name || !cf_glob_component(c->host, strlen(c->host), call->name, strlen(call->name), true)))
        return false;
    if (c->name && (!call->name || strcmp(c->name, call->name) != 0)) return false;
    if (c->path) {
        // An inherited 0–2 matches only its exact path; /dev, /proc and /sys only patterns
        // naming them (chaos_path_match checks that itself).
        bool hit = w->path && chaos_path_match(c->path, w->path, w->special && !cf_special_path(w->path));
        if (!hit && call->path2) hit = chaos_path_match(c->path, call->path2, 0);
        if (!hit) return false;
        w->named = true;
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
    bool socket = point == CHAOS_POINT_CONNECT || point == CHAOS_POINT_ACCEPT || point == CHAOS_POINT_SEND || point == CHAOS_POINT_RECV;
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
    walk w = {test->plan, entry, 0, call, call->path, call->special || (call->path && cf_special_path(call->path)), false, true, 0, 0};
    return case_matches(&w, &entry->nodes[0].cases[0]) ? 1 : 0;
}

void chaos_case_test_free(chaos_case_test *test) {
    if (!test) return;
    chaos_plan_free(test->plan);
    free(test);
}

/// Whether a files leaf may act: a special target (/dev, /proc, /sys, inherited 0–2)
/// only when a path condition named it on the way.
static bool may_act(const walk *w) {
    return w->entry->point != CHAOS_POINT_FILES || !w->special || w->named;
}

static uint64_t tick(walk *w, cf_node *node) {
    return w->peek ? atomic_load_explicit(&node->counter, memory_order_relaxed)
                   : atomic_fetch_add_explicit(&node->counter, 1, memory_order_relaxed);
}

/// The step of a sequential node that its call `k` uses (the last one repeats).
static int32_t step_at(const cf_node *node, uint64_t k) {
    for (int32_t i = 0; i < node->count - 1; i++) {
        if (k < node->weights[i]) return i;
        k -= node->weights[i];
    }
    return node->count - 1;
}

/// Whether node `index` takes the call: false only for a selector (a composite whose
/// fallback passes the call on) none of whose cases holds.
static bool selector_takes(walk *w, int32_t index) {
    const cf_node *node = &w->entry->nodes[index];
    if (node->kind != CHAOS_NODE_COMPOSITE) return true;
    if (node->otherwise >= 0 && w->entry->nodes[node->otherwise].kind != CHAOS_NODE_PASS) return true;
    bool named = w->named, takes = false;
    for (int32_t i = 0; i < node->count && !takes; i++) takes = case_matches(w, &node->cases[i]);
    w->named = named;
    return takes;
}

static int eval(walk *w, int32_t index, chaos_outcome *out) {
    cf_node *node = &w->entry->nodes[index];
    const chaos_fn_info *info = chaos_fault_fn_info(w->call->fn);
    switch (node->kind) {
    case CHAOS_NODE_ORIGINAL:
        return may_act(w) ? R_ORIGINAL : R_PASS; // a special target is outside unnamed entries
    case CHAOS_NODE_PASS:
        return R_PASS;
    case CHAOS_NODE_FAIL:
        if (!may_act(w)) return R_PASS;
        // A function that cannot return this errno is left alone (libfiu's rule).
        if (w->entry->point == CHAOS_POINT_DNS) {
            if (!chaos_fault_errno_allowed(w->call->fn, (int32_t)node->ret)) return R_PASS;
        } else if (!chaos_fault_errno_allowed(w->call->fn, node->err)) {
            return R_PASS;
        }
        out->action = CHAOS_ACT_FAIL;
        out->ret = node->ret;
        out->err = node->err;
        return R_ACT;
    case CHAOS_NODE_SHORT:
        if (!may_act(w) || !info || !info->transfers) return R_PASS;
        out->action = CHAOS_ACT_SHORT;
        out->max_bytes = node->max;
        return R_ACT;
    case CHAOS_NODE_OFFSET:
        out->action = CHAOS_ACT_OFFSET;
        out->clock_ns = node->ns;
        return R_ACT;
    case CHAOS_NODE_FROZEN:
        out->action = CHAOS_ACT_FROZEN;
        out->clock_ns = node->ns;
        return R_ACT;
    case CHAOS_NODE_SPEED:
        out->action = CHAOS_ACT_SPEED;
        out->factor = node->factor;
        out->anchor_ns = node->ns;
        return R_ACT;
    case CHAOS_NODE_VIRTUAL:
        out->action = CHAOS_ACT_VIRTUAL;
        return R_ACT;
    case CHAOS_NODE_SET:
        out->action = CHAOS_ACT_SET;
        out->value = node->value;
        return R_ACT;
    case CHAOS_NODE_UNSET:
        out->action = CHAOS_ACT_UNSET;
        return R_ACT;
    case CHAOS_NODE_ASK:
        if (!may_act(w)) return R_PASS; // a special target is outside unnamed entries, as for fail
        out->action = CHAOS_ACT_ASK;
        out->ask_id = (uint32_t)node->n;
        return R_ACT;
    case CHAOS_NODE_SEQUENTIAL:
        for (;;) {
            uint64_t k = atomic_load_explicit(&node->counter, memory_order_relaxed);
            int32_t child = node->children[step_at(node, k)];
            // A step that is a selector is asked only about the calls it takes: the others
            // pass on without moving the sequence.
            if (!selector_takes(w, child)) return eval(w, child, out);
            if (w->peek || atomic_compare_exchange_weak_explicit(&node->counter, &k, k + 1, memory_order_relaxed,
                                                                 memory_order_relaxed))
                return eval(w, child, out);
        }
    case CHAOS_NODE_COMPOSITE:
        for (int32_t i = 0; i < node->count; i++) {
            bool named = w->named;
            if (case_matches(w, &node->cases[i])) return eval(w, node->cases[i].child, out);
            w->named = named;
        }
        return node->otherwise >= 0 ? eval(w, node->otherwise, out) : R_PASS;
    case CHAOS_NODE_PROBABILITY:
        // Drawn for the k-th call this node is asked about: calls the entry does not target
        // never reach it, so they take no draws.
        if (chaos_fault_draw(w->entry->seed, node->salt, tick(w, node)) < node->p) return eval(w, node->child, out);
        return R_PASS;
    case CHAOS_NODE_TIMES: {
        uint64_t k = tick(w, node);
        return k < node->n ? eval(w, node->child, out) : R_PASS;
    }
    case CHAOS_NODE_DELAY: {
        int r = eval(w, node->child, out);
        if (!may_act(w)) return r;
        w->delay += node->ns;
        return r == R_PASS || r == R_ORIGINAL ? R_ACT : r;
    }
    default:
        return R_PASS;
    }
}

static int64_t round_ns(double value) {
    if (!(value < 9.2e18 && value > -9.2e18)) return value > 0 ? INT64_MAX : INT64_MIN;
    return (int64_t)(value + (value >= 0 ? 0.5 : -0.5));
}

// Field by field: compilers turn a memset (or a copy of a mostly-zero constant) of this
// size into `rep stos`, whose start-up costs more than the rest of a decision.
static void reset(chaos_outcome *out) {
    out->action = CHAOS_ACT_ORIGINAL;
    out->entry = -1;
    out->delay_ns = 0;
    out->ret = 0;
    out->err = 0;
    out->max_bytes = 0;
    out->clock_ns = 0;
    out->factor = 0;
    out->anchor_ns = 0;
    out->value = NULL;
    out->monotonic = 0;
    out->stat_times = 0;
    out->ask_id = 0;
}

/// Whether a call reaches `entry` at all (family, monotonic and path prerequisites).
static bool reaches(const cf_entry *entry, const chaos_call *call) {
    switch (entry->point) {
    case CHAOS_POINT_CONNECT: case CHAOS_POINT_ACCEPT: case CHAOS_POINT_SEND: case CHAOS_POINT_RECV:
        return (entry->families & (uint32_t)call->family) != 0;
    case CHAOS_POINT_CLOCK:
        return call->clock_source != CHAOS_CLOCKSRC_MONOTONIC || entry->monotonic;
    case CHAOS_POINT_DNS: case CHAOS_POINT_GETENV:
        return call->name != NULL;
    default:
        return true;
    }
}

/// Whether some node of `entry` could decide a call on `path` (fail, short, delay, or the
/// final original), by path conditions only: ops, counters and draws are not known yet.
/// Memoized per (node, named) over the DAG.
static bool could_act(const cf_entry *entry, int32_t index, const char *path, int special, bool named, uint8_t *seen) {
    uint8_t bit = named ? 2 : 1;
    if (seen[index] & bit) return false;
    seen[index] |= bit;
    const cf_node *node = &entry->nodes[index];
    bool acts = !special || named;
    switch (node->kind) {
    case CHAOS_NODE_FAIL: case CHAOS_NODE_SHORT: case CHAOS_NODE_ORIGINAL: case CHAOS_NODE_ASK:
        return acts; // original decides too; an ask may answer anything
    case CHAOS_NODE_DELAY: return acts || could_act(entry, node->child, path, special, named, seen);
    case CHAOS_NODE_PROBABILITY: case CHAOS_NODE_TIMES: return could_act(entry, node->child, path, special, named, seen);
    case CHAOS_NODE_SEQUENTIAL:
        for (int32_t i = 0; i < node->count; i++)
            if (could_act(entry, node->children[i], path, special, named, seen)) return true;
        return false;
    case CHAOS_NODE_COMPOSITE:
        for (int32_t i = 0; i < node->count; i++) {
            const cf_case *c = &node->cases[i];
            bool hit = !c->path || chaos_path_match(c->path, path, special && !cf_special_path(path));
            if (hit && could_act(entry, c->child, path, special, named || c->path != NULL, seen)) return true;
        }
        return node->otherwise >= 0 && could_act(entry, node->otherwise, path, special, named, seen);
    default:
        return false;
    }
}

static int decide(const chaos_call *call, chaos_outcome *out, bool peek) {
    reset(out);
    if (!call || call->point < 0 || call->point >= CHAOS_POINT_COUNT) return 0;
    if (!((atomic_load_explicit(&cf_active_points, memory_order_acquire) >> call->point) & 1)) return 0;
    char buffer[4096];
    const char *path = call->path;
    int special = call->special;
    if (call->point == CHAOS_POINT_FILES && !path) {
        int family = 0, role = 0;
        if (chaos_fd_lookup(call->fd, buffer, sizeof buffer, &special, &family, &role) != CHAOS_FD_FILE) return 0;
        path = buffer;
    } else if (call->point == CHAOS_POINT_FILES && cf_special_path(path)) {
        special = 1; // /dev, /proc, /sys: only cases whose path names them act
    }
    int result = 0;
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load_explicit(&active, memory_order_acquire);
    for (int32_t e = 0; plan && e < plan->count; e++) {
        cf_entry *entry = &plan->entries[e];
        if (entry->point != call->point || !reaches(entry, call)) continue;
        if (call->point == CHAOS_POINT_FILES) { // only calls on paths the entry can act on reach it
            uint8_t visited[CHAOS_PLAN_MAX_NODES] = {0};
            bool in_scope = could_act(entry, 0, path, special, false, visited);
            if (!in_scope && call->path2) {
                memset(visited, 0, sizeof visited);
                in_scope = could_act(entry, 0, call->path2, 0, false, visited);
            }
            if (!in_scope) continue;
        }
        uint64_t index = peek ? atomic_load_explicit(&entry->calls, memory_order_relaxed)
                              : atomic_fetch_add_explicit(&entry->calls, 1, memory_order_relaxed);
        walk w = {plan, entry, e, call, path, special, false, peek, index, 0};
        chaos_outcome candidate;
        reset(&candidate);
        int r = eval(&w, 0, &candidate);
        // Counted in the counts this plan's entry points to, which a later plan's entry may
        // share: a call decided while plans are switched counts once, for this entry.
        chaos_counts *counts = entry->counts;
        if (r == R_PASS) {
            if (!peek) atomic_fetch_add_explicit(&counts->passed, 1, memory_order_relaxed);
            continue;
        }
        if (r == R_ORIGINAL && w.delay == 0) {
            if (!peek) atomic_fetch_add_explicit(&counts->passed, 1, memory_order_relaxed);
            break;
        }
        *out = candidate;
        out->entry = e;
        out->delay_ns = w.delay;
        out->monotonic = entry->monotonic;
        out->stat_times = entry->stat_times;
        if (!peek) {
            // Counters are statistics: relaxed, so an acted call pays no fence for them.
            atomic_fetch_add_explicit(&counts->acted, 1, memory_order_relaxed);
            atomic_store_explicit(&counts->last_fire_call, index, memory_order_relaxed);
            atomic_store_explicit(&counts->last_fire_ns, call->real_ns ? call->real_ns : now_realtime(), memory_order_relaxed);
        }
        result = 1;
        break;
    }
    cf_read_leave(parity);
    return result;
}

int chaos_fault_decide(const chaos_call *call, chaos_outcome *out) { return decide(call, out, false); }

static int decide_fd_slow(int fd, int32_t file_fn, int32_t socket_point, int32_t socket_fn, chaos_outcome *out,
                          bool files, bool sockets, uint64_t generation, int verdict);

int chaos_fault_decide_fd(int fd, int32_t file_fn, int32_t socket_point, int32_t socket_fn, chaos_outcome *out) {
    out->action = CHAOS_ACT_ORIGINAL;
    out->entry = -1;
    out->delay_ns = 0;
    uint32_t points = atomic_load_explicit(&cf_active_points, memory_order_acquire);
    bool files = (points >> CHAOS_POINT_FILES & 1) && file_fn >= 0;
    bool sockets = socket_point >= 0 && socket_point < CHAOS_POINT_COUNT && (points >> socket_point & 1);
    if (!files && !sockets) return 0;
    uint64_t generation = atomic_load_explicit(&cf_plan_generation, memory_order_acquire);
    int verdict = cf_fd_verdict(fd, generation);
    if (verdict == 0) return 0; // a file no files entry can act on: the common, cheap case
    return decide_fd_slow(fd, file_fn, socket_point, socket_fn, out, files, sockets, generation, verdict);
}

/// The rest of chaos_fault_decide_fd, kept apart so that its fast path has a small frame.
__attribute__((noinline)) static int decide_fd_slow(int fd, int32_t file_fn, int32_t socket_point, int32_t socket_fn,
                                                    chaos_outcome *out, bool files, bool sockets, uint64_t generation,
                                                    int verdict) {
    reset(out);
    char path[4096];
    int special = 0, family = 0, role = 0;
    int kind = chaos_fd_lookup(fd, path, sizeof path, &special, &family, &role);
    chaos_call call = {0};
    call.fd = fd;
    if (kind == CHAOS_FD_FILE && files) {
        if (verdict < 0) {
            bool relevant = false;
            unsigned parity = cf_read_enter();
            chaos_plan *plan = atomic_load_explicit(&active, memory_order_acquire);
            if (plan && plan->generation == generation) {
                for (int32_t e = 0; e < plan->count && !relevant; e++) {
                    const cf_entry *entry = &plan->entries[e];
                    uint8_t seen[CHAOS_PLAN_MAX_NODES] = {0};
                    if (entry->point == CHAOS_POINT_FILES) relevant = could_act(entry, 0, path, special, false, seen);
                }
                cf_fd_set_verdict(fd, generation, relevant);
            } else {
                relevant = true; // a plan is being replaced: decide the slow way
            }
            cf_read_leave(parity);
            if (!relevant) return 0;
        }
        call.point = CHAOS_POINT_FILES;
        call.fn = file_fn;
        call.path = path;
        call.special = special;
    } else if (kind == CHAOS_FD_SOCKET && sockets) {
        call.point = socket_point;
        call.fn = socket_fn;
        call.family = family;
        call.role = role;
    } else {
        return 0;
    }
    return decide(&call, out, false);
}

int chaos_fault_peek_clock(int32_t clock_source, chaos_outcome *out) {
    chaos_call call = {0};
    call.point = CHAOS_POINT_CLOCK;
    call.fn = CHAOS_FN_CLOCK_GETTIME;
    call.fd = -1;
    call.clock_source = clock_source;
    return decide(&call, out, true);
}

int64_t chaos_fault_apply_clock(const chaos_outcome *outcome, int64_t real_ns) {
    switch (outcome->action) {
    case CHAOS_ACT_OFFSET: return (int64_t)((uint64_t)real_ns + (uint64_t)outcome->clock_ns);
    case CHAOS_ACT_FROZEN: return outcome->clock_ns;
    case CHAOS_ACT_VIRTUAL: return chaos_vt_running() ? chaos_vt_reading_ns(CLOCK_REALTIME) : real_ns;
    case CHAOS_ACT_SPEED: {
        int64_t scaled = round_ns((double)(real_ns - outcome->anchor_ns) * outcome->factor);
        return (int64_t)((uint64_t)outcome->anchor_ns + (uint64_t)scaled);
    }
    default: return real_ns;
    }
}

int64_t chaos_fault_invert_clock(const chaos_outcome *outcome, int64_t fake_ns, int64_t real_now_ns) {
    switch (outcome->action) {
    case CHAOS_ACT_OFFSET: return (int64_t)((uint64_t)fake_ns - (uint64_t)outcome->clock_ns);
    case CHAOS_ACT_FROZEN: return fake_ns <= outcome->clock_ns ? real_now_ns : real_now_ns + (fake_ns - outcome->clock_ns);
    case CHAOS_ACT_SPEED:
        if (outcome->factor <= 0) return real_now_ns;
        return (int64_t)((uint64_t)outcome->anchor_ns + (uint64_t)round_ns((double)(fake_ns - outcome->anchor_ns) / outcome->factor));
    default: return fake_ns;
    }
}

// MARK: - Counters

int chaos_fault_counters(int32_t entry, chaos_entry_counters *out) {
    if (!out) return -1;
    memset(out, 0, sizeof *out);
    int result = -1;
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load(&active);
    if (plan && entry >= 0 && entry < plan->count) {
        chaos_counts_read(plan->entries[entry].counts, out);
        out->seed = plan->seed;
        out->generation = plan->generation;
        result = 0;
    }
    cf_read_leave(parity);
    return result;
}

int32_t chaos_fault_entry_count(void) {
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load(&active);
    int32_t count = plan ? plan->count : 0;
    cf_read_leave(parity);
    return count;
}

uint64_t chaos_fault_seed(void) {
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load(&active);
    uint64_t seed = plan ? plan->seed : 0;
    cf_read_leave(parity);
    return seed;
}
