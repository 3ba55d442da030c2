// The rules of CChaosRules.h that are not inline: hashing a point's name into its entries'
// seeds, which runs once per entry rather than per call.
#include "CChaosRules.h"

uint64_t chaos_rules_stable_hash(const char *bytes, size_t length) {
    uint64_t hash = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < length; i++) hash = (hash ^ (unsigned char)bytes[i]) * 0x100000001B3ull;
    return hash;
}

uint64_t chaos_rules_entry_seed(uint64_t seed, const char *point_name, size_t length) {
    return chaos_rules_derive(seed, chaos_rules_stable_hash(point_name, length));
}
