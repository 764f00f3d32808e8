/* Internals shared by the files of sched/: the built-in schema, memory accounting. */
#ifndef MC_SCHED_INTERNAL_H
#define MC_SCHED_INTERNAL_H

#include "sched/sched.h"

/* The text of sched/schedule.rng, compiled in. */
const char *mc_sched_schema_text(size_t *len);

/* Bytes each GPU 0..ngpus-1 receives only to relay (it is not a destination of the piece). */
void mc_sched_relay_bytes(const mc_sched_t *s, int ngpus, uint64_t *relay);
/* A GPU's memory without relayed bytes: source + destination shards - local copies + workspace. */
uint64_t mc_sched_shard_mem(const mc_sched_t *s, int gpu);

#endif
