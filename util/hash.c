/* A hash of a sequence of 64-bit words (FNV-1a, folded): the canonical keys that find identical
 * groups of trees (sim/sim_groups.c, sched/sched_symmetry.c) are looked up by it. */
#include "util/util.h"

uint64_t mc_hash_words(const int64_t *v, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint64_t)v[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}
