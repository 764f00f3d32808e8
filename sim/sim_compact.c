/* Timing a schedule whose instances stay compact (mc_sched_load_compact; docs/simulator.md,
 * "Cost"). An instance that renames its template onto links of the same bandwidth, latency and
 * kind, and onto GPUs of the same architecture (the connection limit), used by no other tree, is
 * the simulator's identical group (sim_groups.c) read from the file: the listed trees are
 * simulated, and each instance's links get its template links' results. Otherwise the schedule is
 * expanded and simulated whole. Either way the result is that of the expanded schedule. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

/* Whether every instance times as its template. */
static int same_timing(const mc_sched_t *s, const mc_topo_t *topo)
{
    if (!mc_sched_sym_relabels(s, topo))
        return 0;
    for (int i = 0; i < s->ninst; i++) {
        const mc_sched_inst_t *in = &s->inst[i];
        const mc_sched_tmpl_t *t = &s->tmpl[in->tmpl];
        for (int j = 0; j < t->nlinks; j++) {
            const mc_link_t *a = &topo->links[t->links[j]], *b = &topo->links[in->links[j]];
            if (a->bw != b->bw || a->latency != b->latency || a->kind != b->kind)
                return 0;
        }
        for (int j = 0; j < t->ngpus; j++)
            if (topo->nodes[t->nodes[t->gpus[j]]].sm != topo->nodes[in->nodes[t->gpus[j]]].sm)
                return 0;
    }
    return 1;
}

/* The listed trees' result extended to the instances: per-link totals and timelines copied from
 * the template's links (an instance's links carry nothing else), flows counted per instance. */
static void add_instances(const mc_sched_t *s, const mc_topo_t *topo, mc_sim_result_t *res)
{
    int *from = mc_xmalloc(sizeof(int) * (size_t)(topo->nlinks + 1));
    for (int l = 0; l < topo->nlinks; l++)
        from[l] = l;
    for (int i = 0; i < s->ninst; i++) {
        const mc_sched_inst_t *in = &s->inst[i];
        const mc_sched_tmpl_t *t = &s->tmpl[in->tmpl];
        for (int j = 0; j < t->nlinks; j++) {
            from[in->links[j]] = t->links[j];
            res->link_busy_s[in->links[j]] = res->link_busy_s[t->links[j]];
            res->link_bytes[in->links[j]] = res->link_bytes[t->links[j]];
        }
        for (int j = 0; j < t->ntrees; j++) {
            const mc_tree_t *tr = &s->trees[t->trees[j]];
            res->nflows += (long)tr->nedges * tr->nchunks;
        }
    }
    if (res->nintervals) {
        /* the timeline stays in link order: each link's intervals, or its template link's */
        int *first = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(int));
        for (int v = res->nintervals - 1; v >= 0; v--)
            first[res->intervals[v].link] = v;
        int *count = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(int));
        for (int v = 0; v < res->nintervals; v++)
            count[res->intervals[v].link]++;
        size_t n = 0;
        for (int l = 0; l < topo->nlinks; l++)
            n += (size_t)count[from[l]];
        mc_sim_interval_t *iv = mc_xmalloc(sizeof(mc_sim_interval_t) * (n + 1));
        n = 0;
        for (int l = 0; l < topo->nlinks; l++)
            for (int v = 0; v < count[from[l]]; v++) {
                iv[n] = res->intervals[first[from[l]] + v];
                iv[n++].link = l;
            }
        free(res->intervals);
        res->intervals = iv;
        res->nintervals = (int)n;
        free(first);
        free(count);
    }
    free(from);
}

mc_status_t mc_sim_run_compact(const mc_sched_t *s, const mc_topo_t *topo, int timeline,
                               mc_sim_result_t *res, mc_err_t *err)
{
    mc_status_t (*run)(const mc_sched_t *, const mc_topo_t *, mc_sim_result_t *, mc_err_t *) =
        timeline ? mc_sim_run : mc_sim_run_totals;
    if (!s->ninst)
        return run(s, topo, res, err);
    if (!same_timing(s, topo)) {
        mc_sched_t *x = mc_sched_sym_expanded(s, topo);
        mc_status_t st = run(x, topo, res, err);
        mc_sched_free(x);
        return st;
    }
    mc_status_t st = run(s, topo, res, err);
    if (st == MC_OK)
        add_instances(s, topo, res);
    return st;
}
