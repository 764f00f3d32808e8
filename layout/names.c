/* Hash indexes of the task's mesh and tensor names, so that adding the n-th mesh or move checks
 * its name against the others in constant time: a 200,000-move task file parses in linear time
 * where a scan per move made it quadratic. Open addressing over slots holding index + 1 (0 is
 * empty); the names live in the task's own arrays, found by index. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "layout/layout_internal.h"

/* Meshes and tensor moves both start with their name, so an item's name is at base + i*stride. */
_Static_assert(offsetof(mc_mesh_t, name) == 0, "a mesh starts with its name");
_Static_assert(offsetof(mc_tensor_move_t, name) == 0, "a tensor move starts with its name");
static const char *name_at(const void *base, size_t stride, int i)
{
    return (const char *)base + stride * (size_t)i;
}

static int name_is(const char *item, const char *name, size_t len)
{
    return strlen(item) == len && !memcmp(item, name, len);
}

static void insert(mc_name_index_t *x, const void *base, size_t stride, int i)
{
    const char *name = name_at(base, stride, i);
    size_t mask = (size_t)x->cap - 1, h = (size_t)XXH3_64bits(name, strlen(name)) & mask;
    while (x->slots[h])
        h = (h + 1) & mask;
    x->slots[h] = i + 1;
}

int mc_names_find(const mc_name_index_t *x, const void *base, size_t stride, const char *name,
                  size_t len)
{
    if (!x->cap)
        return -1;
    size_t mask = (size_t)x->cap - 1, h = (size_t)XXH3_64bits(name, len) & mask;
    for (; x->slots[h]; h = (h + 1) & mask)
        if (name_is(name_at(base, stride, x->slots[h] - 1), name, len))
            return x->slots[h] - 1;
    return -1;
}

void mc_names_add(mc_name_index_t *x, const void *base, size_t stride, int i)
{
    /* Keep the table at most half full; growing re-inserts items 0..i-1 from the array. */
    if (2 * (i + 1) > x->cap) {
        free(x->slots);
        x->cap = x->cap ? 2 * x->cap : 16;
        while (2 * (i + 1) > x->cap)
            x->cap *= 2;
        x->slots = mc_xcalloc((size_t)x->cap, sizeof(int));
        for (int j = 0; j < i; j++)
            insert(x, base, stride, j);
    }
    insert(x, base, stride, i);
}

void mc_names_free(mc_name_index_t *x)
{
    free(x->slots);
    x->slots = NULL;
    x->cap = 0;
}
