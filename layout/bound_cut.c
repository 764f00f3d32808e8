/* The cut term of the lower bound: for a set S of GPUs, the distinct bytes needed inside S and
 * held only outside it must cross into S, and the distinct bytes held only inside S and needed
 * outside must cross out of it. Each direction is divided by the maximum flow from the GPUs that
 * hold those bytes to the GPUs that need them (relays through switches, NICs, CPUs and other GPUs
 * allowed), which is at least the capacity into or out of S, so the term is a valid bound.
 *
 * Which sets: every union of units, by enumeration. Inside a host the units are its GPUs that
 * hold or need bytes, up to CUT_MAX_UNITS of them; a host with more, or with more than its share
 * of CUT_MAX_HOST_SETS when several hosts are in play, has its GPUs grouped into fewer units,
 * those joined by the most link capacity first, so that its sets are still searched, over the
 * grouping's unions. Between hosts the units are the hosts, up to CUT_MAX_HOSTS of them; above
 * that, host-cut and mesh-cut hold the whole hosts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layout/bound_internal.h"

/* Largest number of units of a host enumerated; the most sets enumerated inside hosts in all,
 * and the most sets times classes of pieces, the work of reading the classes of every set (every
 * set of one 16-GPU host, for an all-to-all of 240 pieces over a 16-GCD MI250 box: 16 million,
 * 0.25 s on this machine); the most hosts as units. */
#define CUT_MAX_UNITS 16
#define CUT_MAX_HOST_SETS 65536
#define CUT_MAX_WORK (1L << 25)
#define CUT_MAX_HOSTS 8

/* The GPUs in play and the unit of each: the GPUs of one host (each its own unit), or every GPU
 * of the topology (units are hosts). GPUs outside the scope are "outside". */
typedef struct scope {
    int host;        /* the host, or -1 when units are hosts */
    int nunits;
    int n;           /* GPUs in the scope */
    int *gpu;        /* dense index -> global GPU */
    int *dense;      /* global GPU -> dense index, -1 outside the scope */
    int *unit;       /* dense index -> unit */
    uint64_t *unit_mask; /* unit -> its GPUs' positions in the host, or the bit of its host */
    int words;       /* uint64_t words of a bitset over the dense GPUs */
} scope_t;

/* Pieces that touch the scope in the same way: which units hold and need them, whether GPUs
 * outside the scope do, and the union of their holding and needing GPUs. */
typedef struct cls {
    uint32_t hm, dm;
    int hout, dout;
    uint64_t bytes;
    double alpha;    /* the least alpha of a holder's outgoing links */
    uint64_t *hg, *dg;
} cls_t;

static int cmp_cls(const void *a, const void *b)
{
    const cls_t *x = a, *y = b;
    if (x->hm != y->hm)
        return x->hm < y->hm ? -1 : 1;
    if (x->dm != y->dm)
        return x->dm < y->dm ? -1 : 1;
    if (x->hout != y->hout)
        return x->hout - y->hout;
    return x->dout - y->dout;
}

static void set_bit(uint64_t *bits, int i)
{
    bits[i / 64] |= (uint64_t)1 << (i % 64);
}

/* Marks the GPUs of ids[] in the class: units in *mask, dense GPUs in bits, *out when any is
 * outside the scope. */
static void mark(const scope_t *sc, const int *ids, int n, uint32_t *mask, uint64_t *bits, int *out)
{
    for (int i = 0; i < n; i++) {
        int d = sc->dense[ids[i]];
        if (d < 0) {
            *out = 1;
            continue;
        }
        *mask |= (uint32_t)1 << sc->unit[d];
        set_bit(bits, d);
    }
}

/* The classes of the pieces touching the scope, merged by key (bitsets ORed, which only widens
 * the flow's sources and sinks); returns their count. *pool owns the bitsets. */
static int classes(const scope_t *sc, const mc_bound_ctx_t *al, cls_t **out, uint64_t **pool)
{
    cls_t *c = mc_xmalloc(sizeof(cls_t) * (size_t)(al->ncls + 1));
    uint64_t *bits = mc_xcalloc((size_t)(2 * al->ncls + 2) * (size_t)sc->words, sizeof(uint64_t));
    int nc = 0;
    for (int i = 0; i < al->ncls; i++) {
        const mc_piece_t *p = al->cls[i].p;
        cls_t k = {0, 0, 0, 0, al->cls[i].bytes, INFINITY, bits + (size_t)(2 * nc) * sc->words,
                   bits + (size_t)(2 * nc + 1) * sc->words};
        mark(sc, p->holders, p->nholders, &k.hm, k.hg, &k.hout);
        mark(sc, p->dests, p->ndests, &k.dm, k.dg, &k.dout);
        if (!k.hm && !k.dm) {
            memset(k.hg, 0, sizeof(uint64_t) * 2 * (size_t)sc->words);
            continue;
        }
        for (int j = 0; j < p->nholders; j++)
            k.alpha = fmin(k.alpha, al->out[p->holders[j]]);
        c[nc++] = k;
    }
    mc_sort(c, (size_t)nc, sizeof(cls_t), cmp_cls);
    int m = 0;
    for (int i = 0; i < nc; i++) {
        if (m > 0 && cmp_cls(&c[m - 1], &c[i]) == 0) {
            c[m - 1].bytes += c[i].bytes;
            c[m - 1].alpha = fmin(c[m - 1].alpha, c[i].alpha);
            for (int w = 0; w < sc->words; w++) {
                c[m - 1].hg[w] |= c[i].hg[w];
                c[m - 1].dg[w] |= c[i].dg[w];
            }
        } else {
            c[m++] = c[i];
        }
    }
    *out = c;
    *pool = bits;
    return m;
}

/* What one direction of one set carries: bytes, the least alpha, and the flow's terminals. */
typedef struct side {
    uint64_t bytes;
    double alpha;
    uint64_t *src, *snk;
    int src_out, snk_out;
} side_t;

/* Whether class c crosses into the set of units s (into) or out of it. */
static int crosses(const cls_t *c, uint32_t s, int into)
{
    if (into)
        return (c->dm & s) && !(c->hm & s);
    return c->hm && !(c->hm & ~s) && !c->hout && ((c->dm & ~s) || c->dout);
}

static void gather(const scope_t *sc, const cls_t *c, int nc, uint32_t s, const uint64_t *in_s,
                   int into, side_t *sd)
{
    sd->bytes = 0;
    sd->alpha = INFINITY;
    sd->src_out = sd->snk_out = 0;
    memset(sd->src, 0, sizeof(uint64_t) * (size_t)sc->words);
    memset(sd->snk, 0, sizeof(uint64_t) * (size_t)sc->words);
    for (int i = 0; i < nc; i++) {
        if (!crosses(&c[i], s, into))
            continue;
        sd->bytes += c[i].bytes;
        sd->alpha = fmin(sd->alpha, c[i].alpha);
        sd->src_out |= into && c[i].hout;
        sd->snk_out |= !into && c[i].dout;
        for (int w = 0; w < sc->words; w++) {
            sd->src[w] |= c[i].hg[w];
            sd->snk[w] |= c[i].dg[w] & (into ? in_s[w] : ~in_s[w]);
        }
    }
}

static void side_terminals(mc_bound_net_t *net, const scope_t *sc, const side_t *sd)
{
    mc_bound_net_clear(net);
    for (int d = 0; d < sc->n; d++) {
        if (sd->src[d / 64] >> (d % 64) & 1)
            mc_bound_net_source(net, sc->gpu[d]);
        if (sd->snk[d / 64] >> (d % 64) & 1)
            mc_bound_net_sink(net, sc->gpu[d]);
    }
    if (sd->src_out)
        mc_bound_net_source(net, -1);
    if (sd->snk_out)
        mc_bound_net_sink(net, -1);
}

/* Every nonempty set of the scope's units, both directions. */
static mc_status_t enumerate(const mc_topo_t *topo, const scope_t *sc,
                             const mc_bound_ctx_t *al, mc_bound_net_t *net, double floor,
                             mc_best_t *best, mc_bound_set_t *set, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    uint64_t *pool;
    cls_t *c;
    int nc = classes(sc, al, &c, &pool);
    size_t w = (size_t)sc->words;
    uint64_t *bits = mc_xcalloc(w * (size_t)(sc->nunits + 3), sizeof(uint64_t));
    uint64_t *in_s = bits, *unit_bits = bits + w * 3;
    side_t sd = {.src = bits + w, .snk = bits + 2 * w};
    for (int d = 0; d < sc->n; d++)
        set_bit(unit_bits + w * (size_t)sc->unit[d], d);
    for (uint32_t s = 1; s < (uint32_t)1 << sc->nunits && st == MC_OK; s++) {
        memset(in_s, 0, sizeof(uint64_t) * w);
        int first = -1;
        for (int u = 0; u < sc->nunits; u++)
            if (s >> u & 1) {
                for (size_t k = 0; k < w; k++)
                    in_s[k] |= unit_bits[w * (size_t)u + k];
                first = first < 0 ? u : first;
            }
        for (int into = 1; into >= 0 && st == MC_OK; into--) {
            gather(sc, c, nc, s, in_s, into, &sd);
            if (!sd.bytes)
                continue;
            side_terminals(net, sc, &sd);
            if (mc_bound_skip(net, sd.bytes, sd.alpha, floor, best))
                continue;
            int at = sc->host >= 0 ? sc->host : __builtin_ctzll(sc->unit_mask[first]), kept = 0;
            st = mc_bound_term(best, sd.bytes, mc_bound_net_value(net), sd.alpha, at,
                               sc->host >= 0 ? "a set of GPUs of host" : "a set of hosts with "
                               "host", topo, &kept, err);
            if (kept) {
                set->host = sc->host;
                set->into = into;
                set->mask = 0;
                for (int u = 0; u < sc->nunits; u++)
                    if (s >> u & 1)
                        set->mask |= sc->unit_mask[u];
            }
        }
    }
    free(bits);
    free(pool);
    free(c);
    return st;
}

static void scope_free(scope_t *sc)
{
    free(sc->gpu);
    free(sc->dense);
    free(sc->unit);
    free(sc->unit_mask);
}

/* Groups a host scope's GPUs into k units: starting from one unit per GPU, the two units joined
 * by the most GPU-to-GPU link capacity per pair of their GPUs merge first (average linkage; ties
 * to the smaller pair, then the lower units), so that GPUs a cut would not part stay together. */
static void group_units(scope_t *sc, const mc_topo_t *topo, int k)
{
    int n = sc->n;
    double *cap = mc_xcalloc((size_t)n * (size_t)n, sizeof(double));
    int *size = mc_xmalloc(sizeof(int) * (size_t)n), *at = mc_xmalloc(sizeof(int) * (size_t)topo->nnodes);
    for (int i = 0; i < topo->nnodes; i++)
        at[i] = -1;
    for (int d = 0; d < n; d++)
        at[topo->gpu_node[sc->gpu[d]]] = d;
    for (int i = 0; i < topo->nlinks; i++) {
        int a = at[topo->links[i].src], b = at[topo->links[i].dst];
        if (a >= 0 && b >= 0) {
            cap[a * n + b] += topo->links[i].bw;
            cap[b * n + a] += topo->links[i].bw;
        }
    }
    for (int u = 0; u < n; u++)
        size[u] = 1;
    for (int units = n; units > k; units--) {
        int bu = -1, bv = -1;
        double bw = -1;
        for (int u = 0; u < n; u++)
            for (int v = u + 1; v < n && size[u]; v++) {
                if (!size[v])
                    continue;
                double w = cap[u * n + v] / ((double)size[u] * size[v]);
                if (w > bw || (w == bw && size[u] + size[v] < size[bu] + size[bv])) {
                    bw = w;
                    bu = u;
                    bv = v;
                }
            }
        for (int x = 0; x < n; x++) { /* v joins u */
            cap[bu * n + x] += cap[bv * n + x];
            cap[x * n + bu] = cap[bu * n + x];
        }
        size[bu] += size[bv];
        size[bv] = 0;
        for (int d = 0; d < n; d++)
            sc->unit[d] = sc->unit[d] == bv ? bu : sc->unit[d];
    }
    /* the surviving units numbered densely, each with the union of its GPUs' positions */
    uint64_t *mask = mc_xcalloc((size_t)n, sizeof(uint64_t));
    sc->nunits = 0;
    for (int u = 0; u < n; u++)
        at[u] = size[u] ? sc->nunits++ : -1;
    for (int d = 0; d < n; d++) {
        mask[at[sc->unit[d]]] |= sc->unit_mask[d];
        sc->unit[d] = at[sc->unit[d]];
    }
    memcpy(sc->unit_mask, mask, sizeof(uint64_t) * (size_t)sc->nunits);
    free(mask);
    free(at);
    free(cap);
    free(size);
}

/* The scope of host h (units: its GPUs that hold or need bytes, given in busy[]), or of the
 * whole topology with hosts as units (h = -1: units are the hosts with such a GPU). Returns the
 * unit count. */
static int scope_init(scope_t *sc, const mc_topo_t *topo, int h, const char *busy)
{
    sc->host = h;
    sc->nunits = sc->n = 0;
    sc->gpu = mc_xmalloc(sizeof(int) * (size_t)topo->ngpus);
    sc->dense = mc_xmalloc(sizeof(int) * (size_t)topo->ngpus);
    sc->unit = mc_xmalloc(sizeof(int) * (size_t)topo->ngpus);
    sc->unit_mask = mc_xmalloc(sizeof(uint64_t) * (size_t)(topo->ngpus + topo->nhosts));
    int *host_unit = mc_xmalloc(sizeof(int) * (size_t)topo->nhosts), first = -1;
    for (int i = 0; i < topo->nhosts; i++)
        host_unit[i] = -1;
    for (int g = 0; g < topo->ngpus; g++) {
        int gh = mc_topo_gpu_host(topo, g);
        first = gh == h && first < 0 ? g : first;
        sc->dense[g] = -1;
        if (!busy[g] || (h >= 0 && gh != h))
            continue;
        int u = h >= 0 ? sc->nunits : host_unit[gh];
        if (u < 0 || h >= 0) {
            u = sc->nunits++;
            sc->unit_mask[u] = (uint64_t)1 << (h >= 0 ? g - first : gh);
            if (h < 0)
                host_unit[gh] = u;
        }
        sc->dense[g] = sc->n;
        sc->unit[sc->n] = u;
        sc->gpu[sc->n++] = g;
    }
    sc->words = sc->n / 64 + 1;
    free(host_unit);
    return sc->nunits;
}

mc_status_t mc_bound_cut(const mc_topo_t *topo, const mc_bound_ctx_t *al, double floor,
                         mc_best_t *best, mc_bound_set_t *set, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    char *busy = mc_xcalloc((size_t)topo->ngpus, 1), *one = mc_xcalloc((size_t)topo->nhosts, 1);
    int *units = mc_xmalloc(sizeof(int) * (size_t)topo->nhosts);
    int *host_gpus = mc_xmalloc(sizeof(int) * (size_t)topo->nhosts);
    for (int i = 0; i < al->ncls; i++) {
        const mc_piece_t *p = al->cls[i].p;
        for (int j = 0; j < p->nholders; j++)
            busy[p->holders[j]] = 1;
        for (int j = 0; j < p->ndests; j++)
            busy[p->dests[j]] = 1;
    }
    /* Sets inside hosts: each host in play gets an equal share of the sets (fewer where there
     * are many classes of pieces), its GPUs grouped into as many units as the share allows (a
     * host's sets name GPUs in a 64-bit mask). */
    int inside = 0;
    for (int h = 0; h < topo->nhosts; h++)
        units[h] = host_gpus[h] = 0;
    for (int g = 0; g < topo->ngpus; g++) {
        units[mc_topo_gpu_host(topo, g)] += busy[g];
        host_gpus[mc_topo_gpu_host(topo, g)]++;
    }
    for (int h = 0; h < topo->nhosts; h++)
        inside += units[h] > 0 && host_gpus[h] <= 64;
    long sets = CUT_MAX_WORK / (al->ncls + 1) < CUT_MAX_HOST_SETS ? CUT_MAX_WORK / (al->ncls + 1)
                                                                  : CUT_MAX_HOST_SETS;
    long share = inside ? sets / inside : 0;
    int k = 0;
    while (k < CUT_MAX_UNITS && (1L << (k + 1)) - 1 <= share)
        k++;
    for (int h = 0; h < topo->nhosts && k >= 2 && st == MC_OK; h++) {
        if (!units[h] || host_gpus[h] > 64)
            continue;
        scope_t sc;
        mc_bound_net_t net;
        scope_init(&sc, topo, h, busy);
        if (sc.nunits > k)
            group_units(&sc, topo, k);
        one[h] = 1;
        mc_bound_net_init(&net, topo, &al->index, one);
        one[h] = 0;
        st = enumerate(topo, &sc, al, &net, floor, best, set, err);
        mc_bound_net_free(&net);
        scope_free(&sc);
    }
    /* Unions of hosts (a set names its hosts in a 64-bit mask), on the whole topology, or on a
     * large one the hosts with bytes to move and the rest contracted. */
    if (st == MC_OK && topo->nhosts > 1 && topo->nhosts <= 64) {
        scope_t sc;
        if (scope_init(&sc, topo, -1, busy) <= CUT_MAX_HOSTS) {
            mc_bound_net_t net;
            for (int h = 0; h < topo->nhosts; h++)
                one[h] = units[h] > 0;
            mc_bound_net_init(&net, topo, &al->index,
                              topo->nlinks <= MC_BOUND_WHOLE_LINKS ? NULL : one);
            st = enumerate(topo, &sc, al, &net, floor, best, set, err);
            mc_bound_net_free(&net);
        }
        scope_free(&sc);
    }
    free(busy);
    free(one);
    free(units);
    free(host_gpus);
    return st;
}
