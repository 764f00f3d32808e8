/* The per-link state both simulators share (sim.c, the schedule's; sim_exec.c, the runtime's
 * plans'): the links' capacities, the max-min solver, the marks that find the flows sharing links
 * with the links an event touched, and the max-min solve with connection limits. So the two time
 * the same link model by construction; each keeps its own flows and says, through sim_flows_t,
 * which flows are on a link, what a flow crosses and how fast its connection may go, and, where
 * it keeps route classes (sim.c), which classes are on a link and which flows are of a class:
 * then the component is gathered class by class, and the flows' order, which breaks the ties of
 * equal finish times and orders the capacities held back, is made again where it is needed
 * (sim_links_order) as a gathering flow by flow would meet them. */
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
    lk->twins_met = mc_xcalloc(nl, sizeof(unsigned));
    lk->touched = mc_xcalloc(nl, sizeof(int));
    lk->comp_links = mc_xcalloc(nl, sizeof(int));
}

void sim_links_free(sim_links_t *lk)
{
    free(lk->cap);
    free(lk->cap_left);
    mc_sched_maxmin_free(lk->mm);
    free(lk->link_mark);
    free(lk->twins_met);
    free(lk->flow_met);
    free(lk->touched);
    free(lk->comp_links);
    free(lk->off);
    free(lk->clinks);
    free(lk->fcap);
    free(lk->crate);
    free(lk->ccount);
    free(lk->ent_cls);
    free(lk->ent_from);
    free(lk->ent_seq);
    free(lk->comp_flows);
    free(lk->cls_mark);
    free(lk->order);
    free(lk->flow_pos);
    free(lk->run);
    free(lk->held);
    free(lk->newly);
    memset(lk, 0, sizeof *lk);
}

void sim_links_begin(sim_links_t *lk)
{
    lk->ntouched = 0;
    if (++lk->epoch == 0) { /* wrapped: clear the marks */
        memset(lk->link_mark, 0, sizeof(unsigned) * (size_t)lk->nlinks);
        memset(lk->twins_met, 0, sizeof(unsigned) * (size_t)lk->nlinks);
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

/* Room for need entries in the solver's input (off takes one more). */
static void room(sim_links_t *lk, int need)
{
    if (need <= lk->off_cap)
        return;
    MC_GROW(lk->off, lk->off_cap, need);
    size_t n = (size_t)lk->off_cap;
    lk->fcap = mc_xrealloc(lk->fcap, sizeof(double) * n);
    lk->crate = mc_xrealloc(lk->crate, sizeof(double) * n);
    lk->ccount = mc_xrealloc(lk->ccount, sizeof(int) * n);
    lk->ent_cls = mc_xrealloc(lk->ent_cls, sizeof(int) * n);
    lk->ent_from = mc_xrealloc(lk->ent_from, sizeof(int) * n);
    lk->ent_seq = mc_xrealloc(lk->ent_seq, sizeof(unsigned) * n);
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

/* Entry e crosses links[0..nl): those not met yet go to the component's links, to be looked at
 * in turn. The solver takes the links solver[0..ns) of them: they go to clinks from off[e]. */
static void entry_links(sim_links_t *lk, int e, const int *links, int nl, const int *solver,
                        int ns)
{
    int at = lk->off[e];
    if (at + ns > lk->clink_cap)
        MC_GROW(lk->clinks, lk->clink_cap, at + ns);
    lk->off[e + 1] = at + ns;
    for (int j = 0; j < nl; j++) {
        int l = links[j];
        if (lk->link_mark[l] != lk->epoch) {
            lk->link_mark[l] = lk->epoch;
            lk->comp_links[lk->ncomp_links++] = l;
        }
    }
    for (int j = 0; j < ns; j++) /* copied in the loop: routes are short, a call costs more */
        lk->clinks[at + j] = solver[j];
}

/* A bit per flow, all clear (flow_met). */
static uint64_t *flow_bits(sim_links_t *lk, int nflows)
{
    int words = nflows / 64 + 1;
    if (words > lk->flow_met_cap) {
        free(lk->flow_met);
        lk->flow_met = mc_xcalloc((size_t)words, sizeof(uint64_t));
        lk->flow_met_cap = words;
    }
    return lk->flow_met;
}

/* Without classes: the flows connected through shared links to the touched links, and those
 * links, in the order they are found, each flow an entry of the solver's input. */
static void gather_flows(sim_links_t *lk, const sim_flows_t *fl)
{
    uint64_t *met = flow_bits(lk, fl->nflows);
    int n = 0;
    for (int i = 0; i < lk->ncomp_links; i++) {
        int non;
        const int *on = fl->on_link(fl->ctx, lk->comp_links[i], &non);
        for (int k = 0; k < non; k++) {
            int f = on[k], nl;
            uint64_t bit = 1ull << (f & 63);
            if (met[f >> 6] & bit)
                continue;
            met[f >> 6] |= bit;
            room(lk, n + 2);
            MC_GROW(lk->comp_flows, lk->flow_cap, n + 1);
            lk->comp_flows[n] = f;
            lk->ccount[n] = 1;
            const int *links = fl->path(fl->ctx, f, &nl, &lk->fcap[n]);
            entry_links(lk, n, links, nl, links, nl);
            n++;
        }
    }
    for (int k = 0; k < n; k++)
        met[lk->comp_flows[k] >> 6] = 0;
    lk->ncomp_flows = lk->ncls = n;
}

/* With classes: the same component, gathered class by class. Every active flow of a class is on
 * every link of its route, so the classes met on a link are those of the flows a gathering flow
 * by flow would meet there first; it meets them in the order of their oldest flows (a link's
 * flows are in the order they became active), and so do these. Each class is an entry, with its
 * count of flows; no flow is read. A link whose twin was looked at already has no class to give
 * (twins have the same classes), so it is passed over. */
static void gather_classes(sim_links_t *lk, const sim_flows_t *fl)
{
    marks(&lk->cls_mark, &lk->cls_cap, fl->nclasses + 1);
    int nc = 0, nflows = 0;
    for (int i = 0; i < lk->ncomp_links; i++) {
        int ncl, first = nc, l = lk->comp_links[i];
        if (fl->twin_first) {
            int t = fl->twin_first[l];
            if (lk->twins_met[t] == lk->epoch)
                continue;
            lk->twins_met[t] = lk->epoch;
        }
        const int *cls = fl->classes_on(fl->ctx, l, &ncl);
        for (int k = 0; k < ncl; k++) {
            int c = cls[k];
            if (lk->cls_mark[c] == lk->epoch)
                continue;
            lk->cls_mark[c] = lk->epoch;
            room(lk, nc + 2);
            int nf, at = nc++; /* by their oldest flows */
            unsigned s = fl->seq[fl->class_flows(fl->ctx, c, &nf)[0]];
            for (; at > first && lk->ent_seq[at - 1] > s; at--) {
                lk->ent_cls[at] = lk->ent_cls[at - 1];
                lk->ent_seq[at] = lk->ent_seq[at - 1];
            }
            lk->ent_cls[at] = c;
            lk->ent_seq[at] = s;
        }
        for (int e = first; e < nc; e++) {
            int nl, c = lk->ent_cls[e];
            const int *flows = fl->class_flows(fl->ctx, c, &lk->ccount[e]);
            nflows += lk->ccount[e];
            lk->ent_from[e] = i;
            const int *links = fl->path(fl->ctx, flows[0], &nl, &lk->fcap[e]), *solver = links;
            int ns = nl;
            if (fl->solver_route)
                solver = fl->solver_route(fl->ctx, c, &ns);
            entry_links(lk, e, links, nl, solver, ns);
        }
    }
    lk->ncomp_flows = nflows;
    lk->ncls = nc;
}

/* The entries are in the order of the links where they were met, so only a run of flows whose
 * classes were met on one link can be out of order. A run in the order its flows became active is
 * in that link's order already (so is one of classes of one flow each: the entries are in the
 * order of their oldest flows); another is put in the order of that link's flows. */
void sim_links_order(sim_links_t *lk, const sim_flows_t *fl, sim_flow_at_t *at, int n)
{
    uint64_t *met = flow_bits(lk, fl->nflows);
    for (int a = 0, b; a < n; a = b) {
        int from = lk->ent_from[at[a].entry], unsorted = 0;
        for (b = a + 1; b < n && lk->ent_from[at[b].entry] == from; b++)
            unsorted |= fl->seq[at[b].flow] < fl->seq[at[b - 1].flow];
        if (!unsorted)
            continue;
        MC_GROW(lk->flow_pos, lk->flow_pos_cap, fl->nflows);
        MC_GROW(lk->run, lk->run_cap, b - a);
        for (int k = a; k < b; k++) {
            met[at[k].flow >> 6] |= 1ull << (at[k].flow & 63);
            lk->flow_pos[at[k].flow] = k;
        }
        int non, m = 0;
        const int *on = fl->on_link(fl->ctx, lk->comp_links[from], &non);
        for (int k = 0; k < non; k++) {
            int f = on[k];
            uint64_t bit = 1ull << (f & 63);
            if (!(met[f >> 6] & bit))
                continue;
            met[f >> 6] &= ~bit;
            lk->run[m++] = at[lk->flow_pos[f]];
        }
        memcpy(at + a, lk->run, sizeof *at * (size_t)m);
    }
}

/* Per flow of the component, in its order, its entry: without classes, flow k is entry k. */
static void flow_entries(sim_links_t *lk, const sim_flows_t *fl)
{
    if (!fl->classes_on)
        return;
    MC_GROW(lk->order, lk->order_cap, lk->ncomp_flows + 1);
    int n = 0;
    for (int e = 0; e < lk->ncls; e++) {
        int nf;
        const int *flows = fl->class_flows(fl->ctx, lk->ent_cls[e], &nf);
        for (int k = 0; k < nf; k++)
            lk->order[n++] = (sim_flow_at_t){flows[k], e};
    }
    sim_links_order(lk, fl, lk->order, n);
}

/* Max-min fair rates for the component's nc entries (their links in off/clinks, their counts of
 * flows in ccount), with connection limits: a flow whose fair share is above its connection's
 * limit is held at the limit and the capacity it leaves is shared again among the others, until
 * no flow is above its limit. Holding a flow back only raises the others' shares, so the set of
 * held flows only grows; the solver shares it again on the index of the first solve
 * (mc_sched_maxmin_resolve). The flows of an entry share its rate and limit, so they are held
 * together; the capacity they leave is taken flow by flow in the component's order, as if each
 * were an entry of its own. */
static void solve_capped(sim_links_t *lk, const sim_flows_t *fl)
{
    int nc = lk->ncls;
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
    flow_entries(lk, fl);
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
            int i = fl->classes_on ? lk->order[k].entry : k;
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
    lk->ncomp_links = 0;
    for (int i = 0; i < lk->ntouched; i++)
        lk->comp_links[lk->ncomp_links++] = lk->touched[i];
    room(lk, 1);
    lk->off[0] = 0;
    if (fl->classes_on)
        gather_classes(lk, fl);
    else
        gather_flows(lk, fl);
    solve_capped(lk, fl);
}
