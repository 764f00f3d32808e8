/* The simulator's event queue, ordered by (time, insertion number). Most events it holds are
 * finishes that a later rate change superseded (96% of the pops of a DGX-1 all-gather), so it is
 * large, and a binary heap's pops were half of that synthesis. Times only grow as the simulation
 * goes, so it is a radix heap (Ahuja, Mehlhorn, Orlin, Tarjan 1990) on the times' bits, by
 * digits of SIM_QUEUE_DIGIT bits: an event is in the bucket of the highest digit in which its
 * time differs from the last popped one and of its value there (bucket 0: equal to it), buckets
 * in the order of the times they hold. A pop takes bucket 0 in insertion order, or else empties
 * the lowest nonempty bucket into lower ones around its least time (an event moves at most once
 * per digit: bit by bit, the events of a DGX-1 all-gather moved 8 times each; in 4-bit digits the
 * events of the MI300X hosts' 1 GiB broadcast moved 2.7 times each, in 8-bit digits 1.9). The
 * lowest nonempty bucket is found from a bitmap of the buckets and one of its words. Every bucket
 * stays in insertion order (pushes append; a bucket is emptied into empty ones, in order), so
 * ties leave in insertion order, as from a heap on (time, insertion number).
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

/* Appends ev (time bits key) to bucket i, b, which has room. */
static void bucket_put(sim_queue_t *q, sim_bucket_t *b, int i, const sim_qev_t *ev, uint64_t key)
{
    if (b->n == 0) {
        b->least = key;
        q->full[i / 64] |= 1ull << (i % 64);
        q->words |= 1ull << (i / 64);
    } else if (key < b->least) {
        b->least = key;
    }
    b->ev[b->n++] = *ev;
}

/* bucket_put into a full bucket, after making room: apart, cold and reached by a tail call, so
 * that bucket_add is a leaf that saves no registers (saving and restoring them was 40% of its
 * instructions, callgrind). */
__attribute__((cold, noinline))
static void bucket_grow_put(sim_queue_t *q, sim_bucket_t *b, int i, const sim_qev_t *ev,
                            uint64_t key)
{
    MC_GROW(b->ev, b->cap, b->n + 1);
    bucket_put(q, b, i, ev, key);
}

static void bucket_add(sim_queue_t *q, const sim_qev_t *ev, uint64_t key)
{
    int i = 0;
    if (key != q->last) {
        int digit = (63 - __builtin_clzll(key ^ q->last)) / SIM_QUEUE_DIGIT;
        i = 1 + (digit << SIM_QUEUE_DIGIT) +
            (int)(key >> (digit * SIM_QUEUE_DIGIT) & ((1u << SIM_QUEUE_DIGIT) - 1));
    }
    sim_bucket_t *b = &q->b[i];
    if (b->n == b->cap)
        bucket_grow_put(q, b, i, ev, key);
    else
        bucket_put(q, b, i, ev, key);
}

static int before(const struct sim_early *a, const struct sim_early *b)
{
    return a->ev.t < b->ev.t || (a->ev.t == b->ev.t && a->seq < b->seq);
}

static void swap(struct sim_early *a, struct sim_early *b)
{
    struct sim_early t = *a;
    *a = *b;
    *b = t;
}

static void early_push(sim_queue_t *q, const sim_qev_t *ev)
{
    MC_GROW(q->early, q->early_cap, q->nearly + 1);
    int i = q->nearly++;
    q->early[i] = (struct sim_early){*ev, q->seq++};
    for (; i > 0 && before(&q->early[i], &q->early[(i - 1) / 2]); i = (i - 1) / 2)
        swap(&q->early[i], &q->early[(i - 1) / 2]);
}

static sim_qev_t early_pop(sim_queue_t *q)
{
    sim_qev_t top = q->early[0].ev;
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
    sim_qev_t ev = {t, kind == SIM_EV_ACTIVATE ? ~flow : flow, version};
    uint64_t key = bits_of(t);
    q->n++;
    if (key < q->last)
        early_push(q, &ev);
    else
        bucket_add(q, &ev, key);
}

/* Marks bucket i empty. */
static void emptied(sim_queue_t *q, int i)
{
    q->full[i / 64] &= ~(1ull << (i % 64));
    if (!q->full[i / 64])
        q->words &= ~(1ull << (i / 64));
}

/* Bucket 0 not empty, unless the queue is (its early heap aside). */
static void refill(sim_queue_t *q)
{
    sim_bucket_t *b0 = &q->b[0];
    if (b0->head < b0->n)
        return;
    b0->head = b0->n = 0;
    emptied(q, 0);
    if (!q->words)
        return;
    int w = __builtin_ctzll(q->words), i = w * 64 + __builtin_ctzll(q->full[w]);
    sim_bucket_t *bi = &q->b[i];
    emptied(q, i);
    q->last = bi->least;
    for (int k = 0; k < bi->n; k++)
        bucket_add(q, &bi->ev[k], bits_of(bi->ev[k].t));
    bi->n = 0;
}

double sim_queue_next(sim_queue_t *q)
{
    if (q->nearly)
        return q->early[0].ev.t;
    refill(q);
    return q->b[0].ev[q->b[0].head].t;
}

sim_event_t sim_queue_pop(sim_queue_t *q)
{
    sim_qev_t ev;
    q->n--;
    if (q->nearly) {
        ev = early_pop(q);
    } else {
        refill(q);
        ev = q->b[0].ev[q->b[0].head++];
    }
    return (sim_event_t){ev.t, ev.code < 0 ? SIM_EV_ACTIVATE : SIM_EV_FINISH,
                         ev.code < 0 ? ~ev.code : ev.code, ev.version};
}

void sim_queue_free(sim_queue_t *q)
{
    for (int i = 0; i < SIM_QUEUE_BUCKETS; i++)
        free(q->b[i].ev);
    free(q->early);
    memset(q, 0, sizeof *q);
}
