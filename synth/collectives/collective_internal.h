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
/* Shards of a dimension: the product of its axes' sizes. */
int64_t coll_dim_shards(const coll_prog_t *p, const mc_dim_spec_t *d);
/* Do two layouts split every dimension into as many shards? */
int coll_same_tile_shapes(const coll_prog_t *p, const mc_layout_t *a, const mc_layout_t *b);
/* Do two layouts give every device the same tile? */
int coll_same_tiles(const coll_prog_t *p, const mc_layout_t *a, const mc_layout_t *b);
/* "slice, all-to-all(x), all-gather(y)" for params and messages; caller frees. */
char *coll_prog_describe(const coll_prog_t *p);

/* ---- collective_plan.c: the paper's normal form ---- */

/* Fills the steps: slices first, then all-to-alls and at most one permute, then all-gathers;
 * each all-to-all moves a block of minor axes from one dimension to another (typed steps). */
void coll_plan_normal_form(coll_prog_t *p);
/* Fuses consecutive flat steps (all-to-alls, the permute) into one. */
void coll_plan_fuse_flat(coll_prog_t *p);
/* What the 'collectives' strategy runs: the normal form with its flat steps fused. */
void coll_plan_collectives(coll_prog_t *p);
/* ---- synth_xla.c ---- */
/* XLA's decision ladder (ReshardNoCache), first match wins. */
void coll_plan_xla(coll_prog_t *p);

/* ---- collective_walk.c: a program walked cell by cell ---- */

/* The tensor is cut into cells along the boundaries of every layout of the program: each tile
 * of each layout is a box of whole cells and each cell lies in at most one piece. */
typedef struct coll_xfer {
    int64_t cell;
    int step;
    int from, to;   /* positions in the program's mesh */
} coll_xfer_t;

typedef struct coll_walk {
    const coll_prog_t *p;
    int nd, ndev;
    const int *devices;         /* global GPU id of each position */
    int ncut[MC_MAX_DIMS];      /* cells per dimension */
    int64_t *cut[MC_MAX_DIMS];  /* their boundaries */
    int64_t stride[MC_MAX_DIMS], ncells;
    int *cell_piece;            /* piece of each cell, -1 when no device needs it from another */
    coll_xfer_t *xf;            /* every transfer, by step */
    int nxf, xf_cap;
    uint64_t *recv_bytes;       /* per position: bytes received */
    uint64_t *live_peak_bytes;  /* per position: largest tile held at any point */
} coll_walk_t;

/* Walks program p of tensor t step by step: a device whose next tile holds a cell its current
 * one does not receives it from a device that holds it now (of its group for the step when one
 * does, on its own host if possible, the least loaded otherwise), unless it already has the
 * bytes (it holds the piece in its source shard or received them earlier). */
mc_status_t coll_walk(coll_walk_t *w, const mc_task_t *task, int t, const coll_prog_t *p,
                      const mc_topo_t *topo, const char *strategy, mc_err_t *err);
void coll_walk_free(coll_walk_t *w);
void coll_walk_cell_box(const coll_walk_t *w, int64_t cell, mc_box_t *box);

/* ---- collective_lower.c, collective_synth.c ---- */

/* What lowering a program did, per GPU position of the program's mesh (arrays of ndevices). */
typedef struct coll_stats {
    int nphases;                /* phases it used */
    uint64_t *recv_bytes;       /* bytes each device received */
    uint64_t *live_peak_bytes;  /* largest tile it held at any point of the program */
} coll_stats_t;

void coll_stats_free(coll_stats_t *st);

/* Adds the trees that run program p (for tensor t of s's task) to s, starting at phase
 * first_phase. Each cell's transfers form a tree from a holder: a device that receives bytes it
 * does not need forwards them inside the same tree (so every root holds or needs the piece, as
 * the runtime requires), and the tree runs in the phase of its first step; each step that roots
 * a tree is a phase. Trees of cells with the same shape and adjacent byte ranges merge; a
 * device's children on another host hang below the first of them. Inside one host of direct
 * links, an all-gather's blocks whose peers are not all one link away go round NCCL's rings over
 * their group instead, as NCCL runs the collective. stats may be NULL. */
mc_status_t coll_lower(mc_sched_t *s, const mc_topo_t *topo, int t, const coll_prog_t *p,
                       int first_phase, const mc_synth_opts_t *opts, coll_stats_t *stats,
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

/* ---- collective_pick.c ---- */

/* For the meshcast strategy: *s is its tree schedule (simulated time *t, possibly above
 * opts->memory_limit). On a same-mesh task the collective form replaces it when the trees do not
 * fit the limit and it does ("why=memory"), or when it fits and simulates faster ("why=faster");
 * the new schedule keeps *s's strategy name and its params say which form, why, and both times
 * and peaks. Then the plans of alpa-p2p (between disjoint meshes: a scatter, then an all-gather
 * inside each destination host), p2p-lb and p2p replace it where they fit the limit and simulate
 * faster than the winner so far, each simulated within work (mc_sim_run_until's units) and up to
 * that winner's time. Anything else (not same-mesh, neither fits) leaves *s and *t alone. */
mc_status_t mc_synth_collectives_referee(mc_task_t *task, const mc_topo_t *topo,
                                         const mc_synth_opts_t *opts, int64_t work,
                                         mc_sched_t **s, double *t, mc_err_t *err);

#endif
