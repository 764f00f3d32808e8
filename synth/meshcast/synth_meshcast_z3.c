/* The Z3 model of the meshcast strategy (docs/synthesis.md, "The model"): whole units per
 * candidate tree and phase, phase times bounded below by every tree and by the load of every link
 * the phase's trees share, their sum minimized; the best plan so far bounds it from above, so any
 * model Z3 returns, even when stopped by rlimit or the clock, is at least as good. (The
 * relaxation is GLPK's: synth_meshcast_lp.c.) */
#include <stdlib.h>
#include <string.h>
#include <z3.h>

#include "synth/meshcast/mc_meshcast.h"

/* Most (candidate, phase) pairs in the integer model: beyond them Z3's branch and bound rarely
 * improves on the rounded relaxation within seconds. */
#define MC_Z3_MAX_INT_VARS 12

/* Z3's default handler exits the process; this one lets the caller read Z3_get_error_code. */
static void z3_error_handler(Z3_context ctx, Z3_error_code e)
{
    (void)ctx;
    (void)e;
}

typedef struct z3m {
    Z3_context ctx;
    Z3_optimize opt;
    Z3_sort int_s, bool_s;
    Z3_ast *u, *y, *T; /* u[c*K+k], y[c*K+k], T[k] */
    int K;
    int64_t tick;      /* picoseconds per unit of time in the model */
} z3m_t;

/* Times enter the model in ticks, rounded up, so that no coefficient exceeds about this much:
 * exact rational arithmetic on picosecond figures made Z3 crawl without changing any decision
 * that matters. */
#define MC_Z3_MAX_COEF 4096

static int64_t ticks(const z3m_t *m, int64_t ps)
{
    return (ps + m->tick - 1) / m->tick;
}

static int64_t pick_tick(const mc_plan_t *pl)
{
    int64_t most = 1;
    for (int c = 0; c < pl->ncands; c++) {
        if (pl->cands[c].unit_ps > most)
            most = pl->cands[c].unit_ps;
        if (pl->cands[c].fixed_ps > most)
            most = pl->cands[c].fixed_ps;
    }
    return most / MC_Z3_MAX_COEF + 1;
}

/* A context that never exits the process, and an optimizer bounded by rlimit and budget_s. */
static mc_status_t z3m_open(z3m_t *m, const mc_plan_t *pl, int K, mc_err_t *err)
{
    Z3_config cfg = Z3_mk_config();
    Z3_set_param_value(cfg, "model", "true");
    m->ctx = Z3_mk_context(cfg);
    Z3_del_config(cfg);
    if (!m->ctx)
        return mc_err_set(err, MC_ERR_SOLVER, "%s:%d: Z3 could not create a context", __FILE__,
                          __LINE__);
    Z3_set_error_handler(m->ctx, z3_error_handler);
    m->opt = Z3_mk_optimize(m->ctx);
    Z3_optimize_inc_ref(m->ctx, m->opt);
    m->int_s = Z3_mk_int_sort(m->ctx);
    m->bool_s = Z3_mk_bool_sort(m->ctx);
    m->K = K;
    m->tick = pick_tick(pl);
    m->u = mc_xmalloc(sizeof(Z3_ast) * (size_t)(pl->ncands * K + 1));
    m->y = mc_xmalloc(sizeof(Z3_ast) * (size_t)(pl->ncands * K + 1));
    m->T = mc_xmalloc(sizeof(Z3_ast) * (size_t)K);
    return MC_OK;
}

static void z3m_close(z3m_t *m)
{
    free(m->u);
    free(m->y);
    free(m->T);
    if (m->ctx) {
        Z3_optimize_dec_ref(m->ctx, m->opt);
        Z3_del_context(m->ctx);
    }
}

static mc_status_t z3m_error(z3m_t *m, mc_err_t *err, const char *what)
{
    return mc_err_set(err, MC_ERR_SOLVER, "%s:%d: %s failed: %s", __FILE__, __LINE__, what,
                      Z3_get_error_msg(m->ctx, Z3_get_error_code(m->ctx)));
}

static Z3_ast num(z3m_t *m, int64_t v)
{
    return Z3_mk_int64(m->ctx, v, m->int_s);
}

static Z3_ast var(z3m_t *m, const char *prefix, int a, int b, Z3_sort s)
{
    char name[48];
    snprintf(name, sizeof name, "%s_%d_%d", prefix, a, b);
    return Z3_mk_const(m->ctx, Z3_mk_string_symbol(m->ctx, name), s);
}

static void assert_ge(z3m_t *m, Z3_ast a, Z3_ast b)
{
    Z3_optimize_assert(m->ctx, m->opt, Z3_mk_ge(m->ctx, a, b));
}

/* a*x + b*ite(y,1,0), a and b in picoseconds */
static Z3_ast lin2(z3m_t *m, int64_t a, Z3_ast x, int64_t b, Z3_ast y)
{
    Z3_ast ax[2] = {num(m, ticks(m, a)), x};
    Z3_ast terms[2] = {Z3_mk_mul(m->ctx, 2, ax),
                       Z3_mk_ite(m->ctx, y, num(m, ticks(m, b)), num(m, 0))};
    return Z3_mk_add(m->ctx, 2, terms);
}

static void add_vars(z3m_t *m, const mc_plan_t *pl)
{
    int K = m->K;
    for (int c = 0; c < pl->ncands; c++)
        for (int k = 0; k < K; k++) {
            Z3_ast u = var(m, "u", c, k, m->int_s);
            Z3_ast y = var(m, "y", c, k, m->bool_s);
            int U = pl->units[pl->cands[c].piece];
            m->u[c * K + k] = u;
            m->y[c * K + k] = y;
            assert_ge(m, u, num(m, 0));
            /* units flow only through a tree that is switched on (and so holds its links) */
            assert_ge(m, Z3_mk_ite(m->ctx, y, num(m, U), num(m, 0)), u);
        }
    for (int k = 0; k < K; k++) {
        m->T[k] = var(m, "T", k, 0, m->int_s);
        assert_ge(m, m->T[k], num(m, 0));
    }
}

static void add_cover(z3m_t *m, const mc_plan_t *pl)
{
    int K = m->K;
    Z3_ast *terms = mc_xmalloc(sizeof(Z3_ast) * (size_t)(pl->ncands * K + 1));
    for (int p = 0; p < pl->npieces; p++) {
        int n = 0;
        for (int c = 0; c < pl->ncands; c++)
            if (pl->cands[c].piece == p)
                for (int k = 0; k < K; k++)
                    terms[n++] = m->u[c * K + k];
        Z3_ast sum = n ? Z3_mk_add(m->ctx, (unsigned)n, terms) : num(m, 0);
        Z3_optimize_assert(m->ctx, m->opt, Z3_mk_eq(m->ctx, sum, num(m, pl->units[p])));
    }
    free(terms);
}

/* Candidates using each link, as an index list per link (CSR). */
static void link_users(const mc_plan_t *pl, int **first, int **list)
{
    int *cnt = mc_xcalloc((size_t)pl->nlinks + 1, sizeof(int));
    for (int c = 0; c < pl->ncands; c++)
        for (int i = 0; i < pl->cands[c].nlinks; i++)
            cnt[pl->cands[c].links[i] + 1]++;
    for (int l = 0; l < pl->nlinks; l++)
        cnt[l + 1] += cnt[l];
    int *fill = mc_xmalloc(sizeof(int) * (size_t)(pl->nlinks + 1));
    memcpy(fill, cnt, sizeof(int) * (size_t)(pl->nlinks + 1));
    int *lst = mc_xmalloc(sizeof(int) * (size_t)(cnt[pl->nlinks] + 1));
    for (int c = 0; c < pl->ncands; c++)
        for (int i = 0; i < pl->cands[c].nlinks; i++)
            lst[fill[pl->cands[c].links[i]]++] = c;
    free(fill);
    *first = cnt;
    *list = lst;
}

/* What candidate c costs per unit on link l. */
static int64_t link_cost(const mc_plan_t *pl, int c, int l)
{
    const mc_pcand_t *pc = &pl->cands[c];
    for (int j = 0; j < pc->nlinks; j++)
        if (pc->links[j] == l)
            return pc->link_ps[j];
    return 0;
}

/* Same users at the same costs as an earlier link: its constraint would repeat that one. */
static int same_as_earlier(const mc_plan_t *pl, const int *first, const int *list, int l)
{
    int n = first[l + 1] - first[l];
    for (int e = 0; e < l; e++) {
        if (first[e + 1] - first[e] != n ||
            memcmp(list + first[e], list + first[l], sizeof(int) * (size_t)n))
            continue;
        int same = 1;
        for (int i = 0; i < n && same; i++)
            same = link_cost(pl, list[first[l] + i], l) == link_cost(pl, list[first[e] + i], e);
        if (same)
            return 1;
    }
    return 0;
}

/* Trees of one phase share links at planned rates: a phase lasts at least the load of each
 * link it uses. A link only one candidate crosses is covered by that tree's own time. */
static void add_links(z3m_t *m, const mc_plan_t *pl)
{
    int K = m->K;
    int *first, *list;
    link_users(pl, &first, &list);
    Z3_ast *loads = mc_xmalloc(sizeof(Z3_ast) * (size_t)(pl->ncands + 1));
    for (int l = 0; l < pl->nlinks; l++) {
        int n = first[l + 1] - first[l];
        if (n < 2 || same_as_earlier(pl, first, list, l))
            continue;
        for (int k = 0; k < K; k++) {
            for (int i = 0; i < n; i++) {
                int c = list[first[l] + i];
                Z3_ast ax[2] = {num(m, ticks(m, link_cost(pl, c, l))), m->u[c * K + k]};
                loads[i] = Z3_mk_mul(m->ctx, 2, ax);
            }
            assert_ge(m, m->T[k], Z3_mk_add(m->ctx, (unsigned)n, loads));
        }
    }
    free(loads);
    free(first);
    free(list);
}

static void add_times(z3m_t *m, const mc_plan_t *pl, int64_t upper, int64_t lower)
{
    int K = m->K;
    for (int c = 0; c < pl->ncands; c++)
        for (int k = 0; k < K; k++)
            assert_ge(m, m->T[k],
                      lin2(m, pl->cands[c].unit_ps, m->u[c * K + k], pl->cands[c].fixed_ps,
                           m->y[c * K + k]));
    /* Phases carry no dependency on each other: order them slowest first. */
    for (int k = 0; k + 1 < K; k++)
        assert_ge(m, m->T[k], m->T[k + 1]);
    Z3_ast total = Z3_mk_add(m->ctx, (unsigned)K, m->T);
    /* the seed stays feasible although every coefficient was rounded up by under a tick per unit
     * and per tree */
    int64_t slack = pl->ncands * K;
    for (int p = 0; p < pl->npieces; p++)
        slack += pl->units[p];
    Z3_optimize_assert(m->ctx, m->opt, Z3_mk_le(m->ctx, total, num(m, ticks(m, upper) + slack)));
    /* implied, but it lets the optimizer stop as soon as it meets the bound */
    assert_ge(m, total, num(m, lower / m->tick));
    Z3_optimize_minimize(m->ctx, m->opt, total);
}

static void set_limits(z3m_t *m, uint64_t rlimit, double budget_s)
{
    Z3_params p = Z3_mk_params(m->ctx);
    Z3_params_inc_ref(m->ctx, p);
    if (rlimit)
        Z3_params_set_uint(m->ctx, p, Z3_mk_string_symbol(m->ctx, "rlimit"),
                           rlimit > 4000000000u ? 4000000000u : (unsigned)rlimit);
    if (budget_s > 0) {
        double ms = budget_s * 1000.0;
        Z3_params_set_uint(m->ctx, p, Z3_mk_string_symbol(m->ctx, "timeout"),
                           ms > 4e9 ? 4000000000u : (unsigned)(ms < 1 ? 1 : ms));
    }
    Z3_optimize_set_params(m->ctx, m->opt, p);
    Z3_params_dec_ref(m->ctx, p);
}

static uint64_t rlimit_count(z3m_t *m)
{
    Z3_stats st = Z3_optimize_get_statistics(m->ctx, m->opt);
    Z3_stats_inc_ref(m->ctx, st);
    uint64_t v = 0;
    for (unsigned i = 0; i < Z3_stats_size(m->ctx, st); i++)
        if (!strcmp(Z3_stats_get_key(m->ctx, st, i), "rlimit count"))
            v = Z3_stats_is_uint(m->ctx, st, i)
                    ? Z3_stats_get_uint_value(m->ctx, st, i)
                    : (uint64_t)Z3_stats_get_double_value(m->ctx, st, i);
    Z3_stats_dec_ref(m->ctx, st);
    return v;
}

/* Reads the units out of Z3's model; returns 0 when every value was a number. */
static int read_model(z3m_t *m, const mc_plan_t *pl, mc_plan_sol_t *sol)
{
    Z3_model mdl = Z3_optimize_get_model(m->ctx, m->opt);
    if (!mdl || Z3_get_error_code(m->ctx) != Z3_OK)
        return -1;
    Z3_model_inc_ref(m->ctx, mdl);
    int bad = 0;
    sol->nphases = m->K;
    sol->units = mc_xcalloc((size_t)pl->ncands * (size_t)m->K, sizeof(int));
    for (int i = 0; i < pl->ncands * m->K && !bad; i++) {
        Z3_ast v = NULL;
        int64_t x = 0;
        if (!Z3_model_eval(m->ctx, mdl, m->u[i], true, &v) || !v ||
            !Z3_get_numeral_int64(m->ctx, v, &x))
            bad = 1;
        sol->units[i] = (int)x;
    }
    Z3_model_dec_ref(m->ctx, mdl);
    return bad ? -1 : 0;
}

/* The integer model looks only for plans at least 1/MC_Z3_MIN_GAIN below its seed's estimate.
 * Closing the last percent is where Z3 spends its time: on 12 trees of a 3-tensor all-gather
 * over two V100s (a p3.8xlarge under leaves), proving that no plan beats 28,883 ticks took it
 * 80 s, and each refinement ran out of its rlimit (0.9 s) for nothing, where proving that none
 * lies 1/64 below the seed's 29,188 took 3 ms. */
#define MC_Z3_MIN_GAIN 64

mc_status_t mc_plan_solve_z3(const mc_plan_t *pl, const mc_plan_sol_t *seed, int64_t lower,
                             uint64_t rlimit, double budget_s, mc_plan_sol_t *out,
                             mc_z3_stats_t *stats, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    z3m_t m = {0};
    mc_plan_sol_t got = {0};
    memset(stats, 0, sizeof(*stats));
    stats->status = MC_Z3_NONE;
    int K = seed->nphases;
    if (seed->est_ps <= lower) {
        stats->status = MC_Z3_AT_BOUND;
        snprintf(stats->reason, sizeof stats->reason, "the seed meets the lower bound");
        mc_plan_sol_copy(pl, seed, out);
        return MC_OK;
    }
    if ((int64_t)pl->ncands * K > MC_Z3_MAX_INT_VARS) {
        snprintf(stats->reason, sizeof stats->reason, "model too large (%d trees x %d phases)",
                 pl->ncands, K);
        mc_plan_sol_copy(pl, seed, out);
        return MC_OK;
    }
    MC_CHECK_GOTO(z3m_open(&m, pl, K, err), out, st);
    add_vars(&m, pl);
    add_cover(&m, pl);
    add_links(&m, pl);
    add_times(&m, pl, seed->est_ps - seed->est_ps / MC_Z3_MIN_GAIN, lower);
    set_limits(&m, rlimit, budget_s);
    if (Z3_get_error_code(m.ctx) != Z3_OK) {
        st = z3m_error(&m, err, "building the Z3 model");
        goto out;
    }

    Z3_lbool r = Z3_optimize_check(m.ctx, m.opt, 0, NULL);
    stats->rlimit_used = rlimit_count(&m);
    if (r == Z3_L_FALSE) {
        snprintf(stats->reason, sizeof stats->reason,
                 "no plan beats the seed by 1/%d with %d phases", MC_Z3_MIN_GAIN, m.K);
    } else {
        if (r == Z3_L_UNDEF)
            snprintf(stats->reason, sizeof stats->reason, "%s",
                     Z3_optimize_get_reason_unknown(m.ctx, m.opt));
        if (read_model(&m, pl, &got) == 0 && mc_plan_check(pl, &got) == 0) {
            stats->status = r == Z3_L_TRUE ? MC_Z3_OPTIMAL : MC_Z3_STOPPED;
            mc_plan_sol_compact(pl, &got);
            mc_plan_check(pl, &got);
        }
    }
    if (stats->status != MC_Z3_NONE && got.est_ps <= seed->est_ps) {
        *out = got;
        got.units = NULL;
    } else {
        mc_plan_sol_copy(pl, seed, out);
    }
out:
    mc_plan_sol_free(&got);
    z3m_close(&m);
    return st;
}
