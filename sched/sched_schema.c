/* The schedule schema, compiled in so that a meshcast binary validates schedules wherever it is
 * installed (the reader checks each file against it as it streams through it). The assembler's
 * .incbin reads sched/schedule.rng relative to the repository root, where the Makefile runs the compiler (as
 * topo/topo_cluster_schema.c does); tests/unit/test_sched_xml.c checks that the copy is current. */
#include "sched/sched_internal.h"

MC_EMBED_FILE(mc_sched_rng, "sched/schedule.rng");

const char *mc_sched_schema_text(size_t *len)
{
    *len = (size_t)(mc_sched_rng_stop - mc_sched_rng_start);
    return mc_sched_rng_start;
}
