/* Adding to the hash index of util/index.h, and growing it; lookups are inline in the header. */
#include <stdlib.h>

#include "util/index.h"
#include "util/util.h"

/* Slots of a new index: room for 32 entries before it first grows. */
#define INDEX_MIN_SLOTS 64

static void place(mc_index_slot_t *slot, size_t mask, uint64_t h, int id)
{
    size_t i = h & mask;
    while (slot[i].id)
        i = (i + 1) & mask;
    slot[i] = (mc_index_slot_t){h, id + 1};
}

void mc_index_add(mc_index_t *ix, uint64_t h, int id)
{
    size_t nslots = ix->slot ? ix->mask + 1 : 0;
    if (2 * ((size_t)ix->n + 1) > nslots) {
        /* grow, placing the entries again along their runs of full slots from one past an empty
         * slot (there is one: at most half are full), so that a run that wraps past the last
         * slot is met in order and entries of one hash keep the order they were added in */
        size_t grown = nslots ? 2 * nslots : INDEX_MIN_SLOTS, empty = 0;
        mc_index_slot_t *slot = mc_xcalloc(grown, sizeof(*slot));
        while (empty < nslots && ix->slot[empty].id)
            empty++;
        for (size_t j = 1; j <= nslots; j++) {
            const mc_index_slot_t *s = &ix->slot[(empty + j) & ix->mask];
            if (s->id)
                place(slot, grown - 1, s->hash, s->id - 1);
        }
        free(ix->slot);
        ix->slot = slot;
        ix->mask = grown - 1;
    }
    place(ix->slot, ix->mask, h, id);
    ix->n++;
}

void mc_index_free(mc_index_t *ix)
{
    free(ix->slot);
    *ix = (mc_index_t){0};
}
