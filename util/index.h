/* An index of a caller's entries by the hash of their keys: open addressing, linear probing, grown
 * to keep it at most half full. The caller keeps the entries and their keys, hashes a key
 * (util/hash.c) and compares full keys: the index only narrows a lookup to the entries of the same
 * hash, met in the order they were added. Lookups are inline since the simulator and the referee
 * make them on their hot paths. A zeroed mc_index_t is an empty index. */
#ifndef MC_UTIL_INDEX_H
#define MC_UTIL_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct mc_index_slot {
    uint64_t hash;
    int id;                 /* the entry + 1, 0 for an empty slot */
} mc_index_slot_t;

typedef struct mc_index {
    mc_index_slot_t *slot;  /* NULL until the first entry */
    size_t mask;            /* slots - 1, a power of two less one */
    int n;                  /* entries */
} mc_index_t;

void mc_index_free(mc_index_t *ix);
/* Adds entry id (>= 0) under hash h; entries of equal hashes are all kept. */
void mc_index_add(mc_index_t *ix, uint64_t h, int id);

/* Where the entries of hash h begin, for mc_index_next. */
static inline size_t mc_index_start(const mc_index_t *ix, uint64_t h)
{
    return h & ix->mask;
}

/* The next entry of hash h from *at (begun at mc_index_start), or -1 when there is none left. */
static inline int mc_index_next(const mc_index_t *ix, uint64_t h, size_t *at)
{
    if (!ix->slot)
        return -1;
    for (;;) {
        const mc_index_slot_t *s = &ix->slot[*at];
        if (!s->id)
            return -1;
        *at = (*at + 1) & ix->mask;
        if (s->hash == h)
            return s->id - 1;
    }
}

#endif
