// The span grammar (CChaosRules.h): how a person writes a span of time, read once for every
// place that takes one — profiles and the Swift API (DurationText, ClockOffset), the
// control endpoints' `?by=`, and `chaos run`'s options. It needs libc alone (no libm): the
// preload library links it. Plan text keeps its own, simpler
// form (CChaosFaults/plan_words.c), which is written by programs.
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "CChaosRules.h"

const chaos_rules_time_unit chaos_rules_units[] = {
    {"ns", 1, 1},
    {"us", 1000, 1},
    {"\xC2\xB5s", 1000, 0},
    {"ms", 1000000, 1},
    {"s", 1000000000ll, 1},
    {"m", 60000000000ll, 1},
    {"h", 3600000000000ll, 1},
    {"d", 86400000000000ll, 1},
    {"w", 604800000000000ll, 0},
    {NULL, 0, 0},
};

const chaos_rules_time_unit *chaos_rules_unit_at(size_t index) {
    size_t count = sizeof chaos_rules_units / sizeof chaos_rules_units[0] - 1;
    return index < count ? &chaos_rules_units[index] : NULL;
}

/// The length of the UTF-8 whitespace character (Unicode White_Space) at `s`, or 0.
static size_t whitespace_length(const unsigned char *s, size_t left) {
    if ((*s >= 0x09 && *s <= 0x0D) || *s == 0x20) return 1;
    if (left >= 2 && s[0] == 0xC2 && (s[1] == 0x85 || s[1] == 0xA0)) return 2;
    if (left < 3) return 0;
    if (s[0] == 0xE1 && s[1] == 0x9A && s[2] == 0x80) return 3; // U+1680
    if (s[0] == 0xE2 && s[1] == 0x80 &&
        ((s[2] >= 0x80 && s[2] <= 0x8A) || s[2] == 0xA8 || s[2] == 0xA9 || s[2] == 0xAF))
        return 3;                                               // U+2000–200A, U+2028, U+2029, U+202F
    if (s[0] == 0xE2 && s[1] == 0x81 && s[2] == 0x9F) return 3; // U+205F
    if (s[0] == 0xE3 && s[1] == 0x80 && s[2] == 0x80) return 3; // U+3000
    return 0;
}

/// Nanoseconds per fixed unit; 0 for one that is not a fixed unit.
static double unit_scale(const char *unit, size_t length) {
    for (const chaos_rules_time_unit *u = chaos_rules_units; u->name; u++)
        if (strlen(u->name) == length && memcmp(u->name, unit, length) == 0) return (double)u->nanoseconds;
    return 0;
}

static void name_fault(chaos_span *out, const char *bytes, size_t length) {
    if (length >= sizeof out->at_fault) length = sizeof out->at_fault - 1;
    memcpy(out->at_fault, bytes, length);
    out->at_fault[length] = 0;
}

static int is_letter(unsigned char c) { return c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static chaos_span_fault parse_compact(const char *rest, chaos_span *out) {
    if (*rest == '-') {
        out->negative = 1;
        rest++;
    } else if (*rest == '+') {
        rest++;
    }
    if (!*rest) return CHAOS_SPAN_EMPTY;
    while (*rest) {
        size_t digits = strspn(rest, "0123456789.");
        // Any byte outside ASCII counts as part of a unit (only `µs` is one): such a unit is
        // refused by name.
        size_t letters = 0;
        while (rest[digits + letters] && is_letter((unsigned char)rest[digits + letters])) letters++;
        if (!digits) return CHAOS_SPAN_NOT_A_SPAN;
        char number[digits + 1];
        memcpy(number, rest, digits);
        number[digits] = 0;
        char *end;
        double value = strtod(number, &end);
        if (*end || !(value <= DBL_MAX)) return CHAOS_SPAN_NOT_A_SPAN; // past DBL_MAX: infinite
        if (!letters) {
            name_fault(out, rest, digits);
            return CHAOS_SPAN_NO_UNIT;
        }
        const char *unit = rest + digits;
        int calendar_year = letters == 1 && unit[0] == 'y', calendar_month = letters == 2 && !memcmp(unit, "mo", 2);
        if (calendar_year || calendar_month) {
            if (!(value < 1000000) || (double)(int64_t)value != value) return CHAOS_SPAN_CALENDAR_FRACTION;
            if (calendar_year)
                out->years += (int64_t)value;
            else
                out->months += (int64_t)value;
        } else {
            double scale = unit_scale(unit, letters);
            if (scale == 0) {
                name_fault(out, unit, letters);
                return CHAOS_SPAN_UNKNOWN_UNIT;
            }
            double part = value * scale;
            if (!(part < 9e18)) return CHAOS_SPAN_TOO_LONG;
            // Rounded half away from zero: below 2^53 the fraction is exact, above it there is none.
            int64_t whole = (int64_t)part;
            if (part - (double)whole >= 0.5) whole++;
            if (whole >= 9000000000000000000ll - out->fixed_ns) return CHAOS_SPAN_TOO_LONG;
            out->fixed_ns += whole;
        }
        rest += digits + letters;
    }
    return CHAOS_SPAN_OK;
}

chaos_span_fault chaos_rules_parse_span(const char *text, size_t length, chaos_span *out) {
    memset(out, 0, sizeof *out);
    // Spaces anywhere are dropped first, as a person may write them.
    char *compact = malloc(length + 1), *to = compact;
    if (!compact) return CHAOS_SPAN_NO_MEMORY;
    const unsigned char *p = (const unsigned char *)text, *end = p + length;
    while (p < end) {
        size_t skip = whitespace_length(p, (size_t)(end - p));
        if (skip) {
            p += skip;
            continue;
        }
        // A NUL inside the text is no part of a span: it ends it where strtod would stop.
        *to++ = *p ? (char)*p : '\x01';
        p++;
    }
    *to = 0;
    chaos_span_fault fault = parse_compact(compact, out);
    free(compact);
    return fault;
}

int chaos_rules_parse_duration(const char *text, int64_t *nanoseconds) {
    if (!text || !nanoseconds) return -1;
    chaos_span span;
    if (chaos_rules_parse_span(text, strlen(text), &span) != CHAOS_SPAN_OK) return -1;
    if (span.negative || span.years || span.months) return -1;
    *nanoseconds = span.fixed_ns;
    return 0;
}
