/* The indexed max-heap of util/maxheap.h: a binary heap with each item's place kept, so that a
 * key can change in place (sift up or down), and walks that stop where the keys fall below what
 * a query asks for. */
#include <stdlib.h>
#include <string.h>

#include "util/maxheap.h"
#include "util/util.h"

/* Whether item a goes above item b: a larger key, or an equal key and a lower item. */
static inline int above(const mc_maxheap_t *h, int a, int b)
{
    return h->key[a] > h->key[b] || (h->key[a] == h->key[b] && a < b);
}

static inline void put(mc_maxheap_t *h, int at, int item)
{
    h->heap[at] = item;
    h->pos[item] = at;
}

static void sift_up(mc_maxheap_t *h, int at)
{
    int item = h->heap[at];
    while (at > 0 && above(h, item, h->heap[(at - 1) / 2])) {
        put(h, at, h->heap[(at - 1) / 2]);
        at = (at - 1) / 2;
    }
    put(h, at, item);
}

static void sift_down(mc_maxheap_t *h, int at)
{
    int item = h->heap[at];
    for (;;) {
        int c = 2 * at + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && above(h, h->heap[c + 1], h->heap[c]))
            c++;
        if (!above(h, h->heap[c], item))
            break;
        put(h, at, h->heap[c]);
        at = c;
    }
    put(h, at, item);
}

void mc_maxheap_init(mc_maxheap_t *h, int n, const int64_t *key)
{
    h->n = n;
    h->key = mc_xmalloc(sizeof(int64_t) * (size_t)(n + 1));
    h->pos = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    h->heap = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    h->stack = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    if (n > 0)
        memcpy(h->key, key, sizeof(int64_t) * (size_t)n);
    for (int i = 0; i < n; i++)
        put(h, i, i);
    for (int at = n / 2 - 1; at >= 0; at--)
        sift_down(h, at);
}

void mc_maxheap_free(mc_maxheap_t *h)
{
    free(h->key);
    free(h->pos);
    free(h->heap);
    free(h->stack);
    memset(h, 0, sizeof(*h));
}

void mc_maxheap_set(mc_maxheap_t *h, int i, int64_t k)
{
    int64_t old = h->key[i];
    h->key[i] = k;
    if (k > old)
        sift_up(h, h->pos[i]);
    else if (k < old)
        sift_down(h, h->pos[i]);
}

int mc_maxheap_above(const mc_maxheap_t *h, int64_t threshold, int *out)
{
    int n = 0, top = 0;
    if (h->n && h->key[h->heap[0]] > threshold)
        h->stack[top++] = 0;
    while (top > 0) {
        int at = h->stack[--top];
        out[n++] = h->heap[at];
        for (int c = 2 * at + 1; c <= 2 * at + 2 && c < h->n; c++)
            if (h->key[h->heap[c]] > threshold)
                h->stack[top++] = c;
    }
    return n;
}

int64_t mc_maxheap_max_unmarked(const mc_maxheap_t *h, const char *skip, int64_t floor)
{
    int64_t best = floor;
    int top = 0;
    if (h->n)
        h->stack[top++] = 0;
    while (top > 0) {
        int at = h->stack[--top], item = h->heap[at];
        if (h->key[item] <= best)
            continue; /* nothing below it is larger */
        if (!skip[item]) {
            best = h->key[item];
            continue;
        }
        for (int c = 2 * at + 1; c <= 2 * at + 2 && c < h->n; c++)
            h->stack[top++] = c;
    }
    return best;
}

int mc_maxheap_largest(const mc_maxheap_t *h, int k, int *out)
{
    /* the j-th largest has at most j - 1 items above it, so it lies in the first j levels: the
     * first 2^k - 1 places hold the k largest; sorted there by insertion */
    int places = (1 << k) - 1, n = 0;
    for (int at = 0; at < places && at < h->n; at++) {
        int item = h->heap[at], j = n < k ? n++ : k;
        if (j == k && !above(h, item, out[k - 1]))
            continue;
        if (j == k)
            j = k - 1;
        for (; j > 0 && above(h, item, out[j - 1]); j--)
            out[j] = out[j - 1];
        out[j] = item;
    }
    return n;
}
