/* Two independent computations at once: the second on a thread of its own while the caller runs
 * the first (mc_run_both), or while the caller goes on until it joins it (mc_apart_start). The
 * caller guarantees that neither writes what the other reads, so the results are those of running
 * them one after the other, on any number of cores. Where no thread can be made, the second runs
 * after the first, or at once. */
#include <pthread.h>
#include <stdlib.h>

#include "util/util.h"

typedef struct both_task {
    void (*run)(void *arg);
    void *arg;
} both_task_t;

static void *run_task(void *p)
{
    both_task_t *t = p;
    t->run(t->arg);
    return NULL;
}

void mc_run_both(void (*first)(void *arg), void *first_arg, void (*second)(void *arg),
                 void *second_arg)
{
    both_task_t t = {second, second_arg};
    pthread_t th;
    if (pthread_create(&th, NULL, run_task, &t) != 0) {
        first(first_arg);
        second(second_arg);
        return;
    }
    first(first_arg);
    pthread_join(th, NULL);
}

struct mc_apart {
    both_task_t task;
    pthread_t th;
};

mc_apart_t *mc_apart_start(void (*run)(void *arg), void *arg)
{
    mc_apart_t *a = mc_xmalloc(sizeof *a);
    a->task = (both_task_t){run, arg};
    if (pthread_create(&a->th, NULL, run_task, &a->task) != 0) {
        run(arg);
        free(a);
        return NULL;
    }
    return a;
}

void mc_apart_join(mc_apart_t *a)
{
    if (!a)
        return;
    pthread_join(a->th, NULL);
    free(a);
}
