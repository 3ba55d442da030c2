// `node` lines: a node added to the current entry, its keys checked against its kind's,
// and read by one function per kind.
#define _GNU_SOURCE
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/// Adds the node a `node I KIND` line starts to the current entry: its number and kind
/// checked, its defaults set. NULL (with the error) when the line cannot start one.
static cf_node *add_node(parser *p, builder *b, line_tokens *t) {
    chaos_plan *plan = b->plan;
    if (plan->count == 0) {
        plan_fail(p, 1, "a node before any entry; start the entry with: entry <point>");
        return NULL;
    }
    cf_entry *entry = &plan->entries[plan->count - 1];
    if (t->count < 3 || t->items[1].value || t->items[2].value) {
        plan_fail(p, t->count < 2 ? 0 : t->items[1].column, "write: node <number> <kind> [key=value...]");
        return NULL;
    }
    int32_t index;
    if (!plan_index(p, &t->items[1], "the node's number", &index)) return NULL;
    if (index != entry->count) {
        plan_fail(p, t->items[1].column, "node %d where node %d comes next; number an entry's nodes 0, 1, 2… in order",
                  index, entry->count);
        return NULL;
    }
    token *kind_token = &t->items[2];
    int32_t kind = -1;
    for (int i = 0; cf_kind_names[i]; i++)
        if (plan_word_is(kind_token, cf_kind_names[i])) kind = i;
    if (kind < 0) {
        char hint[64], list[256];
        plan_fail(p, kind_token->column, "unknown node kind '%.*s'%s; use %s", (int)kind_token->key_length,
                  kind_token->key,
                  plan_nearest(kind_token->key, kind_token->key_length, cf_kind_names, hint, sizeof hint),
                  plan_join(cf_kind_names, list, sizeof list));
        return NULL;
    }
    if (entry->count == b->node_capacity) {
        int32_t capacity = b->node_capacity ? b->node_capacity * 2 : 4;
        cf_node *grown = realloc(entry->nodes, sizeof(cf_node) * (size_t)capacity);
        if (!grown) {
            plan_fail(p, 0, "out of memory");
            return NULL;
        }
        entry->nodes = grown;
        b->node_capacity = capacity;
    }
    cf_node *node = &entry->nodes[entry->count++];
    memset(node, 0, sizeof *node);
    node->kind = kind;
    node->line = p->line;
    node->column = kind_token->column;
    node->child = -1;
    node->otherwise = -1;
    node->salt = (uint64_t)index;
    node->ret = -1;
    return node;
}

/// The keys each node kind takes, by CHAOS_NODE_* (constant).
static const char *const no_keys[] = {NULL};
static const char *const fail_keys[] = {"errno", "ret", NULL};
static const char *const short_keys[] = {"max", "variation", NULL};
static const char *const by_keys[] = {"by", NULL};
static const char *const at_keys[] = {"at", NULL};
static const char *const speed_keys[] = {"factor", "anchor", NULL};
static const char *const set_keys[] = {"value", NULL};
static const char *const sequential_keys[] = {"children", NULL};
static const char *const composite_keys[] = {"otherwise", NULL};
static const char *const probability_keys[] = {"p", "child", "salt", NULL};
static const char *const times_keys[] = {"n", "child", NULL};
static const char *const delay_keys[] = {"by", "child", NULL};
static const char *const ask_keys[] = {"id", NULL};
static const char *const virtual_keys[] = {"at", "flow", NULL};
static const char *const calls_keys[] = {"calls", "child", NULL};
static const char *const power_loss_keys[] = {"torn", NULL};
static const char *const corrupt_keys[] = {"bytes", "offset", "with", NULL};
static const char *const attributes_keys[] = {"size", "mtime", "mode", "nlink", NULL};
static const char *const pace_keys[] = {"rate", NULL};
static const char *const limit_keys[] = {"bytes", "then", NULL};
static const char *const stall_keys[] = {"for", "then", NULL};
static const char *const omit_keys[] = {"name", "every", NULL};
static const char *const *const node_keys[] = {
    no_keys,    no_keys,      fail_keys,       short_keys,      by_keys,          at_keys,         speed_keys,
    set_keys,   no_keys,      sequential_keys, composite_keys,  probability_keys, times_keys,      delay_keys,
    ask_keys,   virtual_keys, calls_keys,      power_loss_keys, corrupt_keys,     attributes_keys, pace_keys,
    limit_keys, stall_keys,   omit_keys,       by_keys,
};
_Static_assert(sizeof node_keys / sizeof node_keys[0] == CHAOS_NODE_LINGER + 1, "keys for every node kind");

/// Whether `t`'s keys are those of `node`'s kind, with every required one present.
static bool check_node_keys(parser *p, line_tokens *t, const cf_node *node) {
    int32_t kind = node->kind;
    char what[40];
    const char *article = strchr("aeiou", cf_kind_names[kind][0]) ? "an" : "a";
    snprintf(what, sizeof what, "%s %s node", article, cf_kind_names[kind]);
    if (!plan_check_keys(p, t, 3, node_keys[kind], what)) return false;

    // Required keys.
    for (const char *const *k = node_keys[kind]; *k; k++) {
        bool optional = strcmp(*k, "ret") == 0 || strcmp(*k, "errno") == 0 || strcmp(*k, "max") == 0 ||
                        strcmp(*k, "anchor") == 0 || strcmp(*k, "salt") == 0 || strcmp(*k, "otherwise") == 0 ||
                        strcmp(*k, "variation") == 0 || strcmp(*k, "then") == 0 ||
                        (kind == CHAOS_NODE_VIRTUAL && (strcmp(*k, "at") == 0 || strcmp(*k, "flow") == 0)) ||
                        strcmp(*k, "torn") == 0 || kind == CHAOS_NODE_CORRUPT || kind == CHAOS_NODE_ATTRIBUTES ||
                        kind == CHAOS_NODE_OMIT;
        if (!optional && !plan_find(t, 3, *k)) {
            plan_fail(p, 0, "%s needs %s=...", what, *k);
            return false;
        }
    }
    return true;
}

// The keys of each kind read into the node (check_node_keys made sure the required ones are
// there): one function per kind.
static bool read_fail(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    if ((k = plan_find(t, 3, "errno"))) {
        node->any_errno = strcmp(k->value, "any") == 0;
        node->err = node->any_errno ? 0 : chaos_fault_errno_value(k->value);
        node->has_err = 1;
        node->err_column = k->value_column;
        if (node->err <= 0 && !node->any_errno) {
            plan_fail(
                p, k->value_column,
                "'%s' is not an errno this engine knows; write a name such as ENOSPC, EIO or ECONNREFUSED, or any",
                k->value);
            return false;
        }
    }
    if ((k = plan_find(t, 3, "ret"))) {
        int32_t code = chaos_fault_errno_value(k->value);
        if (code < 0)
            node->ret = code;
        else if (!plan_i64(k->value, &node->ret)) {
            plan_fail(p, k->value_column, "ret is an integer (-1) or, for dns, an EAI_* name such as EAI_NONAME");
            return false;
        }
        node->has_ret = 1;
        if (!node->has_err) node->err_column = k->value_column;
    }
    return true;
}

static bool read_short(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    if ((k = plan_find(t, 3, "max"))) {
        uint64_t max;
        if (!plan_u64(k->value, &max) || max == 0 || max > (uint64_t)INT64_MAX) {
            plan_fail(p, k->value_column,
                      "max is a number of bytes of 1 or more (leave it out for half of each transfer)");
            return false;
        }
        node->max = (int64_t)max;
    }
    if ((k = plan_find(t, 3, "variation"))) {
        uint64_t variation;
        if (!node->max || !plan_u64(k->value, &variation) || variation >= (uint64_t)node->max) {
            plan_fail(p, k->value_column,
                      "variation is how many bytes max= varies by either way, less than max= (which it needs)");
            return false;
        }
        node->variation = (int64_t)variation;
    }
    return true;
}

/// `then=reset|close` of a limit or stall node (default reset).
static bool read_stream_end(parser *p, line_tokens *t, cf_node *node) {
    token *k = plan_find(t, 3, "then");
    node->stream_end = CHAOS_STREAM_END_RESET;
    if (!k || strcmp(k->value, "reset") == 0) return true;
    if (strcmp(k->value, "close") == 0) {
        node->stream_end = CHAOS_STREAM_END_CLOSE;
        return true;
    }
    plan_fail(p, k->value_column,
              "then is reset (the call fails with ECONNRESET) or close (a receive reads the end, a send fails "
              "with EPIPE)");
    return false;
}

static bool read_pace(parser *p, line_tokens *t, cf_node *node) {
    token *k = plan_find(t, 3, "rate");
    if (!plan_u64(k->value, &node->n) || node->n < 1 || node->n > (1ull << 40)) {
        plan_fail(p, k->value_column, "rate is bytes a second, from 1 to 2^40");
        return false;
    }
    return true;
}

static bool read_limit(parser *p, line_tokens *t, cf_node *node) {
    token *k = plan_find(t, 3, "bytes");
    if (!plan_u64(k->value, &node->n) || node->n > (uint64_t)INT64_MAX) {
        plan_fail(p, k->value_column, "bytes is how many bytes move before the connection ends, 0 or more");
        return false;
    }
    return read_stream_end(p, t, node);
}

static bool read_linger(parser *p, line_tokens *t, cf_node *node) {
    token *k = plan_find(t, 3, "by");
    if (!plan_duration(k->value, &node->ns) || node->ns < 0 || node->ns > 86400000000000LL) {
        plan_fail(p, k->value_column, "by is how long closing a socket waits, 0 to 1d, e.g. 2s");
        return false;
    }
    return true;
}

static bool read_stall(parser *p, line_tokens *t, cf_node *node) {
    token *k = plan_find(t, 3, "for");
    if (!plan_duration(k->value, &node->ns) || node->ns < 0 || node->ns > 86400000000000LL) {
        plan_fail(p, k->value_column, "for is how long data stops before the connection ends, 0 to 1d, e.g. 5s");
        return false;
    }
    return read_stream_end(p, t, node);
}

static bool read_offset(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    k = plan_find(t, 3, "by");
    if (!plan_duration(k->value, &node->ns)) {
        plan_fail(p, k->value_column,
                  "'%s' is not a duration; write e.g. -946080000s, +2h, 90m or a number of nanoseconds", k->value);
        return false;
    }
    return true;
}

static bool read_frozen(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    k = plan_find(t, 3, "at");
    if (!plan_duration(k->value, &node->ns)) {
        plan_fail(p, k->value_column,
                  "'%s' is not an instant; write the time since 1970, e.g. 946684799s or 946684799000000000", k->value);
        return false;
    }
    return true;
}

static bool read_virtual(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    if ((k = plan_find(t, 3, "at")) && (!plan_duration(k->value, &node->ns) || node->ns == 0)) {
        plan_fail(p, k->value_column,
                  "'%s' is not an instant; write the time since 1970, e.g. 1893456000s (leave it out for now)",
                  k->value);
        return false;
    }
    if ((k = plan_find(t, 3, "flow")) && !plan_yes_no(k->value, &node->anchor_start)) {
        plan_fail(p, k->value_column,
                  "flow is yes (virtual time also runs at real pace) or no (it moves only when advanced)");
        return false;
    }
    return true;
}

static bool read_power_loss(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    if ((k = plan_find(t, 3, "torn")) && !plan_yes_no(k->value, &node->torn)) {
        plan_fail(p, k->value_column,
                  "torn is yes (the last unsynced write of each file keeps a prefix of its sectors) or no");
        return false;
    }
    return true;
}

static bool read_corrupt(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    node->n = 1;
    node->corrupt_offset = -1;
    if ((k = plan_find(t, 3, "bytes")) && (!plan_u64(k->value, &node->n) || node->n < 1 || node->n > 65536)) {
        plan_fail(p, k->value_column, "bytes is how many bytes of each call change, from 1 to 65536");
        return false;
    }
    uint64_t offset;
    if ((k = plan_find(t, 3, "offset"))) {
        if (!plan_u64(k->value, &offset) || offset > (uint64_t)INT64_MAX) {
            plan_fail(p, k->value_column,
                      "offset is where in each call's bytes the change starts, from 0 (leave it out for positions "
                      "drawn from the seed)");
            return false;
        }
        node->corrupt_offset = (int64_t)offset;
    }
    if ((k = plan_find(t, 3, "with"))) {
        static const char *const ways[] = {"flip", "zero", "random"};
        node->corrupt_with = -1;
        for (int32_t i = 0; i < 3; i++)
            if (strcmp(k->value, ways[i]) == 0) node->corrupt_with = i;
        if (node->corrupt_with < 0) {
            plan_fail(p, k->value_column,
                      "with is flip (every bit of the byte inverted), zero, or random (a byte drawn from the seed)");
            return false;
        }
    }
    return true;
}

static bool read_attributes(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    chaos_attributes *a = &node->attributes;
    if ((k = plan_find(t, 3, "size"))) {
        if (!plan_i64(k->value, &a->size) || a->size < 0) {
            plan_fail(p, k->value_column, "size is a number of bytes, 0 or more");
            return false;
        }
        a->set |= CHAOS_ATTRIBUTE_SIZE;
    }
    if ((k = plan_find(t, 3, "mtime"))) {
        if (!plan_duration(k->value, &a->mtime_ns)) {
            plan_fail(p, k->value_column, "'%s' is not an instant; write the time since 1970, e.g. 946684799s",
                      k->value);
            return false;
        }
        a->set |= CHAOS_ATTRIBUTE_MTIME;
    }
    if ((k = plan_find(t, 3, "mode"))) {
        char *end = NULL;
        unsigned long mode = strtoul(k->value, &end, 8);
        if (!k->value[0] || !end || *end || mode > 07777 || k->value[0] == '-') {
            plan_fail(p, k->value_column, "mode is permission bits in octal, from 0 to 7777, e.g. 644");
            return false;
        }
        a->mode = (uint32_t)mode;
        a->set |= CHAOS_ATTRIBUTE_MODE;
    }
    if ((k = plan_find(t, 3, "nlink"))) {
        if (!plan_u64(k->value, &a->nlink)) {
            plan_fail(p, k->value_column, "nlink is a number of hard links, 0 or more");
            return false;
        }
        a->set |= CHAOS_ATTRIBUTE_NLINK;
    }
    if (!a->set) {
        plan_fail(p, 0, "an attributes node needs at least one of size=, mtime=, mode=, nlink=");
        return false;
    }
    return true;
}

/// `name=GLOB` (the names left out) or `every=N` (one name in N, by name and seed): one of them.
static bool read_omit(parser *p, line_tokens *t, cf_node *node) {
    token *name = plan_find(t, 3, "name"), *every = plan_find(t, 3, "every");
    if (!name == !every) {
        plan_fail(p, (name && every) ? every->column : 0,
                  "an omit node takes name=<glob> (entries whose name matches, e.g. *.tmp) or every=<N> (one "
                  "entry in N, chosen by its name from the seed), one of the two");
        return false;
    }
    if (name) {
        if (!name->value[0] || strchr(name->value, '/') || strlen(name->value) > 255) {
            plan_fail(p, name->value_column, "name is a glob of entry names (*, ?), without '/', e.g. *.tmp");
            return false;
        }
        node->owned_value = plan_take(name);
        node->value = node->owned_value;
    } else if (!plan_u64(every->value, &node->n) || node->n < 1 || node->n > 1000000) {
        plan_fail(p, every->value_column, "every is a number from 1 (every entry) to 1000000");
        return false;
    }
    return true;
}

static bool read_speed(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    k = plan_find(t, 3, "factor");
    if (!plan_double(k->value, &node->factor) || node->factor < 0 || node->factor > 1e6) {
        plan_fail(p, k->value_column, "factor is a number from 0 to 1000000 (2: twice as fast, 0.5: half speed)");
        return false;
    }
    node->anchor_start = 1;
    if ((k = plan_find(t, 3, "anchor")) && strcmp(k->value, "start") != 0) {
        node->anchor_start = 0;
        if (!plan_duration(k->value, &node->ns)) {
            plan_fail(p, k->value_column, "anchor is start or a real instant since 1970, e.g. 1700000000s");
            return false;
        }
    }
    return true;
}

static bool read_set(parser *p, line_tokens *t, cf_node *node) {
    (void)p; // a value is any text
    node->owned_value = plan_take(plan_find(t, 3, "value"));
    node->value = node->owned_value;
    return true;
}

static bool read_sequential(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    k = plan_find(t, 3, "children");
    int32_t count = 1;
    for (const char *c = k->value; *c; c++)
        if (*c == ',') count++;
    if (count > CHAOS_PLAN_MAX_NODES) {
        plan_fail(p, k->value_column, "more than %d children", CHAOS_PLAN_MAX_NODES);
        return false;
    }
    node->children = calloc((size_t)count, sizeof(int32_t));
    node->weights = calloc((size_t)count, sizeof(uint64_t));
    if (!node->children || !node->weights) {
        plan_fail(p, 0, "out of memory");
        return false;
    }
    node->count = count;
    const char *c = k->value;
    for (int32_t i = 0; i < count; i++) {
        const char *start = c;
        while (*c && *c != ',') c++;
        char item[48];
        size_t n = (size_t)(c - start);
        int column = k->value_column + (int)(start - k->value);
        if (n == 0 || n >= sizeof item) {
            plan_fail(p, column, "children is a list like 1,2*3,4 (node numbers; *n: that many calls)");
            return false;
        }
        memcpy(item, start, n);
        item[n] = 0;
        char *star = strchr(item, '*');
        uint64_t child, weight = 1;
        if (star) *star = 0;
        if (!plan_u64(item, &child) || child >= CHAOS_PLAN_MAX_NODES ||
            (star && (!plan_u64(star + 1, &weight) || weight == 0 || weight > (1ull << 40)))) {
            plan_fail(p, column,
                      "'%.*s' is not a child: write a node number, optionally *n with n from 1 to 2^40 calls", (int)n,
                      start);
            return false;
        }
        node->children[i] = (int32_t)child;
        node->weights[i] = weight;
        if (*c) c++;
    }
    node->err_column = k->value_column;
    return true;
}

static bool read_composite(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    if ((k = plan_find(t, 3, "otherwise"))) {
        node->err_column = k->value_column;
        if (strcmp(k->value, "pass") != 0 && !plan_index(p, k, "otherwise", &node->otherwise)) return false;
    }
    return true;
}

static bool read_probability(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    k = plan_find(t, 3, "p");
    if (!plan_double(k->value, &node->p) || node->p < 0 || node->p > 1) {
        plan_fail(p, k->value_column, "p is a probability from 0 to 1, e.g. 0.25");
        return false;
    }
    if ((k = plan_find(t, 3, "salt")) && !plan_u64(k->value, &node->salt)) {
        plan_fail(p, k->value_column, "salt is an unsigned 64-bit number");
        return false;
    }
    return true;
}

static bool read_times(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    k = plan_find(t, 3, "n");
    if (!plan_u64(k->value, &node->n) || node->n == 0) {
        plan_fail(p, k->value_column, "n is a number of calls of 1 or more");
        return false;
    }
    return true;
}

/// `calls=2,5`: the calls (counted from 1) at which an `at` node hands the call to its
/// child, kept sorted in `weights` (`count` of them) for a binary search per call; `none`
/// lists no call, so the node only counts (a baseline of `chaos explore`).
static bool read_at(parser *p, line_tokens *t, cf_node *node) {
    token *k = plan_find(t, 3, "calls");
    node->err_column = k->value_column;
    if (strcmp(k->value, "none") == 0) return true;
    int32_t count = 1;
    for (const char *c = k->value; *c; c++)
        if (*c == ',') count++;
    if (count > 4096) {
        plan_fail(p, k->value_column, "more than 4096 calls; an at node lists at most 4096");
        return false;
    }
    node->weights = calloc((size_t)count, sizeof(uint64_t));
    if (!node->weights) {
        plan_fail(p, 0, "out of memory");
        return false;
    }
    const char *c = k->value;
    for (int32_t i = 0; i < count; i++) {
        const char *start = c;
        while (*c && *c != ',') c++;
        char item[24];
        size_t n = (size_t)(c - start);
        uint64_t call = 0;
        if (n > 0 && n < sizeof item) {
            memcpy(item, start, n);
            item[n] = 0;
        }
        if (n == 0 || n >= sizeof item || !plan_u64(item, &call) || call == 0 ||
            (i > 0 && call <= node->weights[i - 1])) {
            plan_fail(p, k->value_column + (int)(start - k->value),
                      "calls is a rising list of call numbers counted from 1, e.g. 3 or 2,5 (or none)");
            return false;
        }
        node->weights[i] = call;
        node->count = i + 1;
        if (*c) c++;
    }
    return true;
}

static bool read_delay(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    k = plan_find(t, 3, "by");
    if (!plan_duration(k->value, &node->ns) || node->ns < 0 || node->ns > 86400000000000ll) {
        plan_fail(p, k->value_column, "by is a duration from 0 to 1d, e.g. 200ms or 1.5s");
        return false;
    }
    return true;
}

static bool read_ask(parser *p, line_tokens *t, cf_node *node) {
    token *k;
    k = plan_find(t, 3, "id");
    if (!plan_u64(k->value, &node->n) || node->n > UINT32_MAX) {
        plan_fail(p, k->value_column, "id is the number the delivery asks about, from 0 to 4294967295");
        return false;
    }
    return true;
}

typedef bool (*node_reader)(parser *p, line_tokens *t, cf_node *node);
/// By CHAOS_NODE_* (constant); a kind without keys of its own has none.
static const node_reader node_readers[] = {
    [CHAOS_NODE_FAIL] = read_fail,
    [CHAOS_NODE_SHORT] = read_short,
    [CHAOS_NODE_OFFSET] = read_offset,
    [CHAOS_NODE_FROZEN] = read_frozen,
    [CHAOS_NODE_VIRTUAL] = read_virtual,
    [CHAOS_NODE_SPEED] = read_speed,
    [CHAOS_NODE_SET] = read_set,
    [CHAOS_NODE_SEQUENTIAL] = read_sequential,
    [CHAOS_NODE_COMPOSITE] = read_composite,
    [CHAOS_NODE_PROBABILITY] = read_probability,
    [CHAOS_NODE_TIMES] = read_times,
    [CHAOS_NODE_DELAY] = read_delay,
    [CHAOS_NODE_ASK] = read_ask,
    [CHAOS_NODE_AT] = read_at,
    [CHAOS_NODE_POWER_LOSS] = read_power_loss,
    [CHAOS_NODE_CORRUPT] = read_corrupt,
    [CHAOS_NODE_ATTRIBUTES] = read_attributes,
    [CHAOS_NODE_PACE] = read_pace,
    [CHAOS_NODE_LIMIT] = read_limit,
    [CHAOS_NODE_STALL] = read_stall,
    [CHAOS_NODE_OMIT] = read_omit,
    [CHAOS_NODE_LINGER] = read_linger,
};

bool plan_parse_node(parser *p, builder *b, line_tokens *t) {
    cf_node *node = add_node(p, b, t);
    if (!node || !check_node_keys(p, t, node)) return false;
    node_reader read =
        node->kind < (int32_t)(sizeof node_readers / sizeof node_readers[0]) ? node_readers[node->kind] : NULL;
    if (read && !read(p, t, node)) return false;
    token *k;
    if ((k = plan_find(t, 3, "child"))) {
        node->err_column = node->err_column ? node->err_column : k->value_column;
        if (!plan_index(p, k, "child", &node->child)) return false;
    }
    return true;
}
