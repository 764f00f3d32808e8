/* libFuzzer target for the schedule reader: any bytes either load as a schedule for the paper's
 * cluster or are refused with a message; a loaded schedule validates, simulates and writes back
 * out without a crash or a leak; read with its instances compact, it is refused with the same
 * message or validates with the same report. Seeded with the schedules under tests/data/sched/
 * (symmetry.xml: a template and an instance) and two-phases.xml with ramped chunks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"
#include "sim/sim.h"

static const char cluster[] =
    "<cluster version=\"1\"><nodes type=\"p3.8xlarge\" count=\"5\"/>"
    "<network><switch/></network></cluster>";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mc_topo_t *topo;
    mc_err_t err = {0};
    if (!topo && mc_topo_load_memory(cluster, sizeof cluster - 1, "paper.xml", &topo, &err))
        abort();
    mc_sched_t *s = NULL, *compact = NULL;
    mc_err_t err2 = {0};
    mc_status_t st = mc_sched_parse_memory((const char *)data, size, "fuzz.xml", topo, 1, &s, &err);
    if (mc_sched_parse_memory_compact((const char *)data, size, "fuzz.xml", topo, 1, &compact,
                                      &err2) != st)
        abort();
    if (st != MC_OK) {
        if (!err.msg[0] || strcmp(err.msg, err2.msg))
            abort(); /* every refusal must say why, the same way */
        return 0;
    }
    mc_buf_t violations = {0}, again = {0};
    int n = mc_sched_validate(s, topo, &violations);
    if (mc_sched_validate(compact, topo, &again) != n ||
        strcmp(violations.len ? violations.data : "", again.len ? again.data : ""))
        abort();
    mc_buf_free(&violations);
    mc_buf_free(&again);
    mc_sched_free(compact);
    mc_sim_result_t res = {0};
    if (s->ntrees < 64 && mc_sim_run_totals(s, topo, &res, &err) == MC_OK)
        mc_sim_result_free(&res);
    free(mc_sched_to_xml(s, topo));
    mc_sched_free(s);
    return 0;
}
