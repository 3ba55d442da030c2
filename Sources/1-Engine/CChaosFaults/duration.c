// Durations as people write them (`1h30m`, `250ms`, `1.5d`): the grammar of ChaosKit's
// Swift DurationText, for the places that take a person's text without Swift in between —
// the control endpoint's `?by=`. Plan text keeps its own, simpler form (plan.c: one signed
// number, nanoseconds by default), which is written by programs.
//
// The two readings of this grammar must agree on every input: a test
// (DurationGrammarTests) feeds both the same generated texts. So this follows the Swift
// code step by step, Double arithmetic included.
#include "internal.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/// The length of the UTF-8 whitespace character (Unicode White_Space) at `s`, or 0.
static size_t whitespace_length(const unsigned char *s) {
    if ((*s >= 0x09 && *s <= 0x0D) || *s == 0x20) return 1;
    if (s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0)) return 2;
    if (s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80) return 3; // U+1680
    if (s[0] == 0xE2 && s[1] == 0x80 &&
        ((s[2] >= 0x80 && s[2] <= 0x8A) || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF))
        return 3;                                               // U+2000–200A, U+2028, U+2029, U+202F
    if (s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) return 3; // U+205F
    if (s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80) return 3; // U+3000
    return 0;
}

/// Nanoseconds per fixed unit (the table's, names.c); 0 for one that is not a fixed unit.
static double unit_scale(const char *unit, size_t length) {
    for (const cf_unit *u = cf_units; u->name; u++)
        if (strlen(u->name) == length && memcmp(u->name, unit, length) == 0) return (double)u->ns;
    return 0;
}

int chaos_parse_duration_text(const char *text, int64_t *nanoseconds) {
    if (!text || !nanoseconds) return -1;
    // Spaces anywhere are dropped first, as the Swift reading does ("1d 12h").
    size_t capacity = strlen(text) + 1;
    char *compact = malloc(capacity), *to = compact;
    if (!compact) return -1;
    for (const unsigned char *p = (const unsigned char *)text; *p;) {
        size_t skip = whitespace_length(p);
        if (skip) {
            p += skip;
            continue;
        }
        *to++ = (char)*p++;
    }
    *to = 0;
    const char *rest = compact;
    int result = -1;
    int64_t total = 0;
    // A duration has no sign but `+`; `-0s` is refused like any negative span.
    if (*rest == '-') goto done;
    if (*rest == '+') rest++;
    if (!*rest) goto done;
    while (*rest) {
        size_t digits = strspn(rest, "0123456789.");
        // Any byte outside ASCII counts as part of a unit (only `µs` is one): the Swift
        // reading takes letters there, and either way such a unit is refused.
        size_t letters = 0;
        while (rest[digits + letters] && (((unsigned char)rest[digits + letters] >= 0x80) ||
                                          (rest[digits + letters] >= 'a' && rest[digits + letters] <= 'z') ||
                                          (rest[digits + letters] >= 'A' && rest[digits + letters] <= 'Z')))
            letters++;
        if (!digits) goto done;
        char number[digits + 1];
        memcpy(number, rest, digits);
        number[digits] = 0;
        char *end;
        double value = strtod(number, &end);
        if (*end || !isfinite(value) || !letters) goto done;
        double scale = unit_scale(rest + digits, letters);
        if (scale == 0) goto done; // calendar units (y, mo) have no fixed length either
        double part = value * scale;
        if (!(part < 9e18)) goto done;
        // Rounded half away from zero, as Swift's rounded() does, without libm (the preload
        // library needs only libc): below 2^53 the fraction is exact, above it there is none.
        int64_t whole = (int64_t)part;
        if (part - (double)whole >= 0.5) whole++;
        total = whole > INT64_MAX - total ? INT64_MAX : total + whole;
        rest += digits + letters;
    }
    *nanoseconds = total;
    result = 0;
done:
    free(compact);
    return result;
}
