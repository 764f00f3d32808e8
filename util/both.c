/* Two independent computations at once: the second on a thread of its own while the caller runs
 * the first (mc_run_both), or while the caller goes on until it joins it (mc_apart_start). The
 * caller guarantees that neither writes what the other reads, so the results are those of running
 * them one after the other, on any number of cores. Where no thread can be made, the second runs
 * at once, before the first. */
#define _GNU_SOURCE /* gettid */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util/util.h"

/* Threads started at normal priority and still at work (mc_apart_running). */
static atomic_int running;

struct mc_apart {
    void (*run)(void *arg);
    void *arg;
    int idle;
    pthread_t th;
};

static void *run_task(void *p)
{
    mc_apart_t *a = p;
    /* Linux keeps a nice value per thread; failing to lower it only costs time */
    if (a->idle)
        (void)setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
    a->run(a->arg);
    if (!a->idle)
        atomic_fetch_sub(&running, 1);
    return NULL;
}

static mc_apart_t *start(void (*run)(void *arg), void *arg, int idle)
{
    mc_apart_t *a = mc_xmalloc(sizeof *a);
    a->run = run;
    a->arg = arg;
    a->idle = idle;
    if (!idle)
        atomic_fetch_add(&running, 1);
    if (pthread_create(&a->th, NULL, run_task, a) != 0) {
        if (!idle)
            atomic_fetch_sub(&running, 1);
        run(arg);
        free(a);
        return NULL;
    }
    return a;
}

mc_apart_t *mc_apart_start(void (*run)(void *arg), void *arg)
{
    return start(run, arg, 0);
}

mc_apart_t *mc_apart_start_idle(void (*run)(void *arg), void *arg)
{
    return start(run, arg, 1);
}

int mc_apart_running(void)
{
    return atomic_load(&running);
}

void mc_apart_join(mc_apart_t *a)
{
    if (!a)
        return;
    pthread_join(a->th, NULL);
    free(a);
}

void mc_run_both(void (*first)(void *arg), void *first_arg, void (*second)(void *arg),
                 void *second_arg)
{
    mc_apart_t *a = mc_apart_start(second, second_arg);
    first(first_arg);
    mc_apart_join(a);
}
