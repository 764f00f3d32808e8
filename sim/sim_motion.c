/* Bytes in motion at a max-min fair rate, as both simulators move them (sim.c, the schedule's;
 * sim_exec.c, the runtime's plans'): a flow's progress when its rate changes. */
#include "sim/sim_internal.h"

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
