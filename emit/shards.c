/* Shards: where each rank's tiles sit in its buffers, and the strided box of a region of a tile
 * with its dimensions merged to the fewest (DESIGN.md section 7). */
#include <stdlib.h>
#include <string.h>

#include "emit/emit_internal.h"

int mc_emit_ngpus(const mc_sched_t *s)
{
    int n = 0;
    const mc_task_t *t = s->task;
    for (int m = 0; m < t->nmeshes; m++)
        for (int i = 0; i < t->meshes[m].ndevices; i++)
            n = t->meshes[m].devices[i] + 1 > n ? t->meshes[m].devices[i] + 1 : n;
    for (int ti = 0; ti < s->ntrees; ti++) {
        n = s->trees[ti].root + 1 > n ? s->trees[ti].root + 1 : n;
        for (int e = 0; e < s->trees[ti].nedges; e++)
            n = s->trees[ti].edges[e].child + 1 > n ? s->trees[ti].edges[e].child + 1 : n;
    }
    return n;
}

int mc_emit_ranks(const mc_sched_t *s, int ngpus, int *rank_of)
{
    const mc_task_t *t = s->task;
    int n = 0;
    for (int g = 0; g < ngpus; g++)
        rank_of[g] = -1;
    for (int m = 0; m < t->nmeshes; m++)
        for (int i = 0; i < t->meshes[m].ndevices; i++)
            rank_of[t->meshes[m].devices[i]] = 0;
    for (int ti = 0; ti < s->ntrees; ti++) {
        rank_of[s->trees[ti].root] = 0;
        for (int e = 0; e < s->trees[ti].nedges; e++)
            rank_of[s->trees[ti].edges[e].child] = 0;
    }
    for (int g = 0; g < ngpus; g++)
        if (rank_of[g] >= 0)
            rank_of[g] = n++;
    return n;
}

/* The layout of GPU g's tile of tensor k in buffer buf (its consumer's, for a tensor with
 * several); NULL when it holds none there. */
static const mc_layout_t *side(const mc_task_t *t, int k, int buf, int g)
{
    return buf == MC_RT_BUF_SRC ? &t->tensors[k].src : mc_task_dst_layout(t, k, g);
}

void mc_emit_shards_init(mc_emit_shards_t *sh, const mc_task_t *task, int nranks)
{
    int nt = task->ntensors;
    memset(sh, 0, sizeof *sh);
    sh->nranks = nranks;
    sh->ntensors = nt;
    for (int b = MC_RT_BUF_SRC; b <= MC_RT_BUF_DST; b++) {
        sh->off[b] = mc_xcalloc((size_t)nranks * nt + 1, sizeof(uint64_t));
        sh->tile[b] = mc_xcalloc((size_t)nranks * nt + 1, sizeof(mc_box_t));
        sh->bytes[b] = mc_xcalloc(nranks + 1, sizeof(uint64_t));
        for (int g = 0; g < nranks; g++)
            for (int k = 0; k < nt; k++) {
                const mc_layout_t *l = side(task, k, b, g);
                mc_box_t *tile = &sh->tile[b][g * nt + k];
                sh->off[b][g * nt + k] = sh->bytes[b][g];
                if (l && mc_layout_tile(task, l, g, tile))
                    sh->bytes[b][g] += mc_box_elems(tile, l->ndims) * mc_dtype_size(l->dtype);
                else
                    memset(tile, 0, sizeof *tile);
            }
    }
    sh->src_bytes = sh->bytes[MC_RT_BUF_SRC];
    sh->dst_bytes = sh->bytes[MC_RT_BUF_DST];
}

void mc_emit_shards_free(mc_emit_shards_t *sh)
{
    for (int b = MC_RT_BUF_SRC; b <= MC_RT_BUF_DST; b++) {
        free(sh->off[b]);
        free(sh->tile[b]);
        free(sh->bytes[b]);
    }
    memset(sh, 0, sizeof *sh);
}

void mc_emit_region_box(const mc_emit_shards_t *sh, const mc_task_t *task, int k, int gpu, int buf,
                        const mc_box_t *region, mc_rt_box_t *out)
{
    const mc_layout_t *l = &task->tensors[k].src; /* every side has its dtype and rank */
    const mc_box_t *tile = &sh->tile[buf][gpu * sh->ntensors + k];
    int n = l->ndims;
    uint64_t es = (uint64_t)mc_dtype_size(l->dtype), st[MC_MAX_DIMS];
    uint64_t base = sh->off[buf][gpu * sh->ntensors + k];
    /* Row-major byte strides of the tile. */
    for (int i = n - 1; i >= 0; i--)
        st[i] = i == n - 1 ? es : st[i + 1] * (uint64_t)(tile->hi[i + 1] - tile->lo[i + 1]);
    for (int i = 0; i < n; i++)
        base += (uint64_t)(region->lo[i] - tile->lo[i]) * st[i];
    /* Merge from the innermost dimension out: a dimension whose stride equals the span of the
     * one inside it continues that one. ext/str are built innermost first. */
    uint64_t ext[MC_MAX_DIMS], str[MC_MAX_DIMS];
    int m = 1;
    ext[0] = n > 0 ? (uint64_t)(region->hi[n - 1] - region->lo[n - 1]) * es : es;
    str[0] = 1;
    for (int i = n - 2; i >= 0; i--) {
        uint64_t e = (uint64_t)(region->hi[i] - region->lo[i]);
        if (e == 1)
            continue;
        if (st[i] == ext[m - 1] * str[m - 1]) {
            ext[m - 1] *= e;
        } else {
            ext[m] = e;
            str[m] = st[i];
            m++;
        }
    }
    memset(out, 0, sizeof *out);
    out->buf = buf;
    out->ndims = m;
    out->base = base;
    for (int d = 0; d < m; d++) {
        out->extent[d] = ext[m - 1 - d];
        out->stride[d] = d == m - 1 ? 0 : str[m - 1 - d];
    }
}
