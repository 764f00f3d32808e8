/* The simulator's event queue: a binary min-heap on (time, insertion number). */
#include <stdlib.h>

#include "sim/sim_internal.h"
#include "util/util.h"

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

void sim_queue_push(sim_queue_t *q, double t, sim_ev_kind_t kind, int flow, unsigned version)
{
    MC_GROW(q->ev, q->cap, q->n + 1);
    int i = q->n++;
    q->ev[i] = (sim_event_t){t, q->seq++, kind, flow, version};
    for (; i > 0 && before(&q->ev[i], &q->ev[(i - 1) / 2]); i = (i - 1) / 2)
        swap(&q->ev[i], &q->ev[(i - 1) / 2]);
}

sim_event_t sim_queue_pop(sim_queue_t *q)
{
    sim_event_t top = q->ev[0];
    q->ev[0] = q->ev[--q->n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n && before(&q->ev[l], &q->ev[m]))
            m = l;
        if (r < q->n && before(&q->ev[r], &q->ev[m]))
            m = r;
        if (m == i)
            break;
        swap(&q->ev[i], &q->ev[m]);
        i = m;
    }
    return top;
}

void sim_queue_free(sim_queue_t *q)
{
    free(q->ev);
    q->ev = NULL;
    q->n = q->cap = 0;
}
