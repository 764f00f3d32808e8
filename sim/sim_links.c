/* The per-link state both simulators share (sim.c, the schedule's; sim_exec.c, the runtime's
 * plans'): the links' capacities, the max-min solver, the marks that find the flows sharing links
 * with the links an event touched, and the max-min solve with connection limits. So the two time
 * the same link model by construction; each keeps its own flows and says, through sim_flows_t,
 * which flows are on a link, what a flow crosses and how fast its connection may go. */
#include <string.h>

#include "sim/sim_internal.h"
#include "util/util.h"

void sim_links_init(sim_links_t *lk, const mc_topo_t *topo)
{
    size_t nl = (size_t)topo->nlinks + 1;
    memset(lk, 0, sizeof *lk);
    lk->nlinks = topo->nlinks;
    lk->cap = mc_xcalloc(nl, sizeof(double));
    lk->cap_left = mc_xcalloc(nl, sizeof(double));
    for (int l = 0; l < topo->nlinks; l++)
        lk->cap[l] = topo->links[l].bw;
    lk->mm = mc_sched_maxmin_new(topo->nlinks);
    lk->link_mark = mc_xcalloc(nl, sizeof(unsigned));
    lk->touched = mc_xcalloc(nl, sizeof(int));
    lk->comp_links = mc_xcalloc(nl, sizeof(int));
}

void sim_links_free(sim_links_t *lk)
{
    free(lk->cap);
    free(lk->cap_left);
    mc_sched_maxmin_free(lk->mm);
    free(lk->link_mark);
    free(lk->flow_mark);
    free(lk->touched);
    free(lk->comp_links);
    free(lk->comp_flows);
    free(lk->fcap);
    free(lk->off);
    free(lk->clinks);
    free(lk->rates);
    free(lk->held);
    memset(lk, 0, sizeof *lk);
}

void sim_links_begin(sim_links_t *lk)
{
    lk->ntouched = 0;
    if (++lk->epoch == 0) { /* wrapped: clear the marks */
        memset(lk->link_mark, 0, sizeof(unsigned) * (size_t)lk->nlinks);
        memset(lk->flow_mark, 0, sizeof(unsigned) * (size_t)lk->flow_mark_cap);
        lk->epoch = 1;
    }
}

void sim_links_touch(sim_links_t *lk, int l)
{
    if (lk->link_mark[l] == lk->epoch)
        return;
    lk->link_mark[l] = lk->epoch;
    lk->touched[lk->ntouched++] = l;
}

/* Room for need flows in the component's arrays (off takes one more). */
static void room(sim_links_t *lk, int need)
{
    MC_GROW(lk->off, lk->off_cap, need);
    lk->comp_flows = mc_xrealloc(lk->comp_flows, sizeof(int) * (size_t)lk->off_cap);
    lk->fcap = mc_xrealloc(lk->fcap, sizeof(double) * (size_t)lk->off_cap);
    MC_GROW(lk->rates, lk->rate_cap, lk->off_cap);
}

/* The flows connected through shared links to the touched links, and those links; the flows'
 * links end to end in clinks (flow i's from off[i]) and their connection limits in fcap: the
 * max-min solver's input, gathered as the flows are found. */
static void component(sim_links_t *lk, const sim_flows_t *fl)
{
    if (lk->flow_mark_cap < fl->nflows + 1) { /* new marks: of no epoch */
        lk->flow_mark = mc_xrealloc(lk->flow_mark, sizeof(unsigned) * (size_t)(fl->nflows + 1));
        memset(lk->flow_mark + lk->flow_mark_cap, 0,
               sizeof(unsigned) * (size_t)(fl->nflows + 1 - lk->flow_mark_cap));
        lk->flow_mark_cap = fl->nflows + 1;
    }
    int n = 0, at = 0;
    lk->ncomp_links = 0;
    for (int i = 0; i < lk->ntouched; i++)
        lk->comp_links[lk->ncomp_links++] = lk->touched[i];
    if (!lk->off_cap)
        room(lk, 1);
    lk->off[0] = 0;
    for (int i = 0; i < lk->ncomp_links; i++) {
        int non;
        const int *on = fl->on_link(fl->ctx, lk->comp_links[i], &non);
        for (int k = 0; k < non; k++) {
            int f = on[k], nl;
            if (lk->flow_mark[f] == lk->epoch)
                continue;
            lk->flow_mark[f] = lk->epoch;
            if (n + 2 > lk->off_cap)
                room(lk, n + 2);
            lk->comp_flows[n] = f;
            const int *links = fl->path(fl->ctx, f, &nl, &lk->fcap[n]);
            if (at + nl > lk->clink_cap)
                MC_GROW(lk->clinks, lk->clink_cap, at + nl);
            memcpy(lk->clinks + at, links, sizeof(int) * (size_t)nl);
            lk->off[++n] = at += nl;
            for (int j = 0; j < nl; j++)
                if (lk->link_mark[links[j]] != lk->epoch) {
                    lk->link_mark[links[j]] = lk->epoch;
                    lk->comp_links[lk->ncomp_links++] = links[j];
                }
        }
    }
    lk->ncomp_flows = n;
}

/* Max-min fair rates for the component's n flows (their links in off/clinks), with connection
 * limits: a flow whose fair share is above its connection's limit is held at the limit and the
 * capacity it leaves is shared again among the others, until no flow is above its limit. Holding
 * a flow back only raises the others' shares, so the set of held flows only grows; the solver
 * shares it again on the index of the first solve (mc_sched_maxmin_resolve). */
static void solve_capped(sim_links_t *lk, int n)
{
    mc_sched_maxmin_solve(lk->mm, n, lk->off, lk->clinks, NULL, lk->cap, lk->rates);
    int over = 0;
    for (int i = 0; i < n && !over; i++)
        over = lk->fcap[i] > 0 && lk->rates[i] > lk->fcap[i];
    if (!over)
        return;
    MC_GROW(lk->held, lk->held_cap, n + 1);
    memset(lk->held, 0, (size_t)n);
    for (int i = 0; i < lk->ncomp_links; i++)
        lk->cap_left[lk->comp_links[i]] = lk->cap[lk->comp_links[i]];
    while (over) {
        int nfree = 0;
        over = 0;
        for (int i = 0; i < n; i++) {
            double c = lk->fcap[i];
            if (lk->held[i])
                continue;
            if (c > 0 && lk->rates[i] > c) {
                lk->rates[i] = c;
                for (int x = lk->off[i]; x < lk->off[i + 1]; x++)
                    lk->cap_left[lk->clinks[x]] -= c;
                lk->held[i] = 1;
                over = 1;
                continue;
            }
            nfree++;
        }
        if (!over || !nfree)
            break;
        mc_sched_maxmin_resolve(lk->mm, n, lk->off, lk->clinks, NULL, lk->held, lk->cap_left,
                                lk->rates);
    }
}

void sim_links_rerate(sim_links_t *lk, const sim_flows_t *fl)
{
    component(lk, fl);
    solve_capped(lk, lk->ncomp_flows);
}
