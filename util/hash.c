/* A hash of a sequence of 64-bit words (FNV-1a, folded): the canonical keys that find identical
 * groups of trees (sim/sim_groups.c, sched/sched_symmetry.c) are looked up by it. */
#include "util/util.h"

uint64_t mc_hash_words(const int64_t *v, size_t n)
{
    uint64_t h = MC_HASH_SEED;
    for (size_t i = 0; i < n; i++)
        h = mc_hash_step(h, (uint64_t)v[i]);
    return mc_hash_fold(h);
}
