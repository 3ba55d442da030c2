// The plan's text form: its `seed`, `entry` and `case` lines built into a plan, and the
// parse of a whole text. plan_words.c reads the words, plan_node.c the `node` lines,
// plan_check.c checks the whole, plan_format.c writes it back.
// The format is specified in Docs/FaultPlan.md.
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

// MARK: - Building

static void free_case(cf_case *c) {
    free(c->path);
    free(c->host);
    free(c->name);
}

static void free_node(cf_node *n) {
    free(n->children);
    free(n->weights);
    for (int32_t i = 0; n->kind == CHAOS_NODE_COMPOSITE && i < n->count; i++) free_case(&n->cases[i]);
    free(n->cases);
    free(n->owned_value);
}

void chaos_plan_free(chaos_plan *plan) {
    if (!plan) return;
    for (int32_t e = 0; e < plan->count; e++) {
        cf_entry *entry = &plan->entries[e];
        for (int32_t i = 0; i < entry->count; i++) free_node(&entry->nodes[i]);
        free(entry->nodes);
        free(entry->label);
        chaos_counts_release(entry->counts);
    }
    free(plan->entries);
    free(plan);
}

/// The column of byte `offset` of `t`'s decoded value, in the line as written.
static int value_byte_column(const token *t, size_t offset) {
    const char *at = t->raw;
    int column = t->value_column;
    bool quoted = *at == '"';
    if (quoted) {
        at++;
        column++;
    }
    for (size_t i = 0; i < offset; i++) {
        int step = !quoted || *at != '\\' ? 1 : at[1] == 'x' ? 4 : 2;
        at += step;
        column += step;
    }
    return column;
}

/// Labels and names are text: they are shown and sent back in answers (JSON, UTF-8 only).
/// Paths and values may hold any bytes (file names and environments do), and are written
/// back escaped instead.
static bool is_text(parser *p, const token *t, const char *what) {
    size_t bad;
    if (chaos_utf8_valid(t->value, strlen(t->value), &bad)) return true;
    plan_fail(p, value_byte_column(t, bad),
              "%s is not UTF-8 text (byte 0x%02x); write it in UTF-8 (for example \\xc3\\xa9 for \xc3\xa9) or leave "
              "the byte out",
              what, (unsigned char)t->value[bad]);
    return false;
}

int32_t plan_default_families(int32_t point) {
    return point == CHAOS_POINT_CONNECT || point == CHAOS_POINT_ACCEPT || point == CHAOS_POINT_SEND ||
                   point == CHAOS_POINT_RECV
               ? CHAOS_FAMILY_INET | CHAOS_FAMILY_INET6
               : 0;
}

static bool parse_entry(parser *p, builder *b, line_tokens *t) {
    if (t->count < 2 || t->items[1].value) {
        char list[160];
        plan_fail(p, t->count < 2 ? 0 : t->items[1].column,
                  "name the entry's point: entry <point>, with point one of %s",
                  plan_join(cf_point_names, list, sizeof list));
        return false;
    }
    token *name = &t->items[1];
    int32_t point = -1;
    for (int i = 0; cf_point_names[i]; i++)
        if (plan_word_is(name, cf_point_names[i])) point = i;
    if (point < 0) {
        char hint[64], list[160];
        plan_fail(p, name->column, "unknown point '%.*s'%s; use %s", (int)name->key_length, name->key,
                  plan_nearest(name->key, name->key_length, cf_point_names, hint, sizeof hint),
                  plan_join(cf_point_names, list, sizeof list));
        return false;
    }
    static const char *const socket_keys[] = {"label", "seed", "family", NULL};
    static const char *const clock_keys[] = {"label", "seed", "monotonic", "stat", "sleep", NULL};
    static const char *const plain_keys[] = {"label", "seed", NULL};
    const char *const *keys = plan_default_families(point) ? socket_keys
                              : point == CHAOS_POINT_CLOCK ? clock_keys
                                                           : plain_keys;
    if (!plan_check_keys(p, t, 2, keys, "an entry")) return false;
    chaos_plan *plan = b->plan;
    if (plan->count == CHAOS_PLAN_MAX_ENTRIES) {
        plan_fail(p, 1, "more than %d entries", CHAOS_PLAN_MAX_ENTRIES);
        return false;
    }
    if (plan->count == b->entry_capacity) {
        int32_t capacity = b->entry_capacity ? b->entry_capacity * 2 : 4;
        cf_entry *grown = realloc(plan->entries, sizeof(cf_entry) * (size_t)capacity);
        if (!grown) {
            plan_fail(p, 0, "out of memory");
            return false;
        }
        plan->entries = grown;
        b->entry_capacity = capacity;
    }
    cf_entry *entry = &plan->entries[plan->count++];
    memset(entry, 0, sizeof *entry);
    entry->line = p->line;
    entry->point = point;
    entry->families = (uint32_t)plan_default_families(point);
    entry->stat_times = 1;
    entry->sleeps = 1;
    b->node_capacity = 0;
    if (!(entry->counts = cf_counts_make(point))) {
        plan_fail(p, 0, "out of memory");
        return false;
    }
    token *k;
    if ((k = plan_find(t, 2, "label"))) {
        if (!is_text(p, k, "a label")) return false;
        entry->label = plan_take(k);
    }
    entry->seed = chaos_fault_entry_seed(plan->seed, point);
    if ((k = plan_find(t, 2, "seed"))) {
        if (!k->value || !plan_u64(k->value, &entry->seed)) {
            plan_fail(p, k->value ? k->value_column : k->column, "seed is an unsigned 64-bit number (decimal or 0x…)");
            return false;
        }
        entry->seed_given = true;
    }
    if ((k = plan_find(t, 2, "family")) &&
        !plan_set(p, k, cf_family_names, cf_family_bits, CHAOS_FAMILY_ANY, &entry->families, "family"))
        return false;
    if ((k = plan_find(t, 2, "monotonic")) && !plan_yes_no(k->value, &entry->monotonic)) {
        plan_fail(p, k->value_column, "monotonic is yes or no");
        return false;
    }
    if ((k = plan_find(t, 2, "stat")) && !plan_yes_no(k->value, &entry->stat_times)) {
        plan_fail(p, k->value_column, "stat is yes or no");
        return false;
    }
    if ((k = plan_find(t, 2, "sleep")) && !plan_yes_no(k->value, &entry->sleeps)) {
        plan_fail(p, k->value_column, "sleep is yes or no");
        return false;
    }
    plan->points |= 1u << point;
    return true;
}

static bool parse_address(const char *text, cf_case *c) {
    char copy[64];
    if (strlen(text) >= sizeof copy) return false;
    strcpy(copy, text);
    char *slash = strchr(copy, '/');
    if (slash) *slash = 0;
    if (inet_pton(AF_INET, copy, c->address) == 1)
        c->address_length = 4;
    else if (inet_pton(AF_INET6, copy, c->address) == 1)
        c->address_length = 16;
    else
        return false;
    c->prefix_bits = c->address_length * 8;
    if (slash) {
        uint64_t bits;
        if (!plan_u64(slash + 1, &bits) || bits > (uint64_t)c->address_length * 8) return false;
        c->prefix_bits = (int32_t)bits;
    }
    c->has_address = 1;
    return true;
}

static bool parse_case(parser *p, builder *b, line_tokens *t) {
    chaos_plan *plan = b->plan;
    cf_entry *entry = plan->count ? &plan->entries[plan->count - 1] : NULL;
    cf_node *node = entry && entry->count ? &entry->nodes[entry->count - 1] : NULL;
    if (!node || node->kind != CHAOS_NODE_COMPOSITE) {
        plan_fail(p, 1, "a case must follow a composite node (or another case of it)");
        return false;
    }
    if (t->count < 2 || t->items[1].value) {
        plan_fail(p, t->count < 2 ? 0 : t->items[1].column, "write: case <child node> [condition=value...]");
        return false;
    }
    static const char *const files_keys[] = {"path", "ops", "fd", "kind", NULL};
    static const char *const address_keys[] = {"host", "port", "family", NULL};
    static const char *const stream_keys[] = {"family", "role", "host", "port", NULL};
    static const char *const dns_keys[] = {"host", NULL};
    static const char *const getenv_keys[] = {"name", NULL};
    static const char *const clock_keys[] = {"clock", NULL};
    static const char *const stat_keys[] = {"path", NULL};
    static const char *const process_keys[] = {NULL};
    static const char *const dir_keys[] = {"path", NULL};
    static const char *const memory_keys[] = {"above", NULL};
    const char *const *keys[] = {files_keys,  address_keys, address_keys, stream_keys,  stream_keys, dns_keys,
                                 getenv_keys, clock_keys,   stat_keys,    process_keys, dir_keys,    memory_keys};
    _Static_assert(sizeof keys / sizeof keys[0] == CHAOS_POINT_COUNT, "case keys for every point");
    char what[48];
    snprintf(what, sizeof what, "a case of a %s entry", cf_point_names[entry->point]);
    if (!plan_check_keys(p, t, 2, keys[entry->point], what)) return false;
    if (t->count - 2 > CHAOS_PLAN_MAX_CASE_CONDITIONS) {
        plan_fail(p, t->items[2].column, "more than %d conditions in one case", CHAOS_PLAN_MAX_CASE_CONDITIONS);
        return false;
    }
    if (node->count >= CHAOS_PLAN_MAX_NODES) {
        plan_fail(p, 1, "more than %d cases in one composite", CHAOS_PLAN_MAX_NODES);
        return false;
    }
    cf_case *grown = realloc(node->cases, sizeof(cf_case) * (size_t)(node->count + 1));
    if (!grown) {
        plan_fail(p, 0, "out of memory");
        return false;
    }
    node->cases = grown;
    cf_case *c = &node->cases[node->count++];
    memset(c, 0, sizeof *c);
    c->line = p->line;
    c->column = t->items[1].column;
    c->port = -1;
    if (!plan_index(p, &t->items[1], "the case's child", &c->child)) return false;
    token *k;
    if ((k = plan_find(t, 2, "path"))) {
        char why[160];
        if (chaos_path_pattern_check(k->value, why, sizeof why) != 0) {
            plan_fail(p, k->value_column, "path pattern '%s': %s", k->value, why);
            return false;
        }
        c->path = plan_take(k);
    }
    if ((k = plan_find(t, 2, "ops")) &&
        !plan_set(p, k, cf_op_names, cf_op_bits, CHAOS_OP_ALL_FILES, &c->ops, "operation"))
        return false;
    if ((k = plan_find(t, 2, "kind")) && !plan_set(p, k, cf_descriptor_kind_names, cf_descriptor_kind_bits,
                                                   CHAOS_DESCRIPTOR_ANY, &c->descriptor_kinds, "descriptor kind"))
        return false;
    if ((k = plan_find(t, 2, "fd"))) {
        for (const char *at = k->value; *at;) {
            char *end = NULL;
            long number = *at >= '0' && *at <= '9' ? strtol(at, &end, 10) : -1;
            if (number < 0 || number > 63 || !end || (*end && *end != ',')) {
                plan_fail(p, k->value_column + (int)(at - k->value),
                          "fd is a comma list of descriptor numbers from 0 to 63, e.g. 0 or 1,2");
                return false;
            }
            c->fds |= 1ull << number;
            at = *end ? end + 1 : end;
        }
    }
    if ((k = plan_find(t, 2, "family")) &&
        !plan_set(p, k, cf_family_names, cf_family_bits, CHAOS_FAMILY_ANY, &c->families, "family"))
        return false;
    if ((k = plan_find(t, 2, "role")) &&
        !plan_set(p, k, cf_role_names, cf_role_bits, CHAOS_ROLE_ANY, &c->roles, "role"))
        return false;
    if ((k = plan_find(t, 2, "clock")) &&
        !plan_set(p, k, cf_clock_names, cf_clock_bits, CHAOS_CLOCKSRC_ANY, &c->clocks, "clock"))
        return false;
    if ((k = plan_find(t, 2, "above")) && (!plan_u64(k->value, &c->above) || c->above < 1)) {
        plan_fail(p, k->value_column, "above is a number of bytes from 1: only larger allocations match");
        return false;
    }
    if ((k = plan_find(t, 2, "port"))) {
        uint64_t port;
        if (!plan_u64(k->value, &port) || port > 65535) {
            plan_fail(p, k->value_column, "port is a number from 0 to 65535");
            return false;
        }
        c->port = (int32_t)port;
    }
    if ((k = plan_find(t, 2, "host"))) {
        if (entry->point == CHAOS_POINT_DNS) {
            if (!k->value[0] || strlen(k->value) > 253) {
                plan_fail(p, k->value_column, "host is a name or a glob such as *.example.com");
                return false;
            }
            c->host = plan_take(k);
        } else if (!parse_address(k->value, c)) {
            plan_fail(p, k->value_column,
                      "'%s' is not an address; %s entries match IP addresses such as 127.0.0.1, ::1 or 10.0.0.0/8 (use "
                      "a dns entry for names)",
                      k->value, cf_point_names[entry->point]);
            return false;
        }
    }
    if ((k = plan_find(t, 2, "name"))) {
        if (!k->value[0] || strchr(k->value, '=')) {
            plan_fail(p, k->value_column, "name is an environment variable's name (not empty, no '=')");
            return false;
        }
        if (!is_text(p, k, "a variable's name")) return false;
        c->name = plan_take(k);
    }
    return true;
}

// MARK: - Parse

chaos_plan *chaos_plan_parse(const char *text, size_t length, chaos_plan_error *error) {
    parser p = {0};
    p.error = error;
    if (error) memset(error, 0, sizeof *error);
    if (!text) {
        plan_fail(&p, 0, "no plan text");
        return NULL;
    }
    if (length > CHAOS_PLAN_MAX_TEXT) {
        plan_fail(&p, 0, "the plan is longer than %d bytes", CHAOS_PLAN_MAX_TEXT);
        return NULL;
    }
    if (memchr(text, 0, length)) {
        p.line = 1;
        for (const char *c = text; *c; c++)
            if (*c == '\n') p.line++;
        plan_fail(&p, 0, "a NUL byte in the plan text");
        return NULL;
    }
    builder b = {0};
    b.plan = calloc(1, sizeof(chaos_plan));
    if (!b.plan) {
        plan_fail(&p, 0, "out of memory");
        return NULL;
    }
    line_tokens *tokens = malloc(sizeof(line_tokens));
    if (!tokens) {
        free(b.plan);
        plan_fail(&p, 0, "out of memory");
        return NULL;
    }
    tokens->count = 0;
    size_t position = 0;
    int line_number = 0;
    while (position < length && !p.failed) {
        const char *line = text + position;
        const char *newline = memchr(line, '\n', length - position);
        size_t line_length = newline ? (size_t)(newline - line) : length - position;
        position += line_length + (newline ? 1 : 0);
        p.line = ++line_number;
        if (!plan_tokenize(&p, line, line_length, tokens)) break;
        if (tokens->count == 0) continue;
        token *first = &tokens->items[0];
        if (!b.header) {
            if (!plan_word_is(first, "chaos-plan")) {
                plan_fail(&p, first->column, "the first line must be: chaos-plan %d", CHAOS_PLAN_VERSION);
            } else if (tokens->count != 2 || tokens->items[1].value || !plan_word_is(&tokens->items[1], "1")) {
                plan_fail(&p, tokens->count > 1 ? tokens->items[1].column : 0,
                          "this engine reads plan version %d: write chaos-plan %d", CHAOS_PLAN_VERSION,
                          CHAOS_PLAN_VERSION);
            }
            b.header = true;
        } else if (first->value) {
            plan_fail(&p, first->column, "a line starts with a keyword: seed, entry, node or case");
        } else if (plan_word_is(first, "seed")) {
            uint64_t seed;
            char word[32];
            size_t n = tokens->count == 2 ? tokens->items[1].key_length : 0;
            if (b.plan->count > 0)
                plan_fail(&p, first->column, "the seed comes before the first entry");
            else if (b.seed_given)
                plan_fail(&p, first->column, "a second seed line");
            else if (tokens->count != 2 || tokens->items[1].value || n == 0 || n >= sizeof word)
                plan_fail(&p, tokens->count > 1 ? tokens->items[1].column : 0, "write: seed <unsigned 64-bit number>");
            else {
                memcpy(word, tokens->items[1].key, n);
                word[n] = 0;
                if (!plan_u64(word, &seed))
                    plan_fail(&p, tokens->items[1].column, "the seed is an unsigned 64-bit number (decimal or 0x…)");
                else {
                    b.plan->seed = seed;
                    b.seed_given = true;
                }
            }
        } else if (plan_word_is(first, "entry")) {
            parse_entry(&p, &b, tokens);
        } else if (plan_word_is(first, "node")) {
            plan_parse_node(&p, &b, tokens);
        } else if (plan_word_is(first, "case")) {
            parse_case(&p, &b, tokens);
        } else if (plan_word_is(first, "chaos-plan")) {
            plan_fail(&p, first->column, "a second chaos-plan line");
        } else {
            static const char *const keywords[] = {"seed", "entry", "node", "case", NULL};
            char hint[64];
            plan_fail(&p, first->column, "unknown line '%.*s'%s; lines start with seed, entry, node or case",
                      (int)first->key_length, first->key,
                      plan_nearest(first->key, first->key_length, keywords, hint, sizeof hint));
        }
        plan_free_tokens(tokens);
    }
    plan_free_tokens(tokens);
    free(tokens);
    if (!p.failed && !b.header) {
        p.line = line_number > 0 ? line_number : 1;
        plan_fail(&p, 0, "empty plan: the first line must be chaos-plan %d", CHAOS_PLAN_VERSION);
    }
    for (int32_t e = 0; !p.failed && e < b.plan->count; e++) plan_validate_entry(&p, &b.plan->entries[e], e);
    if (p.failed) {
        chaos_plan_free(b.plan);
        return NULL;
    }
    return b.plan;
}

int chaos_plan_needs_start_anchor(const chaos_plan *plan) {
    for (int32_t e = 0; plan && e < plan->count; e++)
        for (int32_t i = 0; i < plan->entries[e].count; i++)
            if (plan->entries[e].nodes[i].kind == CHAOS_NODE_SPEED && plan->entries[e].nodes[i].anchor_start) return 1;
    return 0;
}

int32_t chaos_plan_entry_count(const chaos_plan *plan) { return plan ? plan->count : 0; }

int32_t chaos_plan_entry_point(const chaos_plan *plan, int32_t entry) {
    return plan && entry >= 0 && entry < plan->count ? plan->entries[entry].point : -1;
}

const char *chaos_plan_entry_label(const chaos_plan *plan, int32_t entry) {
    return plan && entry >= 0 && entry < plan->count ? plan->entries[entry].label : NULL;
}

int chaos_plan_entry_has_kind(const chaos_plan *plan, int32_t entry, int32_t kind) {
    if (!plan || entry < 0 || entry >= plan->count) return 0;
    for (int32_t i = 0; i < plan->entries[entry].count; i++)
        if (plan->entries[entry].nodes[i].kind == kind) return 1;
    return 0;
}

uint64_t chaos_plan_seed(const chaos_plan *plan) { return plan ? plan->seed : 0; }

uint32_t chaos_plan_entry_clock_flags(const chaos_plan *plan, int32_t entry) {
    if (!plan || entry < 0 || entry >= plan->count || plan->entries[entry].point != CHAOS_POINT_CLOCK) return 0;
    const cf_entry *e = &plan->entries[entry];
    int virtual_time = chaos_plan_entry_has_kind(plan, entry, CHAOS_NODE_VIRTUAL);
    uint32_t flags = 0;
    if (e->monotonic || virtual_time) flags |= CHAOS_CLOCK_FLAG_MONOTONIC;
    // Every faked clock moves sleeps, not only speed: an absolute sleep waits until the
    // faked clock reads its target (chaos_outcome_sleep).
    if (e->sleeps || virtual_time) flags |= CHAOS_CLOCK_FLAG_SLEEP;
    if (virtual_time) flags |= CHAOS_CLOCK_FLAG_VIRTUAL;
    if (e->stat_times) flags |= CHAOS_CLOCK_FLAG_STAT;
    return flags;
}

uint32_t chaos_plan_entry_ops(const chaos_plan *plan, int32_t entry) {
    if (!plan || entry < 0 || entry >= plan->count) return 0;
    const cf_entry *e = &plan->entries[entry];
    if (e->point != CHAOS_POINT_FILES) return 0;
    // Only a root composite that passes everything else narrows the entry: deeper
    // composites choose among calls the root already took.
    const cf_node *root = e->count > 0 ? &e->nodes[0] : NULL;
    if (!root || root->kind != CHAOS_NODE_COMPOSITE) return CHAOS_OP_ALL_FILES;
    if (root->otherwise >= 0 && e->nodes[root->otherwise].kind != CHAOS_NODE_PASS) return CHAOS_OP_ALL_FILES;
    uint32_t ops = 0;
    for (int32_t c = 0; c < root->count; c++) ops |= root->cases[c].ops ? root->cases[c].ops : CHAOS_OP_ALL_FILES;
    return ops;
}
