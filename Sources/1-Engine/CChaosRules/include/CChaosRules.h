// The rules both languages of ChaosKit follow, written once, in portable C that every
// platform builds (the Linux fault engine, CChaosFaults, is beside it): how a seed is
// derived for an entry, a call and a draw. Swift's SeededRandom and the engine's decisions
// both call these, so an entry draws the same numbers whichever of them decides its calls.
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

/// A hash of `length` bytes that is the same in every process and run (FNV-1a, 64 bits):
/// what an entry's seed derives from its point's name with.
uint64_t chaos_rules_stable_hash(const char *bytes, size_t length);

/// The seed of an entry on the point named `point_name` (`length` bytes) under a plan or
/// `Chaos` seed.
uint64_t chaos_rules_entry_seed(uint64_t seed, const char *point_name, size_t length);

#ifdef __cplusplus
}
#endif

#endif
