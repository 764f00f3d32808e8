/* Outcomes of bounded simulations remembered by schedule (mc_sim_run_memo). The meshcast
 * strategy's referee builds the same schedule from different recipes (the plan made whole is
 * often the solved plan itself, a stagger or a channel spread may change nothing): on a 1 GiB
 * all-gather over 8 OCI A100 boxes 11 of its 40 simulations, 8% of their work, timed a schedule
 * it had timed already. A run's outcome under an allowance W and a horizon H follows from an
 * earlier run of the same schedule, since the simulation is deterministic and stops only at the
 * end of a batch of events, once its work passes W or its simulated time passes H:
 * - a run that ended, having used w work for n flows at makespan t, ends the same way under any
 *   W >= max(w, 4n) (MC_SIM_WORK_PER_FLOW: the least it starts with) and H = 0 or H >= t;
 * - a run that stopped past its horizon H, having used w <= its allowance, stops at the same
 *   batch under the same H and any W >= max(w, 4n).
 * - a run that its allowance W0 stopped, with no horizon, is kept as it stopped (within
 *   MEMO_PAUSED_FLOWS) and goes on under an allowance W >= W0, or none, with no horizon: it then
 *   ends or stops exactly where a run begun afresh would, since up to where it stopped it passed
 *   every check of W0 <= W. synth's summary times the schedule the referee returned on its
 *   estimate when its allowance did not cover it (an 84-tree plan of a 1 GiB all-gather over four
 *   RTX 3090 boxes: 29.5 M units, of which the referee had run 7 M).
 * A run cut (mc_sim_run_memo_cut: stopped early, charged as its allowance would stop it) is
 * remembered as one its allowance stopped: it is charged more than its allowance, so it is never
 * taken for a run stopped past its horizon; kept with no horizon, it goes on, uncut, under as
 * much allowance or more. A remembered end decides a later run as it does without the cut: the
 * run ended within that much work, which is what the cut foretold it would not.
 * A run made apart (mc_sim_run_apart, on another thread) that ended is handed in as such
 * (mc_sim_memo_put_ended): it is the run the memo would have made with that allowance. Runs made
 * through a memo of their own (races made ahead on another thread) are handed to another with
 * mc_sim_memo_take, each as the memo that made it knew it.
 * The schedules are compared in full (what the simulator reads of them), not by a hash alone. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "sim/sim_internal.h"
#include "util/index.h"

/* Words of keys kept at most (32 MB): larger schedules are simulated every time. */
#define MEMO_MAX_WORDS (4 << 20)
/* Flows of the runs kept stopped at their allowance, at most (about 60 bytes each). */
#define MEMO_PAUSED_FLOWS (1 << 19)

typedef struct memo_entry {
    size_t key, len;     /* its key in keys[] */
    int ended;           /* 1: ran to the end; 0: stopped past `horizon`, or at `allowance` */
    double horizon, t;   /* t: the makespan, or the time reached when stopped */
    int64_t work, flows;
    int64_t allowance;   /* stopped at it with no horizon (0: not so) ... */
    sim_t *paused;       /* ... and kept there to go on, or NULL */
    int64_t made_under;  /* the allowance it was run under, and its floor (0: uncut), which */
    double made_floor;   /* decide whether it decides a run as a run begun afresh would (aside) */
} memo_entry_t;

struct mc_sim_memo {
    memo_entry_t *e;
    int n, cap;
    mc_index_t index;      /* of the entries by the hash of their key */
    int64_t paused_flows;  /* of the runs kept stopped */
    long resumed;          /* runs taken on from where an allowance stopped them */
    long ahead;            /* runs decided from runs made ahead (mc_sim_run_memo_ahead, aside) */
    mc_sim_memo_t *aside;  /* runs made ahead that were not m's own (mc_sim_memo_set_aside) */
    int64_t *keys;
    size_t nkeys, keys_cap;
    int64_t *scratch;
    size_t nscratch, scratch_cap;
};

mc_sim_memo_t *mc_sim_memo_new(void)
{
    return mc_xcalloc(1, sizeof(mc_sim_memo_t));
}

void mc_sim_memo_free(mc_sim_memo_t *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        sim_run_free(m->e[i].paused);
    free(m->e);
    mc_index_free(&m->index);
    free(m->keys);
    free(m->scratch);
    mc_sim_memo_free(m->aside);
    free(m);
}

static void put(mc_sim_memo_t *m, int64_t x)
{
    if (m->nscratch == m->scratch_cap) {
        m->scratch_cap = m->scratch_cap ? 2 * m->scratch_cap : 1024;
        m->scratch = mc_xrealloc(m->scratch, sizeof(int64_t) * m->scratch_cap);
    }
    m->scratch[m->nscratch++] = x;
}

/* The schedule as the simulator reads it, into m->scratch. */
static void key_of(mc_sim_memo_t *m, const mc_sched_t *s)
{
    m->nscratch = 0;
    put(m, s->nphases);
    put(m, s->ntrees);
    for (int t = 0; t < s->ntrees; t++) {
        const mc_tree_t *tr = &s->trees[t];
        put(m, tr->phase);
        put(m, tr->root);
        put(m, tr->nchunks);
        put(m, tr->inflight);
        put(m, tr->ramp);
        put(m, (int64_t)tr->bytes);
        put(m, tr->nedges);
        for (int e = 0; e < tr->nedges; e++) {
            const mc_tree_edge_t *ed = &tr->edges[e];
            put(m, ed->parent);
            put(m, ed->child);
            put(m, ed->nlinks);
            for (int j = 0; j < ed->nlinks; j++)
                put(m, ed->links[j]);
        }
    }
}

/* Whether entry e of `in` (m, or m's aside) is of the schedule in m's scratch. */
static int same_key(const mc_sim_memo_t *in, const memo_entry_t *e, const mc_sim_memo_t *m)
{
    return e->len == m->nscratch &&
           memcmp(in->keys + e->key, m->scratch, sizeof(int64_t) * e->len) == 0;
}

/* The outcome remembered in `in` (m, or m's aside) that decides this run of the schedule in m's
 * scratch, or NULL. work_left NULL: no allowance, under which a run that ended ends the same way.
 * One of the aside decides it only as a run begun afresh would: one that ended or passed its
 * horizon under an allowance W0 and a floor F0 passed the cut's checks at every batch a quarter
 * of W0 into it, and under W >= W0 and a floor F <= F0 the cut checks fewer batches, each with a
 * laxer margin. */
static const memo_entry_t *find(const mc_sim_memo_t *in, const mc_sim_memo_t *m, uint64_t hash,
                                const int64_t *work_left, double horizon, double floor_s)
{
    size_t at = mc_index_start(&in->index, hash);
    for (int i; (i = mc_index_next(&in->index, hash, &at)) >= 0;) {
        const memo_entry_t *e = &in->e[i];
        if (e->allowance || !same_key(in, e, m))
            continue;
        if (work_left ? *work_left < e->work || *work_left < MC_SIM_WORK_PER_FLOW * e->flows
                      : !e->ended)
            continue;
        if (in != m && (!work_left || *work_left < e->made_under || floor_s > e->made_floor))
            continue;
        if (e->ended ? horizon == 0 || e->t <= horizon : horizon == e->horizon)
            return e;
    }
    return NULL;
}

/* The run of this schedule kept where an allowance of at most work_left (NULL: none) stopped
 * it, or NULL. */
static memo_entry_t *find_paused(mc_sim_memo_t *m, uint64_t hash, const int64_t *work_left)
{
    size_t at = mc_index_start(&m->index, hash);
    for (int i; (i = mc_index_next(&m->index, hash, &at)) >= 0;) {
        memo_entry_t *e = &m->e[i];
        if (e->paused && (!work_left || *work_left >= e->allowance) && same_key(m, e, m))
            return e;
    }
    return NULL;
}

static memo_entry_t *remember(mc_sim_memo_t *m, uint64_t hash, int ended, double horizon,
                              double t, int64_t work, int64_t flows, int64_t made_under,
                              double made_floor)
{
    if (m->nkeys + m->nscratch > MEMO_MAX_WORDS)
        return NULL;
    if (m->nkeys + m->nscratch > m->keys_cap) {
        m->keys_cap = 2 * (m->nkeys + m->nscratch);
        m->keys = mc_xrealloc(m->keys, sizeof(int64_t) * m->keys_cap);
    }
    memcpy(m->keys + m->nkeys, m->scratch, sizeof(int64_t) * m->nscratch);
    MC_GROW(m->e, m->cap, m->n + 1);
    mc_index_add(&m->index, hash, m->n);
    m->e[m->n] = (memo_entry_t){m->nkeys, m->nscratch, ended, horizon, t, work, flows, 0,
                                NULL, made_under, made_floor};
    m->nkeys += m->nscratch;
    return &m->e[m->n++];
}

/* Takes on the run kept in e under the allowance *work_left (NULL: none), with no horizon; e
 * then holds its new outcome. */
static mc_status_t resume(mc_sim_memo_t *m, memo_entry_t *e, const mc_sched_t *s,
                          const mc_topo_t *topo, int64_t *work_left, mc_sim_result_t *res,
                          mc_err_t *err)
{
    /* none: an allowance it never reaches, so that its work is counted (the same run) */
    int64_t none = INT64_MAX / 8, *left = work_left ? work_left : &none, before = *left;
    m->paused_flows -= e->flows;
    m->resumed++;
    mc_status_t st = sim_run_until_counted(s, topo, left, 0, 0, NULL, &e->paused, res, err);
    e->t = res->makespan_s;
    e->work = before - *left;
    e->made_under = before;
    e->made_floor = 0; /* it went on uncut */
    if (st == MC_OK) {
        e->ended = 1;
        e->allowance = 0;
    } else if (e->paused) { /* stopped again */
        m->paused_flows += e->flows;
        e->allowance = before;
    }
    return st;
}

void mc_sim_memo_put_ended(mc_sim_memo_t *m, const mc_sched_t *s, double makespan_s,
                           int64_t work, int64_t flows)
{
    key_of(m, s);
    /* its allowance is not told: it decides no run aside */
    remember(m, mc_hash_words(m->scratch, m->nscratch), 1, 0, makespan_s, work, flows, INT64_MAX,
             0);
}

void mc_sim_memo_take(mc_sim_memo_t *m, mc_sim_memo_t *from)
{
    for (int i = 0; i < from->n; i++) {
        memo_entry_t *e = &from->e[i];
        /* a run stopped by its allowance is known only while it is kept (as in
         * mc_sim_run_memo_cut) */
        if (e->allowance && (!e->paused || m->paused_flows + e->flows > MEMO_PAUSED_FLOWS))
            continue;
        m->nscratch = 0;
        for (size_t k = 0; k < e->len; k++)
            put(m, from->keys[e->key + k]);
        memo_entry_t *n = remember(m, mc_hash_words(m->scratch, m->nscratch), e->ended,
                                   e->horizon, e->t, e->work, e->flows, e->made_under,
                                   e->made_floor);
        if (n && e->allowance) {
            n->allowance = e->allowance;
            n->paused = e->paused;
            m->paused_flows += e->flows;
            e->paused = NULL;
        }
    }
    m->resumed += from->resumed;
    m->ahead += from->ahead;
    if (from->aside) {
        mc_sim_memo_t *aside = from->aside;
        from->aside = NULL;
        mc_sim_memo_set_aside(m, aside);
    }
    mc_sim_memo_free(from);
}

/* Whether `in` (m or its aside) has a run, ended or stopped past a horizon, of the schedule in
 * m's scratch (hash: its hash). */
static int has_run(const mc_sim_memo_t *in, const mc_sim_memo_t *m, uint64_t hash)
{
    size_t at = mc_index_start(&in->index, hash);
    for (int i; (i = mc_index_next(&in->index, hash, &at)) >= 0;)
        if (!in->e[i].allowance && same_key(in, &in->e[i], m))
            return 1;
    return 0;
}

int mc_sim_memo_has(mc_sim_memo_t *m, const mc_sched_t *s)
{
    key_of(m, s);
    uint64_t hash = mc_hash_words(m->scratch, m->nscratch);
    return has_run(m, m, hash) || (m->aside && has_run(m->aside, m, hash));
}

int mc_sim_memo_same(mc_sim_memo_t *m, const mc_sched_t *a, const mc_sched_t *b)
{
    key_of(m, a);
    size_t n = m->nscratch;
    int64_t *ka = mc_xmalloc(sizeof(int64_t) * (n + 1));
    memcpy(ka, m->scratch, sizeof(int64_t) * n);
    key_of(m, b);
    int same = m->nscratch == n && memcmp(ka, m->scratch, sizeof(int64_t) * n) == 0;
    free(ka);
    return same;
}

void mc_sim_memo_set_aside(mc_sim_memo_t *m, mc_sim_memo_t *from)
{
    if (!m->aside)
        m->aside = mc_sim_memo_new();
    if (from->aside) { /* one level of runs aside */
        mc_sim_memo_t *aside = from->aside;
        from->aside = NULL;
        mc_sim_memo_take(m->aside, aside);
    }
    mc_sim_memo_take(m->aside, from);
}

long mc_sim_memo_resumed(const mc_sim_memo_t *m)
{
    return m->resumed;
}

long mc_sim_memo_ahead_taken(const mc_sim_memo_t *m)
{
    return m->ahead;
}

/* The outcome of a run that remembered entry e decides: its makespan (the only field of *res
 * set), its work taken from *work_left (NULL: none), ended or stopped past horizon_s. */
static mc_status_t told(const memo_entry_t *e, int64_t *work_left, double horizon_s,
                        mc_sim_result_t *res, mc_err_t *err)
{
    memset(res, 0, sizeof *res);
    res->makespan_s = e->t;
    if (work_left)
        *work_left -= e->work;
    return e->ended ? MC_OK
                    : mc_err_set(err, MC_ERR_TIMEOUT, "sim: stopped past its horizon (%g s)",
                                 horizon_s);
}

/* mc_sim_run_memo_cut, the run of s made ahead as `ahead` where not NULL. */
static mc_status_t run_memo(mc_sim_memo_t *m, const mc_sched_t *s, mc_sim_ahead_t *ahead,
                            const mc_topo_t *topo, int64_t *work_left, double horizon_s,
                            double floor_s, mc_sim_result_t *res, mc_err_t *err)
{
    key_of(m, s);
    uint64_t hash = mc_hash_words(m->scratch, m->nscratch);
    const memo_entry_t *e = find(m, m, hash, work_left, horizon_s, floor_s);
    if (e)
        return told(e, work_left, horizon_s, res, err);
    memo_entry_t *p = horizon_s == 0 ? find_paused(m, hash, work_left) : NULL;
    if (p)
        return resume(m, p, s, topo, work_left, res, err);
    if (!work_left) /* its work is not counted: nothing to remember */
        return sim_run_until_counted(s, topo, NULL, horizon_s, 0, NULL, NULL, res, err);
    int64_t before = *work_left, flows = 0;
    sim_t *paused = NULL;
    mc_status_t st;
    const memo_entry_t *a = m->aside ? find(m->aside, m, hash, work_left, horizon_s, floor_s)
                                     : NULL;
    if (a) { /* as the run begun afresh; remembered as it would be */
        m->ahead++;
        flows = a->flows;
        st = told(a, work_left, horizon_s, res, err);
    } else if (ahead && sim_ahead_decide(ahead, work_left, horizon_s, floor_s, &flows, &paused,
                                         res, &st, err))
        m->ahead++;
    else
        st = sim_run_until_counted(s, topo, work_left, horizon_s, floor_s, &flows,
                                   horizon_s == 0 ? &paused : NULL, res, err);
    int64_t used = before - *work_left;
    if (st == MC_OK) {
        remember(m, hash, 1, horizon_s, res->makespan_s, used, flows, before, floor_s);
    } else if (st == MC_ERR_TIMEOUT && used > 0 && used <= before) {
        remember(m, hash, 0, horizon_s, res->makespan_s, used, flows, before, floor_s);
    } else if (paused && m->paused_flows + flows <= MEMO_PAUSED_FLOWS) {
        memo_entry_t *n = remember(m, hash, 0, 0, res->makespan_s, used, flows, before, floor_s);
        if (n) {
            n->allowance = before;
            n->paused = paused;
            m->paused_flows += flows;
            paused = NULL;
        }
    }
    sim_run_free(paused);
    return st;
}

mc_status_t mc_sim_run_memo(mc_sim_memo_t *m, const mc_sched_t *s, const mc_topo_t *topo,
                            int64_t *work_left, double horizon_s, mc_sim_result_t *res,
                            mc_err_t *err)
{
    return mc_sim_run_memo_cut(m, s, topo, work_left, horizon_s, 0, res, err);
}

mc_status_t mc_sim_run_memo_cut(mc_sim_memo_t *m, const mc_sched_t *s, const mc_topo_t *topo,
                                int64_t *work_left, double horizon_s, double floor_s,
                                mc_sim_result_t *res, mc_err_t *err)
{
    return run_memo(m, s, NULL, topo, work_left, horizon_s, floor_s, res, err);
}

mc_status_t mc_sim_run_memo_ahead(mc_sim_memo_t *m, mc_sim_ahead_t *a, const mc_topo_t *topo,
                                  int64_t *work_left, double horizon_s, double floor_s,
                                  mc_sim_result_t *res, mc_err_t *err)
{
    mc_status_t st = run_memo(m, mc_sim_ahead_sched(a), a, topo, work_left, horizon_s, floor_s,
                              res, err);
    mc_sim_ahead_free(a);
    return st;
}
