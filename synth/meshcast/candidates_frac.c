/* The fractional tree-packing model of the meshcast strategy (docs/synthesis.md, "Candidates
 * priced by link load"): every share's bytes split over its candidate trees in any proportion, all
 * trees at once, the value being the busiest link's load. Solved by Frank-Wolfe on a soft maximum
 * of the link loads: each link's price grows exponentially with its load (multiplicative
 * weights), every share moves toward its cheapest tree under those prices by the step that lowers
 * the soft maximum most. No LP solver (Z3's is slow and erratic on these models), no randomness,
 * no clock: the same candidates give the same split. The prices it ends with are the duals the
 * column generation prices new trees by. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* The soft maximum's sharpness rises over the steps, from a smooth start (large steps) to within
 * about 1/MC_FRAC_SHARP_END of the true maximum. */
#define MC_FRAC_SHARP_START 8.0
#define MC_FRAC_SHARP_END 200.0
/* Stop when the split is proven this close to the optimum over these candidates. */
#define MC_FRAC_GAP 0.002

void mc_frac_init(mc_frac_t *f, const mc_cands_t *cs, const mc_topo_t *topo, int nshares,
                  const double *demand)
{
    memset(f, 0, sizeof(*f));
    f->cs = cs;
    f->topo = topo;
    f->nshares = nshares;
    f->cols = mc_xcalloc((size_t)nshares + 1, sizeof(int *));
    f->ncols = mc_xcalloc((size_t)nshares + 1, sizeof(int));
    f->capcols = mc_xcalloc((size_t)nshares + 1, sizeof(int));
    f->demand = mc_xmalloc(sizeof(double) * (size_t)(nshares + 1));
    memcpy(f->demand, demand, sizeof(double) * (size_t)nshares);
    f->load = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(double));
    f->price = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(double));
}

void mc_frac_free(mc_frac_t *f)
{
    for (int s = 0; s < f->nshares; s++)
        free(f->cols[s]);
    free(f->cols);
    free(f->ncols);
    free(f->capcols);
    free(f->demand);
    free(f->x);
    free(f->load);
    free(f->price);
    memset(f, 0, sizeof(*f));
}

void mc_frac_add(mc_frac_t *f, int s, int c)
{
    MC_GROW(f->cols[s], f->capcols[s], f->ncols[s] + 1);
    f->cols[s][f->ncols[s]++] = c;
    if (c >= f->capx) {
        int old = f->capx;
        MC_GROW(f->x, f->capx, c + 1);
        memset(f->x + old, 0, sizeof(double) * (size_t)(f->capx - old));
    }
    f->x[c] = 0;
}

double mc_frac_tree_cost(const mc_frac_t *f, const mc_cand_t *c, double eps)
{
    double cost = 0;
    for (int i = 0; i < c->nlinks; i++)
        cost += c->mult[i] * (f->price[c->links[i]] + eps) / f->topo->links[c->links[i]].bw;
    return cost;
}

int mc_frac_cheaper(double a, int da, double b, int db)
{
    return a < b * (1 - 1e-9) || (a <= b * (1 + 1e-9) && da < db);
}

double mc_frac_fill(const mc_cand_t *c, double t_s)
{
    double hop = 0;
    for (int e = 0; e < c->nedges; e++)
        hop = c->edge_hop[e] > hop ? c->edge_hop[e] : hop;
    return c->depth > 1 && t_s > 0 ? 1 + 2 * sqrt((c->depth - 1) * hop / t_s) : 1;
}

/* Adds w times share s's traffic on tree c to load. */
static void add_load(const mc_frac_t *f, int s, int c, double w, double *load)
{
    const mc_cand_t *t = &f->cs->c[c];
    double wd = w * f->demand[s]; /* the first product of every term, read once */
    for (int i = 0; i < t->nlinks; i++)
        load[t->links[i]] += wd * t->mult[i] / f->topo->links[t->links[i]].bw;
}

/* The links any column crosses, ascending (the others carry nothing and cost nothing). */
static int active_links(const mc_frac_t *f, int *out)
{
    char *on = mc_xcalloc((size_t)f->topo->nlinks + 1, 1);
    int n = 0;
    for (int s = 0; s < f->nshares; s++)
        for (int j = 0; j < f->ncols[s]; j++) {
            const mc_cand_t *t = &f->cs->c[f->cols[s][j]];
            for (int i = 0; i < t->nlinks; i++)
                on[t->links[i]] = 1;
        }
    for (int l = 0; l < f->topo->nlinks; l++)
        if (on[l])
            out[n++] = l;
    free(on);
    return n;
}

static double max_load(const double *load, const int *act, int nact)
{
    double m = 0;
    for (int i = 0; i < nact; i++)
        if (load[act[i]] > m)
            m = load[act[i]];
    return m;
}

/* Prices from loads: exp(sharp * (load - max) / max), normalized to sum 1 over the links. */
static void set_prices(mc_frac_t *f, const int *act, int nact, double sharp)
{
    double top = max_load(f->load, act, nact), sum = 0;
    memset(f->price, 0, sizeof(double) * (size_t)f->topo->nlinks);
    if (top <= 0)
        return;
    for (int i = 0; i < nact; i++) {
        f->price[act[i]] = exp(sharp * (f->load[act[i]] - top) / top);
        sum += f->price[act[i]];
    }
    for (int i = 0; i < nact; i++)
        f->price[act[i]] /= sum;
}

/* Scratch of one solve: per column its price under the current prices (best_response sets
 * those of the columns that carry something, worst_used reads them). The columns, share by share, are packed side by side for
 * best_response, which reads all of them twice a step: each one's terms in one run of pterm (from
 * poff), and the factors its price is weighed by when shares pick their column (see mc_frac_t):
 * 1 + depth_bias x depth, and with fill_s its fill. A term is where its link crossing's price
 * lies in val, which best_response fills once per call: a link crossed once costs val[link] =
 * price / bw; each crossing of a link m > 1 times has its own slot past the links, val[nl + k] =
 * m x price / bw of link mlink[k] with m = mmult[k]. */
typedef struct frac_scratch {
    const int *act;
    int nact;
    double *val, *cost;
    int *poff, *pterm, *depth, *mlink, *mmult, nmulti;
    double *bias, *fill;
} frac_scratch_t;

static void pack_columns(const mc_frac_t *f, frac_scratch_t *fs)
{
    int ncol = 0, nent = 0, nl = f->topo->nlinks;
    for (int s = 0; s < f->nshares; s++)
        for (int j = 0; j < f->ncols[s]; j++, ncol++)
            nent += f->cs->c[f->cols[s][j]].nlinks;
    fs->poff = mc_xmalloc(sizeof(int) * (size_t)(ncol + 1));
    fs->depth = mc_xmalloc(sizeof(int) * (size_t)(ncol + 1));
    fs->pterm = mc_xmalloc(sizeof(int) * (size_t)(nent + 1));
    fs->mlink = mc_xmalloc(sizeof(int) * (size_t)(nent + 1));
    fs->mmult = mc_xmalloc(sizeof(int) * (size_t)(nent + 1));
    fs->bias = mc_xmalloc(sizeof(double) * (size_t)(ncol + 1));
    fs->fill = mc_xmalloc(sizeof(double) * (size_t)(ncol + 1));
    fs->nmulti = 0;
    int p = 0, at = 0;
    for (int s = 0; s < f->nshares; s++)
        for (int j = 0; j < f->ncols[s]; j++, p++) {
            const mc_cand_t *t = &f->cs->c[f->cols[s][j]];
            fs->poff[p] = at;
            for (int i = 0; i < t->nlinks; i++, at++) {
                if (t->mult[i] == 1) {
                    fs->pterm[at] = t->links[i];
                    continue;
                }
                fs->mlink[fs->nmulti] = t->links[i];
                fs->mmult[fs->nmulti] = t->mult[i];
                fs->pterm[at] = nl + fs->nmulti++;
            }
            fs->depth[p] = t->depth;
            fs->bias[p] = 1 + f->depth_bias * t->depth;
            fs->fill[p] = f->fill_s > 0 ? mc_frac_fill(t, f->fill_s) : 1;
        }
    fs->poff[p] = at;
    fs->val = mc_xcalloc((size_t)(nl + fs->nmulti + 1), sizeof(double));
}

/* The terms' prices of tree_cost at the current prices (links that no column crosses cost 0). */
static void set_terms(const mc_frac_t *f, frac_scratch_t *fs)
{
    const mc_link_t *links = f->topo->links;
    double *multi = fs->val + f->topo->nlinks;
    for (int i = 0; i < fs->nact; i++)
        fs->val[fs->act[i]] = f->price[fs->act[i]] / links[fs->act[i]].bw;
    for (int k = 0; k < fs->nmulti; k++)
        multi[k] = fs->mmult[k] * f->price[fs->mlink[k]] / links[fs->mlink[k]].bw;
}

/* One share's pick so far in best_response: its least column price, and the weighed price and
 * depth of its cheapest column (none yet: bw infinite). */
typedef struct frac_pick {
    double least, bw;
    int bd;
} frac_pick_t;

/* Price c of packed column p weighed by its factors (see mc_frac_t), in the order mc_frac_t gives
 * them. */
static double weigh(const mc_frac_t *f, const frac_scratch_t *fs, int p, double c)
{
    double w = c * fs->bias[p];
    if (f->fill_s > 0)
        w *= fs->fill[p];
    return w;
}

/* Whether packed column p, of price at least c, can change neither the share's least price nor
 * its cheapest column: weigh and mc_frac_cheaper are monotone in the price (a product by a
 * positive factor rounded to nearest is), so what holds of c holds of any price above it. */
static int past_pick(const mc_frac_t *f, const frac_scratch_t *fs, int p, double c,
                     const frac_pick_t *pk)
{
    return pk->bw < HUGE_VAL && c >= pk->least &&
           !mc_frac_cheaper(weigh(f, fs, p, c), fs->depth[p], pk->bw, pk->bd);
}

/* mc_frac_tree_cost with no eps of packed column p, from the terms' prices in val: a link
 * crossed once adds 1 * price / bw, which is price / bw to the bit; the others m * price / bw as
 * there. The terms are the same, added in the same order. With pk, the sum stops where it is
 * past the pick (past_pick): the terms are not negative, so the whole is at least any partial
 * sum (rounding to nearest is monotone), and the column loses to the pick. */
static double tree_cost(const mc_frac_t *f, const frac_scratch_t *fs, int p,
                        const frac_pick_t *pk)
{
    double cost = 0;
    int i = fs->poff[p], end = fs->poff[p + 1];
    /* blocks of 8 terms, unrolled (clang reads the pragma too), between two looks at the pick */
    for (; end - i >= 8; i += 8) {
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++)
            cost += fs->val[fs->pterm[i + k]];
        if (pk && past_pick(f, fs, p, cost, pk))
            return cost;
    }
    for (; i < end; i++)
        cost += fs->val[fs->pterm[i]];
    return cost;
}

/* Each share's cheapest column under the current prices, each price weighed by its factors
 * (depth_bias, fill_s: see mc_frac_t); returns the Lagrangian bound: the sum over shares of
 * demand x their least column price (every link priced, prices summing to 1). The price of every
 * column that carries something is kept in fs->cost; a column that carries nothing stops being
 * priced once it loses to the share's pick so far (tree_cost). */
static double best_response(const mc_frac_t *f, frac_scratch_t *fs, int *best)
{
    double lb = 0;
    set_terms(f, fs);
    for (int s = 0, p = 0; s < f->nshares; s++) {
        frac_pick_t pk = {.least = HUGE_VAL, .bw = HUGE_VAL};
        best[s] = -1;
        for (int j = 0; j < f->ncols[s]; j++, p++) {
            int col = f->cols[s][j];
            double c = fs->cost[col] = tree_cost(f, fs, p, f->x[col] > 0 ? NULL : &pk);
            pk.least = c < pk.least ? c : pk.least;
            double w = weigh(f, fs, p, c);
            if (best[s] < 0 || mc_frac_cheaper(w, fs->depth[p], pk.bw, pk.bd)) {
                pk.bw = w;
                pk.bd = fs->depth[p];
                best[s] = col;
            }
        }
        if (best[s] >= 0)
            lb += f->demand[s] * pk.least;
    }
    return lb;
}

static void compute_load(mc_frac_t *f)
{
    memset(f->load, 0, sizeof(double) * (size_t)f->topo->nlinks);
    for (int s = 0; s < f->nshares; s++)
        for (int j = 0; j < f->ncols[s]; j++)
            if (f->x[f->cols[s][j]] > 0)
                add_load(f, s, f->cols[s][j], f->x[f->cols[s][j]], f->load);
}

/* exp of anything below this is 0 (it is about -745.13; glibc's exp gives 0 from there down). */
#define MC_FRAC_EXP_ZERO -746.0
/* exp of anything below MC_FRAC_TAIL_E is below MC_FRAC_TAIL (e^-30 = 9.4e-14). */
#define MC_FRAC_TAIL_E -30.0
#define MC_FRAC_TAIL 1e-13

/* A line search's links whose load moves (dir != 0), in the order of the links in use: their
 * loads, directions and, at the step being tried, loads v and exponents e. The others keep their
 * load at every step and add dir x exp(...) = 0 to the slope, so only the largest of them
 * matters (still). */
typedef struct frac_line {
    double *load, *dir, *v, *e;
    int n;
    double still;
} frac_line_t;

/* The slope of the soft maximum along load + g * dir, summed in full: over the links in use, in
 * their order, dir x exp(e), e = sharp (v - top) / scale, top the largest load v, from the
 * exponents rises set. The terms left out are 0 (no direction, or e below
 * MC_FRAC_EXP_ZERO), which leave the sum as it is. */
static double slope(const frac_line_t *ln)
{
    double d = 0;
    for (int i = 0; i < ln->n; i++)
        if (!(ln->e[i] < MC_FRAC_EXP_ZERO))
            d += ln->dir[i] * exp(ln->e[i]);
    return d;
}

/* Whether the slope at step g is positive (its sign is all the bisection needs). The terms with
 * e below MC_FRAC_TAIL_E (the tail: links far below the busiest, most of them late in a solve)
 * are each at most |dir| MC_FRAC_TAIL, so the others are summed first, in the same order: the
 * slope differs from that partial sum by at most the tail's bound plus the rounding of either sum
 * (gamma_n x the sum of the absolute terms, n u / (1 - n u) with u = 2^-53: Higham, "Accuracy and
 * Stability of Numerical Algorithms", 4.2), taken twice over, plus an underflow's worth per term.
 * When the partial sum is farther from 0 than that, it has the slope's sign; otherwise the slope
 * is summed in full (slope). */
static int rises(const frac_line_t *ln, double g, double sharp, double scale)
{
    double top = ln->still, d = 0, abs = 0, tail = 0;
    for (int i = 0; i < ln->n; i++) {
        ln->v[i] = ln->load[i] + g * ln->dir[i];
        if (ln->v[i] > top)
            top = ln->v[i];
    }
    for (int i = 0; i < ln->n; i++) {
        double e = ln->e[i] = sharp * (ln->v[i] - top) / scale;
        if (e < MC_FRAC_TAIL_E) {
            tail += e < MC_FRAC_EXP_ZERO ? 0 : fabs(ln->dir[i]);
            continue;
        }
        double t = ln->dir[i] * exp(e);
        d += t;
        abs += fabs(t);
    }
    if (tail == 0)
        return d > 0; /* every term summed */
    double bound = tail * MC_FRAC_TAIL,
           err = 2 * (bound + ln->n * DBL_EPSILON * (abs + bound) + ln->n * 1e-300);
    if (d - err > 0 || d + err < 0)
        return d > 0;
    return slope(ln) > 0;
}

/* The step in [0, 1] along dir that lowers the soft maximum most (bisection on its slope). */
static double line_step(const mc_frac_t *f, const double *dir, const int *act, int nact,
                        double sharp, frac_line_t *ln)
{
    double scale = max_load(f->load, act, nact), lo = 0, hi = 1;
    ln->n = 0;
    ln->still = -HUGE_VAL;
    for (int i = 0; i < nact; i++) {
        int l = act[i];
        if (dir[l] == 0) {
            ln->still = f->load[l] > ln->still ? f->load[l] : ln->still;
            continue;
        }
        ln->load[ln->n] = f->load[l];
        ln->dir[ln->n++] = dir[l];
    }
    if (!rises(ln, 1, sharp, scale))
        return 1;
    for (int k = 0; k < MC_FRAC_SEARCH; k++) {
        double mid = (lo + hi) / 2;
        if (rises(ln, mid, sharp, scale))
            hi = mid;
        else
            lo = mid;
    }
    return lo;
}

/* Each share's costliest column that carries something (-1 if none), at the prices of the last
 * best_response. */
static void worst_used(const mc_frac_t *f, const frac_scratch_t *fs, int *worst)
{
    for (int s = 0; s < f->nshares; s++) {
        double wc = -1;
        worst[s] = -1;
        for (int j = 0; j < f->ncols[s]; j++) {
            int c = f->cols[s][j];
            double cost = f->x[c] > 0 ? fs->cost[c] : -1;
            if (cost > wc) {
                wc = cost;
                worst[s] = c;
            }
        }
    }
}

/* Keeps the split when its busiest link is the least seen so far. */
static void remember(mc_frac_t *f, const int *act, int nact, double *keep)
{
    double v = max_load(f->load, act, nact);
    if (v <= f->value_s) { /* ties too: the soft maximum still fell */
        f->value_s = v;
        memcpy(keep, f->x, sizeof(double) * (size_t)f->capx);
    }
}

void mc_frac_solve(mc_frac_t *f, int iters)
{
    int nl = f->topo->nlinks;
    int *act = mc_xmalloc(sizeof(int) * (size_t)(nl + 1));
    int *best = mc_xmalloc(sizeof(int) * (size_t)(f->nshares + 1));
    int *worst = mc_xmalloc(sizeof(int) * (size_t)(f->nshares + 1));
    double *dir = mc_xcalloc((size_t)nl + 1, sizeof(double));
    double *keep = mc_xmalloc(sizeof(double) * (size_t)(f->capx + 1));
    int nact = active_links(f, act);
    frac_scratch_t fs = {.act = act, .nact = nact,
                         .cost = mc_xcalloc((size_t)f->capx + 1, sizeof(double))};
    pack_columns(f, &fs);
    frac_line_t ln = {.load = mc_xmalloc(sizeof(double) * (size_t)(nact + 1)),
                      .dir = mc_xmalloc(sizeof(double) * (size_t)(nact + 1)),
                      .v = mc_xmalloc(sizeof(double) * (size_t)(nact + 1)),
                      .e = mc_xmalloc(sizeof(double) * (size_t)(nact + 1))};
    /* a share with nothing placed starts on its cheapest column at the current prices (uniform
     * before the first solve) */
    if (max_load(f->price, act, nact) <= 0)
        for (int i = 0; i < nact; i++)
            f->price[act[i]] = 1.0 / nact;
    best_response(f, &fs, best);
    for (int s = 0; s < f->nshares; s++) {
        double sum = 0;
        for (int j = 0; j < f->ncols[s]; j++)
            sum += f->x[f->cols[s][j]];
        if (sum <= 0 && best[s] >= 0)
            f->x[best[s]] = 1;
    }
    compute_load(f);
    f->value_s = max_load(f->load, act, nact);
    f->lower_s = 0;
    memcpy(keep, f->x, sizeof(double) * (size_t)f->capx);
    double sharp = 0;
    for (int it = 0; it < iters && f->value_s > 0; it++) {
        sharp = log(nact + 1.0) *
                MC_FRAC_SHARP_START * pow(MC_FRAC_SHARP_END / MC_FRAC_SHARP_START,
                                          iters > 1 ? (double)it / (iters - 1) : 1);
        set_prices(f, act, nact, sharp);
        double lb = best_response(f, &fs, best);
        if (lb > f->lower_s)
            f->lower_s = lb;
        if (f->value_s - f->lower_s <= MC_FRAC_GAP * f->value_s)
            break;
        /* a Frank-Wolfe step: from the split toward every share's cheapest column */
        for (int i = 0; i < nact; i++)
            dir[act[i]] = -f->load[act[i]];
        for (int s = 0; s < f->nshares; s++)
            if (best[s] >= 0)
                add_load(f, s, best[s], 1, dir);
        double g = line_step(f, dir, act, nact, sharp, &ln);
        for (int s = 0; s < f->nshares && g > 0; s++) {
            for (int j = 0; j < f->ncols[s]; j++)
                f->x[f->cols[s][j]] *= 1 - g;
            if (best[s] >= 0)
                f->x[best[s]] += g;
        }
        for (int i = 0; i < nact && g > 0; i++)
            f->load[act[i]] += g * dir[act[i]];
        remember(f, act, nact, keep);
        /* a pairwise step: what each share carries on its costliest column moves to its
         * cheapest, which Frank-Wolfe steps alone only do slowly (they shrink every column
         * alike), so that columns the optimum does not use leave the split */
        set_prices(f, act, nact, sharp);
        best_response(f, &fs, best);
        worst_used(f, &fs, worst);
        memset(dir, 0, sizeof(double) * (size_t)nl);
        for (int s = 0; s < f->nshares; s++)
            if (best[s] >= 0 && worst[s] >= 0 && worst[s] != best[s]) {
                add_load(f, s, best[s], f->x[worst[s]], dir);
                add_load(f, s, worst[s], -f->x[worst[s]], dir);
            }
        g = line_step(f, dir, act, nact, sharp, &ln);
        for (int s = 0; s < f->nshares && g > 0; s++)
            if (best[s] >= 0 && worst[s] >= 0 && worst[s] != best[s]) {
                double m = g * f->x[worst[s]];
                f->x[worst[s]] -= m;
                f->x[best[s]] += m;
            }
        for (int i = 0; i < nact && g > 0; i++)
            f->load[act[i]] += g * dir[act[i]];
        remember(f, act, nact, keep);
    }
    /* back to the best split seen; its prices are what new trees are priced by */
    memcpy(f->x, keep, sizeof(double) * (size_t)f->capx);
    compute_load(f);
    set_prices(f, act, nact, sharp > 0 ? sharp : log(nact + 1.0) * MC_FRAC_SHARP_END);
    free(ln.load);
    free(ln.dir);
    free(ln.v);
    free(ln.e);
    free(fs.val);
    free(fs.cost);
    free(fs.poff);
    free(fs.pterm);
    free(fs.mlink);
    free(fs.mmult);
    free(fs.depth);
    free(fs.bias);
    free(fs.fill);
    free(act);
    free(best);
    free(worst);
    free(dir);
    free(keep);
}
