/* The choices the meshcast strategy makes last: on a same-mesh task (issue 7) the collective form
 * when memory is tight, whichever the simulator finds faster otherwise; between disjoint meshes
 * Alpa's two-phase plan (scatter, then an all-gather inside each destination host) where it is
 * faster; and a params line that says which and why. Kept here, next to the collective form, so
 * that mc_synth_meshcast needs one call to make them. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "synth/collectives/collective_internal.h"

/* Two simulated times this close (relative) are a tie: the simulator rounds the instants it
 * takes for one (sim.c), and the links' loads it ends a run by are summed in another order. */
#define MC_REFEREE_TIE 1e-9

/* The referee of one alternative form: synth makes it (an error means the task is not of its
 * kind, and *s stays), named name in the params. With work 0 and a memory bound it is simulated
 * in full and may replace *s for memory as well; else it may replace *s only by being faster (or
 * as fast with fewer trees: the 5x4 to 2x10 reshuffle over five p3.8xlarge hosts, where
 * meshcast's 132 trees and p2p-lb's 36 whole messages both reach the bound), and
 * its simulation stops past *t or past that much work (mc_sim_run_until): at 1024 GPUs the
 * baselines' plans simulated in full took more CPU than the whole synthesis (llama70b-1024: 6.3
 * -> 16.1 s). */
static mc_status_t referee(mc_task_t *task, const mc_topo_t *topo, const mc_synth_opts_t *opts,
                           const char *name, mc_synth_fn synth, int64_t work, mc_sched_t **s,
                           double *t, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_synth_opts_t o = *opts;
    mc_sched_t *c = NULL;
    mc_sim_result_t sim = {0};
    mc_err_t ignored = {0};
    o.memory_limit = 0; /* judged below, against the trees' own peak */
    o.inflight = 1; /* meshcast's runtime is to run it */
    if (synth(task, topo, &o, &c, &ignored) != MC_OK)
        return MC_OK; /* not a task of that kind: the trees stay */
    /* with no memory bound, only a faster form replaces *s: past *t it cannot be (its makespan
     * is at least the time it passed), so its simulation stops there (the collective form of a
     * 1 GiB all-gather over eight MI250 hosts: 1.16 G instructions simulated in full to lose) */
    if (work || !opts->memory_limit) {
        mc_err_t stopped = {0};
        st = mc_sim_run_until(c, topo, work ? &work : NULL, *t * (1 + MC_REFEREE_TIE), &sim,
                              &stopped);
        if (st == MC_ERR_TIMEOUT) { /* past *t or its work: not faster */
            st = MC_OK;
            goto out;
        }
        if (st != MC_OK) {
            *err = stopped;
            goto out;
        }
    } else {
        MC_CHECK_GOTO(mc_sim_run_totals(c, topo, &sim, err), out, st);
    }
    uint64_t limit = opts->memory_limit, pt = coll_sched_peak(*s, topo, NULL),
             pc = coll_sched_peak(c, topo, NULL);
    const char *why = NULL;
    int fits = !limit || pc <= limit;
    if (!work && limit && pt > limit && pc <= limit)
        why = "memory";
    else if (fits && sim.makespan_s < *t)
        why = "faster";
    else if (fits && sim.makespan_s <= *t * (1 + MC_REFEREE_TIE) && c->ntrees < (*s)->ntrees)
        why = "fewer-trees"; /* as fast, and a smaller schedule to run and read */
    if (!why)
        goto out;
    char *params = mc_xasprintf("plan=%s(%s) why=%s sim_s=%.6g peak=%" PRIu64
                                " trees_sim_s=%.6g trees_peak=%" PRIu64, name, c->params, why,
                                sim.makespan_s, pc, *t, pt);
    size_t n = strlen(params) < sizeof c->params ? strlen(params) : sizeof c->params - 1;
    memcpy(c->params, params, n);
    c->params[n] = '\0';
    free(params);
    memcpy(c->strategy, (*s)->strategy, sizeof c->strategy);
    if (limit && limit < c->mem_limit)
        c->mem_limit = limit;
    mc_sched_free(*s);
    *s = c;
    *t = sim.makespan_s;
    c = NULL;
out:
    mc_sim_result_free(&sim);
    mc_sched_free(c);
    return st;
}

mc_status_t mc_synth_collectives_referee(mc_task_t *task, const mc_topo_t *topo,
                                         const mc_synth_opts_t *opts, int64_t work,
                                         mc_sched_t **s, double *t, mc_err_t *err)
{
    /* The collective form first (it wins ties), then the baselines' plans: Alpa's is a shape the
     * trees lack (its destinations relay in a second phase, an all-gather after the scatter),
     * and the direct sends' order and whole messages can beat the trees' chunks by their
     * overheads (docs/synthesis.md, "Session 19"); each replaces the trees only where it
     * simulates faster. */
    static const struct {
        const char *name;
        mc_synth_fn synth;
    } alts[] = {{"alpa-p2p", mc_synth_alpa_p2p}, {"p2p-lb", mc_synth_p2p_lb},
                {"p2p", mc_synth_p2p}};
    mc_status_t st = referee(task, topo, opts, "collectives", mc_synth_collectives, 0, s, t, err);
    for (size_t i = 0; i < sizeof alts / sizeof alts[0] && st == MC_OK; i++)
        st = referee(task, topo, opts, alts[i].name, alts[i].synth, work, s, t, err);
    return st;
}
