/* The task object: dtypes, creation and destruction, and the small box helpers every other file
 * of layout/ uses. */
#include <stdlib.h>
#include <string.h>

#include "layout/layout_internal.h"

static const struct {
    const char *name;
    int size;
} dtypes[MC_DT__COUNT] = {
    [MC_DT_F64] = {"f64", 8},       [MC_DT_F32] = {"f32", 4},       [MC_DT_F16] = {"f16", 2},
    [MC_DT_BF16] = {"bf16", 2},     [MC_DT_F8E4M3] = {"f8e4m3", 1}, [MC_DT_F8E5M2] = {"f8e5m2", 1},
    [MC_DT_I64] = {"i64", 8},       [MC_DT_I32] = {"i32", 4},       [MC_DT_I16] = {"i16", 2},
    [MC_DT_I8] = {"i8", 1},         [MC_DT_U8] = {"u8", 1},         [MC_DT_BOOL] = {"bool", 1},
};

int mc_dtype_size(mc_dtype_t dt)
{
    return (unsigned)dt < MC_DT__COUNT ? dtypes[dt].size : 0;
}

const char *mc_dtype_name(mc_dtype_t dt)
{
    return (unsigned)dt < MC_DT__COUNT ? dtypes[dt].name : "?";
}

int mc_dtype_parse(const char *name, mc_dtype_t *dt)
{
    for (int i = 0; i < MC_DT__COUNT; i++)
        if (!strcmp(name, dtypes[i].name)) {
            *dt = (mc_dtype_t)i;
            return 0;
        }
    return -1;
}

mc_task_t *mc_task_new(void)
{
    return mc_xcalloc(1, sizeof(mc_task_t));
}

void mc_layout_clear(mc_layout_t *layout)
{
    for (int k = 0; k < MC_MAX_DIMS; k++) {
        free(layout->dims[k].sizes);
        layout->dims[k].sizes = NULL;
    }
}

void mc_task_clear_split(mc_task_t *task)
{
    for (int i = 0; i < task->npieces; i++) {
        free(task->pieces[i].holders);
        free(task->pieces[i].dests);
    }
    free(task->pieces);
    free(task->copies);
    free(task->bound);
    task->bound = NULL;
    task->pieces = NULL;
    task->copies = NULL;
    task->npieces = task->ncopies = 0;
}

void mc_task_free(mc_task_t *task)
{
    if (!task)
        return;
    mc_task_clear_split(task);
    for (int i = 0; i < task->nmeshes; i++) {
        free(task->meshes[i].devices);
        free(task->meshes[i].text);
    }
    for (int i = 0; i < task->ntensors; i++) {
        mc_layout_clear(&task->tensors[i].src);
        mc_layout_clear(&task->tensors[i].dst);
        for (int c = 0; c < task->tensors[i].nmore; c++)
            mc_layout_clear(&task->tensors[i].more[c]);
        free(task->tensors[i].more);
    }
    free(task->meshes);
    free(task->tensors);
    mc_index_free(&task->mesh_names);
    mc_index_free(&task->tensor_names);
    free(task->source);
    free(task);
}

int mc_task_find_mesh(const mc_task_t *task, const char *name, size_t len)
{
    return mc_names_find(&task->mesh_names, task->meshes, sizeof(mc_mesh_t), name, len);
}

int mc_mesh_position(const mc_mesh_t *mesh, int gpu)
{
    for (int p = 0; p < mesh->ndevices; p++)
        if (mesh->devices[p] == gpu)
            return p;
    return -1;
}

uint64_t mc_box_elems(const mc_box_t *box, int ndims)
{
    uint64_t n = 1;
    for (int k = 0; k < ndims; k++) {
        if (box->hi[k] <= box->lo[k])
            return 0;
        n *= (uint64_t)(box->hi[k] - box->lo[k]);
    }
    return n;
}

int mc_box_intersect(const mc_box_t *a, const mc_box_t *b, int ndims, mc_box_t *out)
{
    mc_box_t r = {{0}, {0}};
    int nonempty = 1;
    for (int k = 0; k < ndims; k++) {
        r.lo[k] = a->lo[k] > b->lo[k] ? a->lo[k] : b->lo[k];
        r.hi[k] = a->hi[k] < b->hi[k] ? a->hi[k] : b->hi[k];
        if (r.hi[k] <= r.lo[k]) {
            r.hi[k] = r.lo[k];
            nonempty = 0;
        }
    }
    if (out)
        *out = r;
    return nonempty;
}

uint64_t mc_layout_box_bytes(const mc_layout_t *layout, const mc_box_t *box)
{
    return mc_box_elems(box, layout->ndims) * (uint64_t)mc_dtype_size(layout->dtype);
}
