/* Same-mesh redistribution as a program of collectives (arXiv 2112.01075, docs/collectives.md):
 * the layouts a tensor passes through, one collective step between two consecutive ones, and
 * the lowering of such a program to schedule trees. Shared by the 'collectives' strategy (the
 * paper's normal form) and the 'xla' strategy (XLA's decision ladder). Internal to synth/. */
#ifndef MC_COLLECTIVE_INTERNAL_H
#define MC_COLLECTIVE_INTERNAL_H

#include <stdint.h>

#include "synth/synth.h"

typedef enum {
    COLL_SLICE,     /* keep a sub-tile of what is held: no communication when shapes are even */
    COLL_ALLTOALL,  /* move minor axes of one tensor dimension to another (or any flat change) */
    COLL_PERMUTE,   /* same tile shapes, different devices: one point-to-point permutation */
    COLL_ALLGATHER  /* drop minor axes: every device gathers the tiles of its group */
} coll_kind_t;

const char *coll_kind_name(coll_kind_t k);

#define COLL_MAX_STEPS (2 * MC_MAX_AXES + 4)

typedef struct coll_step {
    coll_kind_t kind;
    unsigned group;     /* mesh axes (bit i = axis i) the step communicates along; a receiver
                         * takes data from a device that differs from it only on these axes
                         * when one holds it, else from any holder */
    mc_layout_t to;     /* the layout after the step, on the program's mesh */
} coll_step_t;

/* A program for one tensor. Layouts live on the common refinement of the source and destination
 * meshes (same devices in the same order), held by the one-mesh task 'space'. */
typedef struct coll_prog {
    mc_task_t *space;
    mc_layout_t src, dst;
    int nsteps;
    coll_step_t steps[COLL_MAX_STEPS];
} coll_prog_t;

/* ---- collective_mesh.c ---- */

/* Sets up p->space, p->src and p->dst for tensor t of the task, with no steps. Refused
 * (MC_ERR_UNSUPPORTED, naming strategy) unless both layouts use the same devices in the same
 * order on meshes whose axis sizes refine to a common one, without explicit shard sizes. */
mc_status_t coll_prog_init(coll_prog_t *p, const mc_task_t *task, int t, const char *strategy,
                           mc_err_t *err);
void coll_prog_free(coll_prog_t *p);
/* Appends a step ending in layout 'to'. */
void coll_prog_push(coll_prog_t *p, coll_kind_t kind, unsigned group, const mc_layout_t *to);
/* Layout i of the program: 0 is the source, i > 0 the result of step i-1. */
const mc_layout_t *coll_prog_layout(const coll_prog_t *p, int i);
/* Bitmask of the mesh axes a layout splits a dimension over. */
unsigned coll_layout_axes(const mc_layout_t *l);
/* Do two layouts give every device the same tile? */
int coll_same_tiles(const coll_prog_t *p, const mc_layout_t *a, const mc_layout_t *b);
/* "slice, all-to-all(x), all-gather(y)" for params and messages; caller frees. */
char *coll_prog_describe(const coll_prog_t *p);

/* ---- collective_plan.c: the paper's normal form ---- */

/* Fills the steps: slices first, then all-to-alls and at most one permute, then all-gathers. */
void coll_plan_normal_form(coll_prog_t *p);

/* ---- collective_lower.c, collective_synth.c ---- */

/* What lowering a program did, per GPU position of the program's mesh (arrays of ndevices). */
typedef struct coll_stats {
    int nphases;                /* phases it used (steps that moved nothing use none) */
    uint64_t *recv_bytes;       /* bytes each device received */
    uint64_t *live_peak_bytes;  /* largest tile it held at any point of the program */
} coll_stats_t;

void coll_stats_free(coll_stats_t *st);

/* Adds the trees that run program p (for tensor t of s's task) to s, starting at phase
 * first_phase: every step is its own phase; a receiver that already holds the bytes (a source
 * holder, or it received them earlier) gets nothing; a multicast crossing hosts sends once per
 * host and fans out inside it. stats may be NULL. */
mc_status_t coll_lower(mc_sched_t *s, const mc_topo_t *topo, int t, const coll_prog_t *p,
                       int first_phase, uint64_t chunk_bytes, coll_stats_t *stats,
                       mc_err_t *err);

/* Lowers one program per tensor (made by plan) into a new schedule for the strategy, with planned
 * rates; params gets the programs' descriptions. */
typedef void (*coll_plan_fn)(coll_prog_t *p);
mc_status_t coll_synth(mc_task_t *task, const mc_topo_t *topo, const mc_synth_opts_t *opts,
                       const char *strategy, coll_plan_fn plan, mc_sched_t **out, mc_err_t *err);

/* ---- collective_memory.c ---- */

/* Largest mc_sched_peak_mem over the task's GPUs; *gpu gets the GPU (may be NULL). */
uint64_t coll_sched_peak(const mc_sched_t *s, const mc_topo_t *topo, int *gpu);
/* The bound the collective form guarantees on a GPU: its source and destination shards (less what
 * they share) plus one intermediate array no larger than max(source tile, destination tile). */
uint64_t coll_mem_bound(const mc_sched_t *s, int gpu);
/* With limit != 0: MC_OK when no GPU's peak exceeds it, else MC_ERR_INVALID naming the strategy,
 * the GPU and the bytes it would need. Meant for mc_synth, so every strategy respects
 * --memory-limit or says it cannot. */
mc_status_t mc_synth_check_memory(const mc_sched_t *s, const mc_topo_t *topo, uint64_t limit,
                                  mc_err_t *err);

#endif
