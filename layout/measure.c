/* What a task asks of each device: bytes to receive, source and destination tile sizes, the
 * peak-memory lower bound, and the check of its device ids against a topology. */
#include <stdlib.h>
#include <string.h>

#include "layout/layout_internal.h"

mc_status_t mc_task_check_topo(const mc_task_t *task, const mc_topo_t *topo, mc_err_t *err)
{
    for (int i = 0; i < task->nmeshes; i++) {
        const mc_mesh_t *m = &task->meshes[i];
        int p = 0;
        while (p < m->ndevices && m->devices[p] < topo->ngpus)
            p++;
        if (p == m->ndevices)
            continue;
        /* Quote the mesh as the user wrote it, caret at its device list; in a file, name the
         * file and the mesh's line: the file is the invalid input then, not the command line. */
        char prefix[512] = "", what[512];
        if (task->source && m->line)
            snprintf(prefix, sizeof prefix, "%s:%d: ", task->source, m->line);
        snprintf(what, sizeof what, "device %d of mesh %s is outside the topology %s (GPUs 0..%d)",
                 m->devices[p], m->name, topo->source, topo->ngpus - 1);
        const char *text = m->text ? m->text : m->name, *at = strchr(text, '@');
        return mc_layout_quote(err, task->source ? MC_ERR_INVALID : MC_ERR_USAGE, prefix, text,
                               at ? (size_t)(at + 1 - text) : strlen(text), what);
    }
    return MC_OK;
}

uint64_t mc_task_total_bytes(const mc_task_t *task)
{
    uint64_t total = 0;
    for (int i = 0; i < task->npieces; i++)
        total += task->pieces[i].bytes * (uint64_t)task->pieces[i].ndests;
    return total;
}

uint64_t mc_task_need_bytes(const mc_task_t *task, int gpu)
{
    uint64_t need = 0;
    for (int i = 0; i < task->npieces; i++)
        if (mc_find_int(task->pieces[i].dests, task->pieces[i].ndests, gpu) >= 0)
            need += task->pieces[i].bytes;
    return need;
}

/* Bytes of the tiles a GPU holds in the source (dst == 0) or destination layouts. */
static uint64_t tile_bytes(const mc_task_t *task, int gpu, int dst)
{
    uint64_t bytes = 0;
    for (int i = 0; i < task->ntensors; i++) {
        const mc_layout_t *l = dst ? mc_task_dst_layout(task, i, gpu) : &task->tensors[i].src;
        mc_box_t tile;
        if (l && mc_layout_tile(task, l, gpu, &tile))
            bytes += mc_layout_box_bytes(l, &tile);
    }
    return bytes;
}

uint64_t mc_task_src_bytes(const mc_task_t *task, int gpu)
{
    return tile_bytes(task, gpu, 0);
}

uint64_t mc_task_dst_bytes(const mc_task_t *task, int gpu)
{
    return tile_bytes(task, gpu, 1);
}

uint64_t mc_task_peak_mem_bound(const mc_task_t *task, int gpu)
{
    uint64_t s = mc_task_src_bytes(task, gpu), d = mc_task_dst_bytes(task, gpu);
    return s > d ? s : d;
}

void mc_task_need_bytes_all(const mc_task_t *task, int ngpus, uint64_t *need)
{
    memset(need, 0, sizeof(uint64_t) * (size_t)ngpus);
    for (int i = 0; i < task->npieces; i++)
        for (int j = 0; j < task->pieces[i].ndests; j++)
            if (task->pieces[i].dests[j] < ngpus)
                need[task->pieces[i].dests[j]] += task->pieces[i].bytes;
}

/* Adds each mesh position's tile bytes to its GPU's entry. */
static void add_tiles(const mc_task_t *task, const mc_layout_t *l, int ngpus, uint64_t *bytes)
{
    const mc_mesh_t *m = &task->meshes[l->mesh];
    for (int p = 0; p < m->ndevices; p++) {
        mc_box_t tile;
        if (m->devices[p] >= ngpus)
            continue;
        mc_layout_tile_at(task, l, p, &tile);
        bytes[m->devices[p]] += mc_layout_box_bytes(l, &tile);
    }
}

void mc_task_peak_mem_bound_all(const mc_task_t *task, int ngpus, uint64_t *peak)
{
    uint64_t *dst = mc_xcalloc((size_t)ngpus, sizeof(uint64_t));
    memset(peak, 0, sizeof(uint64_t) * (size_t)ngpus);
    for (int i = 0; i < task->ntensors; i++) {
        add_tiles(task, &task->tensors[i].src, ngpus, peak);
        for (int c = 0; c <= task->tensors[i].nmore; c++)
            add_tiles(task, mc_tensor_consumer(&task->tensors[i], c), ngpus, dst);
    }
    for (int g = 0; g < ngpus; g++)
        peak[g] = peak[g] > dst[g] ? peak[g] : dst[g];
    free(dst);
}
