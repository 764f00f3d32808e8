/* An indexed max-heap of items 0..n-1, each with an int64 key that can change: the largest key
 * on top, equal keys the lower item first, so that it names the same item a scan of the items in
 * order keeping the first strict maximum would. Queries walk only the part of the heap they need:
 * the items above a threshold, the largest outside a set, the few largest. */
#ifndef MC_UTIL_MAXHEAP_H
#define MC_UTIL_MAXHEAP_H

#include <stdint.h>

typedef struct mc_maxheap {
    int n;
    int64_t *key;   /* [item] */
    int *pos;       /* [item]: its place in heap[] */
    int *heap;      /* [place]: the item there */
    int *stack;     /* room for the walks */
} mc_maxheap_t;

/* A heap over n items with keys key[0..n). */
void mc_maxheap_init(mc_maxheap_t *h, int n, const int64_t *key);
void mc_maxheap_free(mc_maxheap_t *h);
/* Gives item i the key k. */
void mc_maxheap_set(mc_maxheap_t *h, int i, int64_t k);

/* The item on top (-1 when there are none). */
static inline int mc_maxheap_top(const mc_maxheap_t *h)
{
    return h->n ? h->heap[0] : -1;
}

/* The items whose keys exceed above, in no order, into out[]; returns their number. */
int mc_maxheap_above(const mc_maxheap_t *h, int64_t above, int *out);
/* The largest key of an item not marked (skip[item] != 0), or floor when none exceeds floor.
 * Walks past the marked items only: as many places as about twice their number. */
int64_t mc_maxheap_max_unmarked(const mc_maxheap_t *h, const char *skip, int64_t floor);
/* The k largest items, largest key first (equal keys the lower item first), into out[]; returns
 * their number (fewer when the heap holds fewer). Reads the first 2^k - 1 places: for small k. */
int mc_maxheap_largest(const mc_maxheap_t *h, int k, int *out);

#endif
