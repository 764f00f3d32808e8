/* Bytes in motion at a max-min fair rate, as both simulators move them (sim.c, the schedule's;
 * sim_exec.c, the runtime's plans'): a flow's progress when its rate changes. */
#include "sim/sim_internal.h"

void sim_motion_retime(sim_motion_t *m, double rate, double now, sim_queue_t *q, int flow)
{
    m->rate = rate;
    m->version++;
    sim_queue_push(q, now + m->remaining / m->rate, SIM_EV_FINISH, flow, m->version);
}

void sim_motion_rerate(sim_motion_t *m, double rate, double now, sim_queue_t *q, int flow)
{
    sim_motion_advance(m, now);
    if (rate != m->rate)
        sim_motion_retime(m, rate, now, q, flow);
}
