/* Twin links, which the max-min solve of sim.c's re-ratings takes once (sim_twins_build). Two
 * links that the same route classes of a group cross, each as many times, carry the same active
 * flows at every moment of the group, whichever are active, so the solver charges them the same
 * rates in the same order: the one of higher capacity keeps a remaining capacity, and a level, at
 * least those of the other (rounding is monotone), and is never the bottleneck before it. Each
 * class's route goes to the solver with one link of each set of twins, the least capacity and
 * then the least link number (the one the solver's (level, link) order meets first): the rates
 * are the same to the bit, which tests/unit/test_sim_links.c checks on random sets (keeping the
 * higher capacity, or the higher link number on a tie, fails it). The component is still
 * gathered and recorded over the whole routes. On the 1 GiB all-gather over eight MI250 hosts
 * (routes of nine links on average: GPU, PCIe switch, NIC, network) the largest group's 3840
 * classes cross links 37344 times, of which the solver takes 15008. */
#include <string.h>

#include "sim/sim_internal.h"
#include "util/index.h"
#include "util/util.h"

void sim_twins_free(sim_twins_t *tw)
{
    free(tw->route_at);
    free(tw->route_n);
    free(tw->routes);
    free(tw->count);
    free(tw->start);
    free(tw->best);
    free(tw->first);
    free(tw->mark);
    free(tw->touched);
    free(tw->crossers);
    memset(tw, 0, sizeof *tw);
}

/* Per link touched by the classes ids[0..n): how many times they cross it (count), and from
 * start[l] in crossers[] the places in ids[] of the classes crossing it, in the order of ids[]
 * (once per crossing): two links have the same crossers exactly when these lists are equal. */
static void list_crossers(sim_twins_t *tw, int nlinks, const int *ids, int n, const int *off,
                          const int *links)
{
    if (nlinks > tw->link_cap) {
        tw->count = mc_xrealloc(tw->count, sizeof(int) * (size_t)nlinks);
        tw->start = mc_xrealloc(tw->start, sizeof(int) * (size_t)nlinks);
        tw->best = mc_xrealloc(tw->best, sizeof(int) * (size_t)nlinks);
        tw->first = mc_xrealloc(tw->first, sizeof(int) * (size_t)nlinks);
        tw->touched = mc_xrealloc(tw->touched, sizeof(int) * (size_t)nlinks);
        free(tw->mark);
        tw->mark = mc_xcalloc((size_t)nlinks, sizeof(unsigned));
        for (int l = 0; l < nlinks; l++)
            tw->first[l] = tw->best[l] = l;
        tw->link_cap = nlinks;
        tw->epoch = 0;
        tw->ntouched = 0;
    }
    for (int t = 0; t < tw->ntouched; t++) /* the last build's links: no twins again */
        tw->first[tw->touched[t]] = tw->best[tw->touched[t]] = tw->touched[t];
    if (++tw->epoch == 0) { /* wrapped: old marks could collide */
        memset(tw->mark, 0, sizeof(unsigned) * (size_t)tw->link_cap);
        tw->epoch = 1;
    }
    tw->ntouched = 0;
    int total = 0;
    for (int i = 0; i < n; i++)
        for (int x = off[ids[i]]; x < off[ids[i] + 1]; x++) {
            int l = links[x];
            if (tw->mark[l] != tw->epoch) {
                tw->mark[l] = tw->epoch;
                tw->count[l] = 0;
                tw->touched[tw->ntouched++] = l;
            }
            tw->count[l]++;
            total++;
        }
    MC_GROW(tw->crossers, tw->crossers_cap, total);
    for (int t = 0, at = 0; t < tw->ntouched; t++) {
        int l = tw->touched[t];
        tw->start[l] = at;
        at += tw->count[l];
        tw->count[l] = 0; /* filled again below */
    }
    for (int i = 0; i < n; i++)
        for (int x = off[ids[i]]; x < off[ids[i] + 1]; x++) {
            int l = links[x];
            tw->crossers[tw->start[l] + tw->count[l]++] = i;
        }
}

static int same_crossers(const sim_twins_t *tw, int a, int b)
{
    return tw->count[a] == tw->count[b] &&
           !memcmp(tw->crossers + tw->start[a], tw->crossers + tw->start[b],
                   sizeof(int) * (size_t)tw->count[a]);
}

/* For every link touched: first[l], the first link met of its twins (l itself if none came
 * before), and, for a first link, best[l], the link its twins give the solver. */
static void pick_best(sim_twins_t *tw, const double *cap)
{
    mc_index_t index = {0};
    for (int t = 0; t < tw->ntouched; t++) {
        int l = tw->touched[t];
        uint64_t h = MC_HASH_SEED;
        for (int k = 0; k < tw->count[l]; k++)
            h = mc_hash_step(h, (uint64_t)tw->crossers[tw->start[l] + k]);
        h = mc_hash_fold(h);
        size_t at = mc_index_start(&index, h);
        int first = -1;
        for (int u; first < 0 && (u = mc_index_next(&index, h, &at)) >= 0;)
            if (same_crossers(tw, tw->touched[u], l))
                first = tw->touched[u];
        if (first < 0) {
            mc_index_add(&index, h, t);
            tw->first[l] = tw->best[l] = l;
            continue;
        }
        tw->first[l] = first;
        int b = tw->best[first];
        if (cap[l] < cap[b] || (cap[l] == cap[b] && l < b))
            tw->best[first] = l;
    }
    mc_index_free(&index);
}

void sim_twins_build(sim_twins_t *tw, int nlinks, const double *cap, const int *ids, int n,
                     const int *off, const int *links, int nclasses)
{
    list_crossers(tw, nlinks, ids, n, off, links);
    pick_best(tw, cap);
    if (nclasses > tw->cls_cap) {
        tw->route_at = mc_xrealloc(tw->route_at, sizeof(int) * (size_t)nclasses);
        tw->route_n = mc_xrealloc(tw->route_n, sizeof(int) * (size_t)nclasses);
        tw->cls_cap = nclasses;
    }
    int total = 0;
    for (int i = 0; i < n; i++)
        total += off[ids[i] + 1] - off[ids[i]];
    MC_GROW(tw->routes, tw->routes_cap, total);
    int at = 0;
    for (int i = 0; i < n; i++) {
        int c = ids[i];
        tw->route_at[c] = at;
        for (int x = off[c]; x < off[c + 1]; x++)
            if (tw->best[tw->first[links[x]]] == links[x])
                tw->routes[at++] = links[x];
        tw->route_n[c] = at - tw->route_at[c];
    }
}
