// A parsed plan checked as a whole: every node reachable, its kind allowed on its point,
// its errno one a function of the point can return, children after their parents.
#define _GNU_SOURCE
#include "plan.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// MARK: - Validation

static bool kind_allowed(int32_t point, int32_t kind) {
    switch (kind) {
    case CHAOS_NODE_ORIGINAL:
    case CHAOS_NODE_PASS:
    case CHAOS_NODE_SEQUENTIAL:
    case CHAOS_NODE_COMPOSITE:
    case CHAOS_NODE_PROBABILITY:
    case CHAOS_NODE_TIMES:
    case CHAOS_NODE_ASK:
    case CHAOS_NODE_AT: return true;
    case CHAOS_NODE_FAIL: return point != CHAOS_POINT_GETENV && point != CHAOS_POINT_CLOCK;
    case CHAOS_NODE_OMIT: return point == CHAOS_POINT_DIR;
    case CHAOS_NODE_LINGER: return point == CHAOS_POINT_SEND;
    case CHAOS_NODE_DELAY: return point != CHAOS_POINT_GETENV && point != CHAOS_POINT_CLOCK;
    case CHAOS_NODE_SHORT: return point == CHAOS_POINT_FILES || point == CHAOS_POINT_SEND || point == CHAOS_POINT_RECV;
    case CHAOS_NODE_POWER_LOSS: return point == CHAOS_POINT_FILES;
    case CHAOS_NODE_ATTRIBUTES: return point == CHAOS_POINT_STAT;
    case CHAOS_NODE_PACE:
    case CHAOS_NODE_LIMIT:
    case CHAOS_NODE_STALL: return point == CHAOS_POINT_SEND || point == CHAOS_POINT_RECV;
    case CHAOS_NODE_CORRUPT:
        return point == CHAOS_POINT_FILES || point == CHAOS_POINT_SEND || point == CHAOS_POINT_RECV;
    case CHAOS_NODE_OFFSET:
    case CHAOS_NODE_FROZEN:
    case CHAOS_NODE_SPEED:
    case CHAOS_NODE_VIRTUAL: return point == CHAOS_POINT_CLOCK;
    case CHAOS_NODE_SET:
    case CHAOS_NODE_UNSET: return point == CHAOS_POINT_GETENV;
    default: return false;
    }
}

static const char *kinds_for(int32_t point) {
    switch (point) {
    case CHAOS_POINT_FILES: return "fail, short, corrupt, delay or power-loss";
    case CHAOS_POINT_SEND:
    case CHAOS_POINT_RECV: return "fail, short, corrupt, delay, pace, limit or stall";
    case CHAOS_POINT_CONNECT:
    case CHAOS_POINT_ACCEPT:
    case CHAOS_POINT_DNS: return "fail or delay";
    case CHAOS_POINT_GETENV: return "set or unset";
    case CHAOS_POINT_STAT: return "fail, delay or attributes";
    case CHAOS_POINT_PROCESS: return "fail or delay";
    case CHAOS_POINT_DIR: return "fail, omit or delay";
    case CHAOS_POINT_MEMORY: return "fail or delay";
    default: return "offset, frozen, speed or virtual";
    }
}

static bool any_fn_allows(int32_t point, uint32_t ops, int32_t err) {
    for (int32_t fn = 0; fn < CHAOS_FN_COUNT; fn++) {
        const chaos_fn_info *info = chaos_fault_fn_info(fn);
        if (info->point != point || (point == CHAOS_POINT_FILES && !(info->op & ops))) continue;
        if (chaos_fault_errno_allowed(fn, err)) return true;
    }
    return false;
}

static const char *op_list(uint32_t ops, char *buffer, size_t capacity) {
    size_t used = 0;
    buffer[0] = 0;
    for (int i = 0; cf_op_names[i]; i++) {
        if (!(ops & cf_op_bits[i])) continue;
        int wrote = snprintf(buffer + used, capacity - used, "%s%s", used ? "," : "", cf_op_names[i]);
        if (wrote < 0 || (size_t)wrote >= capacity - used) break;
        used += (size_t)wrote;
    }
    return buffer;
}

/// What reaches each node of an entry, worked out from the root down: whether any way does,
/// the file operations that can, and (getenv) whether every way passed a name condition.
typedef struct reach {
    uint32_t ops_in[CHAOS_PLAN_MAX_NODES];
    bool reached[CHAOS_PLAN_MAX_NODES];
    bool named[CHAOS_PLAN_MAX_NODES];
} reach;

/// Records that node `parent` leads to `child` with `mask` and `named`; false, having said
/// why, when the child is not a later node of the entry.
static bool link_child(parser *p, const cf_entry *entry, reach *r, int32_t parent, int32_t child, uint32_t mask,
                       bool named, int column) {
    if (child <= parent || child >= entry->count) {
        plan_fail(p, column,
                  child <= parent ? "child %d must come after node %d (list children after their parent)"
                                  : "child %d does not exist (the entry has nodes 0 to %d)",
                  child, child <= parent ? parent : entry->count - 1);
        return false;
    }
    r->reached[child] = true;
    r->ops_in[child] |= mask;
    r->named[child] = r->named[child] && named;
    return true;
}

/// The children of a composite node: each case can match something that reaches it.
static bool link_cases(parser *p, const cf_entry *entry, reach *r, int32_t i) {
    const cf_node *node = &entry->nodes[i];
    if (node->count == 0) {
        plan_fail(p, node->column, "composite node %d has no case; add lines: case <child> <condition>=...", i);
        return false;
    }
    for (int32_t c = 0; c < node->count; c++) {
        const cf_case *k = &node->cases[c];
        p->line = k->line;
        uint32_t mask = k->ops ? r->ops_in[i] & k->ops : r->ops_in[i];
        if (entry->point == CHAOS_POINT_FILES && mask == 0) {
            char a[128], b[128];
            plan_fail(p, k->column, "this case can never match: its ops (%s) are outside the ops that reach it (%s)",
                      op_list(k->ops, a, sizeof a), op_list(r->ops_in[i], b, sizeof b));
            return false;
        }
        if (!link_child(p, entry, r, i, k->child, mask, r->named[i] || k->name != NULL, k->column)) return false;
    }
    p->line = node->line;
    return node->otherwise < 0 ||
           link_child(p, entry, r, i, node->otherwise, r->ops_in[i], r->named[i], node->err_column);
}

/// The tree's shape: every node reached from the root, of a kind the point takes, with
/// children after it. Fills `r`.
static bool check_tree(parser *p, const cf_entry *entry, reach *r) {
    const char *point = cf_point_names[entry->point];
    for (int i = 0; i < CHAOS_PLAN_MAX_NODES; i++) {
        r->ops_in[i] = 0;
        r->reached[i] = false;
        r->named[i] = true;
    }
    r->reached[0] = true;
    r->named[0] = false;
    r->ops_in[0] = entry->point == CHAOS_POINT_FILES ? CHAOS_OP_ALL_FILES : 0;
    for (int32_t i = 0; i < entry->count; i++) {
        const cf_node *node = &entry->nodes[i];
        p->line = node->line;
        if (!r->reached[i]) {
            plan_fail(p, 0, "node %d is not the child of any node before it; remove it or refer to it", i);
            return false;
        }
        if (!kind_allowed(entry->point, node->kind)) {
            plan_fail(p, node->column,
                      "a %s node cannot run on a %s entry; %s entries take %s (and original, pass, sequential, "
                      "composite, probability, times, ask)",
                      cf_kind_names[node->kind], point, point, kinds_for(entry->point));
            return false;
        }
        bool linked = true;
        switch (node->kind) {
        case CHAOS_NODE_PROBABILITY:
        case CHAOS_NODE_TIMES:
        case CHAOS_NODE_DELAY:
        case CHAOS_NODE_AT:
            linked = link_child(p, entry, r, i, node->child, r->ops_in[i], r->named[i], node->err_column);
            break;
        case CHAOS_NODE_SEQUENTIAL:
            for (int32_t c = 0; linked && c < node->count; c++)
                linked = link_child(p, entry, r, i, node->children[c], r->ops_in[i], r->named[i], node->err_column);
            break;
        case CHAOS_NODE_COMPOSITE: linked = link_cases(p, entry, r, i); break;
        default: break;
        }
        if (!linked) return false;
    }
    return true;
}

/// A fail node: an errno (or, for dns, an EAI code) that a call reaching it can return.
static bool check_fail(parser *p, const cf_entry *entry, const cf_node *node, uint32_t ops_in) {
    const char *point = cf_point_names[entry->point];
    char ops[128], list[1024];
    if (entry->point == CHAOS_POINT_DNS) {
        if (!node->has_ret || node->ret >= 0 || !any_fn_allows(CHAOS_POINT_DNS, 0, (int32_t)node->ret)) {
            plan_fail(p, node->err_column ? node->err_column : node->column,
                      "a dns fail needs ret=<EAI code>, one of %s",
                      cf_errno_list(CHAOS_POINT_DNS, list, sizeof list, 0, 0));
            return false;
        }
        if (node->any_errno) {
            plan_fail(p, node->err_column, "errno=any is for system calls; a dns fail names its EAI code in ret=");
            return false;
        }
        if (node->has_err && node->ret != EAI_SYSTEM) {
            plan_fail(p, node->err_column, "errno= goes with ret=EAI_SYSTEM only (other EAI codes carry no errno)");
            return false;
        }
        return true;
    }
    if (!node->has_err) {
        plan_fail(p, node->column, "a fail node needs errno=..., one of %s",
                  cf_errno_list(entry->point, list, sizeof list, 0, ops_in));
        return false;
    }
    if (node->ret != -1) {
        plan_fail(p, node->err_column, "%s calls fail with ret=-1 (leave ret out)", point);
        return false;
    }
    if (node->any_errno) return true; // each call draws among the errnos it can return
    if (any_fn_allows(entry->point, ops_in, node->err)) return true;
    const char *name = chaos_fault_errno_name(node->err);
    if (entry->point == CHAOS_POINT_FILES) {
        plan_fail(p, node->err_column,
                  "%s is not an errno the %s calls that reach this node can return; they return %s",
                  name ? name : "this", op_list(ops_in, ops, sizeof ops),
                  cf_errno_list(entry->point, list, sizeof list, 0, ops_in));
    } else {
        plan_fail(p, node->err_column, "%s is not an errno %s can return; it returns %s", name ? name : "this", point,
                  cf_errno_list(entry->point, list, sizeof list, 0, 0));
    }
    return false;
}

/// The leaves, with what reaches them known: each can act on a call that reaches it.
static bool check_leaves(parser *p, const cf_entry *entry, const reach *r) {
    for (int32_t i = 0; i < entry->count; i++) {
        const cf_node *node = &entry->nodes[i];
        p->line = node->line;
        char ops[128];
        if (node->kind == CHAOS_NODE_FAIL) {
            if (!check_fail(p, entry, node, r->ops_in[i])) return false;
        } else if (node->kind == CHAOS_NODE_SHORT && entry->point == CHAOS_POINT_FILES &&
                   !(r->ops_in[i] & (CHAOS_OP_READ | CHAOS_OP_WRITE))) {
            plan_fail(p, node->column,
                      "a short transfer needs read or write calls, but only %s reach this node; add ops=read or "
                      "ops=write to its case",
                      op_list(r->ops_in[i], ops, sizeof ops));
            return false;
        } else if (node->kind == CHAOS_NODE_CORRUPT && entry->point == CHAOS_POINT_FILES &&
                   !(r->ops_in[i] & (CHAOS_OP_READ | CHAOS_OP_WRITE))) {
            plan_fail(p, node->column,
                      "corrupted bytes need read or write calls, but only %s reach this node; add ops=read or "
                      "ops=write to its case",
                      op_list(r->ops_in[i], ops, sizeof ops));
            return false;
        } else if (node->kind == CHAOS_NODE_POWER_LOSS && !(r->ops_in[i] & CF_CHANGE_OPS)) {
            plan_fail(p, node->column,
                      "power is lost at a call that changes a file, but only %s reach this node; add "
                      "ops=write,truncate,rename,unlink,mkdir,create to its case",
                      op_list(r->ops_in[i], ops, sizeof ops));
            return false;
        } else if ((node->kind == CHAOS_NODE_SET || node->kind == CHAOS_NODE_UNSET) && !r->named[i]) {
            plan_fail(p, node->column,
                      "a %s node must be reached through a case with name=<VARIABLE> (it would answer every variable)",
                      cf_kind_names[node->kind]);
            return false;
        }
    }
    return true;
}

bool plan_validate_entry(parser *p, cf_entry *entry, int32_t index) {
    if (entry->count == 0) {
        p->line = entry->line;
        plan_fail(p, 0, "entry %d (%s) has no nodes; add at least: node 0 <kind>", index, cf_point_names[entry->point]);
        return false;
    }
    reach r;
    return check_tree(p, entry, &r) && check_leaves(p, entry, &r);
}
