/* The relaxation of the meshcast plan (docs/synthesis.md, "The model"), solved by GLPK's simplex:
 * real units per candidate tree in one phase, the busiest link's load plus a pipelining cost
 * minimized, then rounded to whole units. In floating point it takes milliseconds where Z3's
 * exact simplex grew its rationals for seconds (2.4 s on 78 trees over two MI250 boxes on rails,
 * 16 s on 95 trees over four one-NIC PCIe boxes), and it needs no wall-clock cap: the same plan
 * gives the same split on any machine. */
#include <glpk.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "synth/meshcast/mc_meshcast.h"
#include "util/lp_matrix.h"

/* Most candidates the relaxation takes: a larger component starts from the fractional model's
 * split instead (synth_meshcast_solve.c). */
#define MC_LP_MAX_TREES 100

/* The largest time coefficient, so that the model's times are fractions of it. */
static double time_scale(const mc_plan_t *pl)
{
    double most = 1;
    for (int c = 0; c < pl->ncands; c++) {
        const mc_pcand_t *pc = &pl->cands[c];
        most = fmax(most, (double)pc->fixed_ps);
        for (int j = 0; j < pc->nlinks; j++)
            most = fmax(most, (double)pc->link_ps[j]);
    }
    return most;
}

/* Columns: x_c (units of candidate c) 1..n, then T (the busiest link) and F (pipelining).
 * Rows: every piece's units covered; every link's load at most T; every tree's overhead times
 * the share of its piece it carries at most F (overheads grow slower than bytes, so F steers
 * the split towards shallow trees among those that load the links alike). Minimize T + F. */
static void build(glp_prob *lp, const mc_plan_t *pl, mc_lp_mat_t *m)
{
    int n = pl->ncands, colT = n + 1, colF = n + 2;
    double scale = time_scale(pl);
    glp_set_obj_dir(lp, GLP_MIN);
    glp_add_cols(lp, n + 2);
    for (int j = 1; j <= n + 2; j++)
        glp_set_col_bnds(lp, j, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, colT, 1);
    glp_set_obj_coef(lp, colF, 1);
    int row = glp_add_rows(lp, pl->npieces);
    for (int p = 0; p < pl->npieces; p++)
        glp_set_row_bnds(lp, row + p, GLP_FX, pl->units[p], pl->units[p]);
    for (int c = 0; c < n; c++)
        mc_lp_mat_put(m, row + pl->cands[c].piece, c + 1, 1);
    /* a link's row, made when its first user appears; seen[] drops a repeated link */
    int *link_row = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int));
    int *seen = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int));
    for (int c = 0; c < n; c++) {
        const mc_pcand_t *pc = &pl->cands[c];
        for (int j = 0; j < pc->nlinks; j++) {
            int l = pc->links[j];
            if (seen[l] == c + 1)
                continue;
            seen[l] = c + 1;
            if (!link_row[l]) {
                link_row[l] = glp_add_rows(lp, 1);
                glp_set_row_bnds(lp, link_row[l], GLP_UP, 0, 0);
                mc_lp_mat_put(m, link_row[l], colT, -1);
            }
            mc_lp_mat_put(m, link_row[l], c + 1, (double)pc->link_ps[j] / scale);
        }
    }
    free(link_row);
    free(seen);
    row = glp_add_rows(lp, n);
    for (int c = 0; c < n; c++) {
        glp_set_row_bnds(lp, row + c, GLP_LO, 0, 0);
        mc_lp_mat_put(m, row + c, colF, pl->units[pl->cands[c].piece]);
        if (pl->cands[c].fixed_ps)
            mc_lp_mat_put(m, row + c, c + 1, -(double)pl->cands[c].fixed_ps / scale);
    }
}

int mc_plan_solve_lp(const mc_plan_t *pl, double budget_s, mc_plan_sol_t *out)
{
    if (pl->ncands > MC_LP_MAX_TREES)
        return -1;
    glp_prob *lp = glp_create_prob();
    mc_lp_mat_t m = {0};
    build(lp, pl, &m);
    glp_load_matrix(lp, m.n, m.ia, m.ja, m.ar);
    glp_smcp parm;
    glp_init_smcp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    if (budget_s > 0)
        parm.tm_lim = budget_s * 1000 < INT_MAX ? (int)(budget_s * 1000) + 1 : INT_MAX;
    int solved = glp_simplex(lp, &parm) == 0 && glp_get_status(lp) == GLP_OPT;
    if (solved) {
        double *x = mc_xmalloc(sizeof(double) * (size_t)(pl->ncands + 1));
        for (int c = 0; c < pl->ncands; c++) {
            /* the simplex's tolerances leave whole values a hair off */
            x[c] = glp_get_col_prim(lp, c + 1);
            if (fabs(x[c] - nearbyint(x[c])) < 1e-6)
                x[c] = nearbyint(x[c]);
        }
        mc_plan_round(pl, x, 0, out);
        mc_plan_sol_compact(pl, out);
        free(x);
        solved = mc_plan_check(pl, out) == 0;
        if (!solved)
            mc_plan_sol_free(out);
    }
    glp_delete_prob(lp);
    /* GLPK's environment is per thread and outlives it: this may run on a thread of its own */
    glp_free_env();
    mc_lp_mat_free(&m);
    return solved ? 0 : -1;
}
