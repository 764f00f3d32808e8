/* Bytes in motion at a max-min fair rate, as both simulators move them (sim.c, the schedule's;
 * sim_exec.c, the runtime's plans'): the max-min solver's input for the flows being re-rated, and
 * a flow's progress when its rate changes. */
#include <string.h>

#include "sim/sim_internal.h"
#include "util/util.h"

void sim_motion_pack(int n, sim_path_fn path, const void *ctx, int *off, int **links, int *cap)
{
    int nl, total = 0;
    for (int i = 0; i < n; i++) {
        path(ctx, i, &nl);
        total += nl;
    }
    MC_GROW(*links, *cap, total + 1);
    off[0] = 0;
    for (int i = 0; i < n; i++) {
        const int *l = path(ctx, i, &nl);
        memcpy(*links + off[i], l, sizeof(int) * (size_t)nl);
        off[i + 1] = off[i] + nl;
    }
}

void sim_motion_rerate(sim_motion_t *m, double rate, double now, sim_queue_t *q, int flow)
{
    m->remaining -= m->rate * (now - m->t_upd);
    if (m->remaining < 0)
        m->remaining = 0;
    m->t_upd = now;
    if (rate == m->rate)
        return;
    m->rate = rate;
    m->version++;
    sim_queue_push(q, now + m->remaining / m->rate, SIM_EV_FINISH, flow, m->version);
}
