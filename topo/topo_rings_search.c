/* NCCL's ring search (ncclTopoCompute and ncclTopoSearchRec in src/graph/search.cc, NCCL 2.28;
 * RCCL's copy in its src/graph/search.cc) over the GPUs of one host (topo/topo_rings.h).
 * NCCL looks for nChannels rings at one per-channel speed taken from a list (its speed arrays,
 * GB/s): a ring is a cycle through every GPU, and each of its hops takes the speed off every link
 * of the hop's path, so rings at that speed fit only where the links have it left. Paths of the
 * best kind are tried first (NVLink or xGMI alone, then PCIe, then through a CPU, then across
 * CPUs); a search keeps the graph with the most nChannels x speed, fewer hops on a tie (and, in
 * RCCL, more direct xGMI hops). The outer loop is NCCL's: each speed is searched with the
 * channels' orders replayed from the first ring, then free, then with worse path kinds, then at
 * the next lower speed while it is more than 0.49 of the best; the result is duplicated when its
 * speed allows (ncclTopoDupChannels), then higher speeds are tried with as many channels. NCCL
 * bounds each search by counting recursion steps (its "time"); the same budgets bound this one,
 * so the result is deterministic. Differences: NCCL's NVB paths (through another GPU's NVLinks)
 * do not exist here (a meshcast route never relays through a GPU), Intel's PCIe P2P overhead and
 * RCCL's hand-written rings for the AMD boxes it recognises (rome_models.cc: on an MI300X box
 * without NICs, 14 rings that load every xGMI link twice, 336 GB/s where the search finds 288) are
 * not modelled. A cache keeps one search per set of GPUs for callers that ask often. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_rings.h"

/* Path kinds in NCCL's order of preference (PATH_NVL, PATH_PIX/PXB, PATH_PHB, PATH_SYS). */
enum { PT_NVL, PT_PCI, PT_PHB, PT_SYS, PT_DIS };
enum { ORDER_FREE, ORDER_PCI, ORDER_REPLAY };

/* NCCL_SEARCH_TIMEOUT, NCCL_SEARCH_TIMEOUT_SAMECHANNELS, NCCL_SEARCH_GLOBAL_TIMEOUT */
#define SEARCH_STEPS (1 << 14)
#define SEARCH_STEPS_SAME (1 << 8)
#define SEARCH_STEPS_GLOBAL (1 << 19)
/* init.cc: ringGraph->maxChannels = MAXCHANNELS / 2 */
#define RING_MAX_CHANNELS 32

/* The speed arrays, GB/s: NCCL's speedArrayIntra, sm90SpeedArrayIntra, sm100SpeedArrayIntra and
 * RCCL's speedArrayIntra (built for AMD GPUs). */
static const double speeds_sm70[] = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
static const double speeds_sm90[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
static const double speeds_sm100[] = {90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18};
static const double speeds_rccl[] = {48, 24, 20, 18, 15, 12, 10, 9, 7, 6,
                                     5,  4,  3,  2.4, 1.2, 0.24, 0.12};

typedef struct graph {
    int nch, type, same, hops, min_ch;
    double speed;  /* GB/s */
    int *intra;    /* RING_MAX_CHANNELS x n positions in gpus[] */
} graph_t;

typedef struct search {
    int n, amd;
    int min_type, max_type, cc_min;
    double max_bw, total_bw;  /* node_bw's */
    const int *gpus;          /* ascending GPU ids: NCCL's GPU index order (PCI order) */
    mc_route_t *routes;       /* n x n */
    int *kind;                /* n x n path kinds */
    double *cap;              /* per link id: GB/s left */
    uint64_t *used;           /* per position: bit c while on channel c's ring */
    int *next;                /* per channel and step, the candidates for the next GPU */
    graph_t cur, best;
    int ops;
} search_t;

static double round3(double x)
{
    return round(x * 1000) / 1000; /* NCCL's SUB_ROUND */
}

/* Takes the speed (mult 1) or gives it back (mult -1) on the links of the path from position a
 * to b, as NCCL's followPath: 0 when a link lacks it, with nothing taken. */
static int follow(search_t *s, int a, int b, int mult)
{
    const mc_route_t *r = &s->routes[a * s->n + b];
    double bw = s->cur.speed * mult;
    int i = 0;
    while (i < r->nlinks && s->cap[r->links[i]] >= bw) {
        s->cap[r->links[i]] = round3(s->cap[r->links[i]] - bw);
        i++;
    }
    if (i == r->nlinks) {
        s->cur.hops += mult * r->nlinks;
        return 1;
    }
    while (i-- > 0)
        s->cap[r->links[i]] = round3(s->cap[r->links[i]] + bw);
    return 0;
}

static int allowed(const search_t *s, int a, int b)
{
    int k = s->kind[a * s->n + b];
    return k != PT_DIS && k <= s->cur.type;
}

/* Hops of g's rings that are one xGMI link (RCCL's ncclTopoCountXGMI). */
static int direct_hops(const search_t *s, const graph_t *g)
{
    int count = 0;
    for (int c = 0; c < g->nch; c++)
        for (int i = 0; i < s->n; i++) {
            const int *ring = g->intra + c * s->n;
            const mc_route_t *r = &s->routes[ring[i] * s->n + ring[(i + 1) % s->n]];
            count += r->nlinks == 1 && s->kind[ring[i] * s->n + ring[(i + 1) % s->n]] == PT_NVL;
        }
    return count;
}

/* ncclTopoCompareGraphs for rings. */
static int better(const search_t *s)
{
    const graph_t *g = &s->cur, *ref = &s->best;
    if (g->nch < g->min_ch)
        return 0;
    double a = g->nch * g->speed, b = ref->nch * ref->speed;
    if (a != b)
        return a > b;
    return g->hops < ref->hops ||
           (s->amd && g->nch == ref->nch && direct_hops(s, ref) < direct_hops(s, g));
}

static void keep(search_t *s)
{
    int *intra = s->best.intra;
    s->best = s->cur;
    s->best.intra = intra;
    memcpy(intra, s->cur.intra, sizeof(int) * (size_t)(s->cur.nch * s->n));
}

/* ncclTopoSearchNextGpuSort without networks: the GPUs not on this ring yet, by the bandwidth
 * of the path to them (GB/s as an int, as NCCL scores it), then fewer links, then from g on. */
static int next_gpus(const search_t *s, int g, int *next)
{
    int count = 0;
    uint64_t bit = 1ull << s->cur.nch;
    for (int i = 1; i < s->n; i++) {
        int h = (g + i) % s->n;
        if (s->kind[g * s->n + h] == PT_DIS || (s->used[h] & bit))
            continue;
        const mc_route_t *r = &s->routes[g * s->n + h];
        int bw = (int)(r->bw / 1e9), j = count++;
        for (; j > 0; j--) {
            const mc_route_t *q = &s->routes[g * s->n + next[j - 1]];
            int qbw = (int)(q->bw / 1e9);
            if (qbw > bw || (qbw == bw && q->nlinks <= r->nlinks))
                break;
            next[j] = next[j - 1];
        }
        next[j] = h;
    }
    return count;
}

static void search_rec(search_t *s, int *time);
static void rec_gpu(search_t *s, int g, int step, int order, int *time);

/* ncclTopoSearchTryGpu: step onto GPU g (from position from, -1 to start a ring). */
static void try_gpu(search_t *s, int from, int g, int step, int order, int *time)
{
    if (from >= 0 && (!allowed(s, from, g) || !follow(s, from, g, 1)))
        return;
    uint64_t bit = 1ull << s->cur.nch;
    s->used[g] ^= bit;
    rec_gpu(s, g, step, order, time);
    s->used[g] ^= bit;
    if (from >= 0)
        follow(s, from, g, -1);
}

/* ncclTopoSearchRecGpu for a ring inside one node. */
static void rec_gpu(search_t *s, int g, int step, int order, int *time)
{
    if (*time <= 0)
        return;
    (*time)--;
    s->ops++;
    int n = s->n, *ring = s->cur.intra + s->cur.nch * n;
    if (step == n) {
        s->cur.nch++;
        if (better(s)) {
            keep(s);
            if (s->cur.nch == RING_MAX_CHANNELS)
                *time = -1;
        }
        if (s->cur.nch < RING_MAX_CHANNELS)
            search_rec(s, time);
        s->cur.nch--;
        return;
    }
    ring[step] = g;
    if (step < n - 1) {
        int *next = s->next + ((size_t)s->cur.nch * n + step) * n, count = 1;
        if (order == ORDER_PCI)
            next[0] = step + 1;
        else if (order == ORDER_REPLAY)
            next[0] = ring[step + 1 - n];
        else
            count = next_gpus(s, g, next);
        for (int i = 0; i < count; i++)
            try_gpu(s, g, next[i], step + 1, order, time);
    } else if (allowed(s, g, ring[0]) && follow(s, g, ring[0], 1)) {
        rec_gpu(s, ring[0], n, order, time);
        follow(s, g, ring[0], -1);
    }
}

/* ncclTopoSearchRec without networks: the next channel, first in PCI order (channel 0) or the
 * previous channel's order, then from every GPU unless the channels must be the same. */
static void search_rec(search_t *s, int *time)
{
    if (s->cur.nch == 0)
        try_gpu(s, -1, 0, 0, ORDER_PCI, time);
    else
        try_gpu(s, -1, s->cur.intra[(s->cur.nch - 1) * s->n], 0, ORDER_REPLAY, time);
    if (!s->cur.same || s->cur.nch == 0)
        for (int g = 0; g < s->n; g++)
            try_gpu(s, -1, g, 0, ORDER_FREE, time);
}

/* The kind of a route inside one host. */
static int route_kind(const mc_topo_t *t, const mc_route_t *r)
{
    int kind = PT_NVL;
    for (int i = 0; i < r->nlinks; i++) {
        const mc_link_t *l = &t->links[r->links[i]];
        int k = l->kind == MC_LINK_NET                    ? PT_DIS
                : l->kind == MC_LINK_SYS                  ? PT_SYS
                : t->nodes[l->dst].kind == MC_NODE_CPU    ? PT_PHB
                : l->kind == MC_LINK_PCI                  ? PT_PCI
                                                          : PT_NVL;
        kind = k > kind ? k : kind;
    }
    return r->via_gpu >= 0 ? PT_DIS : kind;
}

/* ncclTopoDupChannels: twice the rings at half the speed where the speed is high enough. */
static void dup_channels(search_t *s, int cc_min)
{
    graph_t *g = &s->best;
    if (g->nch == 0 || g->speed < 25.0 || (cc_min > 80 && g->speed < 50.0 && g->nch > 4))
        return;
    int dup = 2 * g->nch < RING_MAX_CHANNELS ? 2 * g->nch : RING_MAX_CHANNELS;
    memcpy(g->intra + g->nch * s->n, g->intra, sizeof(int) * (size_t)((dup - g->nch) * s->n));
    g->speed /= (dup + g->nch - 1) / g->nch;
    g->nch = dup;
}

/* ncclTopoCompute's two passes over the speeds for a ring inside one node. */
static void compute(search_t *s, const double *sp, int ns, double max_bw, double total_bw,
                    int min_type, int max_type, int cc_min)
{
    int si = 0, pass = 1, global = SEARCH_STEPS_GLOBAL;
    while (si < ns - 1 && (sp[si] > max_bw || sp[si] > total_bw))
        si++;
    s->cur.speed = sp[si];
    s->cur.type = min_type;
    s->cur.same = 1;
    s->cur.min_ch = 1;
    for (;;) {
        int time = s->cur.same ? SEARCH_STEPS_SAME : SEARCH_STEPS;
        global -= time;
        s->cur.nch = s->cur.hops = 0;
        search_rec(s, &time);
        int done = time == -1 || s->best.nch * s->best.speed >= total_bw;
        if (!done && pass == 1) {
            if (s->cur.same) {
                s->cur.same = 0;
                continue;
            }
            s->cur.same = 1;
            global += time;
            if (global >= 0 || !s->best.nch) {
                if (s->cur.type < max_type && (!s->best.nch || s->cur.type < s->best.type)) {
                    s->cur.type++;
                    continue;
                }
                s->cur.type = min_type;
                if (si < ns - 1 && (!s->best.nch || sp[si + 1] / s->best.speed > .49)) {
                    s->cur.speed = sp[++si];
                    continue;
                }
            }
        }
        if (pass == 1) {
            time = -1;
            dup_channels(s, cc_min);
            int *intra = s->cur.intra;
            s->cur = s->best;
            s->cur.intra = intra;
            for (si = 0; si < ns - 1 && sp[si] > s->best.speed; si++)
                ;
            s->cur.speed = sp[si];
            s->cur.min_ch = s->best.nch;
            pass = 2;
        }
        if (time == 0 || si == 0)
            break;
        s->cur.speed = sp[--si]; /* pass 2: a higher speed with as many rings */
    }
}

/* The figures ncclTopoSearchInit and ncclTopoCompute start from: the best path bandwidth between
 * two GPUs, the most a GPU sends over NVLink or xGMI to the ring's GPUs (or over PCIe), GB/s. */
static void node_bw(const mc_topo_t *t, const search_t *s, double *max_bw, double *total_bw)
{
    *max_bw = *total_bw = 0;
    for (int a = 0; a < s->n; a++) {
        double fabric = 0, pci = 0;
        for (int b = 0; b < s->n; b++)
            if (a != b && s->routes[a * s->n + b].bw / 1e9 > *max_bw)
                *max_bw = s->routes[a * s->n + b].bw / 1e9;
        for (int l = 0; l < t->nlinks; l++) {
            const mc_link_t *k = &t->links[l];
            if (k->src != t->gpu_node[s->gpus[a]])
                continue;
            int to_ring = t->nodes[k->dst].kind == MC_NODE_NVS;
            for (int b = 0; b < s->n && !to_ring; b++)
                to_ring = k->dst == t->gpu_node[s->gpus[b]];
            if (mc_link_is_gpu_fabric(k->kind) && to_ring)
                fabric += k->bw / 1e9;
            if (k->kind == MC_LINK_PCI)
                pci = k->bw / 1e9;
        }
        double total = fabric > pci ? fabric : pci;
        *total_bw = total > *total_bw ? total : *total_bw;
    }
}

static int cmp_int(const void *a, const void *b)
{
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static void search_free(search_t *s)
{
    free((int *)s->gpus);
    free(s->routes);
    free(s->kind);
    free(s->cap);
    free(s->used);
    free(s->next);
    free(s->cur.intra);
    free(s->best.intra);
}

/* Everything the search reads, from the topology: the GPUs in ascending order, the routes
 * between them and their kinds, the links' speeds, the figures it starts from. */
static mc_status_t search_init(const mc_topo_t *topo, const int *gpus, int n, search_t *s,
                               mc_err_t *err)
{
    mc_status_t st = MC_OK;
    *s = (search_t){.n = n};
    int *sorted = mc_xmalloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    memcpy(sorted, gpus, sizeof(int) * (size_t)n);
    qsort(sorted, (size_t)n, sizeof(int), cmp_int);
    s->gpus = sorted;
    s->routes = mc_xcalloc((size_t)n * (size_t)n, sizeof(mc_route_t));
    s->kind = mc_xcalloc((size_t)n * (size_t)n, sizeof(int));
    s->cap = mc_xmalloc(sizeof(double) * (size_t)(topo->nlinks > 0 ? topo->nlinks : 1));
    s->used = mc_xcalloc((size_t)n, sizeof(uint64_t));
    s->next = mc_xmalloc(sizeof(int) * (size_t)RING_MAX_CHANNELS * (size_t)n * (size_t)n + 1);
    s->cur.intra = mc_xmalloc(sizeof(int) * (size_t)RING_MAX_CHANNELS * (size_t)n + 1);
    s->best.intra = mc_xmalloc(sizeof(int) * (size_t)RING_MAX_CHANNELS * (size_t)n + 1);
    s->min_type = PT_DIS;
    s->max_type = PT_NVL;
    s->cc_min = 1000;
    for (int a = 0; a < n; a++) {
        const mc_node_t *node = &topo->nodes[topo->gpu_node[sorted[a]]];
        s->amd |= node->arch[0] != 0;
        s->cc_min = node->sm < s->cc_min ? node->sm : s->cc_min;
        for (int b = 0; b < n && st == MC_OK; b++) {
            if (a == b)
                continue;
            st = mc_topo_route(topo, sorted[a], sorted[b], &s->routes[a * n + b], err);
            int k = s->kind[a * n + b] = route_kind(topo, &s->routes[a * n + b]);
            s->min_type = k < s->min_type ? k : s->min_type;
            s->max_type = k != PT_DIS && k > s->max_type ? k : s->max_type;
        }
    }
    if (st != MC_OK)
        return st;
    for (int l = 0; l < topo->nlinks; l++)
        s->cap[l] = topo->links[l].bw / 1e9;
    node_bw(topo, s, &s->max_bw, &s->total_bw);
    return MC_OK;
}

/* The search over s (search_init's) into out, its rings as positions in s->gpus. */
static void search_run(search_t *s, mc_topo_ring_search_t *out)
{
    int n = s->n;
    const double *sp = s->amd             ? speeds_rccl
                       : s->cc_min >= 100 ? speeds_sm100
                       : s->cc_min >= 90  ? speeds_sm90
                                          : speeds_sm70;
    int ns = s->amd              ? (int)(sizeof(speeds_rccl) / sizeof(double))
             : s->cc_min >= 100  ? (int)(sizeof(speeds_sm100) / sizeof(double))
             : s->cc_min >= 90   ? (int)(sizeof(speeds_sm90) / sizeof(double))
                                 : (int)(sizeof(speeds_sm70) / sizeof(double));
    memset(out, 0, sizeof(*out));
    if (n > 1 && s->min_type != PT_DIS)
        /* RCCL's dumps give AMD GPUs sm above 80 (gfx90a: 104), which ncclTopoDupChannels reads */
        compute(s, sp, ns, s->max_bw, s->total_bw, s->min_type, s->max_type,
                s->amd ? 100 : s->cc_min);
    out->ops = s->ops;
    if (s->best.nch == 0) {
        /* NCCL's fallback: one ring in PCI order */
        s->best.nch = 1;
        s->best.speed = n > 1 ? 0.1 : 0;
        for (int a = 0; a < n; a++)
            s->best.intra[a] = a;
    }
    out->nrings = s->best.nch;
    out->speed = s->best.speed * 1e9;
    out->order = mc_xmalloc(sizeof(int) * (size_t)(s->best.nch * n) + 1);
    memcpy(out->order, s->best.intra, sizeof(int) * (size_t)(s->best.nch * n));
}

/* Positions in gpus[] (ascending) to GPU ids, in place. */
static void to_gpus(mc_topo_ring_search_t *out, const int *gpus, int n)
{
    for (int i = 0; i < out->nrings * n; i++)
        out->order[i] = gpus[out->order[i]];
}

mc_status_t mc_topo_ring_search(const mc_topo_t *topo, const int *gpus, int n,
                                mc_topo_ring_search_t *out, mc_err_t *err)
{
    search_t s;
    mc_status_t st = search_init(topo, gpus, n, &s, err);
    memset(out, 0, sizeof(*out));
    if (st == MC_OK) {
        search_run(&s, out);
        to_gpus(out, s.gpus, n);
    }
    search_free(&s);
    return st;
}

void mc_topo_ring_search_free(mc_topo_ring_search_t *r)
{
    if (r)
        free(r->order);
}

struct mc_topo_ring_cache {
    int n;
    int *gpus;   /* sorted */
    mc_topo_ring_search_t search;
    int64_t *shape; /* what the search read (shape_of), NULL where it failed */
    int nshape;
    int *pos;       /* search.order as positions in gpus */
    struct mc_topo_ring_cache *next;
    signed char *searched; /* the head's: per GPU, mc_topo_ring_searched + 1, or 0: not asked */
};

mc_topo_ring_cache_t *mc_topo_ring_cache_new(void)
{
    return mc_xcalloc(1, sizeof(mc_topo_ring_cache_t)); /* the head holds no search */
}

void mc_topo_ring_cache_free(mc_topo_ring_cache_t *c)
{
    while (c) {
        mc_topo_ring_cache_t *next = c->next;
        mc_topo_ring_search_free(&c->search);
        free(c->gpus);
        free(c->shape);
        free(c->pos);
        free(c->searched);
        free(c);
        c = next;
    }
}

static int64_t bits(double x)
{
    int64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* Everything search_run reads of s, with the links numbered in order of first use, into
 * *out (its length returned): two searches of the same shape take the same steps over the same
 * positions, whatever GPUs and links they are on. The search reads the topology only through s's
 * routes (their kinds, bandwidths and links), the speeds of those links and the figures
 * search_init took. */
static int shape_of(const search_t *s, const mc_topo_t *t, int64_t **out)
{
    int n = s->n, len = 0, cap = 0, nl = 0;
    int64_t *v = NULL;
    int *local = mc_xmalloc(sizeof(int) * (size_t)(t->nlinks > 0 ? t->nlinks : 1));
    int *links = mc_xmalloc(sizeof(int) * ((size_t)n * (size_t)n * MC_ROUTE_MAX_LINKS + 1));
    for (int l = 0; l < t->nlinks; l++)
        local[l] = -1;
    MC_GROW(v, cap, 7);
    v[len++] = n;
    v[len++] = s->amd;
    v[len++] = s->cc_min;
    v[len++] = s->min_type;
    v[len++] = s->max_type;
    v[len++] = bits(s->max_bw);
    v[len++] = bits(s->total_bw);
    for (int i = 0; i < n * n; i++) {
        const mc_route_t *r = &s->routes[i];
        MC_GROW(v, cap, len + 3 + r->nlinks);
        v[len++] = s->kind[i];
        v[len++] = r->nlinks;
        v[len++] = bits(r->bw);
        for (int j = 0; j < r->nlinks; j++) {
            int l = r->links[j];
            if (local[l] < 0) {
                local[l] = nl;
                links[nl++] = l;
            }
            v[len++] = local[l];
        }
    }
    MC_GROW(v, cap, len + nl);
    for (int i = 0; i < nl; i++)
        v[len++] = bits(s->cap[links[i]]);
    free(local);
    free(links);
    *out = v;
    return len;
}

/* An entry of c with the given shape, NULL for none. */
static const mc_topo_ring_cache_t *same_shape(const mc_topo_ring_cache_t *c, const int64_t *shape,
                                              int nshape)
{
    for (const mc_topo_ring_cache_t *e = c->next; e; e = e->next)
        if (e->shape && e->nshape == nshape &&
            !memcmp(e->shape, shape, sizeof(int64_t) * (size_t)nshape))
            return e;
    return NULL;
}

/* A set of GPUs the cache has not seen is searched, unless one of the same shape was: then its
 * rings are the same positions (the eight hosts of a cluster, each searched alike, took 0.6 G
 * instructions of an uneven 4 MiB reshuffle over eight MI250 hosts). */
mc_status_t mc_topo_ring_search_cached(mc_topo_ring_cache_t *c, const mc_topo_t *t,
                                       const int *gpus, int n, const mc_topo_ring_search_t **out,
                                       mc_err_t *err)
{
    int *key = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    memcpy(key, gpus, sizeof(int) * (size_t)n);
    qsort(key, (size_t)n, sizeof(int), cmp_int);
    for (mc_topo_ring_cache_t *e = c->next; e; e = e->next)
        if (e->n == n && !memcmp(e->gpus, key, sizeof(int) * (size_t)n)) {
            free(key);
            *out = &e->search;
            return MC_OK;
        }
    mc_topo_ring_cache_t *e = mc_xcalloc(1, sizeof(*e));
    e->n = n;
    e->gpus = key;
    search_t s;
    mc_status_t st = search_init(t, key, n, &s, err);
    if (st == MC_OK) {
        e->nshape = shape_of(&s, t, &e->shape);
        const mc_topo_ring_cache_t *like = same_shape(c, e->shape, e->nshape);
        if (like) {
            e->search = like->search;
            e->search.order = mc_xmalloc(sizeof(int) * (size_t)(like->search.nrings * n) + 1);
            memcpy(e->search.order, like->pos, sizeof(int) * (size_t)(like->search.nrings * n));
        } else {
            search_run(&s, &e->search);
        }
        e->pos = mc_xmalloc(sizeof(int) * (size_t)(e->search.nrings * n) + 1);
        memcpy(e->pos, e->search.order, sizeof(int) * (size_t)(e->search.nrings * n));
        to_gpus(&e->search, s.gpus, n);
    }
    search_free(&s);
    e->next = c->next;
    c->next = e;
    *out = &e->search;
    return st;
}

int mc_topo_ring_searched_cached(mc_topo_ring_cache_t *c, const mc_topo_t *t, int gpu)
{
    if (!c)
        return mc_topo_ring_searched(t, gpu);
    if (!c->searched)
        c->searched = mc_xcalloc((size_t)t->ngpus + 1, 1);
    if (!c->searched[gpu])
        c->searched[gpu] = (signed char)(mc_topo_ring_searched(t, gpu) + 1);
    return c->searched[gpu] - 1;
}
