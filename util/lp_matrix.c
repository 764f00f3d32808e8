/* The sparse matrix GLPK loads (util/lp_matrix.h). */
#include <stdlib.h>

#include "util/lp_matrix.h"
#include "util/util.h"

void mc_lp_mat_put(mc_lp_mat_t *m, int row, int col, double v)
{
    if (m->n + 1 >= m->cap) {
        m->cap = m->cap ? 2 * m->cap : 1024;
        m->ia = mc_xrealloc(m->ia, sizeof(int) * (size_t)m->cap);
        m->ja = mc_xrealloc(m->ja, sizeof(int) * (size_t)m->cap);
        m->ar = mc_xrealloc(m->ar, sizeof(double) * (size_t)m->cap);
    }
    m->n++;
    m->ia[m->n] = row;
    m->ja[m->n] = col;
    m->ar[m->n] = v;
}

void mc_lp_mat_free(mc_lp_mat_t *m)
{
    free(m->ia);
    free(m->ja);
    free(m->ar);
    *m = (mc_lp_mat_t){0};
}
