/* Hash indexes of the task's mesh and tensor names, so that adding the n-th mesh or move checks
 * its name against the others in constant time: a 200,000-move task file parses in linear time
 * where a scan per move made it quadratic. The index (util/index.h) holds items by number; the
 * names live in the task's own arrays, found by index. */
#include <stddef.h>
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

int mc_names_find(const mc_index_t *x, const void *base, size_t stride, const char *name,
                  size_t len)
{
    uint64_t h = XXH3_64bits(name, len);
    size_t at = mc_index_start(x, h);
    for (int i; (i = mc_index_next(x, h, &at)) >= 0;)
        if (name_is(name_at(base, stride, i), name, len))
            return i;
    return -1;
}

void mc_names_add(mc_index_t *x, const void *base, size_t stride, int i)
{
    const char *name = name_at(base, stride, i);
    mc_index_add(x, XXH3_64bits(name, strlen(name)), i);
}
