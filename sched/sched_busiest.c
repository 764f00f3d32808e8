/* The links' loads of a schedule at full bandwidth, and the busiest: a lower bound on its
 * simulated makespan that costs one pass over its routes (the meshcast referee's last race skips
 * tries it rules out; its side trees are priced by the loads). */
#include <stdlib.h>

#include "sched/sched.h"

double *mc_sched_link_loads(const mc_sched_t *s, const mc_topo_t *topo)
{
    double *load = mc_xcalloc((size_t)topo->nlinks + 1, sizeof(double));
    for (int i = 0; i < s->ntrees; i++)
        for (int e = 0; e < s->trees[i].nedges; e++)
            for (int j = 0; j < s->trees[i].edges[e].nlinks; j++) {
                int l = s->trees[i].edges[e].links[j];
                if (topo->links[l].bw > 0)
                    load[l] += (double)s->trees[i].bytes / topo->links[l].bw;
            }
    return load;
}

double mc_sched_busiest_link_s(const mc_sched_t *s, const mc_topo_t *topo)
{
    double *load = mc_sched_link_loads(s, topo), most = 0;
    for (int l = 0; l < topo->nlinks; l++)
        most = load[l] > most ? load[l] : most;
    free(load);
    return most;
}
