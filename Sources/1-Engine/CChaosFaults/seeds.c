// The seeds of entries and the draws of probability nodes, by the rules Swift's SeededRandom
// follows too (CChaosRules), so that an entry draws the same sequence whichever engine
// decides its calls. Below parsing (an entry's seed is set when its plan is read) and
// decisions (draws).
#include "internal.h"
#include "CChaosRules.h"

#include <string.h>

uint64_t chaos_fault_entry_seed(uint64_t plan_seed, int32_t point) {
    const char *name = chaos_fault_point_public_name(point);
    if (!name) name = "";
    return chaos_rules_entry_seed(plan_seed, name, strlen(name));
}

double chaos_fault_draw(uint64_t entry_seed, uint64_t salt, uint64_t asked) {
    // SeededRandom(seed: derive(entrySeed, asked, salt)).nextUnitInterval()
    return chaos_rules_unit(chaos_rules_derive2(entry_seed, asked, salt));
}
