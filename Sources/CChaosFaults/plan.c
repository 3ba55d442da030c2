// The plan's text form: parser (with located errors) and canonical writer.
// The format is specified in Docs/FaultPlan.md.
#define _GNU_SOURCE
#include "internal.h"

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

// MARK: - Errors

typedef struct parser {
    chaos_plan_error *error;
    chaos_plan_error scratch;
    int line;
    bool failed;
} parser;

__attribute__((format(printf, 3, 4)))
static void fail(parser *p, int column, const char *format, ...) {
    if (p->failed) return;
    p->failed = true;
    chaos_plan_error *e = p->error ? p->error : &p->scratch;
    e->line = p->line;
    e->column = column;
    va_list list;
    va_start(list, format);
    int length = vsnprintf(e->message, sizeof e->message, format, list);
    va_end(list);
    // A message cut to fit must not end inside a character: it is sent on as UTF-8 text.
    if (length >= (int)sizeof e->message) e->message[chaos_utf8_trim_incomplete(e->message, strlen(e->message))] = 0;
}

// MARK: - Tokens

typedef struct token {
    const char *key;     ///< the word, or the part before '='
    size_t key_length;
    char *value;         ///< decoded value after '=' (NULL: no '=')
    const char *raw;     ///< the value as written (from its opening quote, if quoted)
    int column;
    int value_column;
    bool used;
} token;

#define MAX_TOKENS 64

typedef struct line_tokens {
    token items[MAX_TOKENS];
    int count;
} line_tokens;

static void free_tokens(line_tokens *t) {
    for (int i = 0; i < t->count; i++) free(t->items[i].value);
    t->count = 0;
}

static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// Splits one line (without its newline) into tokens.
static bool tokenize(parser *p, const char *line, size_t length, line_tokens *out) {
    out->count = 0;
    size_t i = 0;
    while (i < length) {
        char c = line[i];
        if (c == ' ' || c == '\t' || c == '\r') { i++; continue; }
        if ((unsigned char)c < 0x20 || c == 0x7f) {
            fail(p, (int)i + 1, "control character 0x%02x; write it inside a quoted value as \\x%02x", (unsigned char)c, (unsigned char)c);
            return false;
        }
        if (c == '#') break;
        if (out->count == MAX_TOKENS) {
            fail(p, (int)i + 1, "more than %d words on one line; split the node", MAX_TOKENS);
            return false;
        }
        token *t = &out->items[out->count];
        memset(t, 0, sizeof *t);
        t->key = line + i;
        t->column = (int)i + 1;
        while (i < length && line[i] != '=' && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
            if (line[i] == '"') {
                fail(p, (int)i + 1, "a quote inside a word; quote whole values: key=\"...\"");
                return false;
            }
            if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f) {
                fail(p, (int)i + 1, "control character 0x%02x in a word", (unsigned char)line[i]);
                return false;
            }
            i++;
        }
        t->key_length = (size_t)(line + i - t->key);
        out->count++;
        if (i < length && line[i] == '=') {
            if (t->key_length == 0) {
                fail(p, t->column, "'=' without a key before it; write key=value");
                return false;
            }
            i++;
            t->value_column = (int)i + 1;
            t->raw = line + i;
            size_t capacity = length - i + 1;
            if (capacity > CHAOS_PLAN_MAX_STRING + 1) capacity = CHAOS_PLAN_MAX_STRING + 1;
            char *value = malloc(capacity);
            if (!value) { fail(p, t->value_column, "out of memory"); return false; }
            t->value = value;
            size_t used = 0;
            if (i < length && line[i] == '"') {
                i++;
                bool closed = false;
                while (i < length) {
                    char d = line[i];
                    if (d == '"') { closed = true; i++; break; }
                    if ((unsigned char)d < 0x20 || d == 0x7f) {
                        fail(p, (int)i + 1, "control character 0x%02x inside quotes; write \\x%02x", (unsigned char)d, (unsigned char)d);
                        return false;
                    }
                    if (d == '\\') {
                        if (i + 1 >= length) break;
                        char e = line[i + 1];
                        if (e == '\\' || e == '"') { d = e; i += 2; }
                        else if (e == 'n') { d = '\n'; i += 2; }
                        else if (e == 't') { d = '\t'; i += 2; }
                        else if (e == 'x' && i + 3 < length && hex(line[i + 2]) >= 0 && hex(line[i + 3]) >= 0) {
                            d = (char)(hex(line[i + 2]) * 16 + hex(line[i + 3]));
                            if (d == 0) {
                                fail(p, (int)i + 1, "\\x00 in a value; values cannot hold NUL bytes");
                                return false;
                            }
                            i += 4;
                        } else {
                            fail(p, (int)i + 1, "unknown escape '\\%c'; use \\\\, \\\", \\n, \\t or \\xHH", e);
                            return false;
                        }
                    } else {
                        i++;
                    }
                    if (used + 1 >= capacity) {
                        fail(p, t->value_column, "value longer than %d bytes", CHAOS_PLAN_MAX_STRING);
                        return false;
                    }
                    value[used++] = d;
                }
                if (!closed) {
                    fail(p, t->value_column, "unterminated quoted value; close it with \"");
                    return false;
                }
                if (i < length && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
                    fail(p, (int)i + 1, "text right after a closing quote; separate words with a space");
                    return false;
                }
            } else {
                while (i < length && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') {
                    if (line[i] == '"') {
                        fail(p, (int)i + 1, "a quote inside an unquoted value; quote the whole value: key=\"...\"");
                        return false;
                    }
                    if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f) {
                        fail(p, (int)i + 1, "control character 0x%02x in a value", (unsigned char)line[i]);
                        return false;
                    }
                    if (used + 1 >= capacity) {
                        fail(p, t->value_column, "value longer than %d bytes", CHAOS_PLAN_MAX_STRING);
                        return false;
                    }
                    value[used++] = line[i++];
                }
            }
            value[used] = 0;
        }
    }
    return true;
}

static bool word_is(const token *t, const char *word) {
    return t->key_length == strlen(word) && memcmp(t->key, word, t->key_length) == 0;
}

static size_t edit_distance(const char *a, size_t n, const char *b) {
    size_t m = strlen(b);
    if (n > 31 || m > 31) return 99;
    size_t row[32];
    for (size_t j = 0; j <= m; j++) row[j] = j;
    for (size_t i = 1; i <= n; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= m; j++) {
            size_t up = row[j];
            size_t cost = (a[i - 1] | 0x20) == (b[j - 1] | 0x20) ? 0 : 1;
            size_t best = diagonal + cost;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diagonal = up;
        }
    }
    return row[m];
}

/// " (did you mean 'x'?)" for the nearest of `choices` (NULL-terminated), or "".
static const char *nearest(const char *word, size_t length, const char *const *choices, char *buffer, size_t capacity) {
    const char *best = NULL;
    size_t best_distance = 3;
    for (const char *const *c = choices; *c; c++) {
        size_t d = edit_distance(word, length, *c);
        if (d < best_distance) { best_distance = d; best = *c; }
    }
    if (!best) { buffer[0] = 0; return buffer; }
    snprintf(buffer, capacity, " (did you mean '%s'?)", best);
    return buffer;
}

/// Lists `choices` as "a, b, c".
static const char *join(const char *const *choices, char *buffer, size_t capacity) {
    size_t used = 0;
    buffer[0] = 0;
    for (const char *const *c = choices; *c; c++) {
        int wrote = snprintf(buffer + used, capacity - used, "%s%s", used ? ", " : "", *c);
        if (wrote < 0 || (size_t)wrote >= capacity - used) break;
        used += (size_t)wrote;
    }
    return buffer;
}

/// Refuses keys of `t` (from index `first`) not in `allowed`, and repeated keys.
static bool check_keys(parser *p, line_tokens *t, int first, const char *const *allowed, const char *what) {
    for (int i = first; i < t->count; i++) {
        token *k = &t->items[i];
        bool known = false;
        for (const char *const *a = allowed; *a; a++) if (word_is(k, *a)) known = true;
        char hint[64], list[256];
        if (!known) {
            if (!allowed[0]) {
                fail(p, k->column, "'%.*s': %s takes nothing more", (int)k->key_length, k->key, what);
            } else {
                fail(p, k->column, "unknown key '%.*s' for %s%s; it takes %s", (int)k->key_length, k->key, what,
                     nearest(k->key, k->key_length, allowed, hint, sizeof hint), join(allowed, list, sizeof list));
            }
            return false;
        }
        if (!k->value) {
            fail(p, k->column, "'%.*s' needs a value: write %.*s=...", (int)k->key_length, k->key, (int)k->key_length, k->key);
            return false;
        }
        for (int j = first; j < i; j++) {
            if (t->items[j].key_length == k->key_length && memcmp(t->items[j].key, k->key, k->key_length) == 0) {
                fail(p, k->column, "'%.*s' is given twice", (int)k->key_length, k->key);
                return false;
            }
        }
    }
    return true;
}

static token *find(line_tokens *t, int first, const char *key) {
    for (int i = first; i < t->count; i++) if (word_is(&t->items[i], key)) return &t->items[i];
    return NULL;
}

// MARK: - Values

static bool parse_u64(const char *text, uint64_t *out) {
    if (!text || !*text) return false;
    int base = 10;
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) { base = 16; text += 2; if (!*text) return false; }
    uint64_t value = 0;
    for (const char *c = text; *c; c++) {
        int digit = base == 16 ? hex(*c) : (*c >= '0' && *c <= '9' ? *c - '0' : -1);
        if (digit < 0) return false;
        if (value > (UINT64_MAX - (uint64_t)digit) / (uint64_t)base) return false;
        value = value * (uint64_t)base + (uint64_t)digit;
    }
    *out = value;
    return true;
}

static bool parse_i64(const char *text, int64_t *out) {
    bool negative = text && text[0] == '-';
    uint64_t magnitude;
    if (!parse_u64(text + (negative || (text && text[0] == '+')), &magnitude)) return false;
    if (negative ? magnitude > (uint64_t)INT64_MAX + 1 : magnitude > (uint64_t)INT64_MAX) return false;
    *out = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    return true;
}

static locale_t c_locale(void) {
    static _Atomic(locale_t) made;
    locale_t l = atomic_load(&made);
    if (!l) {
        locale_t fresh = newlocale(LC_ALL_MASK, "C", (locale_t)0);
        locale_t expected = (locale_t)0;
        if (fresh && !atomic_compare_exchange_strong(&made, &expected, fresh)) { freelocale(fresh); l = expected; }
        else l = fresh;
    }
    return l;
}

/// A finite decimal number (no locale, no hex, no inf/nan).
static bool parse_double(const char *text, double *out) {
    if (!text || !*text || strlen(text) > 64) return false;
    for (const char *c = text; *c; c++)
        if (!((*c >= '0' && *c <= '9') || *c == '.' || *c == 'e' || *c == 'E' || *c == '-' || *c == '+')) return false;
    locale_t l = c_locale();
    if (!l) return false;
    char *end = NULL;
    double value = strtod_l(text, &end, l);
    if (!end || *end || !isfinite(value)) return false;
    *out = value;
    return true;
}

/// A duration: [+-]digits[.digits][unit], unit ns (default) or another plan unit of names.c.
static bool parse_duration(const char *text, int64_t *out) {
    if (!text || !*text) return false;
    const char *c = text;
    bool negative = false;
    if (*c == '+' || *c == '-') negative = *c++ == '-';
    uint64_t whole = 0, fraction = 0, fraction_scale = 1;
    int digits = 0;
    while (*c >= '0' && *c <= '9') {
        if (whole > (UINT64_MAX - 9) / 10) return false;
        whole = whole * 10 + (uint64_t)(*c++ - '0');
        digits++;
    }
    if (*c == '.') {
        c++;
        int fraction_digits = 0;
        while (*c >= '0' && *c <= '9') {
            if (fraction_digits < 18) { fraction = fraction * 10 + (uint64_t)(*c - '0'); fraction_scale *= 10; }
            fraction_digits++;
            c++;
        }
        if (fraction_digits == 0) return false;
        digits += fraction_digits;
    }
    if (digits == 0) return false;
    uint64_t unit = *c ? 0 : 1;
    for (const cf_unit *u = cf_units; u->name && !unit; u++)
        if (u->in_plan && strcmp(c, u->name) == 0) unit = (uint64_t)u->ns;
    if (!unit) return false;
    if (whole > (uint64_t)INT64_MAX / unit) return false;
    uint64_t value = whole * unit;
    // fraction * unit / scale without overflow: unit <= 8.64e13, fraction < 1e18.
    long double part = (long double)fraction * (long double)unit / (long double)fraction_scale;
    uint64_t extra = (uint64_t)(part + 0.5L);
    if (value > (uint64_t)INT64_MAX - extra) return false;
    value += extra;
    *out = negative ? -(int64_t)value : (int64_t)value;
    return true;
}

int chaos_parse_duration(const char *text, int64_t *nanoseconds) { return parse_duration(text, nanoseconds) ? 0 : -1; }

static bool parse_yes_no(const char *text, int32_t *out) {
    if (strcmp(text, "yes") == 0) { *out = 1; return true; }
    if (strcmp(text, "no") == 0) { *out = 0; return true; }
    return false;
}

/// A comma-separated set of names (bits 1 << index), or "any" when `any` is given.
static bool parse_set(parser *p, token *t, const char *const *names, const uint32_t *bits, uint32_t any, uint32_t *out, const char *what) {
    *out = 0;
    if (any && strcmp(t->value, "any") == 0) { *out = any; return true; }
    const char *c = t->value;
    while (true) {
        const char *start = c;
        while (*c && *c != ',') c++;
        size_t n = (size_t)(c - start);
        bool found = false;
        for (int i = 0; names[i]; i++) {
            if (strlen(names[i]) == n && memcmp(names[i], start, n) == 0) { *out |= bits[i]; found = true; }
        }
        if (!found) {
            char hint[64], list[256];
            fail(p, t->value_column + (int)(start - t->value), "unknown %s '%.*s'%s; use %s%s", what, (int)n, start,
                 nearest(start, n, names, hint, sizeof hint), join(names, list, sizeof list), any ? " (comma separated) or any" : " (comma separated)");
            return false;
        }
        if (!*c) break;
        c++;
    }
    return true;
}

// The words of plan text, from the one table of names (names.c).
static const char *const *const point_names = cf_point_names;
static const char *const *const op_names = cf_op_names;
static const uint32_t *const op_bits = cf_op_bits;
static const char *const *const family_names = cf_family_names;
static const uint32_t *const family_bits = cf_family_bits;
static const char *const *const role_names = cf_role_names;
static const uint32_t *const role_bits = cf_role_bits;
static const char *const *const clock_names = cf_clock_names;
static const uint32_t *const clock_bits = cf_clock_bits;
static const char *const *const kind_names = cf_kind_names;

// MARK: - Building

typedef struct builder {
    chaos_plan *plan;
    int32_t entry_capacity;
    int32_t node_capacity; ///< of the last entry
    bool header;
    bool seed_given;
} builder;

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

static char *take(token *t) {
    char *value = t->value;
    t->value = NULL;
    return value;
}

/// The column of byte `offset` of `t`'s decoded value, in the line as written.
static int value_byte_column(const token *t, size_t offset) {
    const char *at = t->raw;
    int column = t->value_column;
    bool quoted = *at == '"';
    if (quoted) { at++; column++; }
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
    fail(p, value_byte_column(t, bad),
         "%s is not UTF-8 text (byte 0x%02x); write it in UTF-8 (for example \\xc3\\xa9 for \xc3\xa9) or leave the byte out",
         what, (unsigned char)t->value[bad]);
    return false;
}

static int32_t default_families(int32_t point) {
    return point == CHAOS_POINT_CONNECT || point == CHAOS_POINT_ACCEPT || point == CHAOS_POINT_SEND || point == CHAOS_POINT_RECV
               ? CHAOS_FAMILY_INET | CHAOS_FAMILY_INET6 : 0;
}

static bool parse_entry(parser *p, builder *b, line_tokens *t) {
    if (t->count < 2 || t->items[1].value) {
        char list[160];
        fail(p, t->count < 2 ? 0 : t->items[1].column, "name the entry's point: entry <point>, with point one of %s", join(point_names, list, sizeof list));
        return false;
    }
    token *name = &t->items[1];
    int32_t point = -1;
    for (int i = 0; point_names[i]; i++) if (word_is(name, point_names[i])) point = i;
    if (point < 0) {
        char hint[64], list[160];
        fail(p, name->column, "unknown point '%.*s'%s; use %s", (int)name->key_length, name->key,
             nearest(name->key, name->key_length, point_names, hint, sizeof hint), join(point_names, list, sizeof list));
        return false;
    }
    static const char *const socket_keys[] = {"label", "seed", "family", NULL};
    static const char *const clock_keys[] = {"label", "seed", "monotonic", "stat", "sleep", NULL};
    static const char *const plain_keys[] = {"label", "seed", NULL};
    const char *const *keys = default_families(point) ? socket_keys : point == CHAOS_POINT_CLOCK ? clock_keys : plain_keys;
    if (!check_keys(p, t, 2, keys, "an entry")) return false;
    chaos_plan *plan = b->plan;
    if (plan->count == CHAOS_PLAN_MAX_ENTRIES) {
        fail(p, 1, "more than %d entries", CHAOS_PLAN_MAX_ENTRIES);
        return false;
    }
    if (plan->count == b->entry_capacity) {
        int32_t capacity = b->entry_capacity ? b->entry_capacity * 2 : 4;
        cf_entry *grown = realloc(plan->entries, sizeof(cf_entry) * (size_t)capacity);
        if (!grown) { fail(p, 0, "out of memory"); return false; }
        plan->entries = grown;
        b->entry_capacity = capacity;
    }
    cf_entry *entry = &plan->entries[plan->count++];
    memset(entry, 0, sizeof *entry);
    entry->line = p->line;
    entry->point = point;
    entry->families = (uint32_t)default_families(point);
    entry->stat_times = 1;
    entry->sleeps = 1;
    b->node_capacity = 0;
    if (!(entry->counts = cf_counts_make(point))) {
        fail(p, 0, "out of memory");
        return false;
    }
    token *k;
    if ((k = find(t, 2, "label"))) {
        if (!is_text(p, k, "a label")) return false;
        entry->label = take(k);
    }
    entry->seed = chaos_fault_entry_seed(plan->seed, point);
    if ((k = find(t, 2, "seed"))) {
        if (!k->value || !parse_u64(k->value, &entry->seed)) {
            fail(p, k->value ? k->value_column : k->column, "seed is an unsigned 64-bit number (decimal or 0x…)");
            return false;
        }
        entry->seed_given = true;
    }
    if ((k = find(t, 2, "family")) && !parse_set(p, k, family_names, family_bits, CHAOS_FAMILY_ANY, &entry->families, "family"))
        return false;
    if ((k = find(t, 2, "monotonic")) && !parse_yes_no(k->value, &entry->monotonic)) {
        fail(p, k->value_column, "monotonic is yes or no");
        return false;
    }
    if ((k = find(t, 2, "stat")) && !parse_yes_no(k->value, &entry->stat_times)) {
        fail(p, k->value_column, "stat is yes or no");
        return false;
    }
    if ((k = find(t, 2, "sleep")) && !parse_yes_no(k->value, &entry->sleeps)) {
        fail(p, k->value_column, "sleep is yes or no");
        return false;
    }
    plan->points |= 1u << point;
    return true;
}

static bool parse_index(parser *p, token *t, const char *what, int32_t *out) {
    uint64_t value;
    const char *text = t->value ? t->value : NULL;
    char word[32];
    if (!text) {
        if (t->key_length >= sizeof word) { fail(p, t->column, "%s must be a node number", what); return false; }
        memcpy(word, t->key, t->key_length);
        word[t->key_length] = 0;
        text = word;
    }
    if (!parse_u64(text, &value) || value >= CHAOS_PLAN_MAX_NODES) {
        fail(p, t->value ? t->value_column : t->column, "%s must be a node number from 0 to %d", what, CHAOS_PLAN_MAX_NODES - 1);
        return false;
    }
    *out = (int32_t)value;
    return true;
}

static bool parse_node(parser *p, builder *b, line_tokens *t) {
    chaos_plan *plan = b->plan;
    if (plan->count == 0) {
        fail(p, 1, "a node before any entry; start the entry with: entry <point>");
        return false;
    }
    cf_entry *entry = &plan->entries[plan->count - 1];
    if (t->count < 3 || t->items[1].value || t->items[2].value) {
        fail(p, t->count < 2 ? 0 : t->items[1].column, "write: node <number> <kind> [key=value...]");
        return false;
    }
    int32_t index;
    if (!parse_index(p, &t->items[1], "the node's number", &index)) return false;
    if (index != entry->count) {
        fail(p, t->items[1].column, "node %d where node %d comes next; number an entry's nodes 0, 1, 2… in order", index, entry->count);
        return false;
    }
    token *kind_token = &t->items[2];
    int32_t kind = -1;
    for (int i = 0; kind_names[i]; i++) if (word_is(kind_token, kind_names[i])) kind = i;
    if (kind < 0) {
        char hint[64], list[256];
        fail(p, kind_token->column, "unknown node kind '%.*s'%s; use %s", (int)kind_token->key_length, kind_token->key,
             nearest(kind_token->key, kind_token->key_length, kind_names, hint, sizeof hint), join(kind_names, list, sizeof list));
        return false;
    }
    if (entry->count == b->node_capacity) {
        int32_t capacity = b->node_capacity ? b->node_capacity * 2 : 4;
        cf_node *grown = realloc(entry->nodes, sizeof(cf_node) * (size_t)capacity);
        if (!grown) { fail(p, 0, "out of memory"); return false; }
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

    static const char *const none[] = {NULL};
    static const char *const fail_keys[] = {"errno", "ret", NULL};
    static const char *const short_keys[] = {"max", NULL};
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
    const char *const *keys[] = {none, none, fail_keys, short_keys, by_keys, at_keys, speed_keys, set_keys, none,
                                 sequential_keys, composite_keys, probability_keys, times_keys, delay_keys, ask_keys,
                                 virtual_keys};
    char what[40];
    const char *article = strchr("aeiou", kind_names[kind][0]) ? "an" : "a";
    snprintf(what, sizeof what, "%s %s node", article, kind_names[kind]);
    if (!check_keys(p, t, 3, keys[kind], what)) return false;

    // Required keys.
    for (const char *const *k = keys[kind]; *k; k++) {
        bool optional = strcmp(*k, "ret") == 0 || strcmp(*k, "errno") == 0 || strcmp(*k, "max") == 0 ||
                        strcmp(*k, "anchor") == 0 || strcmp(*k, "salt") == 0 || strcmp(*k, "otherwise") == 0 ||
                        (kind == CHAOS_NODE_VIRTUAL && (strcmp(*k, "at") == 0 || strcmp(*k, "flow") == 0));
        if (!optional && !find(t, 3, *k)) {
            fail(p, 0, "%s needs %s=...", what, *k);
            return false;
        }
    }
    token *k;
    switch (kind) {
    case CHAOS_NODE_FAIL:
        if ((k = find(t, 3, "errno"))) {
            node->err = chaos_fault_errno_value(k->value);
            node->has_err = 1;
            node->err_column = k->value_column;
            if (node->err <= 0) {
                fail(p, k->value_column, "'%s' is not an errno this engine knows; write a name such as ENOSPC, EIO or ECONNREFUSED", k->value);
                return false;
            }
        }
        if ((k = find(t, 3, "ret"))) {
            int32_t code = chaos_fault_errno_value(k->value);
            if (code < 0) node->ret = code;
            else if (!parse_i64(k->value, &node->ret)) {
                fail(p, k->value_column, "ret is an integer (-1) or, for dns, an EAI_* name such as EAI_NONAME");
                return false;
            }
            node->has_ret = 1;
            if (!node->has_err) node->err_column = k->value_column;
        }
        break;
    case CHAOS_NODE_SHORT:
        if ((k = find(t, 3, "max"))) {
            uint64_t max;
            if (!parse_u64(k->value, &max) || max == 0 || max > (uint64_t)INT64_MAX) {
                fail(p, k->value_column, "max is a number of bytes of 1 or more (leave it out for half of each transfer)");
                return false;
            }
            node->max = (int64_t)max;
        }
        break;
    case CHAOS_NODE_OFFSET:
        k = find(t, 3, "by");
        if (!parse_duration(k->value, &node->ns)) {
            fail(p, k->value_column, "'%s' is not a duration; write e.g. -946080000s, +2h, 90m or a number of nanoseconds", k->value);
            return false;
        }
        break;
    case CHAOS_NODE_FROZEN:
        k = find(t, 3, "at");
        if (!parse_duration(k->value, &node->ns)) {
            fail(p, k->value_column, "'%s' is not an instant; write the time since 1970, e.g. 946684799s or 946684799000000000", k->value);
            return false;
        }
        break;
    case CHAOS_NODE_VIRTUAL:
        if ((k = find(t, 3, "at")) && (!parse_duration(k->value, &node->ns) || node->ns == 0)) {
            fail(p, k->value_column, "'%s' is not an instant; write the time since 1970, e.g. 1893456000s (leave it out for now)", k->value);
            return false;
        }
        if ((k = find(t, 3, "flow")) && !parse_yes_no(k->value, &node->anchor_start)) {
            fail(p, k->value_column, "flow is yes (virtual time also runs at real pace) or no (it moves only when advanced)");
            return false;
        }
        break;
    case CHAOS_NODE_SPEED:
        k = find(t, 3, "factor");
        if (!parse_double(k->value, &node->factor) || node->factor < 0 || node->factor > 1e6) {
            fail(p, k->value_column, "factor is a number from 0 to 1000000 (2: twice as fast, 0.5: half speed)");
            return false;
        }
        node->anchor_start = 1;
        if ((k = find(t, 3, "anchor")) && strcmp(k->value, "start") != 0) {
            node->anchor_start = 0;
            if (!parse_duration(k->value, &node->ns)) {
                fail(p, k->value_column, "anchor is start or a real instant since 1970, e.g. 1700000000s");
                return false;
            }
        }
        break;
    case CHAOS_NODE_SET:
        k = find(t, 3, "value");
        node->owned_value = take(k);
        node->value = node->owned_value;
        break;
    case CHAOS_NODE_SEQUENTIAL: {
        k = find(t, 3, "children");
        int32_t count = 1;
        for (const char *c = k->value; *c; c++) if (*c == ',') count++;
        if (count > CHAOS_PLAN_MAX_NODES) { fail(p, k->value_column, "more than %d children", CHAOS_PLAN_MAX_NODES); return false; }
        node->children = calloc((size_t)count, sizeof(int32_t));
        node->weights = calloc((size_t)count, sizeof(uint64_t));
        if (!node->children || !node->weights) { fail(p, 0, "out of memory"); return false; }
        node->count = count;
        const char *c = k->value;
        for (int32_t i = 0; i < count; i++) {
            const char *start = c;
            while (*c && *c != ',') c++;
            char item[48];
            size_t n = (size_t)(c - start);
            int column = k->value_column + (int)(start - k->value);
            if (n == 0 || n >= sizeof item) {
                fail(p, column, "children is a list like 1,2*3,4 (node numbers; *n: that many calls)");
                return false;
            }
            memcpy(item, start, n);
            item[n] = 0;
            char *star = strchr(item, '*');
            uint64_t child, weight = 1;
            if (star) *star = 0;
            if (!parse_u64(item, &child) || child >= CHAOS_PLAN_MAX_NODES ||
                (star && (!parse_u64(star + 1, &weight) || weight == 0 || weight > (1ull << 40)))) {
                fail(p, column, "'%.*s' is not a child: write a node number, optionally *n with n from 1 to 2^40 calls", (int)n, start);
                return false;
            }
            node->children[i] = (int32_t)child;
            node->weights[i] = weight;
            if (*c) c++;
        }
        node->err_column = k->value_column;
        break;
    }
    case CHAOS_NODE_COMPOSITE:
        if ((k = find(t, 3, "otherwise"))) {
            node->err_column = k->value_column;
            if (strcmp(k->value, "pass") != 0 && !parse_index(p, k, "otherwise", &node->otherwise)) return false;
        }
        break;
    case CHAOS_NODE_PROBABILITY:
        k = find(t, 3, "p");
        if (!parse_double(k->value, &node->p) || node->p < 0 || node->p > 1) {
            fail(p, k->value_column, "p is a probability from 0 to 1, e.g. 0.25");
            return false;
        }
        if ((k = find(t, 3, "salt")) && !parse_u64(k->value, &node->salt)) {
            fail(p, k->value_column, "salt is an unsigned 64-bit number");
            return false;
        }
        break;
    case CHAOS_NODE_TIMES:
        k = find(t, 3, "n");
        if (!parse_u64(k->value, &node->n) || node->n == 0) {
            fail(p, k->value_column, "n is a number of calls of 1 or more");
            return false;
        }
        break;
    case CHAOS_NODE_DELAY:
        k = find(t, 3, "by");
        if (!parse_duration(k->value, &node->ns) || node->ns < 0 || node->ns > 86400000000000ll) {
            fail(p, k->value_column, "by is a duration from 0 to 1d, e.g. 200ms or 1.5s");
            return false;
        }
        break;
    case CHAOS_NODE_ASK:
        k = find(t, 3, "id");
        if (!parse_u64(k->value, &node->n) || node->n > UINT32_MAX) {
            fail(p, k->value_column, "id is the number the delivery asks about, from 0 to 4294967295");
            return false;
        }
        break;
    default:
        break;
    }
    if ((k = find(t, 3, "child"))) {
        node->err_column = node->err_column ? node->err_column : k->value_column;
        if (!parse_index(p, k, "child", &node->child)) return false;
    }
    return true;
}

static bool parse_address(const char *text, cf_case *c) {
    char copy[64];
    if (strlen(text) >= sizeof copy) return false;
    strcpy(copy, text);
    char *slash = strchr(copy, '/');
    if (slash) *slash = 0;
    if (inet_pton(AF_INET, copy, c->address) == 1) c->address_length = 4;
    else if (inet_pton(AF_INET6, copy, c->address) == 1) c->address_length = 16;
    else return false;
    c->prefix_bits = c->address_length * 8;
    if (slash) {
        uint64_t bits;
        if (!parse_u64(slash + 1, &bits) || bits > (uint64_t)c->address_length * 8) return false;
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
        fail(p, 1, "a case must follow a composite node (or another case of it)");
        return false;
    }
    if (t->count < 2 || t->items[1].value) {
        fail(p, t->count < 2 ? 0 : t->items[1].column, "write: case <child node> [condition=value...]");
        return false;
    }
    static const char *const files_keys[] = {"path", "ops", NULL};
    static const char *const address_keys[] = {"host", "port", "family", NULL};
    static const char *const stream_keys[] = {"family", "role", NULL};
    static const char *const dns_keys[] = {"host", NULL};
    static const char *const getenv_keys[] = {"name", NULL};
    static const char *const clock_keys[] = {"clock", NULL};
    const char *const *keys[] = {files_keys, address_keys, address_keys, stream_keys, stream_keys, dns_keys, getenv_keys, clock_keys};
    char what[48];
    snprintf(what, sizeof what, "a case of a %s entry", point_names[entry->point]);
    if (!check_keys(p, t, 2, keys[entry->point], what)) return false;
    if (t->count - 2 > CHAOS_PLAN_MAX_CASE_CONDITIONS) {
        fail(p, t->items[2].column, "more than %d conditions in one case", CHAOS_PLAN_MAX_CASE_CONDITIONS);
        return false;
    }
    if (node->count >= CHAOS_PLAN_MAX_NODES) {
        fail(p, 1, "more than %d cases in one composite", CHAOS_PLAN_MAX_NODES);
        return false;
    }
    cf_case *grown = realloc(node->cases, sizeof(cf_case) * (size_t)(node->count + 1));
    if (!grown) { fail(p, 0, "out of memory"); return false; }
    node->cases = grown;
    cf_case *c = &node->cases[node->count++];
    memset(c, 0, sizeof *c);
    c->line = p->line;
    c->column = t->items[1].column;
    c->port = -1;
    if (!parse_index(p, &t->items[1], "the case's child", &c->child)) return false;
    token *k;
    if ((k = find(t, 2, "path"))) {
        char why[160];
        if (chaos_path_pattern_check(k->value, why, sizeof why) != 0) {
            fail(p, k->value_column, "path pattern '%s': %s", k->value, why);
            return false;
        }
        c->path = take(k);
    }
    if ((k = find(t, 2, "ops")) && !parse_set(p, k, op_names, op_bits, CHAOS_OP_ALL_FILES, &c->ops, "operation")) return false;
    if ((k = find(t, 2, "family")) && !parse_set(p, k, family_names, family_bits, CHAOS_FAMILY_ANY, &c->families, "family")) return false;
    if ((k = find(t, 2, "role")) && !parse_set(p, k, role_names, role_bits, CHAOS_ROLE_ANY, &c->roles, "role")) return false;
    if ((k = find(t, 2, "clock")) && !parse_set(p, k, clock_names, clock_bits, CHAOS_CLOCKSRC_ANY, &c->clocks, "clock")) return false;
    if ((k = find(t, 2, "port"))) {
        uint64_t port;
        if (!parse_u64(k->value, &port) || port > 65535) {
            fail(p, k->value_column, "port is a number from 0 to 65535");
            return false;
        }
        c->port = (int32_t)port;
    }
    if ((k = find(t, 2, "host"))) {
        if (entry->point == CHAOS_POINT_DNS) {
            if (!k->value[0] || strlen(k->value) > 253) {
                fail(p, k->value_column, "host is a name or a glob such as *.example.com");
                return false;
            }
            c->host = take(k);
        } else if (!parse_address(k->value, c)) {
            fail(p, k->value_column, "'%s' is not an address; %s entries match IP addresses such as 127.0.0.1, ::1 or 10.0.0.0/8 (use a dns entry for names)",
                 k->value, point_names[entry->point]);
            return false;
        }
    }
    if ((k = find(t, 2, "name"))) {
        if (!k->value[0] || strchr(k->value, '=')) {
            fail(p, k->value_column, "name is an environment variable's name (not empty, no '=')");
            return false;
        }
        if (!is_text(p, k, "a variable's name")) return false;
        c->name = take(k);
    }
    return true;
}

// MARK: - Validation

static bool kind_allowed(int32_t point, int32_t kind) {
    switch (kind) {
    case CHAOS_NODE_ORIGINAL: case CHAOS_NODE_PASS: case CHAOS_NODE_SEQUENTIAL: case CHAOS_NODE_COMPOSITE:
    case CHAOS_NODE_PROBABILITY: case CHAOS_NODE_TIMES: case CHAOS_NODE_ASK:
        return true;
    case CHAOS_NODE_FAIL:
        return point != CHAOS_POINT_GETENV && point != CHAOS_POINT_CLOCK;
    case CHAOS_NODE_DELAY:
        return point != CHAOS_POINT_GETENV && point != CHAOS_POINT_CLOCK;
    case CHAOS_NODE_SHORT:
        return point == CHAOS_POINT_FILES || point == CHAOS_POINT_SEND || point == CHAOS_POINT_RECV;
    case CHAOS_NODE_OFFSET: case CHAOS_NODE_FROZEN: case CHAOS_NODE_SPEED: case CHAOS_NODE_VIRTUAL:
        return point == CHAOS_POINT_CLOCK;
    case CHAOS_NODE_SET: case CHAOS_NODE_UNSET:
        return point == CHAOS_POINT_GETENV;
    default:
        return false;
    }
}

static const char *kinds_for(int32_t point) {
    switch (point) {
    case CHAOS_POINT_FILES: case CHAOS_POINT_SEND: case CHAOS_POINT_RECV: return "fail, short or delay";
    case CHAOS_POINT_CONNECT: case CHAOS_POINT_ACCEPT: case CHAOS_POINT_DNS: return "fail or delay";
    case CHAOS_POINT_GETENV: return "set or unset";
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
    for (int i = 0; op_names[i]; i++) {
        if (!(ops & op_bits[i])) continue;
        int wrote = snprintf(buffer + used, capacity - used, "%s%s", used ? "," : "", op_names[i]);
        if (wrote < 0 || (size_t)wrote >= capacity - used) break;
        used += (size_t)wrote;
    }
    return buffer;
}

static bool validate_entry(parser *p, cf_entry *entry, int32_t index) {
    const char *point = point_names[entry->point];
    if (entry->count == 0) {
        p->line = entry->line;
        fail(p, 0, "entry %d (%s) has no nodes; add at least: node 0 <kind>", index, point);
        return false;
    }
    uint32_t ops_in[CHAOS_PLAN_MAX_NODES] = {0};
    bool reached[CHAOS_PLAN_MAX_NODES] = {false};
    bool named[CHAOS_PLAN_MAX_NODES]; // getenv: every way here passed a name condition
    for (int i = 0; i < CHAOS_PLAN_MAX_NODES; i++) named[i] = true;
    reached[0] = true;
    named[0] = false;
    ops_in[0] = entry->point == CHAOS_POINT_FILES ? CHAOS_OP_ALL_FILES : 0;
    for (int32_t i = 0; i < entry->count; i++) {
        cf_node *node = &entry->nodes[i];
        p->line = node->line;
        if (!reached[i]) {
            fail(p, 0, "node %d is not the child of any node before it; remove it or refer to it", i);
            return false;
        }
        if (!kind_allowed(entry->point, node->kind)) {
            fail(p, node->column, "a %s node cannot run on a %s entry; %s entries take %s (and original, pass, sequential, composite, probability, times, ask)",
                 kind_names[node->kind], point, point, kinds_for(entry->point));
            return false;
        }
#define LINK(target, mask, isnamed, column)                                                                   \
        do {                                                                                                  \
            int32_t child_ = (target);                                                                        \
            if (child_ <= i || child_ >= entry->count) {                                                     \
                fail(p, (column), child_ <= i ? "child %d must come after node %d (list children after their parent)" \
                                              : "child %d does not exist (the entry has nodes 0 to %d)",      \
                     child_, child_ <= i ? i : entry->count - 1);                                             \
                return false;                                                                                 \
            }                                                                                                 \
            reached[child_] = true;                                                                           \
            ops_in[child_] |= (mask);                                                                         \
            named[child_] = named[child_] && (isnamed);                                                       \
        } while (0)
        switch (node->kind) {
        case CHAOS_NODE_PROBABILITY: case CHAOS_NODE_TIMES: case CHAOS_NODE_DELAY:
            LINK(node->child, ops_in[i], named[i], node->err_column);
            break;
        case CHAOS_NODE_SEQUENTIAL:
            for (int32_t c = 0; c < node->count; c++) LINK(node->children[c], ops_in[i], named[i], node->err_column);
            break;
        case CHAOS_NODE_COMPOSITE:
            if (node->count == 0) {
                fail(p, node->column, "composite node %d has no case; add lines: case <child> <condition>=...", i);
                return false;
            }
            for (int32_t c = 0; c < node->count; c++) {
                cf_case *k = &node->cases[c];
                p->line = k->line;
                uint32_t mask = k->ops ? ops_in[i] & k->ops : ops_in[i];
                if (entry->point == CHAOS_POINT_FILES && mask == 0) {
                    char a[128], b[128];
                    fail(p, k->column, "this case can never match: its ops (%s) are outside the ops that reach it (%s)",
                         op_list(k->ops, a, sizeof a), op_list(ops_in[i], b, sizeof b));
                    return false;
                }
                LINK(k->child, mask, named[i] || k->name != NULL, k->column);
            }
            p->line = node->line;
            if (node->otherwise >= 0) LINK(node->otherwise, ops_in[i], named[i], node->err_column);
            break;
        default:
            break;
        }
#undef LINK
    }
    // Leaves, with what reaches them known.
    for (int32_t i = 0; i < entry->count; i++) {
        cf_node *node = &entry->nodes[i];
        p->line = node->line;
        char ops[128], list[1024];
        if (node->kind == CHAOS_NODE_FAIL) {
            if (entry->point == CHAOS_POINT_DNS) {
                if (!node->has_ret || node->ret >= 0 || !any_fn_allows(CHAOS_POINT_DNS, 0, (int32_t)node->ret)) {
                    fail(p, node->err_column ? node->err_column : node->column,
                         "a dns fail needs ret=<EAI code>, one of %s", cf_errno_list(CHAOS_POINT_DNS, list, sizeof list, 0, 0));
                    return false;
                }
                if (node->has_err && node->ret != EAI_SYSTEM) {
                    fail(p, node->err_column, "errno= goes with ret=EAI_SYSTEM only (other EAI codes carry no errno)");
                    return false;
                }
                continue;
            }
            if (!node->has_err) {
                fail(p, node->column, "a fail node needs errno=..., one of %s",
                     cf_errno_list(entry->point, list, sizeof list, 0, ops_in[i]));
                return false;
            }
            if (node->ret != -1) {
                fail(p, node->err_column, "%s calls fail with ret=-1 (leave ret out)", point);
                return false;
            }
            if (!any_fn_allows(entry->point, ops_in[i], node->err)) {
                const char *name = chaos_fault_errno_name(node->err);
                if (entry->point == CHAOS_POINT_FILES) {
                    fail(p, node->err_column, "%s is not an errno the %s calls that reach this node can return; they return %s",
                         name ? name : "this", op_list(ops_in[i], ops, sizeof ops), cf_errno_list(entry->point, list, sizeof list, 0, ops_in[i]));
                } else {
                    fail(p, node->err_column, "%s is not an errno %s can return; it returns %s", name ? name : "this", point,
                         cf_errno_list(entry->point, list, sizeof list, 0, 0));
                }
                return false;
            }
        } else if (node->kind == CHAOS_NODE_SHORT && entry->point == CHAOS_POINT_FILES &&
                   !(ops_in[i] & (CHAOS_OP_READ | CHAOS_OP_WRITE))) {
            fail(p, node->column, "a short transfer needs read or write calls, but only %s reach this node; add ops=read or ops=write to its case",
                 op_list(ops_in[i], ops, sizeof ops));
            return false;
        } else if ((node->kind == CHAOS_NODE_SET || node->kind == CHAOS_NODE_UNSET) && !named[i]) {
            fail(p, node->column, "a %s node must be reached through a case with name=<VARIABLE> (it would answer every variable)",
                 kind_names[node->kind]);
            return false;
        }
    }
    return true;
}

// MARK: - Parse

chaos_plan *chaos_plan_parse(const char *text, size_t length, chaos_plan_error *error) {
    parser p = {0};
    p.error = error;
    if (error) memset(error, 0, sizeof *error);
    if (!text) {
        fail(&p, 0, "no plan text");
        return NULL;
    }
    if (length > CHAOS_PLAN_MAX_TEXT) {
        fail(&p, 0, "the plan is longer than %d bytes", CHAOS_PLAN_MAX_TEXT);
        return NULL;
    }
    if (memchr(text, 0, length)) {
        p.line = 1;
        for (const char *c = text; *c; c++) if (*c == '\n') p.line++;
        fail(&p, 0, "a NUL byte in the plan text");
        return NULL;
    }
    builder b = {0};
    b.plan = calloc(1, sizeof(chaos_plan));
    if (!b.plan) {
        fail(&p, 0, "out of memory");
        return NULL;
    }
    line_tokens *tokens = malloc(sizeof(line_tokens));
    if (!tokens) {
        free(b.plan);
        fail(&p, 0, "out of memory");
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
        if (!tokenize(&p, line, line_length, tokens)) break;
        if (tokens->count == 0) continue;
        token *first = &tokens->items[0];
        if (!b.header) {
            if (!word_is(first, "chaos-plan")) {
                fail(&p, first->column, "the first line must be: chaos-plan %d", CHAOS_PLAN_VERSION);
            } else if (tokens->count != 2 || tokens->items[1].value || !word_is(&tokens->items[1], "1")) {
                fail(&p, tokens->count > 1 ? tokens->items[1].column : 0, "this engine reads plan version %d: write chaos-plan %d",
                     CHAOS_PLAN_VERSION, CHAOS_PLAN_VERSION);
            }
            b.header = true;
        } else if (first->value) {
            fail(&p, first->column, "a line starts with a keyword: seed, entry, node or case");
        } else if (word_is(first, "seed")) {
            uint64_t seed;
            char word[32];
            size_t n = tokens->count == 2 ? tokens->items[1].key_length : 0;
            if (b.plan->count > 0) fail(&p, first->column, "the seed comes before the first entry");
            else if (b.seed_given) fail(&p, first->column, "a second seed line");
            else if (tokens->count != 2 || tokens->items[1].value || n == 0 || n >= sizeof word)
                fail(&p, tokens->count > 1 ? tokens->items[1].column : 0, "write: seed <unsigned 64-bit number>");
            else {
                memcpy(word, tokens->items[1].key, n);
                word[n] = 0;
                if (!parse_u64(word, &seed)) fail(&p, tokens->items[1].column, "the seed is an unsigned 64-bit number (decimal or 0x…)");
                else { b.plan->seed = seed; b.seed_given = true; }
            }
        } else if (word_is(first, "entry")) {
            parse_entry(&p, &b, tokens);
        } else if (word_is(first, "node")) {
            parse_node(&p, &b, tokens);
        } else if (word_is(first, "case")) {
            parse_case(&p, &b, tokens);
        } else if (word_is(first, "chaos-plan")) {
            fail(&p, first->column, "a second chaos-plan line");
        } else {
            static const char *const keywords[] = {"seed", "entry", "node", "case", NULL};
            char hint[64];
            fail(&p, first->column, "unknown line '%.*s'%s; lines start with seed, entry, node or case", (int)first->key_length,
                 first->key, nearest(first->key, first->key_length, keywords, hint, sizeof hint));
        }
        free_tokens(tokens);
    }
    free_tokens(tokens);
    free(tokens);
    if (!p.failed && !b.header) {
        p.line = line_number > 0 ? line_number : 1;
        fail(&p, 0, "empty plan: the first line must be chaos-plan %d", CHAOS_PLAN_VERSION);
    }
    for (int32_t e = 0; !p.failed && e < b.plan->count; e++) validate_entry(&p, &b.plan->entries[e], e);
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

// MARK: - Format

typedef struct writer {
    char *buffer;
    size_t capacity;
    size_t used;
    bool failed;
} writer;

__attribute__((format(printf, 2, 3)))
static void put(writer *w, const char *format, ...) {
    va_list list;
    va_start(list, format);
    char *at = w->used < w->capacity ? w->buffer + w->used : NULL;
    size_t room = w->used < w->capacity ? w->capacity - w->used : 0;
    int wrote = vsnprintf(at, room, format, list);
    va_end(list);
    if (wrote < 0) w->failed = true;
    else w->used += (size_t)wrote;
}

/// A quoted value; bytes that are not UTF-8 (a path or a variable's value may hold any) are
/// written as \xHH, so the canonical text is always UTF-8 and reads back the same bytes.
static void put_string(writer *w, const char *key, const char *value) {
    put(w, " %s=\"", key);
    size_t length = strlen(value);
    for (size_t i = 0; i < length;) {
        int valid;
        size_t count = chaos_utf8_next(value + i, length - i, &valid);
        for (size_t end = i + count; i < end; i++) {
            unsigned char c = (unsigned char)value[i];
            if (c == '"' || c == '\\') put(w, "\\%c", c);
            else if (c == '\n') put(w, "\\n");
            else if (c == '\t') put(w, "\\t");
            else if (c < 0x20 || c == 0x7f || !valid) put(w, "\\x%02x", c);
            else put(w, "%c", c);
        }
    }
    put(w, "\"");
}

static void put_double(writer *w, const char *key, double value) {
    char text[64];
    snprintf(text, sizeof text, "%.17g", value);
    for (char *c = text; *c; c++) if (*c == ',') *c = '.';
    put(w, " %s=%s", key, text);
}

static void put_set(writer *w, const char *key, uint32_t bits, const char *const *names, const uint32_t *values) {
    if (!bits) return;
    put(w, " %s=", key);
    bool first = true;
    for (int i = 0; names[i]; i++) {
        if (!(bits & values[i])) continue;
        put(w, "%s%s", first ? "" : ",", names[i]);
        first = false;
    }
}

long chaos_plan_format(const chaos_plan *plan, char *buffer, size_t capacity) {
    if (!plan) return -1;
    writer w = {buffer, capacity, 0, false};
    if (capacity) buffer[0] = 0;
    put(&w, "chaos-plan %d\nseed %llu\n", CHAOS_PLAN_VERSION, (unsigned long long)plan->seed);
    for (int32_t e = 0; e < plan->count; e++) {
        const cf_entry *entry = &plan->entries[e];
        put(&w, "entry %s", point_names[entry->point]);
        if (entry->label) put_string(&w, "label", entry->label);
        if (entry->seed_given) put(&w, " seed=%llu", (unsigned long long)entry->seed);
        if (default_families(entry->point)) put_set(&w, "family", entry->families, family_names, family_bits);
        if (entry->point == CHAOS_POINT_CLOCK)
            put(&w, " monotonic=%s stat=%s sleep=%s", entry->monotonic ? "yes" : "no", entry->stat_times ? "yes" : "no",
                entry->sleeps ? "yes" : "no");
        put(&w, "\n");
        for (int32_t i = 0; i < entry->count; i++) {
            const cf_node *node = &entry->nodes[i];
            put(&w, "node %d %s", i, kind_names[node->kind]);
            switch (node->kind) {
            case CHAOS_NODE_FAIL: {
                if (node->has_err) {
                    const char *name = chaos_fault_errno_name(node->err);
                    if (name) put(&w, " errno=%s", name); else put(&w, " errno=%d", node->err);
                }
                const char *code = node->ret < 0 ? chaos_fault_errno_name((int32_t)node->ret) : NULL;
                if (entry->point == CHAOS_POINT_DNS && code) put(&w, " ret=%s", code);
                else if (node->ret != -1) put(&w, " ret=%lld", (long long)node->ret);
                break;
            }
            case CHAOS_NODE_SHORT: if (node->max) put(&w, " max=%lld", (long long)node->max); break;
            case CHAOS_NODE_OFFSET: put(&w, " by=%lld", (long long)node->ns); break;
            case CHAOS_NODE_FROZEN: put(&w, " at=%lld", (long long)node->ns); break;
            case CHAOS_NODE_SPEED:
                put_double(&w, "factor", node->factor);
                if (node->anchor_start) put(&w, " anchor=start"); else put(&w, " anchor=%lld", (long long)node->ns);
                break;
            case CHAOS_NODE_VIRTUAL:
                if (node->ns) put(&w, " at=%lld", (long long)node->ns);
                if (node->anchor_start) put(&w, " flow=yes");
                break;
            case CHAOS_NODE_SET: put_string(&w, "value", node->value ? node->value : ""); break;
            case CHAOS_NODE_SEQUENTIAL:
                put(&w, " children=");
                for (int32_t c = 0; c < node->count; c++) {
                    put(&w, "%s%d", c ? "," : "", node->children[c]);
                    if (node->weights[c] != 1) put(&w, "*%llu", (unsigned long long)node->weights[c]);
                }
                break;
            case CHAOS_NODE_COMPOSITE:
                if (node->otherwise >= 0) put(&w, " otherwise=%d", node->otherwise);
                break;
            case CHAOS_NODE_PROBABILITY:
                put_double(&w, "p", node->p);
                put(&w, " child=%d salt=%llu", node->child, (unsigned long long)node->salt);
                break;
            case CHAOS_NODE_TIMES: put(&w, " n=%llu child=%d", (unsigned long long)node->n, node->child); break;
            case CHAOS_NODE_DELAY: put(&w, " by=%lld child=%d", (long long)node->ns, node->child); break;
            case CHAOS_NODE_ASK: put(&w, " id=%llu", (unsigned long long)node->n); break;
            default: break;
            }
            put(&w, "\n");
            for (int32_t c = 0; node->kind == CHAOS_NODE_COMPOSITE && c < node->count; c++) {
                const cf_case *k = &node->cases[c];
                put(&w, "case %d", k->child);
                if (k->path) put_string(&w, "path", k->path);
                put_set(&w, "ops", k->ops, op_names, op_bits);
                if (k->has_address) {
                    char address[64];
                    inet_ntop(k->address_length == 4 ? AF_INET : AF_INET6, k->address, address, sizeof address);
                    put(&w, " host=%s/%d", address, k->prefix_bits);
                }
                if (k->host) put_string(&w, "host", k->host);
                if (k->port >= 0) put(&w, " port=%d", k->port);
                put_set(&w, "family", k->families, family_names, family_bits);
                put_set(&w, "role", k->roles, role_names, role_bits);
                put_set(&w, "clock", k->clocks, clock_names, clock_bits);
                if (k->name) put_string(&w, "name", k->name);
                put(&w, "\n");
            }
        }
    }
    if (w.failed) return -1;
    return (long)w.used;
}
