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
    lk->met = mc_xcalloc(nl, sizeof(int));
    lk->met_mark = mc_xcalloc(nl, sizeof(unsigned));
}

void sim_links_free(sim_links_t *lk)
{
    free(lk->cap);
    free(lk->cap_left);
    mc_sched_maxmin_free(lk->mm);
    free(lk->link_mark);
    free(lk->flow_met);
    free(lk->touched);
    free(lk->comp_links);
    free(lk->met);
    free(lk->met_mark);
    free(lk->comp_flows);
    free(lk->fcap);
    free(lk->crate);
    free(lk->ccount);
    free(lk->comp_cls);
    free(lk->cls_mark);
    free(lk->cls_at);
    free(lk->newly);
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
        memset(lk->met_mark, 0, sizeof(unsigned) * (size_t)lk->nlinks);
        memset(lk->cls_mark, 0, sizeof(unsigned) * (size_t)lk->cls_cap);
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

/* Room for need flows and entries in the component's arrays (off takes one more). */
static void room(sim_links_t *lk, int need)
{
    MC_GROW(lk->off, lk->off_cap, need);
    size_t n = (size_t)lk->off_cap;
    lk->comp_flows = mc_xrealloc(lk->comp_flows, sizeof(int) * n);
    lk->comp_cls = mc_xrealloc(lk->comp_cls, sizeof(int) * n);
    lk->ccount = mc_xrealloc(lk->ccount, sizeof(int) * n);
    lk->fcap = mc_xrealloc(lk->fcap, sizeof(double) * n);
    lk->crate = mc_xrealloc(lk->crate, sizeof(double) * n);
    MC_GROW(lk->rates, lk->rate_cap, lk->off_cap);
}

/* Marks of no epoch for n items, where *mark holds *cap. */
static void marks(unsigned **mark, int *cap, int n)
{
    if (*cap >= n)
        return;
    *mark = mc_xrealloc(*mark, sizeof(unsigned) * (size_t)n);
    memset(*mark + *cap, 0, sizeof(unsigned) * (size_t)(n - *cap));
    *cap = n;
}

/* The flows connected through shared links to the touched links, and those links, in the order
 * they are found; the solver's input, gathered as the flows are found: per entry (a route class
 * met, or a flow without one) its links end to end in clinks (from off[c]), its connection limit
 * in fcap and its count of flows. A flow of a class met already only adds one to its count: its
 * links are the class's, marked already. Every active flow of a class is on every link of the
 * class's route (once per time the route crosses it), so all of them are met on the link where
 * the class is first met. Counting, per link, the flows of the classes met (class_active), a link
 * whose flows are all counted holds no flow not met, and its flows are not read (on the 1 GiB
 * all-gathers over eight hosts, 70% of the flows read were such). */
static void component(sim_links_t *lk, const sim_flows_t *fl)
{
    int words = fl->nflows / 64 + 1;
    if (words > lk->flow_met_cap) {
        free(lk->flow_met);
        lk->flow_met = mc_xcalloc((size_t)words, sizeof(uint64_t));
        lk->flow_met_cap = words;
    }
    uint64_t *met = lk->flow_met;
    if (fl->klass) {
        int had = lk->cls_cap;
        marks(&lk->cls_mark, &lk->cls_cap, fl->nclasses + 1);
        if (lk->cls_cap > had)
            lk->cls_at = mc_xrealloc(lk->cls_at, sizeof(int) * (size_t)lk->cls_cap);
    }
    int n = 0, nc = 0, at = 0;
    lk->ncomp_links = 0;
    for (int i = 0; i < lk->ntouched; i++)
        lk->comp_links[lk->ncomp_links++] = lk->touched[i];
    if (!lk->off_cap)
        room(lk, 1);
    lk->off[0] = 0;
    for (int i = 0; i < lk->ncomp_links; i++) {
        int non, l = lk->comp_links[i];
        const int *on = fl->on_link(fl->ctx, l, &non);
        if (fl->class_active && lk->met_mark[l] == lk->epoch && lk->met[l] == non)
            continue;
        for (int k = 0; k < non; k++) {
            int f = on[k], nl;
            uint64_t bit = 1ull << (f & 63);
            if (met[f >> 6] & bit)
                continue;
            met[f >> 6] |= bit;
            if (n + 2 > lk->off_cap)
                room(lk, n + 2);
            lk->comp_flows[n] = f;
            int c = fl->klass ? fl->klass[f] : -1;
            if (c >= 0 && lk->cls_mark[c] == lk->epoch) {
                lk->ccount[lk->comp_cls[n++] = lk->cls_at[c]]++;
                continue;
            }
            if (c >= 0) {
                lk->cls_mark[c] = lk->epoch;
                lk->cls_at[c] = nc;
            }

            lk->comp_cls[n++] = nc;
            lk->ccount[nc] = 1;
            const int *links = fl->path(fl->ctx, f, &nl, &lk->fcap[nc]);
            if (at + nl > lk->clink_cap)
                MC_GROW(lk->clinks, lk->clink_cap, at + nl);
            memcpy(lk->clinks + at, links, sizeof(int) * (size_t)nl);
            lk->off[++nc] = at += nl;
            int active = c >= 0 && fl->class_active ? fl->class_active[c] : -1;
            for (int j = 0; j < nl; j++) {
                int l2 = links[j];
                if (lk->link_mark[l2] != lk->epoch) {
                    lk->link_mark[l2] = lk->epoch;
                    lk->comp_links[lk->ncomp_links++] = l2;
                }
                if (active < 0)
                    continue;
                if (lk->met_mark[l2] != lk->epoch) {
                    lk->met_mark[l2] = lk->epoch;
                    lk->met[l2] = 0;
                }
                lk->met[l2] += active;
            }
        }
    }
    for (int k = 0; k < n; k++)
        met[lk->comp_flows[k] >> 6] = 0;
    lk->ncomp_flows = n;
    lk->ncls = nc;
}

/* Max-min fair rates for the component's nc entries (their links in off/clinks, their counts of
 * flows in ccount), with connection limits: a flow whose fair share is above its connection's
 * limit is held at the limit and the capacity it leaves is shared again among the others, until
 * no flow is above its limit. Holding a flow back only raises the others' shares, so the set of
 * held flows only grows; the solver shares it again on the index of the first solve
 * (mc_sched_maxmin_resolve). The flows of an entry share its rate and limit, so they are held
 * together; the capacity they leave is taken flow by flow in the component's order, as if each
 * were an entry of its own. */
static void solve_capped(sim_links_t *lk, int nc)
{
    mc_sched_maxmin_solve_counted(lk->mm, nc, lk->off, lk->clinks, NULL, lk->ccount, lk->cap,
                                  lk->crate);
    int over = 0;
    for (int i = 0; i < nc && !over; i++)
        over = lk->fcap[i] > 0 && lk->crate[i] > lk->fcap[i];
    if (!over)
        return;
    MC_GROW(lk->held, lk->held_cap, nc + 1);
    lk->newly = mc_xrealloc(lk->newly, (size_t)lk->held_cap);
    memset(lk->held, 0, (size_t)nc);
    for (int i = 0; i < lk->ncomp_links; i++)
        lk->cap_left[lk->comp_links[i]] = lk->cap[lk->comp_links[i]];
    while (over) {
        int nfree = 0;
        over = 0;
        for (int i = 0; i < nc; i++) {
            double c = lk->fcap[i];
            lk->newly[i] = !lk->held[i] && c > 0 && lk->crate[i] > c;
            over |= lk->newly[i];
            nfree += !lk->held[i] && !lk->newly[i];
        }
        for (int k = 0; over && k < lk->ncomp_flows; k++) {
            int i = lk->comp_cls[k];
            for (int x = lk->off[i]; lk->newly[i] && x < lk->off[i + 1]; x++)
                lk->cap_left[lk->clinks[x]] -= lk->fcap[i];
        }
        for (int i = 0; i < nc; i++)
            if (lk->newly[i]) {
                lk->crate[i] = lk->fcap[i];
                lk->held[i] = 1;
            }
        if (!over || !nfree)
            break;
        mc_sched_maxmin_resolve(lk->mm, nc, lk->off, lk->clinks, NULL, lk->held, lk->cap_left,
                                lk->crate);
    }
}

void sim_links_rerate(sim_links_t *lk, const sim_flows_t *fl)
{
    component(lk, fl);
    solve_capped(lk, lk->ncls);
    for (int k = 0; k < lk->ncomp_flows; k++)
        lk->rates[k] = lk->crate[lk->comp_cls[k]];
}
