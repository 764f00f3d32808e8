/* The lp term of the lower bound: the multicommodity-flow relaxation of multicast, solved by GLPK.
 * Every class of pieces with the same holders and destinations is a commodity; for each of its
 * destinations a unit flow leaves the holders and reaches that destination over the topology's
 * links (relays anywhere); a link's load for a commodity is at least every destination's flow on
 * it (a tree carries a byte over a link once for all the destinations behind it), and the loads
 * of all commodities, in bytes, fit in capacity x T. The least T is a lower bound on any schedule:
 * every tree schedule gives such flows. Unlike the cut and flow terms it counts what relays
 * spend: bytes forwarded through a GPU use that GPU's links twice.
 *
 * With a single commodity it equals the flow term and is skipped. It grows with pieces x
 * destinations x links and GLPK's simplex takes 10-50 ms at a few thousand columns here, so it
 * is solved only up to LP_MAX_COLS columns (a transpose or a few tensors on an 8-GPU host; not
 * an 8-GPU all-to-all, nor any multi-host pod); above that the term is absent. */
#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layout/bound_internal.h"
#include "util/lp_matrix.h"

/* Largest LP solved (columns), and the relative margin taken off its optimum for the simplex's
 * tolerances (1e-7 on a problem scaled to units near 1), so the term stays below the exact one. */
#define LP_MAX_COLS 2500
#define LP_MARGIN 1e-6

/* One commodity: a representative piece (holders, dests) and the bytes of its class. */
typedef struct com {
    const mc_piece_t *p;
    uint64_t bytes;
} com_t;

static int commodities(const mc_bound_ctx_t *al, com_t **out)
{
    int *order = mc_xmalloc(sizeof(int) * (size_t)al->ncls);
    int *start = mc_xmalloc(sizeof(int) * (size_t)(al->ncls + 1));
    int n = mc_bound_holder_groups(al, 1, order, start);
    com_t *c = mc_xmalloc(sizeof(com_t) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        c[i] = (com_t){al->cls[order[start[i]]].p, 0};
        for (int j = start[i]; j < start[i + 1]; j++)
            c[i].bytes += al->cls[order[j]].bytes;
    }
    free(order);
    free(start);
    *out = c;
    return n;
}

static long columns(const mc_topo_t *topo, const com_t *c, int nc)
{
    long cols = 1;
    for (int i = 0; i < nc; i++)
        cols += topo->nlinks + (long)c[i].p->ndests * (topo->nlinks + c[i].p->nholders);
    return cols;
}

/* An upper bound on the LP's optimum T from one feasible point, so that mc_task_bound need not
 * solve an LP that cannot exceed the other terms: each destination's flow is its maximum flow
 * from the commodity's holders scaled to one unit, a commodity's load on a link is the largest of
 * its destinations' scaled flows there, and T is the most loaded link's time. A maximum flow of
 * value F carries at most a link's capacity, so a commodity of b bytes keeps each link it uses
 * within b / F of time, and commodities add only on the links they share. HUGE_VAL when a
 * destination cannot be reached. */
static double upper(const mc_topo_t *topo, const mc_bound_ctx_t *al, const com_t *c, int nc)
{
    mc_bound_net_t net;
    mc_bound_net_init(&net, topo, &al->index, NULL);
    mc_flow_t *f = &net.flow;
    /* Per arc: whether it is a link's (the terminal arcs start at the source or end at the
     * sink), its capacity, one commodity's load, and every commodity's bytes. */
    char *link = mc_xcalloc((size_t)f->m, 1);
    double *cap = mc_xmalloc(sizeof(double) * (size_t)f->m);
    double *load = mc_xmalloc(sizeof(double) * (size_t)f->m);
    double *bytes = mc_xcalloc((size_t)f->m, sizeof(double));
    double t = 0;
    for (int a = 0; a < f->m; a++) {
        link[a] = !(a & 1) && f->to[a] != net.sink && f->to[a ^ 1] != net.source;
        cap[a] = f->cap[a];
    }
    for (int i = 0; i < nc; i++) {
        const mc_piece_t *p = c[i].p;
        for (int a = 0; a < f->m; a++)
            load[a] = 0;
        for (int k = 0; k < p->ndests; k++) {
            mc_bound_net_clear(&net);
            for (int h = 0; h < p->nholders; h++)
                mc_bound_net_source(&net, p->holders[h]);
            mc_bound_net_sink(&net, p->dests[k]);
            double value = mc_bound_net_value(&net);
            if (!(value > 0)) {
                t = HUGE_VAL;
                goto out;
            }
            for (int a = 0; a < f->m; a++)
                if (link[a])
                    load[a] = fmax(load[a], fmax(cap[a] - f->res[a], 0) / value);
        }
        for (int a = 0; a < f->m; a++)
            bytes[a] += (double)c[i].bytes * load[a];
    }
    for (int a = 0; a < f->m; a++)
        if (link[a])
            t = fmax(t, bytes[a] / cap[a]);
out:
    free(link);
    free(cap);
    free(load);
    free(bytes);
    mc_bound_net_free(&net);
    return t;
}

/* Solves the LP; returns its least T in seconds, or -1 when it was not solved to optimality. */
static double solve(const mc_topo_t *topo, const double *cap, const com_t *c, int nc, long cols)
{
    int na = topo->nlinks, nn = topo->nnodes;
    double bmax = 0, cmax = 0;
    for (int i = 0; i < nc; i++)
        bmax = fmax(bmax, (double)c[i].bytes);
    for (int a = 0; a < na; a++)
        cmax = fmax(cmax, cap[a]);
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, (int)cols);
    for (int j = 1; j <= cols; j++)
        glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, 1, 1);
    mc_lp_mat_t m = {0};
    /* Capacity rows 1..na: sum of bytes x load - capacity x T <= 0. */
    glp_add_rows(lp, na);
    for (int a = 0; a < na; a++) {
        glp_set_row_bnds(lp, a + 1, GLP_UP, 0, 0);
        if (cap[a] > 0) /* a link no route takes carries nothing */
            mc_lp_mat_put(&m, a + 1, 1, -cap[a] / cmax);
    }
    int col = 2;
    for (int i = 0; i < nc; i++) {
        const mc_piece_t *p = c[i].p;
        int load = col;
        col += na;
        for (int a = 0; a < na; a++)
            mc_lp_mat_put(&m, a + 1, load + a, (double)c[i].bytes / bmax);
        for (int k = 0; k < p->ndests; k++) {
            int x = col, s = col + na;
            col += na + p->nholders;
            /* Conservation at every node: in - out (+ supply at a holder) = 1 at the
             * destination, 0 elsewhere. */
            int row0 = glp_add_rows(lp, nn);
            for (int v = 0; v < nn; v++)
                glp_set_row_bnds(lp, row0 + v, GLP_FX, 0, 0);
            glp_set_row_bnds(lp, row0 + topo->gpu_node[p->dests[k]], GLP_FX, 1, 1);
            for (int a = 0; a < na; a++) {
                mc_lp_mat_put(&m, row0 + topo->links[a].dst, x + a, 1);
                mc_lp_mat_put(&m, row0 + topo->links[a].src, x + a, -1);
            }
            for (int h = 0; h < p->nholders; h++)
                mc_lp_mat_put(&m, row0 + topo->gpu_node[p->holders[h]], s + h, 1);
            /* The commodity's load on a link is at least this destination's flow. */
            int lrow = glp_add_rows(lp, na);
            for (int a = 0; a < na; a++) {
                glp_set_row_bnds(lp, lrow + a, GLP_LO, 0, 0);
                mc_lp_mat_put(&m, lrow + a, load + a, 1);
                mc_lp_mat_put(&m, lrow + a, x + a, -1);
            }
        }
    }
    glp_load_matrix(lp, m.n, m.ia, m.ja, m.ar);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    double t = -1;
    if (glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT)
        t = glp_get_obj_val(lp) * bmax / cmax * (1 - LP_MARGIN);
    glp_delete_prob(lp);
    mc_lp_mat_free(&m);
    return t;
}

void mc_bound_lp(const mc_topo_t *topo, const mc_bound_ctx_t *al, double floor, mc_best_t *best)
{
    com_t *c;
    int nc = commodities(al, &c);
    long cols = columns(topo, c, nc);
    double alpha = INFINITY;
    for (int g = 0; g < topo->ngpus; g++)
        alpha = fmin(alpha, al->out[g]);
    alpha = isfinite(alpha) ? alpha : 0;
    /* With one commodity the optimum is the flow term's (one source multicasts at the least
     * max-flow to a destination when links may carry any function of what they receive, which
     * is exactly what these loads allow), so it is not solved. Nor is it when the term cannot
     * exceed floor: the term is the simplex's optimum taken LP_MARGIN low, and the simplex
     * lands within half of that margin of the true optimum, which is at most upper(); so a
     * term that ties floor (the cut of a transpose) is skipped as well. */
    int skip = nc <= 1 || cols > LP_MAX_COLS ||
               (floor > 0 && upper(topo, al, c, nc) * (1 - LP_MARGIN / 2) + alpha <= floor);
    double t = skip ? -1 : solve(topo, al->index.cap, c, nc, cols);
    if (t > 0)
        *best = (mc_best_t){t, alpha, 0};
    free(c);
}
