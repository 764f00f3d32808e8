/* Sorting and searching arrays of ints without a comparison callback. The candidate generator
 * sorts every tree's route links (hundreds of ints, thousands of trees per synthesis), where
 * qsort's call per comparison cost ten times the sort itself; a radix sort over the bytes in
 * which the values differ takes a few passes over the array. */
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* Below this many values an insertion sort is cheaper than the radix passes' counts. */
#define INTS_INSERTION_MAX 24

static void insertion_sort(int *v, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        int x = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* The value as an unsigned key of the same order. */
static unsigned key(int x)
{
    return (unsigned)x ^ 0x80000000u;
}

void mc_sort_ints(int *v, size_t n)
{
    if (n <= INTS_INSERTION_MAX) {
        insertion_sort(v, n);
        return;
    }
    unsigned differ = 0;
    for (size_t i = 1; i < n; i++)
        differ |= key(v[i]) ^ key(v[0]);
    int *tmp = mc_xmalloc(sizeof(int) * n), *from = v, *to = tmp;
    /* least significant byte first, each pass stable; bytes where no two values differ skipped */
    for (int shift = 0; shift < 32; shift += 8) {
        if (!(differ >> shift & 0xffu))
            continue;
        size_t count[257] = {0};
        for (size_t i = 0; i < n; i++)
            count[(key(from[i]) >> shift & 0xffu) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (size_t i = 0; i < n; i++)
            to[count[key(from[i]) >> shift & 0xffu]++] = from[i];
        int *t = from;
        from = to;
        to = t;
    }
    if (from != v)
        memcpy(v, from, sizeof(int) * n);
    free(tmp);
}

int mc_find_int(const int *v, int n, int x)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == x ? lo : -1;
}
