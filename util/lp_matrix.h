/* A sparse matrix built entry by entry for GLPK's glp_load_matrix (rows and columns count from 1,
 * entry 0 unused), shared by the lp bound term and the meshcast relaxation. */
#ifndef MC_UTIL_LP_MATRIX_H
#define MC_UTIL_LP_MATRIX_H

typedef struct mc_lp_mat {
    int n, cap;
    int *ia, *ja;
    double *ar;
} mc_lp_mat_t;

/* Appends entry (row, col) = v; the caller puts each (row, col) at most once. */
void mc_lp_mat_put(mc_lp_mat_t *m, int row, int col, double v);
void mc_lp_mat_free(mc_lp_mat_t *m);

#endif
