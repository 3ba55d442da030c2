// Decisions: the walk of an entry's tree for one call, the draws of probability nodes, and
// the clock arithmetic of the outcomes. Nothing here changes anything but counters.
#define _GNU_SOURCE
#include "internal.h"
#include "chaos_fast_clock.h"
#include "CChaosRules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

// MARK: - Draws

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
    uint64_t index; ///< the entry's call index of this call
    int64_t delay;
} walk;

/// Whether calls at `point` are aimed at files by path or descriptor: files and stat.
static inline bool on_paths(int32_t point) { return point == CHAOS_POINT_FILES || point == CHAOS_POINT_STAT; }

/// Whether calls at `point` can name /dev, /proc and /sys: files, stat and dir.
static inline bool names_paths(int32_t point) { return on_paths(point) || point == CHAOS_POINT_DIR; }

/// Whether a files, stat or dir leaf may act: a special target (/dev, /proc, /sys, inherited
/// 0–2) only when a path condition named it on the way.
static bool may_act(const walk *w) { return !names_paths(w->entry->point) || !w->special || w->named; }

static uint64_t tick(walk *w, cf_node *node) {
    return w->peek ? atomic_load_explicit(cf_node_counter(node), memory_order_relaxed)
                   : atomic_fetch_add_explicit(cf_node_counter(node), 1, memory_order_relaxed);
}

/// The step of a sequential node that its call `k` uses (the last one repeats).
static inline int32_t step_at(const cf_node *node, uint64_t k) {
    return chaos_rules_sequence_step(node->weights, node->count, k);
}

/// Whether node `index` takes the call: false only for a selector (a composite whose
/// fallback passes the call on) none of whose cases holds.
static bool selector_takes(walk *w, int32_t index) {
    const cf_node *node = &w->entry->nodes[index];
    if (node->kind != CHAOS_NODE_COMPOSITE) return true;
    if (node->otherwise >= 0 && w->entry->nodes[node->otherwise].kind != CHAOS_NODE_PASS) return true;
    bool named = w->named, takes = false;
    for (int32_t i = 0; i < node->count && !takes; i++)
        takes = cf_case_matches(&node->cases[i], w->call, w->path, w->special, &w->named);
    w->named = named;
    return takes;
}

/// Counts a call the entry passed on (and in its mirror, when it has one).
static inline void count_passed(chaos_counts *counts) {
    atomic_fetch_add_explicit(&counts->passed, 1, memory_order_relaxed);
    if (counts->mirror) atomic_fetch_add_explicit(&counts->mirror[1], 1, memory_order_relaxed);
}

static int eval(walk *w, int32_t index, chaos_outcome *out) {
    cf_node *node = &w->entry->nodes[index];
    const chaos_fn_info *info = chaos_fault_fn_info(w->call->fn);
    // A socket's close is only a linger node's: every other leaf passes it, and delays do not wait.
    if (w->call->fn == CHAOS_FN_SOCKET_CLOSE && cf_stream_close_passes(node->kind))
        return node->kind == CHAOS_NODE_DELAY ? eval(w, node->child, out) : R_PASS;
    switch (node->kind) {
    case CHAOS_NODE_ORIGINAL: return may_act(w) ? R_ORIGINAL : R_PASS; // a special target is outside unnamed entries
    case CHAOS_NODE_PASS: return R_PASS;
    case CHAOS_NODE_FAIL:
        if (!may_act(w)) return R_PASS;
        // A function that cannot return this errno is left alone (libfiu's rule).
        if (w->entry->point == CHAOS_POINT_DNS) {
            if (!chaos_fault_errno_allowed(w->call->fn, (int32_t)node->ret)) return R_PASS;
        } else if (node->any_errno) {
            // Drawn from the entry's seed and call index, among what this call can return.
            int32_t codes[64];
            int count = chaos_fault_errnos(w->call->fn, codes, 64);
            if (count <= 0) return R_PASS;
            if (count > 64) count = 64;
            uint64_t draw = chaos_rules_derive2(w->entry->seed, w->index, (uint64_t)(node - w->entry->nodes));
            out->action = CHAOS_ACT_FAIL;
            out->ret = node->ret;
            out->err = codes[draw % (uint64_t)count];
            return R_ACT;
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
        if (node->variation) {
            // A slice of max ± variation bytes, drawn from the seed and the call's index.
            uint64_t draw = chaos_rules_derive2(w->entry->seed, w->index, (uint64_t)(node - w->entry->nodes));
            out->max_bytes += (int64_t)(draw % (uint64_t)(2 * node->variation + 1)) - node->variation;
        }
        return R_ACT;
    case CHAOS_NODE_PACE:
    case CHAOS_NODE_LIMIT:
    case CHAOS_NODE_STALL:
    case CHAOS_NODE_LINGER: return cf_stream_decide(node, w->call, out, &w->delay) ? R_ACT : R_PASS;
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
    case CHAOS_NODE_VIRTUAL: out->action = CHAOS_ACT_VIRTUAL; return R_ACT;
    case CHAOS_NODE_ATTRIBUTES:
        if (!may_act(w)) return R_PASS;
        out->action = CHAOS_ACT_ATTRIBUTES;
        out->attributes = node->attributes;
        return R_ACT;
    case CHAOS_NODE_CORRUPT:
        // Bytes that pass through the program's buffers; a copy between descriptors does not.
        if (!may_act(w) || !info || !info->transfers || w->call->fn == CHAOS_FN_COPY_FILE_RANGE ||
            w->call->fn == CHAOS_FN_SENDFILE)
            return R_PASS;
        out->action = CHAOS_ACT_CORRUPT;
        out->corrupt_bytes = (int64_t)node->n;
        out->corrupt_offset = node->corrupt_offset;
        out->corrupt_with = node->corrupt_with;
        out->corrupt_seed = chaos_rules_derive2(w->entry->seed, w->index, (uint64_t)(node - w->entry->nodes));
        return R_ACT;
    case CHAOS_NODE_OMIT:
        // Entries are left out of what a read returns; opening the directory goes on.
        if (!may_act(w) || w->call->fn != CHAOS_FN_READDIR) return R_PASS;
        out->action = CHAOS_ACT_OMIT;
        out->omit_name = node->value;
        out->omit_every = node->value ? 0 : (int64_t)node->n;
        out->corrupt_seed = w->entry->seed;
        return R_ACT;
    case CHAOS_NODE_POWER_LOSS:
        if (!may_act(w) || !info || !(cf_call_ops(w->call, info) & CF_CHANGE_OPS)) return R_PASS;
        out->action = CHAOS_ACT_POWER_LOSS;
        out->torn = node->torn;
        return R_ACT;
    case CHAOS_NODE_SET:
        out->action = CHAOS_ACT_SET;
        out->value = node->value;
        return R_ACT;
    case CHAOS_NODE_UNSET: out->action = CHAOS_ACT_UNSET; return R_ACT;
    case CHAOS_NODE_ASK:
        if (!may_act(w)) return R_PASS; // a special target is outside unnamed entries, as for fail
        out->action = CHAOS_ACT_ASK;
        out->ask_id = (uint32_t)node->n;
        return R_ACT;
    case CHAOS_NODE_SEQUENTIAL:
        for (;;) {
            uint64_t k = atomic_load_explicit(cf_node_counter(node), memory_order_relaxed);
            int32_t child = node->children[step_at(node, k)];
            // A step that is a selector is asked only about the calls it takes: the others
            // pass on without moving the sequence.
            if (!selector_takes(w, child)) return eval(w, child, out);
            if (w->peek || atomic_compare_exchange_weak_explicit(cf_node_counter(node), &k, k + 1, memory_order_relaxed,
                                                                 memory_order_relaxed))
                return eval(w, child, out);
        }
    case CHAOS_NODE_COMPOSITE:
        for (int32_t i = 0; i < node->count; i++) {
            bool named = w->named;
            if (cf_case_matches(&node->cases[i], w->call, w->path, w->special, &w->named))
                return eval(w, node->cases[i].child, out);
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
    case CHAOS_NODE_AT: {
        // Placed at listed calls (from 1) among those reaching the node; the others pass on.
        uint64_t call = tick(w, node) + 1;
        int32_t low = 0, high = node->count;
        while (low < high) {
            int32_t middle = (low + high) / 2;
            if (node->weights[middle] < call)
                low = middle + 1;
            else
                high = middle;
        }
        return low < node->count && node->weights[low] == call ? eval(w, node->child, out) : R_PASS;
    }
    case CHAOS_NODE_DELAY: {
        int r = eval(w, node->child, out);
        if (!may_act(w)) return r;
        w->delay += node->ns;
        return r == R_PASS || r == R_ORIGINAL ? R_ACT : r;
    }
    default: return R_PASS;
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
    out->torn = 0;
    out->corrupt_with = 0;
    out->corrupt_bytes = 0;
    out->corrupt_offset = 0;
    out->corrupt_seed = 0;
    out->attributes.set = 0;
    out->stream.key = 0;
    out->stream.end = CHAOS_STREAM_END_NONE;
    out->omit_name = NULL;
    out->omit_every = 0;
}

/// Whether a call reaches `entry` at all (family, monotonic and path prerequisites).
static bool reaches(const cf_entry *entry, const chaos_call *call) {
    switch (entry->point) {
    case CHAOS_POINT_CONNECT:
    case CHAOS_POINT_ACCEPT:
    case CHAOS_POINT_SEND:
    case CHAOS_POINT_RECV: return (entry->families & (uint32_t)call->family) != 0;
    case CHAOS_POINT_CLOCK: return call->clock_source != CHAOS_CLOCKSRC_MONOTONIC || entry->monotonic;
    case CHAOS_POINT_DNS:
    case CHAOS_POINT_GETENV: return call->name != NULL;
    default: return true;
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
    case CHAOS_NODE_FAIL:
    case CHAOS_NODE_SHORT:
    case CHAOS_NODE_ORIGINAL:
    case CHAOS_NODE_POWER_LOSS:
    case CHAOS_NODE_CORRUPT:
    case CHAOS_NODE_ATTRIBUTES:
    case CHAOS_NODE_PACE:
    case CHAOS_NODE_LIMIT:
    case CHAOS_NODE_STALL:
    case CHAOS_NODE_LINGER:
    case CHAOS_NODE_ASK: return acts; // original decides too; an ask may answer anything
    case CHAOS_NODE_DELAY: return acts || could_act(entry, node->child, path, special, named, seen);
    case CHAOS_NODE_PROBABILITY:
    case CHAOS_NODE_TIMES:
    case CHAOS_NODE_AT: return could_act(entry, node->child, path, special, named, seen);
    case CHAOS_NODE_SEQUENTIAL:
        for (int32_t i = 0; i < node->count; i++)
            if (could_act(entry, node->children[i], path, special, named, seen)) return true;
        return false;
    case CHAOS_NODE_COMPOSITE:
        for (int32_t i = 0; i < node->count; i++) {
            const cf_case *c = &node->cases[i];
            // A call on a descriptor that is no file (path NULL) is only for cases naming
            // descriptors; a case naming them may take any descriptor, special ones too.
            bool descriptors = c->fds || c->descriptor_kinds;
            bool hit = path ? !c->path || chaos_path_match(c->path, path, special && !cf_special_path(path))
                            : descriptors && !c->path;
            if (hit && could_act(entry, c->child, path, special, named || c->path != NULL || descriptors, seen))
                return true;
        }
        return node->otherwise >= 0 && could_act(entry, node->otherwise, path, special, named, seen);
    default: return false;
    }
}

/// Whether the entry targets the call at all. An entry whose root selects (a composite whose
/// fallback is the original or passes: a `match`, an item's target parameters) targets
/// only the calls one of its cases takes; the others are not its calls, so they are not
/// counted, and take no call index.
static bool targets(const cf_entry *entry, const chaos_call *call, const char *path, int special) {
    const cf_node *root = &entry->nodes[0];
    if (root->kind != CHAOS_NODE_COMPOSITE || root->otherwise < 0) return true;
    int32_t fallback = entry->nodes[root->otherwise].kind;
    if (fallback != CHAOS_NODE_ORIGINAL && fallback != CHAOS_NODE_PASS) return true;
    for (int32_t i = 0; i < root->count; i++) {
        bool named = false;
        if (cf_case_matches(&root->cases[i], call, path, special, &named)) return true;
    }
    return false;
}

/// Notes in `slot` what the call the entry acted on was: its function, and what it was
/// aimed at. Under the slot's `busy` flag; when another act (or a reader) holds it, this
/// act is left out rather than waited for: the call path never waits for a note.
static void note_act(chaos_last_act *slot, const chaos_call *call, const char *path) {
    int32_t free_slot = 0;
    if (!atomic_compare_exchange_strong_explicit((_Atomic int32_t *)&slot->busy, &free_slot, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return;
    const char *target = path ? path : call->name ? call->name : "";
    size_t length = strnlen(target, sizeof slot->target - 1);
    memcpy(slot->target, target, length);
    slot->target[length] = 0;
    slot->fn = call->fn + 1;
    atomic_store_explicit((_Atomic int32_t *)&slot->busy, 0, memory_order_release);
}

static int decide(const chaos_call *call, chaos_outcome *out, bool peek) {
    reset(out);
    if (!call || call->point < 0 || call->point >= CHAOS_POINT_COUNT) return 0;
    if (!((atomic_load_explicit(&cf_active_points, memory_order_acquire) >> call->point) & 1)) return 0;
    char buffer[4096];
    const char *path = call->path;
    int special = call->special;
    bool descriptor_only = false; // a call on a descriptor that is no file: pipes, ttys' kin
    bool selectors = atomic_load_explicit(&cf_descriptor_selectors, memory_order_acquire);
    if (call->point == CHAOS_POINT_FILES && !path && call->descriptor_kind) {
        // A delivery outside the program described a descriptor that is no file.
        if (!selectors) return 0;
        descriptor_only = true;
    } else if (on_paths(call->point) && !path) {
        int family = 0, role = 0;
        int kind = chaos_fd_lookup(call->fd, buffer, sizeof buffer, &special, &family, &role);
        if (kind == CHAOS_FD_FILE)
            path = buffer;
        else if (kind == CHAOS_FD_OTHER && selectors)
            descriptor_only = true;
        else
            return 0;
    } else if (call->point == CHAOS_POINT_DIR && !path) {
        // A directory read names its stream's descriptor: its path is the kernel's.
        if (call->fd < 0 || cf_raw_readlink_fd(call->fd, buffer, sizeof buffer) <= 0 || buffer[0] != '/') return 0;
        path = buffer;
        special = cf_special_path(path);
    } else if (names_paths(call->point) && cf_special_path(path)) {
        special = 1; // /dev, /proc, /sys: only cases whose path names them act
    }
    int result = 0;
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load_explicit(&cf_active_plan, memory_order_acquire);
    for (int32_t e = 0; plan && e < plan->count; e++) {
        cf_entry *entry = &plan->entries[e];
        if (entry->point != call->point || !reaches(entry, call)) continue;
        if (descriptor_only && !entry->names_descriptors) continue; // no path: only `fd=`/`kind=` name it
        if (on_paths(call->point)) {                                // only calls on paths the entry can act on reach it
            uint8_t visited[CHAOS_PLAN_MAX_NODES] = {0};
            bool in_scope = could_act(entry, 0, path, special, false, visited);
            if (!in_scope && call->path2) {
                memset(visited, 0, sizeof visited);
                in_scope = could_act(entry, 0, call->path2, 0, false, visited);
            }
            if (!in_scope) continue;
        }
        if (!targets(entry, call, path, special)) {
            // Not the entry's call: a match's original ends the walk (as it would have,
            // uncounted), but leaves a special target to later entries, as `original` does.
            const cf_node *root = &entry->nodes[0];
            if (entry->nodes[root->otherwise].kind == CHAOS_NODE_ORIGINAL && (!on_paths(entry->point) || !special))
                break;
            continue;
        }
        uint64_t index = peek ? atomic_load_explicit(cf_entry_calls(entry), memory_order_relaxed)
                              : atomic_fetch_add_explicit(cf_entry_calls(entry), 1, memory_order_relaxed);
        walk w = {plan, entry, e, call, path, special, false, peek, index, 0};
        chaos_outcome candidate;
        reset(&candidate);
        int r = eval(&w, 0, &candidate);
        // Counted in the counts this plan's entry points to, which a later plan's entry may
        // share: a call decided while plans are switched counts once, for this entry.
        chaos_counts *counts = entry->counts;
        if (r == R_PASS) {
            if (!peek) count_passed(counts);
            continue;
        }
        if (r == R_ORIGINAL && w.delay == 0) {
            if (!peek) count_passed(counts);
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
            if (counts->mirror) atomic_fetch_add_explicit(&counts->mirror[0], 1, memory_order_relaxed);
            atomic_store_explicit(&counts->last_fire_call, index, memory_order_relaxed);
            atomic_store_explicit(&counts->last_fire_ns, call->real_ns ? call->real_ns : cf_now_realtime(),
                                  memory_order_relaxed);
            // Clock readings act by the million and are all alike: only other acts are noted.
            if (call->point != CHAOS_POINT_CLOCK) {
                note_act(&counts->last, call, path);
                if (counts->mirror_last) note_act(counts->mirror_last, call, path);
            }
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
    struct sockaddr_storage address;
    int special = 0, family = 0, role = 0;
    int kind = chaos_fd_lookup(fd, path, sizeof path, &special, &family, &role);
    chaos_call call = {0};
    call.fd = fd;
    if (kind == CHAOS_FD_FILE && files) {
        if (verdict < 0) {
            bool relevant = false;
            unsigned parity = cf_read_enter();
            chaos_plan *plan = atomic_load_explicit(&cf_active_plan, memory_order_acquire);
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
        call.port = -1;
        if (atomic_load_explicit(&cf_stream_addresses, memory_order_acquire)) {
            // `host=` and `port=` name the far end of a connection this process made, and the
            // local end (the listening address) of one it accepted, as connect and accept do.
            socklen_t length = sizeof address;
            long got = syscall(role == CHAOS_ROLE_SERVER ? SYS_getsockname : SYS_getpeername, fd, &address, &length);
            if (got == 0) chaos_call_describe_address(&call, &address, length);
        }
        call.family = family;
        call.role = role;
    } else if (kind == CHAOS_FD_OTHER && files &&
               atomic_load_explicit(&cf_descriptor_selectors, memory_order_acquire)) {
        call.point = CHAOS_POINT_FILES; // a pipe or the like: only `fd=`/`kind=` cases name it
        call.fn = file_fn;
    } else {
        return 0;
    }
    return decide(&call, out, false);
}

int chaos_fault_power_at(int32_t entry, uint64_t call) {
    int placed = 0;
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load_explicit(&cf_active_plan, memory_order_acquire);
    if (plan && entry >= 0 && entry < plan->count) {
        const cf_entry *e = &plan->entries[entry];
        for (int32_t i = 0; i < e->count && !placed; i++) {
            const cf_node *node = &e->nodes[i];
            if (node->kind != CHAOS_NODE_AT || node->child < 0 || e->nodes[node->child].kind != CHAOS_NODE_POWER_LOSS)
                continue;
            for (int32_t k = 0; k < node->count && !placed; k++) placed = node->weights[k] == call;
        }
    }
    cf_read_leave(parity);
    return placed;
}

int chaos_fault_names_descriptors(void) { return atomic_load_explicit(&cf_descriptor_selectors, memory_order_acquire); }

int chaos_fault_power_watches(const char *path) {
    if (!path || !((atomic_load_explicit(&cf_active_points, memory_order_acquire) >> CHAOS_POINT_FILES) & 1)) return 0;
    int watches = 0;
    unsigned parity = cf_read_enter();
    chaos_plan *plan = atomic_load_explicit(&cf_active_plan, memory_order_acquire);
    for (int32_t e = 0; plan && e < plan->count && !watches; e++) {
        const cf_entry *entry = &plan->entries[e];
        if (entry->point != CHAOS_POINT_FILES) continue;
        bool power = false;
        for (int32_t i = 0; i < entry->count && !power; i++) power = entry->nodes[i].kind == CHAOS_NODE_POWER_LOSS;
        uint8_t seen[CHAOS_PLAN_MAX_NODES] = {0};
        watches = power && could_act(entry, 0, path, cf_special_path(path), false, seen);
    }
    cf_read_leave(parity);
    return watches;
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

int64_t chaos_fault_reading_ns(const chaos_outcome *outcome, int clock, int64_t real_ns) {
    if (outcome->action == CHAOS_ACT_ORIGINAL) return real_ns;
    if (outcome->action == CHAOS_ACT_VIRTUAL && chaos_vt_running()) return chaos_vt_reading_ns(clock);
    int32_t source = chaos_clock_source(clock);
    if (source != CHAOS_CLOCKSRC_MONOTONIC && source != CHAOS_CLOCKSRC_TAI)
        return chaos_fault_apply_clock(outcome, real_ns);
    int64_t wall = cf_real_ns(CLOCK_REALTIME);
    return real_ns + chaos_fault_apply_clock(outcome, wall) - wall;
}
