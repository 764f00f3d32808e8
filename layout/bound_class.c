/* The pieces of a task merged by holders and destinations, for the lower bound: every term counts
 * a piece's bytes by its holder set and its destination set only, so it reads these classes,
 * whose count grows with the distinct sets and not with the pieces (a 200,000-move task file
 * splits into 1.6 million pieces of 8 classes). One pass with a hash table keyed by the two
 * lists; classes keep the order in which their first piece comes, so the terms that walk them
 * break ties as they did over the pieces, and their bytes are exact sums. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "layout/bound_internal.h"
#include "util/index.h"

static uint64_t key_hash(const mc_piece_t *p)
{
    uint64_t h = XXH3_64bits(p->holders, sizeof(int) * (size_t)p->nholders);
    return XXH3_64bits_withSeed(p->dests, sizeof(int) * (size_t)p->ndests,
                                h ^ (uint64_t)p->nholders);
}

static int same_key(const mc_piece_t *a, const mc_piece_t *b)
{
    return a->nholders == b->nholders && a->ndests == b->ndests &&
           !memcmp(a->holders, b->holders, sizeof(int) * (size_t)a->nholders) &&
           !memcmp(a->dests, b->dests, sizeof(int) * (size_t)a->ndests);
}

int mc_bound_classes(const mc_task_t *task, mc_bound_class_t **out)
{
    mc_index_t index = {0};
    mc_bound_class_t *c = mc_xmalloc(sizeof(mc_bound_class_t) * (size_t)(task->npieces + 1));
    int n = 0;
    for (int i = 0; i < task->npieces; i++) {
        const mc_piece_t *p = &task->pieces[i];
        uint64_t h = key_hash(p);
        size_t at = mc_index_start(&index, h);
        int k;
        while ((k = mc_index_next(&index, h, &at)) >= 0 && !same_key(c[k].p, p))
            ;
        if (k >= 0) {
            c[k].bytes += p->bytes;
            continue;
        }
        c[n] = (mc_bound_class_t){p, p->bytes};
        mc_index_add(&index, h, n++);
    }
    mc_index_free(&index);
    *out = c;
    return n;
}
