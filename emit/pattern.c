/* The test pattern of `meshcast run`: every element's bytes are a hash of its tensor and its
 * global row-major index (the hash's first bytes in host byte order: fill and check run on the
 * same kind of machine), so a byte that lands in the wrong place, or never arrives, shows. */
#include <string.h>

#include "emit/emit_internal.h"

static uint64_t pattern(int tensor, uint64_t index)
{
    /* splitmix64 of the pair: cheap, and no two nearby elements look alike. */
    uint64_t z = index + 0x9E3779B97F4A7C15ull * (uint64_t)(tensor + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Calls row() for every row (innermost run) of rank's tiles in buffer buf, in buffer order. */
typedef void (*row_fn)(void *ctx, int k, const int64_t *coord, uint64_t gindex, unsigned char *p,
                       int64_t n, int es);

static void walk(const mc_task_t *task, int rank, int buf, unsigned char *base, row_fn row,
                 void *ctx)
{
    for (int k = 0; k < task->ntensors; k++) {
        const mc_layout_t *l = buf == MC_RT_BUF_SRC ? &task->tensors[k].src
                                                    : mc_task_dst_layout(task, k, rank);
        mc_box_t tile;
        if (!l || !mc_layout_tile(task, l, rank, &tile) || mc_box_elems(&tile, l->ndims) == 0)
            continue;
        int n = l->ndims, es = mc_dtype_size(l->dtype);
        int64_t coord[MC_MAX_DIMS], rowlen = n ? tile.hi[n - 1] - tile.lo[n - 1] : 1;
        uint64_t gst[MC_MAX_DIMS];
        for (int i = n - 1; i >= 0; i--)
            gst[i] = i == n - 1 ? 1 : gst[i + 1] * (uint64_t)l->shape[i + 1];
        for (int i = 0; i < n; i++)
            coord[i] = tile.lo[i];
        for (;;) {
            uint64_t g = 0;
            for (int i = 0; i < n; i++)
                g += (uint64_t)coord[i] * gst[i];
            row(ctx, k, coord, g, base, rowlen, es);
            base += rowlen * es;
            int i = n - 2;
            while (i >= 0 && ++coord[i] == tile.hi[i]) {
                coord[i] = tile.lo[i];
                i--;
            }
            if (i < 0)
                break;
        }
    }
}

/* ctx points to a 64-bit mask every pattern value is XORed with. */
static void fill_row(void *ctx, int k, const int64_t *coord, uint64_t g, unsigned char *p,
                     int64_t n, int es)
{
    uint64_t x = *(const uint64_t *)ctx;
    for (int64_t e = 0; e < n; e++) {
        uint64_t v = pattern(k, g + e) ^ x;
        memcpy(p + e * es, &v, es < 8 ? (size_t)es : 8);
    }
}

void mc_emit_fill_src(const mc_task_t *task, int rank, void *buf)
{
    const uint64_t x = 0;
    walk(task, rank, MC_RT_BUF_SRC, buf, fill_row, (void *)&x);
}

void mc_emit_poison_dst(const mc_task_t *task, int rank, void *buf)
{
    const uint64_t x = ~0ull;
    walk(task, rank, MC_RT_BUF_DST, buf, fill_row, (void *)&x);
}

typedef struct check_ctx {
    const mc_task_t *task;
    int rank, max, reported;
    uint64_t wrong;
    mc_buf_t *report;
} check_ctx_t;

static void check_row(void *vctx, int k, const int64_t *coord, uint64_t g, unsigned char *p,
                      int64_t n, int es)
{
    check_ctx_t *c = vctx;
    int nd = c->task->tensors[k].dst.ndims;
    size_t w = es < 8 ? (size_t)es : 8;
    for (int64_t e = 0; e < n; e++) {
        uint64_t v = pattern(k, g + e);
        const unsigned char *want = (const unsigned char *)&v;
        if (!memcmp(p + e * es, want, w))
            continue;
        int bad = 0, first = -1;
        for (size_t b = 0; b < w; b++)
            if (p[e * es + b] != want[b]) {
                bad++;
                first = first < 0 ? (int)b : first;
            }
        c->wrong += bad;
        if (c->report && c->reported < c->max) {
            mc_buf_printf(c->report, "GPU %d, tensor %s, element [", c->rank,
                          c->task->tensors[k].name);
            for (int i = 0; i < nd; i++)
                mc_buf_printf(c->report, "%s%lld", i ? "," : "",
                              (long long)(coord[i] + (i == nd - 1 ? e : 0)));
            mc_buf_printf(c->report, "], byte %d: 0x%02x, expected 0x%02x\n", first,
                          p[e * es + first], want[first]);
            c->reported++;
        }
    }
}

uint64_t mc_emit_check_dst(const mc_task_t *task, int rank, const void *buf, mc_buf_t *report,
                           int max)
{
    check_ctx_t c = {task, rank, max, 0, 0, report};
    walk(task, rank, MC_RT_BUF_DST, (unsigned char *)buf, check_row, &c);
    return c.wrong;
}
