// The words of plan text: lines cut into keywords and key=value tokens (quoted values
// decoded), the values they hold (numbers, durations, sets of names), and the located
// errors every part of the parser reports with.
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

#include "CChaosRules.h"

// MARK: - Errors

void plan_fail(parser *p, int column, const char *format, ...) {
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

void plan_free_tokens(line_tokens *t) {
    for (int i = 0; i < t->count; i++) free(t->items[i].value);
    t->count = 0;
}

static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
static bool is_control(char c) { return (unsigned char)c < 0x20 || c == 0x7f; }

/// Reads a word's key from `*at` up to `=` or a blank: no quote, no control character.
static bool read_key(parser *p, const char *line, size_t length, size_t *at, token *t) {
    size_t i = *at;
    t->key = line + i;
    t->column = (int)i + 1;
    while (i < length && line[i] != '=' && !is_blank(line[i])) {
        if (line[i] == '"') {
            plan_fail(p, (int)i + 1, "a quote inside a word; quote whole values: key=\"...\"");
            return false;
        }
        if (is_control(line[i])) {
            plan_fail(p, (int)i + 1, "control character 0x%02x in a word", (unsigned char)line[i]);
            return false;
        }
        i++;
    }
    t->key_length = (size_t)(line + i - t->key);
    *at = i;
    return true;
}

/// A value being read into a buffer of `capacity` bytes (its NUL included).
typedef struct value_buffer {
    char *bytes;
    size_t used, capacity;
    int column;
} value_buffer;

static bool put_byte(parser *p, value_buffer *v, char byte) {
    if (v->used + 1 >= v->capacity) {
        plan_fail(p, v->column, "value longer than %d bytes", CHAOS_PLAN_MAX_STRING);
        return false;
    }
    v->bytes[v->used++] = byte;
    return true;
}

/// The byte an escape at `line[*at]` (a backslash) stands for, advancing past it; -1 after
/// saying why when it is not one, 256 when the line ends inside it.
static int read_escape(parser *p, const char *line, size_t length, size_t *at) {
    size_t i = *at;
    if (i + 1 >= length) return 256;
    char e = line[i + 1];
    int byte;
    size_t width = 2;
    if (e == '\\' || e == '"')
        byte = e;
    else if (e == 'n')
        byte = '\n';
    else if (e == 't')
        byte = '\t';
    else if (e == 'x' && i + 3 < length && hex(line[i + 2]) >= 0 && hex(line[i + 3]) >= 0) {
        byte = hex(line[i + 2]) * 16 + hex(line[i + 3]);
        width = 4;
        if (byte == 0) {
            plan_fail(p, (int)i + 1, "\\x00 in a value; values cannot hold NUL bytes");
            return -1;
        }
    } else {
        plan_fail(p, (int)i + 1, "unknown escape '\\%c'; use \\\\, \\\", \\n, \\t or \\xHH", e);
        return -1;
    }
    *at = i + width;
    return byte;
}

/// Reads a quoted value from the quote at `line[*at]` through its closing quote.
static bool read_quoted_value(parser *p, const char *line, size_t length, size_t *at, value_buffer *v) {
    size_t i = *at + 1;
    bool closed = false;
    while (i < length) {
        char d = line[i];
        if (d == '"') {
            closed = true;
            i++;
            break;
        }
        if (is_control(d)) {
            plan_fail(p, (int)i + 1, "control character 0x%02x inside quotes; write \\x%02x", (unsigned char)d,
                      (unsigned char)d);
            return false;
        }
        if (d == '\\') {
            int byte = read_escape(p, line, length, &i);
            if (byte < 0) return false;
            if (byte == 256) break;
            d = (char)byte;
        } else {
            i++;
        }
        if (!put_byte(p, v, d)) return false;
    }
    if (!closed) {
        plan_fail(p, v->column, "unterminated quoted value; close it with \"");
        return false;
    }
    if (i < length && !is_blank(line[i])) {
        plan_fail(p, (int)i + 1, "text right after a closing quote; separate words with a space");
        return false;
    }
    *at = i;
    return true;
}

/// Reads an unquoted value from `line[*at]` up to a blank.
static bool read_bare_value(parser *p, const char *line, size_t length, size_t *at, value_buffer *v) {
    size_t i = *at;
    while (i < length && !is_blank(line[i])) {
        if (line[i] == '"') {
            plan_fail(p, (int)i + 1, "a quote inside an unquoted value; quote the whole value: key=\"...\"");
            return false;
        }
        if (is_control(line[i])) {
            plan_fail(p, (int)i + 1, "control character 0x%02x in a value", (unsigned char)line[i]);
            return false;
        }
        if (!put_byte(p, v, line[i++])) return false;
    }
    *at = i;
    return true;
}

/// Reads the value after a word's `=` at `line[*at]` into a new string (the token's).
static bool read_value(parser *p, const char *line, size_t length, size_t *at, token *t) {
    size_t i = *at + 1;
    t->value_column = (int)i + 1;
    t->raw = line + i;
    size_t capacity = length - i + 1;
    if (capacity > CHAOS_PLAN_MAX_STRING + 1) capacity = CHAOS_PLAN_MAX_STRING + 1;
    value_buffer v = {.bytes = malloc(capacity), .capacity = capacity, .column = t->value_column};
    if (!v.bytes) {
        plan_fail(p, t->value_column, "out of memory");
        return false;
    }
    t->value = v.bytes;
    bool read = i < length && line[i] == '"' ? read_quoted_value(p, line, length, &i, &v)
                                             : read_bare_value(p, line, length, &i, &v);
    if (!read) return false;
    v.bytes[v.used] = 0;
    *at = i;
    return true;
}

/// Splits one line (without its newline) into tokens.
bool plan_tokenize(parser *p, const char *line, size_t length, line_tokens *out) {
    out->count = 0;
    size_t i = 0;
    while (i < length) {
        char c = line[i];
        if (is_blank(c)) {
            i++;
            continue;
        }
        if (is_control(c)) {
            plan_fail(p, (int)i + 1, "control character 0x%02x; write it inside a quoted value as \\x%02x",
                      (unsigned char)c, (unsigned char)c);
            return false;
        }
        if (c == '#') break;
        if (out->count == MAX_TOKENS) {
            plan_fail(p, (int)i + 1, "more than %d words on one line; split the node", MAX_TOKENS);
            return false;
        }
        token *t = &out->items[out->count];
        memset(t, 0, sizeof *t);
        if (!read_key(p, line, length, &i, t)) return false;
        out->count++;
        if (i < length && line[i] == '=') {
            if (t->key_length == 0) {
                plan_fail(p, t->column, "'=' without a key before it; write key=value");
                return false;
            }
            if (!read_value(p, line, length, &i, t)) return false;
        }
    }
    return true;
}

bool plan_word_is(const token *t, const char *word) {
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
const char *plan_nearest(const char *word, size_t length, const char *const *choices, char *buffer, size_t capacity) {
    const char *best = NULL;
    size_t best_distance = 3;
    for (const char *const *c = choices; *c; c++) {
        size_t d = edit_distance(word, length, *c);
        if (d < best_distance) {
            best_distance = d;
            best = *c;
        }
    }
    if (!best) {
        buffer[0] = 0;
        return buffer;
    }
    snprintf(buffer, capacity, " (did you mean '%s'?)", best);
    return buffer;
}

/// Lists `choices` as "a, b, c".
const char *plan_join(const char *const *choices, char *buffer, size_t capacity) {
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
bool plan_check_keys(parser *p, line_tokens *t, int first, const char *const *allowed, const char *what) {
    for (int i = first; i < t->count; i++) {
        token *k = &t->items[i];
        bool known = false;
        for (const char *const *a = allowed; *a; a++)
            if (plan_word_is(k, *a)) known = true;
        char hint[64], list[256];
        if (!known) {
            if (!allowed[0]) {
                plan_fail(p, k->column, "'%.*s': %s takes nothing more", (int)k->key_length, k->key, what);
            } else {
                plan_fail(p, k->column, "unknown key '%.*s' for %s%s; it takes %s", (int)k->key_length, k->key, what,
                          plan_nearest(k->key, k->key_length, allowed, hint, sizeof hint),
                          plan_join(allowed, list, sizeof list));
            }
            return false;
        }
        if (!k->value) {
            plan_fail(p, k->column, "'%.*s' needs a value: write %.*s=...", (int)k->key_length, k->key,
                      (int)k->key_length, k->key);
            return false;
        }
        for (int j = first; j < i; j++) {
            if (t->items[j].key_length == k->key_length && memcmp(t->items[j].key, k->key, k->key_length) == 0) {
                plan_fail(p, k->column, "'%.*s' is given twice", (int)k->key_length, k->key);
                return false;
            }
        }
    }
    return true;
}

token *plan_find(line_tokens *t, int first, const char *key) {
    for (int i = first; i < t->count; i++)
        if (plan_word_is(&t->items[i], key)) return &t->items[i];
    return NULL;
}
// MARK: - Values

bool plan_u64(const char *text, uint64_t *out) {
    if (!text || !*text) return false;
    int base = 10;
    if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        base = 16;
        text += 2;
        if (!*text) return false;
    }
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

bool plan_i64(const char *text, int64_t *out) {
    bool negative = text && text[0] == '-';
    uint64_t magnitude;
    if (!plan_u64(text + (negative || (text && text[0] == '+')), &magnitude)) return false;
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
        if (fresh && !atomic_compare_exchange_strong(&made, &expected, fresh)) {
            freelocale(fresh);
            l = expected;
        } else
            l = fresh;
    }
    return l;
}

/// A finite decimal number (no locale, no hex, no inf/nan).
bool plan_double(const char *text, double *out) {
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
bool plan_duration(const char *text, int64_t *out) {
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
            if (fraction_digits < 18) {
                fraction = fraction * 10 + (uint64_t)(*c - '0');
                fraction_scale *= 10;
            }
            fraction_digits++;
            c++;
        }
        if (fraction_digits == 0) return false;
        digits += fraction_digits;
    }
    if (digits == 0) return false;
    uint64_t unit = *c ? 0 : 1;
    for (const chaos_rules_time_unit *u = chaos_rules_units; u->name && !unit; u++)
        if (u->in_plan_text && strcmp(c, u->name) == 0) unit = (uint64_t)u->nanoseconds;
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

bool plan_yes_no(const char *text, int32_t *out) {
    if (strcmp(text, "yes") == 0) {
        *out = 1;
        return true;
    }
    if (strcmp(text, "no") == 0) {
        *out = 0;
        return true;
    }
    return false;
}

/// A comma-separated set of names (bits 1 << index), or "any" when `any` is given.
bool plan_set(parser *p, token *t, const char *const *names, const uint32_t *bits, uint32_t any, uint32_t *out,
              const char *what) {
    *out = 0;
    if (any && strcmp(t->value, "any") == 0) {
        *out = any;
        return true;
    }
    const char *c = t->value;
    while (true) {
        const char *start = c;
        while (*c && *c != ',') c++;
        size_t n = (size_t)(c - start);
        bool found = false;
        for (int i = 0; names[i]; i++) {
            if (strlen(names[i]) == n && memcmp(names[i], start, n) == 0) {
                *out |= bits[i];
                found = true;
            }
        }
        if (!found) {
            char hint[64], list[256];
            plan_fail(p, t->value_column + (int)(start - t->value), "unknown %s '%.*s'%s; use %s%s", what, (int)n,
                      start, plan_nearest(start, n, names, hint, sizeof hint), plan_join(names, list, sizeof list),
                      any ? " (comma separated) or any" : " (comma separated)");
            return false;
        }
        if (!*c) break;
        c++;
    }
    return true;
}

/// Takes the token's decoded value (the caller frees it); the token keeps none.
char *plan_take(token *t) {
    char *value = t->value;
    t->value = NULL;
    return value;
}

/// The node number a token gives (as its value, or as the word itself), or false, having
/// said why.
bool plan_index(parser *p, token *t, const char *what, int32_t *out) {
    uint64_t value;
    const char *text = t->value ? t->value : NULL;
    char word[32];
    if (!text) {
        if (t->key_length >= sizeof word) {
            plan_fail(p, t->column, "%s must be a node number", what);
            return false;
        }
        memcpy(word, t->key, t->key_length);
        word[t->key_length] = 0;
        text = word;
    }
    if (!plan_u64(text, &value) || value >= CHAOS_PLAN_MAX_NODES) {
        plan_fail(p, t->value ? t->value_column : t->column, "%s must be a node number from 0 to %d", what,
                  CHAOS_PLAN_MAX_NODES - 1);
        return false;
    }
    *out = (int32_t)value;
    return true;
}
