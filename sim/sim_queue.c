/* The simulator's event queue, ordered by (time, insertion number). Most events it holds are
 * finishes that a later rate change superseded (96% of the pops of a DGX-1 all-gather), so it is
 * large, and a binary heap's pops were half of that synthesis. Times only grow as the simulation
 * goes, so it is a radix heap (Ahuja, Mehlhorn, Orlin, Tarjan 1990) on the times' bits: bucket i
 * holds the events whose time first differs from the last popped one in bit i - 1 (bucket 0:
 * equal to it); a pop takes bucket 0 in insertion order, or else moves the lowest nonempty
 * bucket down around its least time. Every bucket stays in insertion order (pushes append, a
 * bucket is emptied into empty ones in order), so ties leave in insertion order, as from the heap.
 * A time below the last popped one (a flow re-rated at a batch's first instant, after events of
 * the same instant up to rounding) goes to a small binary heap, which pops before the buckets. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim_internal.h"
#include "util/util.h"

/* A time's bits, in the order of the times: non-negative doubles order as their bit patterns. */
static uint64_t bits_of(double t)
{
    uint64_t u = 0;
    if (t > 0)
        memcpy(&u, &t, sizeof u);
    return u;
}

static int bucket_of(uint64_t key, uint64_t last)
{
    return key == last ? 0 : 64 - __builtin_clzll(key ^ last);
}

static void bucket_add(sim_bucket_t *b, const sim_event_t *ev)
{
    MC_GROW(b->ev, b->cap, b->n + 1);
    b->ev[b->n++] = *ev;
}

static int before(const sim_event_t *a, const sim_event_t *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void swap(sim_event_t *a, sim_event_t *b)
{
    sim_event_t t = *a;
    *a = *b;
    *b = t;
}

static void early_push(sim_queue_t *q, const sim_event_t *ev)
{
    MC_GROW(q->early, q->early_cap, q->nearly + 1);
    int i = q->nearly++;
    q->early[i] = *ev;
    for (; i > 0 && before(&q->early[i], &q->early[(i - 1) / 2]); i = (i - 1) / 2)
        swap(&q->early[i], &q->early[(i - 1) / 2]);
}

static sim_event_t early_pop(sim_queue_t *q)
{
    sim_event_t top = q->early[0];
    q->early[0] = q->early[--q->nearly];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->nearly && before(&q->early[l], &q->early[m]))
            m = l;
        if (r < q->nearly && before(&q->early[r], &q->early[m]))
            m = r;
        if (m == i)
            break;
        swap(&q->early[i], &q->early[m]);
        i = m;
    }
    return top;
}

void sim_queue_push(sim_queue_t *q, double t, sim_ev_kind_t kind, int flow, unsigned version)
{
    sim_event_t ev = {t, q->seq++, kind, flow, version};
    uint64_t key = bits_of(t);
    q->n++;
    if (key < q->last)
        early_push(q, &ev);
    else
        bucket_add(&q->b[bucket_of(key, q->last)], &ev);
}

/* Bucket 0 not empty, unless the queue is (its early heap aside). */
static void refill(sim_queue_t *q)
{
    sim_bucket_t *b0 = &q->b[0];
    if (b0->head < b0->n)
        return;
    b0->head = b0->n = 0;
    int i = 1;
    while (i < SIM_QUEUE_BUCKETS && q->b[i].n == 0)
        i++;
    if (i == SIM_QUEUE_BUCKETS)
        return;
    sim_bucket_t *bi = &q->b[i];
    uint64_t least = bits_of(bi->ev[0].t);
    for (int k = 1; k < bi->n; k++)
        if (bits_of(bi->ev[k].t) < least)
            least = bits_of(bi->ev[k].t);
    q->last = least;
    for (int k = 0; k < bi->n; k++)
        bucket_add(&q->b[bucket_of(bits_of(bi->ev[k].t), least)], &bi->ev[k]);
    bi->n = 0;
}

const sim_event_t *sim_queue_peek(sim_queue_t *q)
{
    if (q->nearly)
        return &q->early[0];
    if (!q->n)
        return NULL;
    refill(q);
    return &q->b[0].ev[q->b[0].head];
}

sim_event_t sim_queue_pop(sim_queue_t *q)
{
    q->n--;
    if (q->nearly)
        return early_pop(q);
    refill(q);
    return q->b[0].ev[q->b[0].head++];
}

void sim_queue_free(sim_queue_t *q)
{
    for (int i = 0; i < SIM_QUEUE_BUCKETS; i++)
        free(q->b[i].ev);
    free(q->early);
    long seq = q->seq;
    memset(q, 0, sizeof *q);
    q->seq = seq;
}
