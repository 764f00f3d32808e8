/* Tests of the simulator's event queue (sim/sim_queue.c): whatever the times pushed (ties, times
 * far apart or a few ulps apart, times below the last one popped), events leave in the order of
 * (time, insertion), as from a heap on that pair, with pushes and pops interleaved as a run
 * interleaves them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "sim/sim_internal.h"

#define MAXEV 6000

typedef struct pushed {
    double t;
    int seq;
    int popped;
} pushed_t;

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A time at or after now (sometimes below it: a re-rating at a batch's first instant), drawn so
 * that ties, near ties and long jumps all occur. */
static double draw_time(uint64_t *s, double now)
{
    switch (next_rand(s) % 6) {
    case 0:
        return now;
    case 1:
        return nextafter(now, INFINITY);
    case 2:
        return now > 0 ? nextafter(now, 0) : now;
    case 3:
        return now + (double)(next_rand(s) % 1000) * 1e-9;
    case 4:
        return now * (1 + (double)(next_rand(s) % 1000) * 1e-6) + 1e-7;
    default:
        return now + (double)(next_rand(s) % 100) * 1e-3;
    }
}

/* The unpopped event first by (time, insertion) among ev[0..n). */
static int least_unpopped(const pushed_t *ev, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (!ev[i].popped && (best < 0 || ev[i].t < ev[best].t ||
                              (ev[i].t == ev[best].t && ev[i].seq < ev[best].seq)))
            best = i;
    return best;
}

static void test_order_of_time_then_insertion(void **state)
{
    (void)state;
    static pushed_t ev[MAXEV];
    for (uint64_t seed = 1; seed <= 8; seed++) {
        uint64_t s = seed * 0x9e3779b97f4a7c15ull;
        sim_queue_t q = {0};
        int n = 0, left = 0;
        double now = 0;
        while (n < MAXEV || left > 0) {
            int push = n < MAXEV && (left == 0 || next_rand(&s) % 3 != 0);
            if (push) {
                ev[n] = (pushed_t){draw_time(&s, now), n, 0};
                sim_queue_push(&q, ev[n].t, n % 2 ? SIM_EV_FINISH : SIM_EV_ACTIVATE, n,
                               (unsigned)n * 7);
                n++;
                left++;
                continue;
            }
            int want = least_unpopped(ev, n);
            assert_true(sim_queue_next(&q) == ev[want].t);
            sim_event_t got = sim_queue_pop(&q);
            assert_int_equal(got.flow, want);
            assert_true(got.t == ev[want].t);
            assert_int_equal(got.kind, want % 2 ? SIM_EV_FINISH : SIM_EV_ACTIVATE);
            assert_int_equal(got.version, (unsigned)want * 7);
            ev[want].popped = 1;
            left--;
            now = got.t;
            assert_int_equal(q.n, left);
        }
        sim_queue_free(&q);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_of_time_then_insertion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
