/* The event simulation of one pipeline order. Each stage runs its steps in order, one at a time,
 * each as soon as the stage is free and every transfer it needs has arrived. A finished step
 * issues its group transfers at once (Alpa's emitter sends each output right after the step that
 * makes it); a transfer holds every link its schedule loads, so one that shares a link with a
 * transfer still running waits for it (first come, first served). Transfers are issued in time
 * order, so each one's times are known when it is issued: the only events are the ends of steps,
 * at most one per stage pending. Every bar records what it waited for last, so the critical path
 * can be walked back from the last step and split into compute and communication. */
#include <stdlib.h>

#include "pipeline/pipeline.h"

typedef struct event {
    double t;
    long seq;
    int item;
} event_t;

typedef struct psim {
    const mc_pipe_t *p;
    int S, B, no_comm;
    mc_pipe_op_t *ops;      /* S x 2B, each stage's order */
    int *next, *busy;       /* per stage */
    double *prev_end;
    int *prev_item;
    int *need;              /* per (stage, direction, micro-batch): transfers still to arrive */
    double *arr_t;          /* and when the last one arrived, and which it was */
    int *arr_item;
    double *link_free;
    int *link_holder, nlinks;
    int *pred;              /* per item: what it waited for last, -1 for nothing */
    mc_pipe_span_t *spans;  /* per item */
    event_t *ev;
    int nev, ev_cap;
    long seq;
} psim_t;

/* Items: step k of stage s is s * 2B + k; group g's transfer of micro-batch m is
 * S * 2B + g * B + m. */
static int op_item(const psim_t *m, int s, int k)
{
    return s * 2 * m->B + k;
}

static int slot(const psim_t *m, int s, int backward, int mb)
{
    return (s * 2 + backward) * m->B + mb;
}

static void push(psim_t *m, double t, int item)
{
    MC_GROW(m->ev, m->ev_cap, m->nev + 1);
    m->ev[m->nev++] = (event_t){t, m->seq++, item};
}

/* The earliest event, then the first pushed: with one pending per stage at most, a scan. */
static event_t pop(psim_t *m)
{
    int best = 0;
    for (int i = 1; i < m->nev; i++) {
        const event_t *e = &m->ev[i], *b = &m->ev[best];
        if (e->t < b->t || (e->t == b->t && e->seq < b->seq))
            best = i;
    }
    event_t e = m->ev[best];
    m->ev[best] = m->ev[--m->nev];
    return e;
}

/* Starts stage s's next step when the stage is free and every input has been issued: at now, or
 * when the last input arrives. */
static void try_start(psim_t *m, int s, double now)
{
    if (m->busy[s] || m->next[s] == 2 * m->B)
        return;
    int k = m->next[s];
    const mc_pipe_op_t *op = &m->ops[s * 2 * m->B + k];
    int w = slot(m, s, op->backward, op->mb), item = op_item(m, s, k);
    if (m->need[w] > 0)
        return;
    int waited_for_input = m->arr_item[w] >= 0 && (k == 0 || m->arr_t[w] > m->prev_end[s]);
    m->pred[item] = waited_for_input ? m->arr_item[w] : k ? m->prev_item[s] : -1;
    double start = m->arr_item[w] >= 0 && m->arr_t[w] > now ? m->arr_t[w] : now;
    const mc_pipe_stage_t *st = &m->p->stages[s];
    double dur = op->backward ? st->bwd_s : st->fwd_s;
    m->spans[item] = (mc_pipe_span_t){s, -1, op->mb, op->backward, start, start + dur};
    m->busy[s] = 1;
    push(m, start + dur, item);
}

static void issue(psim_t *m, int g, int mb, double now, int producer)
{
    const mc_pipe_group_t *gr = &m->p->groups[g];
    int item = m->S * 2 * m->B + g * m->B + mb;
    double start = now;
    m->pred[item] = producer;
    for (int i = 0; i < gr->nlinks; i++) {
        int l = gr->links[i];
        if (m->link_free[l] > start) {
            start = m->link_free[l];
            m->pred[item] = m->link_holder[l];
        }
    }
    double end = start + (m->no_comm ? 0 : gr->seconds);
    /* Each receiving stage may go on once its own bytes are in; the links stay held to the end. */
    double arrive[MC_MAX_CONSUMERS];
    for (int k = 0; k <= gr->nmore; k++)
        arrive[k] = m->no_comm ? start : start + (gr->nmore ? gr->arrive_s[k] : gr->seconds);
    for (int i = 0; i < gr->nlinks; i++) {
        m->link_free[gr->links[i]] = end;
        m->link_holder[gr->links[i]] = item;
    }
    m->spans[item] = (mc_pipe_span_t){gr->src, g, mb, gr->backward, start, end};
    for (int k = 0; k <= gr->nmore; k++) {
        int w = slot(m, mc_pipe_group_dst(gr, k), gr->backward, mb);
        m->need[w]--;
        if (m->arr_item[w] < 0 || arrive[k] > m->arr_t[w]) {
            m->arr_t[w] = arrive[k];
            m->arr_item[w] = item;
        }
        try_start(m, mc_pipe_group_dst(gr, k), now);
    }
}

/* Step e.item ended: its stage is free, its outputs leave, and its next step may start. */
static void on_event(psim_t *m, event_t e)
{
    int s = e.item / (2 * m->B);
    const mc_pipe_op_t *op = &m->ops[e.item];
    m->busy[s] = 0;
    m->next[s]++;
    m->prev_end[s] = e.t;
    m->prev_item[s] = e.item;
    for (int g = 0; g < m->p->ngroups; g++)
        if (m->p->groups[g].src == s && m->p->groups[g].backward == op->backward)
            issue(m, g, op->mb, e.t, e.item);
    try_start(m, s, e.t);
}

static void setup(psim_t *m, const mc_pipe_t *p, mc_pipe_order_t order, int no_comm)
{
    int S = p->nstages, B = p->microbatches, nitems = S * 2 * B + p->ngroups * B;
    *m = (psim_t){.p = p, .S = S, .B = B, .no_comm = no_comm};
    m->ops = mc_xmalloc(sizeof(mc_pipe_op_t) * (size_t)(S * 2 * B));
    for (int s = 0; s < S; s++)
        mc_pipe_order_ops(order, S, B, s, &m->ops[s * 2 * B]);
    m->next = mc_xcalloc((size_t)S, sizeof(int));
    m->busy = mc_xcalloc((size_t)S, sizeof(int));
    m->prev_end = mc_xcalloc((size_t)S, sizeof(double));
    m->prev_item = mc_xcalloc((size_t)S, sizeof(int));
    m->need = mc_xcalloc((size_t)(S * 2 * B), sizeof(int));
    m->arr_t = mc_xcalloc((size_t)(S * 2 * B), sizeof(double));
    m->arr_item = mc_xmalloc(sizeof(int) * (size_t)(S * 2 * B));
    for (int i = 0; i < S * 2 * B; i++)
        m->arr_item[i] = -1;
    for (int g = 0; g < p->ngroups; g++) {
        for (int k = 0; k <= p->groups[g].nmore; k++)
            for (int mb = 0; mb < B; mb++)
                m->need[slot(m, mc_pipe_group_dst(&p->groups[g], k), p->groups[g].backward, mb)]++;
        for (int i = 0; i < p->groups[g].nlinks; i++)
            if (p->groups[g].links[i] >= m->nlinks)
                m->nlinks = p->groups[g].links[i] + 1;
    }
    m->link_free = mc_xcalloc((size_t)m->nlinks + 1, sizeof(double));
    m->link_holder = mc_xcalloc((size_t)m->nlinks + 1, sizeof(int));
    m->pred = mc_xmalloc(sizeof(int) * (size_t)nitems);
    m->spans = mc_xcalloc((size_t)nitems, sizeof(mc_pipe_span_t));
}

static void teardown(psim_t *m)
{
    free(m->ops);
    free(m->next);
    free(m->busy);
    free(m->prev_end);
    free(m->prev_item);
    free(m->need);
    free(m->arr_t);
    free(m->arr_item);
    free(m->link_free);
    free(m->link_holder);
    free(m->pred);
    free(m->ev);
}

/* Walks back from the step that ends last, splitting the path into compute and transfers. */
static void critical_path(const psim_t *m, mc_pipe_result_t *res)
{
    int nops = m->S * 2 * m->B, last = 0;
    for (int i = 1; i < nops; i++)
        if (m->spans[i].t1 > m->spans[last].t1)
            last = i;
    res->iteration_s = m->spans[last].t1;
    /* An item counts until its successor on the path starts: its end, except where a transfer
     * to several stages let this one go on before the transfer ended. */
    for (int i = last, next = -1; i >= 0; next = i, i = m->pred[i]) {
        double d = (next < 0 ? m->spans[i].t1 : m->spans[next].t0) - m->spans[i].t0;
        if (i < nops) {
            res->critical_compute_s += d;
        } else {
            res->exposed_comm_s += d;
            res->critical_transfers++;
        }
    }
}

mc_status_t mc_pipe_simulate(const mc_pipe_t *p, mc_pipe_order_t order, int no_comm,
                             mc_pipe_result_t *res, mc_err_t *err)
{
    psim_t m;
    mc_status_t st = MC_OK;
    *res = (mc_pipe_result_t){.order = order};
    if (!no_comm && p->ngroups && !p->timed)
        return mc_err_set(err, MC_ERR_INTERNAL, "%s: the transfers have not been timed", p->name);
    setup(&m, p, order, no_comm);
    for (int s = 0; s < m.S; s++)
        try_start(&m, s, 0);
    while (m.nev)
        on_event(&m, pop(&m));
    for (int s = 0; s < m.S && st == MC_OK; s++)
        if (m.next[s] < 2 * m.B) {
            const mc_pipe_op_t *op = &m.ops[s * 2 * m.B + m.next[s]];
            /* The parser only admits transfers to later stages forward and to earlier ones
             * backward, and both orders finish every forward a backward waits for. */
            st = mc_err_set(err, MC_ERR_INTERNAL, "%s: stage %s deadlocked before the %s of "
                            "micro-batch %d", p->name, p->stages[s].name,
                            op->backward ? "backward" : "forward", op->mb);
        }
    if (st == MC_OK) {
        critical_path(&m, res);
        double work = 0;
        res->peak_stored = mc_xmalloc(sizeof(int) * (size_t)m.S);
        for (int s = 0; s < m.S; s++) {
            work += m.B * (p->stages[s].fwd_s + p->stages[s].bwd_s);
            res->peak_stored[s] = mc_pipe_peak_stored(&m.ops[s * 2 * m.B], 2 * m.B);
        }
        res->bubble = res->iteration_s > 0 ? 1 - work / (m.S * res->iteration_s) : 0;
        res->nspans = m.S * 2 * m.B + p->ngroups * m.B;
        res->spans = m.spans;
        m.spans = NULL;
    }
    free(m.spans);
    teardown(&m);
    return st;
}

void mc_pipe_result_free(mc_pipe_result_t *res)
{
    free(res->peak_stored);
    free(res->spans);
    *res = (mc_pipe_result_t){0};
}
