/* The state of one meshcast synthesis, shared by its candidates and plans
 * (synth_meshcast_solve.c), their schedules (synth_meshcast_assemble.c), the strategy's referee
 * (synth_meshcast.c) and its last races (synth_meshcast_alt.c): private to synth/meshcast. */
#ifndef MC_SYNTH_MESHCAST_RUN_H
#define MC_SYNTH_MESHCAST_RUN_H

#include <stdint.h>

#include "sim/sim.h"
#include "synth/meshcast/mc_meshcast.h"

/* One schedule the referee tries: a kind of plan (or VARIANT_FASTEST: the kind whose variants
 * so far were fastest), a form, a stagger spread (0: none). */
typedef struct variant {
    int kind, form, stagger;
    int coarse; /* times the chunk counts are cut to 3/4 (> 0) or raised to 4/3 (< 0), after
                 * staggering */
    int channels, channel_spread; /* last, every tree cut into this many channels (0, 1: none),
                                   * staggered by this spread (mc_sched_channels) */
    int channel_big; /* only the trees of at least half the largest tree's bytes */
    int channel_host; /* channels of trees inside hosts cut down to MC_HOST_CHUNK_BYTES */
    int fit; /* every tree's chunk count divided by this, rounded up, after coarse (0, 1:
              * none): a winner too large to simulate, timed in a coarser form (time_estimated) */
} variant_t;

typedef struct mc_valid_memo mc_valid_memo_t;
typedef struct mc_assembled mc_assembled_t;

typedef struct run {
    mc_task_t *task;
    const mc_topo_t *topo;
    const mc_synth_opts_t *opts;
    uint64_t chunk;       /* the caller's pipeline chunk, 0: each tree's best */
    mc_shares_t sh;
    mc_cands_t cs;
    int *first, *count;   /* per share: its candidates in cs */
    double *frac[MC_SPLITS]; /* per split, per candidate: its share's fraction */
    mc_price_stats_t price;
    mc_comp_t *comps;
    int ncomps, nunique, nsolved, nz3_optimal;
    uint64_t rlimit_used;
    int64_t sim_work_left;  /* simulation work left to certify and the referee */
    int64_t last_work_left; /* simulation work left to a last race (synth_meshcast_alt.c) */
    mc_bound_t bound;       /* the task's lower bound, computed once */
    variant_t kept;         /* the variant the referee kept */
    mc_sim_memo_t *memo;    /* the schedules timed so far (both syntheses share it) */
    mc_chunk_memo_t *chunks; /* the trees' chunk counts so far (both syntheses share it) */
    mc_valid_memo_t *valid; /* the schedules found valid so far (both syntheses share it) */
    mc_assembled_t *assembled; /* the run's plans assembled so far (synth_meshcast_assemble.c),
                                * or NULL */
    int wrap;               /* chains across hosts wrap around from the root's host
                             * (mc_cands_add_share; the balanced synthesis) */
    const atomic_int *stale; /* set: what is made ahead is of no use, and the next simulation
                              * stops the synthesis (mc_meshcast_certify, synth_both); or NULL */
    struct race_ahead *ahead; /* the next race, simulated ahead (synth_meshcast.c); or NULL */
} run_t;

/* The chunk counts of trees with no chunk size given (mc_cand_chunks(c, bytes, 0, rate)), kept
 * by what they depend on (synth_meshcast_chunks.c): the same counts, each searched once. */
mc_chunk_memo_t *mc_chunk_memo_new(void);
void mc_chunk_memo_free(mc_chunk_memo_t *m);
int mc_chunk_memo_get(mc_chunk_memo_t *m, const mc_cand_t *c, uint64_t bytes, double rate);
/* How many counts it holds (searches made). */
int mc_chunk_memo_size(const mc_chunk_memo_t *m);

/* How a plan's trees are laid out, flags: as decoded (0), re-chunked for their planned rates,
 * evened out (decode), or both. */
enum { FORM_DECODED = 0, FORM_RECHUNK = 1, FORM_EVEN = 2, FORM_COUNT = 4 };

/* The shares and their candidate trees into r (synth_meshcast_solve.c): the shapes and rail
 * stripes, and with price the trees priced by link load. */
mc_status_t mc_meshcast_gen_cands(run_t *r, int price, mc_err_t *err);
/* Solves every component that is not a copy of an earlier one (synth_meshcast_solve.c). */
mc_status_t mc_meshcast_solve(run_t *r, mc_err_t *err);
/* The schedule of the components' plans of one kind in one form (synth_meshcast_assemble.c), or
 * a copy of the one made before from the same plans in the same form. */
mc_status_t mc_meshcast_assembled(run_t *r, int kind, int form, mc_sched_t **out,
                                  mc_err_t *err);
void mc_assembled_free(mc_assembled_t *a);
/* A copy of s, which has no compact instances: its trees, rates and phases as they are. */
mc_sched_t *mc_meshcast_copy(const mc_sched_t *s, const mc_topo_t *topo);

/* The schedules found valid (synth_meshcast_valid.c): mc_valid_memo_check is mc_sched_validate
 * of s on topo, 0 at once where a schedule equal to s in everything validation reads was found
 * valid before. */
mc_valid_memo_t *mc_valid_memo_new(void);
void mc_valid_memo_free(mc_valid_memo_t *m);
int mc_valid_memo_check(mc_valid_memo_t *m, const mc_sched_t *s, const mc_topo_t *topo,
                        mc_buf_t *out);

/* The smallest chunk a tree is re-chunked or staggered into: NCCL's network P2P chunk
 * (NCCL_P2P_NET_CHUNKSIZE, 128 KiB), the largest message NCCL's proxy puts on the network for a
 * send (one buffer slot), not the smallest. */
#define MC_MIN_CHUNK_BYTES (128u * 1024u)
/* The smallest chunk of a tree across the network in the last races' second pass
 * (synth_meshcast_alt.c), where MC_MIN_CHUNK_BYTES holds a network tree: NCCL itself cuts a send
 * below NCCL_P2P_NET_CHUNKSIZE into network messages of a quarter of it, and one below eight times
 * it into halves (src/enqueue.cc, "Tune chunk size for the network"; ncclProxyComputeP2p in
 * src/proxy.cc in 2.18), each an isend of its own size (src/transport/net.cc). So a chunk of 32
 * KiB is one Simple-protocol message as NCCL sends them (above NCCL_P2P_LL_THRESHOLD, 16 KiB,
 * where NCCL turns to LL, which the simulator does not model), and a 128 KiB chunk is two of 64
 * KiB already (docs/synthesis.md, "Session 19: network chunks below 128 KiB"). */
#define MC_NET_CHUNK_BYTES (MC_MIN_CHUNK_BYTES / 4)
/* A last race is worth its simulations only this far above the bound: within it, the winner of a
 * 1 GiB all-gather over four DGX A100 (1.01 of the bound) spent 60% of its 6.9 s of CPU on relay
 * trees that won nothing. The channels on host chunks (synth_meshcast.c) share the gate. */
#define MC_ALT_ROOM 1.02
/* Room for a plan's name in the last races, with every suffix they add (the params that state it
 * hold 256 characters, about 120 of them for the rest): 48 cut `+phased` off longer names. */
#define MC_PLAN_NAME_MAX 128
/* The smallest chunk of a channel whose tree does not cross the network: MC_MIN_CHUNK_BYTES is
 * the network proxy's chunk; inside a host a send of any size is one message with one overhead
 * (docs/synthesis.md, "Session 18: small pieces on partial meshes"). */
#define MC_HOST_CHUNK_BYTES 4096u

/* How much synthesis may simulate (the solved schedule, then the referee's variants), in
 * mc_sim_run_bounded's units of work (events, and the flows and links they re-rate): counted
 * the same on every machine, so that the choice does not depend on its speed. About 0.2 us each
 * on the 2-core development machine for 32-GPU schedules (more on larger topologies). */
#define MC_SIM_WORK 7000000
/* Work added for the referee's last race (the winner with fewer chunks), so that a table that
 * spent the allowance does not leave it out. */
#define MC_SIM_COARSE_WORK (MC_SIM_WORK / 8)
/* The most channels a tree is cut into, and the work each channel race may add: a third of the
 * allowance, since a try that wins is simulated in full and has twice the trees or more (the
 * 2-channel try of h100-single-3x8 in `modern` takes 2.2 M: 3.33 -> 3.18 ms; tries that lose
 * stop at the winner's time). */
#define MC_CHANNELS_MAX 8
#define MC_SIM_CHANNEL_WORK (MC_SIM_WORK / 3)
/* The work each last race may take over all its tries (each try at most MC_SIM_CHANNEL_WORK): a
 * 1 GiB all-gather over 8 OCI A100 boxes spent 7.7 s of CPU on 21 tries at a whole third each,
 * and won nothing; the small pieces they are for take a small part of it. One allowance for both
 * races left the rings none after the relay trees on a 4 MiB all-gather over four RTX 3090
 * boxes (1.36x slower than the nccl-ring strategy). */
#define MC_SIM_LAST_WORK MC_SIM_WORK

/* What a schedule was timed at. */
typedef struct verdict {
    char params[sizeof(((mc_sched_t *)0)->params)]; /* what certify states in its params */
    double t;             /* simulated, or the solved plans' estimate when not simulated */
    int simulated;
    double reached;       /* not simulated: the time the stopped simulation had reached (a lower
                           * bound on its makespan) */
    int beaten;           /* not simulated because it ran past its horizon: slower than that */
    int64_t work;         /* the allowance its run took: none where, not simulated, its
                           * allowance could not start it (mc_sim_least_work) */
} verdict_t;

/* Validates the schedule, times it within the allowance *work_left, up to the simulated time
 * horizon (0: none; past it, not simulated), and returns the verdict in *v, with the params the
 * schedule states: the plan's name, its time, the bound and the gap. MC_ERR_TIMEOUT where r's
 * stale flag is set. ahead: s simulated ahead (mc_sim_ahead_start), freed; or NULL. */
mc_status_t mc_meshcast_certify(const run_t *r, const mc_sched_t *s, const char *plan,
                                int64_t *work_left, double horizon, mc_sim_ahead_t *ahead,
                                verdict_t *v, mc_err_t *err);

/* The last races: the winner *s (timed *v) against its small pieces on relay trees, and against
 * NCCL's rings; the fastest replaces *s and *v. */
mc_status_t mc_meshcast_race_striped(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err);
mc_status_t mc_meshcast_race_ring(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err);
/* Then the winner *s (timed *v) against itself looped back (mc_sched_looped). */
mc_status_t mc_meshcast_race_looped(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err);
/* The winner *s (timed *v) against itself with its chunks ramped (the first and last chunks of
 * each tree smaller, mc_tree_chunk), ramps 1 then 2. */
mc_status_t mc_meshcast_race_ramp(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err);
/* The winner with the trees that share their edges (channels) out of phase, each set's j-th
 * tree ramped j, all in one chunk count (mc_sched_phased): its own sets at 1, 2 and 4 times their
 * most chunks, then every tree cut into 2 or 4 channels first. */
mc_status_t mc_meshcast_race_phased(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err);
/* The last race of all: the winner with part of its pieces' bytes on side trees over its idlest
 * links (mc_sched_side), half the fraction that evens its busiest links, in up to 4 rounds while
 * each is faster. */
mc_status_t mc_meshcast_race_side(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err);

#endif
