/* Helpers the baseline strategies share: Alpa's naive task order, mesh-order holder choice,
 * NCCL-style chunk counts, host-level load balancing and ring chains. Internal to synth/. */
#ifndef MC_SYNTH_INTERNAL_H
#define MC_SYNTH_INTERNAL_H

#include <stdint.h>

#include "synth/synth.h"

/* ---- synth_order.c: Alpa's unit tasks in the order Alpa submits them ---- */

/* One (piece, destination) send, or one piece broadcast (dest = -1). */
typedef struct synth_unit {
    int piece;
    int dest;
    /* sort key: tensor, destination tile, destination's rank in its mesh, source slice */
    int tensor;
    int64_t tile_lo[MC_MAX_DIMS];
    int dest_rank;
    int64_t piece_lo[MC_MAX_DIMS];
} synth_unit_t;

/* Alpa's generate_naive_order: per tensor, per destination tile, per destination replica (send/recv
 * only, per_dest != 0), per source slice. Returns a new array of *n units. */
synth_unit_t *synth_naive_order(const mc_task_t *task, int per_dest, int *n);

/* Sorts units into that order by their keys (for units a strategy builds itself). */
void synth_sort_units(synth_unit_t *units, int n);
/* Alpa's 'normal' sender choice: the holder with the smallest load (indexed by GPU id); the first
 * in the given order wins ties, as Python's min() over an insertion-ordered dict does. */
int synth_least_loaded(const int *holders, int n, const uint64_t *load);
/* Alpa reshards across meshes only between the disjoint meshes of two pipeline stages: a tensor
 * that has bytes to move between meshes sharing a GPU is MC_ERR_UNSUPPORTED for strategy. */
mc_status_t synth_check_disjoint(const mc_task_t *task, const char *strategy, mc_err_t *err);
/* A strategy that reshards to one destination layout per tensor: MC_ERR_UNSUPPORTED for a tensor
 * with several consumers. */
mc_status_t synth_check_one_consumer(const mc_task_t *task, const char *strategy, mc_err_t *err);

/* Position of gpu in the mesh's device list, or -1. */
int synth_mesh_rank(const mc_mesh_t *mesh, int gpu);
/* Every GPU's position in each mesh of a task: rank[m * stride + gpu], -1 outside mesh m
 * (stride: the largest GPU id of any mesh, plus 1). */
typedef struct synth_ranks {
    int *rank;
    int stride;
} synth_ranks_t;
void synth_ranks_init(synth_ranks_t *r, const mc_task_t *task);
void synth_ranks_free(synth_ranks_t *r);
/* The holders of a piece in the order Alpa lists replicas: the source mesh's device order. The
 * result has task->pieces[piece].nholders entries; caller frees. */
int *synth_holders_in_mesh_order(const mc_task_t *task, const synth_ranks_t *ranks, int piece);
/* Elements of a piece (Alpa counts loads in elements, not bytes). */
uint64_t synth_piece_elems(const mc_task_t *task, int piece);

/* ---- synth_runs.c: the byte ranges of a sub-box of a piece ---- */

typedef void (*synth_run_fn)(void *arg, uint64_t offset, uint64_t bytes);
/* Calls fn once per maximal contiguous range that sub (inside box, nd dimensions, esize bytes per
 * element) occupies in box's row-major bytes, in increasing offset order. */
void synth_box_runs(const mc_box_t *box, const mc_box_t *sub, int nd, uint64_t esize,
                    synth_run_fn fn, void *arg);

/* ---- synth_chunks.c: how many chunks a pipelined chain should use ---- */

/* Bound on chunks per tree so the simulator stays fast. */
#define SYNTH_MAX_CHUNKS 4096

/* The chunk count that minimizes the modelled time of tree ti (a chain, with its chunks in
 * flight) moving its bytes, between 1 and min(bytes / MC_NCCL_STEP_BYTES, SYNTH_MAX_CHUNKS), when
 * sharers chains (itself included) move alongside it over the same links at the same pace
 * (mc_chain_chunks); chunk_bytes != 0 forces ceil(bytes / chunk_bytes) instead. */
int synth_chain_chunks(const mc_sched_t *s, const mc_topo_t *topo, int ti, uint64_t chunk_bytes,
                       int sharers);
/* Chunks in flight per edge of a tree that models NCCL's collective kernels: NCCL's
 * MC_NCCL_STEPS unless opts->inflight says otherwise (1: for meshcast's runtime). */
int synth_inflight(const mc_synth_opts_t *opts);
/* ceil(bytes / chunk_bytes) clamped to [1, SYNTH_MAX_CHUNKS]. */
int synth_forced_chunks(uint64_t bytes, uint64_t chunk_bytes);

/* ---- synth_lb.c: Alpa's randomized greedy load balancing into rounds ---- */

typedef struct synth_lb_work {
    int nsenders;
    const int *senders;    /* candidate sender workers (hosts), ascending */
    int nreceivers;
    const int *receivers;  /* receiver workers, ascending */
    double duration;
} synth_lb_work_t;

#define SYNTH_LB_TRIALS 100

/* LoadBalancingTaskSolverGreedyAlgo: builds rounds of works that share no worker, each the best
 * of `trials` random trials (most works, then the smallest standard deviation of the workers'
 * loads). Fills sender[w] and round[w] (-1 for a work without candidate senders); returns the
 * number of rounds. Deterministic for a seed. */
int synth_lb_greedy(int nworkers, int nworks, const synth_lb_work_t *works, int trials,
                    uint64_t seed, int *sender, int *round);

/* ---- synth_ring.c: the chains an NCCL ring broadcast runs ---- */

typedef struct synth_ring synth_ring_t;

synth_ring_t *synth_ring_new(const mc_topo_t *topo);
void synth_ring_free(synth_ring_t *r);

/* Plans the ring broadcast of root to dests (global GPU ids, in communicator rank order) as
 * *nchains chains (>= 1, <= max_chains: one per NIC across hosts, one per searched ring inside a
 * host with direct links); chain k's GPUs in order go to order[k * (ndests + 1) ...]. */
mc_status_t synth_ring_plan(synth_ring_t *r, int root, const int *dests, int ndests,
                            int max_chains, int *order, int *nchains, mc_err_t *err);

/* Part k of n of a range of bytes split evenly on element (esize bytes) boundaries, the first
 * parts one element larger when it does not divide; the last part takes what is left. */
uint64_t synth_even_part(uint64_t bytes, uint64_t esize, int n, int k);

/* Adds a tree carrying [offset, offset + bytes) of piece along the chain gpus[0..n-1], with
 * `inflight` chunks in flight per edge (MC_NCCL_STEPS where NCCL's kernel runs it), chunked for
 * sharers chains moving alongside it (synth_chain_chunks). */
mc_status_t synth_add_chain(mc_sched_t *s, const mc_topo_t *topo, int piece, uint64_t offset,
                            uint64_t bytes, int phase, const int *gpus, int n,
                            uint64_t chunk_bytes, int sharers, int inflight, mc_err_t *err);

#endif
