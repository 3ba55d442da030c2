// The rules both languages of ChaosKit follow, written once, in portable C that every
// platform builds (the Linux fault engine, CChaosFaults, is beside it):
// - how a seed is derived for an entry, a call and a draw, and which step of a sequence a
//   call takes: Swift's SeededRandom and CompiledNode and the engine's decisions all call
//   these, so an entry draws and steps alike whichever of them decides its calls;
// - how a person writes a span of time (`250ms`, `1h30m`, `-2y`): Swift's DurationText and
//   ClockOffset, and the control endpoints' `?by=`, all read it here.
#ifndef CCHAOS_RULES_H
#define CCHAOS_RULES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// SplitMix64's increment (the golden ratio's 64 bits).
static const uint64_t chaos_rules_gamma = 0x9E3779B97F4A7C15ull;

/// SplitMix64's finaliser: a bijective scramble of 64 bits.
static inline uint64_t chaos_rules_mix(uint64_t value) {
    uint64_t z = value;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/// One seed from a seed and a value: every (seed, point, call, node) gets its own stream.
static inline uint64_t chaos_rules_derive(uint64_t seed, uint64_t value) {
    return chaos_rules_mix(chaos_rules_mix(seed) ^ (value + chaos_rules_gamma));
}

/// One seed from a seed and two values (derive, then derive again with the second).
static inline uint64_t chaos_rules_derive2(uint64_t seed, uint64_t first, uint64_t second) {
    return chaos_rules_mix(chaos_rules_derive(seed, first) ^ (second + chaos_rules_gamma));
}

/// The first unit-interval draw (0 ..< 1) of a generator started at `seed`.
static inline double chaos_rules_unit(uint64_t seed) {
    return (double)(chaos_rules_mix(seed + chaos_rules_gamma) >> 11) * 0x1.0p-53;
}

/// The step of a sequence (`count` steps, step i covering `spans[i]` calls, the last
/// repeating) that its call `position` (from 0) uses.
static inline int32_t chaos_rules_sequence_step(const uint64_t *spans, int32_t count, uint64_t position) {
    for (int32_t i = 0; i < count - 1; i++) {
        if (position < spans[i]) return i;
        position -= spans[i];
    }
    return count - 1;
}

/// A hash of `length` bytes that is the same in every process and run (FNV-1a, 64 bits):
/// what an entry's seed derives from its point's name with.
uint64_t chaos_rules_stable_hash(const char *bytes, size_t length);

/// The seed of an entry on the point named `point_name` (`length` bytes) under a plan or
/// `Chaos` seed.
uint64_t chaos_rules_entry_seed(uint64_t seed, const char *point_name, size_t length);

// MARK: - Spans of time as people write them

/// A unit of the span grammar and its length; calendar units (`y`, `mo`) have none and are
/// not listed.
typedef struct chaos_rules_time_unit {
    const char *name; ///< UTF-8 (`µs` is two bytes)
    int64_t nanoseconds;
    int in_plan_text; ///< plan text (written by programs) takes it too; `µs` and `w` are a person's
} chaos_rules_time_unit;

/// The fixed-length units, ending with a NULL name.
extern const chaos_rules_time_unit chaos_rules_units[];

/// The unit at `index` of chaos_rules_units, or NULL past the last (for Swift, which does
/// not see an array of unknown length).
const chaos_rules_time_unit *chaos_rules_unit_at(size_t index);

/// What is wrong with a span (chaos_rules_parse_span).
typedef enum chaos_span_fault {
    CHAOS_SPAN_OK = 0,
    CHAOS_SPAN_EMPTY,             ///< nothing but a sign and spaces
    CHAOS_SPAN_NOT_A_SPAN,        ///< a part that does not start with a number, or a number that is not one
    CHAOS_SPAN_NO_UNIT,           ///< a number without a unit after it; `at_fault` is the number
    CHAOS_SPAN_UNKNOWN_UNIT,      ///< `at_fault` is the unit
    CHAOS_SPAN_CALENDAR_FRACTION, ///< years or months that are not whole, or a million or more
    CHAOS_SPAN_TOO_LONG,          ///< the fixed part reaches 9e18 ns (about 290 years)
    CHAOS_SPAN_NO_MEMORY,
} chaos_span_fault;

/// A span read from text: a sign, calendar years and months, and a fixed length.
typedef struct chaos_span {
    int negative;
    int64_t years, months;
    int64_t fixed_ns;  ///< weeks, days … nanoseconds, unsigned
    char at_fault[48]; ///< the number or unit a fault names (truncated, NUL-terminated)
} chaos_span;

/// Reads `text` (`length` bytes of UTF-8) in the span grammar: an optional sign (`+`, `-`),
/// then one or more number-unit parts (`1h30m`, `1.5d`); spaces anywhere are dropped first
/// ("1d 12h"). Units: those of chaos_rules_units, and `y`, `mo` (whole numbers). Each
/// part is rounded to whole nanoseconds, half away from zero.
chaos_span_fault chaos_rules_parse_span(const char *text, size_t length, chaos_span *out);

/// A duration (a delay, a latency, a timeout, an advance): a span with no sign but `+` and
/// no calendar units. 0 with its length in `*nanoseconds`; -1 when `text` is not one.
int chaos_rules_parse_duration(const char *text, int64_t *nanoseconds);

#ifdef __cplusplus
}
#endif

#endif
