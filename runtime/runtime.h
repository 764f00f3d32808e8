/* runtime: executes one rank's part of a resharding schedule on real buffers. It knows nothing of
 * topologies, tasks or schedules: it runs a per-rank **plan**, plain data that emit/ lowers a
 * schedule into and that generated code carries as static tables.
 *
 * Buffers. Every rank has three: SRC (its source shards, one per tensor in task order, each tile
 * row-major, concatenated), DST (its destination shards, the same way) and WS (a workspace of
 * plan->ws_bytes for staging). A box is a strided region of one buffer: a contiguous run of
 * extent[ndims-1] bytes repeated over the outer dimensions at byte strides. A reference (box, off)
 * means the box's bytes from position off of its row-major linearization on.
 *
 * Steps. A plan is a list of micro-steps numbered the same on every rank. A step first runs its
 * copies (packs into staging, local copies), then posts all its sends and receives at once and
 * waits for them once, then runs its copies out of staging (unpacks). A tree of the schedule
 * becomes micro-steps: at step t the edges at depth l move chunk t-l, so a relay never forwards
 * what it has not received. A send and its receive sit in the same step on both ranks, in the
 * same order, with the same tag (the tree's index). Running the steps in order is always correct.
 *
 * Dependencies. A plan may also say, for every op, which earlier ops of its rank it waits for
 * (dep_first/deps; NULL in plans made before them): a send waits for the receive or pack that
 * gives it its chunk and for the previous chunk on its edge, a receive for the previous chunk on
 * its edge and for the ops that still read the staging slot it overwrites, an unpack for its
 * receive. The backends run this graph instead of the steps: an op starts as soon as its
 * dependencies are done (a send or receive is posted then, and completes when its peer's side is
 * posted too; two sends, or two receives, with the same peer and tag must be ordered by the
 * dependencies, since messages match in the order they are posted), so independent trees never
 * wait for each other and a relay forwards chunk c as soon
 * as it holds it, as the simulator assumes. Every dependency points to an op of an earlier step
 * (or of an earlier part of the same step), so the steps are one order of the graph, which makes
 * it deadlock-free: the unfinished op of lowest step on any rank has its dependencies done, and
 * the matching op on its peer is in the same step, so both get posted.
 *
 * Backends: loopback (every rank in this process, host memory), mpi (host memory, declared when
 * <mpi.h> is included first), nccl and the GPU loopback (declared when <nccl.h> is included
 * first; built only where nvcc exists). Waits are bounded: a missing peer ends the run with an
 * error that names the rank and the step. */
#ifndef MC_RUNTIME_H
#define MC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_RT_MAX_DIMS 8

/* Status codes: the same values as meshcast's mc_status_t, so callers can pass them on. */
enum {
    MC_RT_OK = 0,
    MC_RT_ERR_INVALID = -4,
    MC_RT_ERR_UNSUPPORTED = -6,
    MC_RT_ERR_TIMEOUT = -8,
    MC_RT_ERR_RUNTIME = -9
};

typedef struct mc_rt_err {
    int status;
    char msg[512];
    int in_use; /* the failed run left transfers that MPI could not cancel: the buffers must stay
                 * allocated until the job ends (MPI_Abort) */
} mc_rt_err_t;

enum { MC_RT_BUF_SRC = 0, MC_RT_BUF_DST = 1, MC_RT_BUF_WS = 2, MC_RT_NBUFS = 3 };

typedef struct mc_rt_box {
    int32_t buf;                      /* MC_RT_BUF_* */
    int32_t ndims;                    /* 1..MC_RT_MAX_DIMS, outermost first */
    uint64_t base;                    /* byte offset of the first byte in the buffer */
    uint64_t extent[MC_RT_MAX_DIMS];  /* innermost: bytes of one contiguous run; others: counts */
    uint64_t stride[MC_RT_MAX_DIMS];  /* byte strides of the outer dimensions; innermost unused */
} mc_rt_box_t;

typedef struct mc_rt_ref {
    int32_t box;    /* index into plan->boxes */
    uint64_t off;   /* position in the box's linearization */
} mc_rt_ref_t;

enum { MC_RT_OP_COPY = 0, MC_RT_OP_SEND = 1, MC_RT_OP_RECV = 2 };

typedef struct mc_rt_op {
    int32_t kind;       /* MC_RT_OP_* */
    int32_t peer;       /* SEND, RECV: the other rank */
    int32_t tag;        /* SEND, RECV: the tree it belongs to; equal on both sides */
    uint64_t bytes;
    mc_rt_ref_t src;    /* COPY, SEND (SEND: must be contiguous) */
    mc_rt_ref_t dst;    /* COPY, RECV (RECV: must be contiguous) */
} mc_rt_op_t;

typedef struct mc_rt_step {
    uint32_t index;     /* global micro-step number; steps with nothing for this rank are absent */
    uint32_t first;     /* ops[first .. first+npre) copies, then ncomm sends/recvs, then npost copies */
    uint32_t npre, ncomm, npost;
} mc_rt_step_t;

typedef struct mc_rt_plan {
    int32_t rank, nranks;
    uint64_t src_bytes, dst_bytes, ws_bytes;  /* exact sizes the buffers must have */
    uint32_t nboxes, nops, nsteps;
    const mc_rt_box_t *boxes;
    const mc_rt_op_t *ops;
    const mc_rt_step_t *steps;                /* ascending index */
    /* Op i waits for ops deps[dep_first[i] .. dep_first[i+1]), each below i; dep_first NULL: the
     * plan has no dependency table and runs by steps. dep_first has nops + 1 entries; deps may be
     * NULL when there are none. */
    const uint32_t *dep_first;
    const uint32_t *deps;
    /* Per op, its lane (the nccl backend takes it modulo its number of lanes; the two sides of a
     * message have the same), so that edges sharing a GPU run on different communicators; NULL:
     * derived from the tags (mc_rt_op_lanes). */
    const uint16_t *lane;
    /* How many lanes (communicators and streams) the nccl backend runs the plan on, the same in
     * every rank's plan: emit gives each edge a lane no other edge of its phase on its GPUs has,
     * as far as MC_RT_MAX_LANES allows. 0: MC_RT_NCCL_LANES (plans made before it). */
    uint32_t nlanes;
} mc_rt_plan_t;

typedef struct mc_rt_buffers {
    void *buf[MC_RT_NBUFS];    /* SRC (only read), DST, WS */
    uint64_t bytes[MC_RT_NBUFS];
} mc_rt_buffers_t;

const char *mc_rt_buf_name(int buf);

/* Number of bytes a box covers. */
uint64_t mc_rt_box_bytes(const mc_rt_box_t *box);
/* Byte offset in the box's buffer of linear position lin; *run gets how many bytes from there on
 * are contiguous in the buffer and still inside the box's current run. */
uint64_t mc_rt_box_addr(const mc_rt_box_t *box, uint64_t lin, uint64_t *run);

/* The widest word (16, 8, 4, 2 or 1 bytes) a copy op may move at once: it divides every address
 * and run the copy touches, so no word straddles two runs and every access is aligned. With bufs
 * NULL the buffers are taken as 256-byte aligned (as cudaMalloc gives). */
int mc_rt_copy_word(const mc_rt_plan_t *plan, const mc_rt_op_t *op, const mc_rt_buffers_t *bufs);
/* Whether both sides of a copy op are contiguous (one plain memcpy does it). */
int mc_rt_copy_contiguous(const mc_rt_plan_t *plan, const mc_rt_op_t *op);

/* A copy op as at most three pitched 2-D copies (a partial first row, whole rows, a partial last
 * row), each contiguous within a row on both sides: what the copy engine does without SMs
 * (cudaMemcpy2DAsync). Possible when each side's box has at most 2 dimensions, the strided runs
 * are at least min_run bytes, and, when both sides are strided, their runs agree. */
typedef struct mc_rt_rows {
    int n;
    struct {
        uint64_t src, dst;      /* byte offsets in the op's source and destination buffers */
        uint64_t width, height; /* bytes per row, rows */
        uint64_t spitch, dpitch;
    } part[3];
} mc_rt_rows_t;
#define MC_RT_COPY_ENGINE_MIN_RUN 512
int mc_rt_copy_rows(const mc_rt_plan_t *plan, const mc_rt_op_t *op, uint64_t min_run,
                    mc_rt_rows_t *rows);

/* Checks that the plan is well formed: boxes inside buffers, references inside boxes, sends and
 * receives contiguous, peers in range, steps ascending, ops covered exactly once and every
 * dependency on an earlier op. */
int mc_rt_plan_check(const mc_rt_plan_t *plan, mc_rt_err_t *err);
/* Checks that the buffers have the sizes the plan needs (a workspace may be larger). */
int mc_rt_buffers_check(const mc_rt_plan_t *plan, const mc_rt_buffers_t *bufs, mc_rt_err_t *err);

/* The graph a backend executes for one rank: nodes 0..nops-1 are the plan's ops, the others are
 * joins that only order (the ends of the parts of each step when the steps order the ops).
 * npred[n]: how many nodes n waits for; succ[succ_first[n] .. succ_first[n+1]): those waiting
 * for n. */
typedef struct mc_rt_graph {
    uint32_t nnodes;
    uint32_t *npred, *succ_first, *succ;
} mc_rt_graph_t;

enum {
    MC_RT_ORDER_DEPS = 0,  /* the plan's dependency table (its steps when it has none) */
    MC_RT_ORDER_STEPS = 1  /* the steps: each part of a step waits for the part before */
};
/* The nccl backend's order with k lanes (k communicators and streams): every op is in its lane
 * (mc_rt_op_lanes); in a lane, the steps follow each other as in MC_RT_ORDER_STEPS, and
 * the dependency table orders ops of different lanes. k = 0: the plan's own lanes
 * (mc_rt_plan_lanes), what the nccl backend runs. */
#define MC_RT_ORDER_LANES(k) (2 + (k))
#define MC_RT_ORDER_NCCL MC_RT_ORDER_LANES(0)
/* The lanes of plans that do not say how many they have (nlanes 0). */
#define MC_RT_NCCL_LANES 8
/* The most lanes a plan may have (emit shares lanes beyond it). */
#define MC_RT_MAX_LANES 128
/* The plan's lanes: nlanes, or MC_RT_NCCL_LANES when it has none; 1 without a dependency table. */
uint32_t mc_rt_plan_lanes(const mc_rt_plan_t *plan);
/* The lane of every op for k lanes: the plan's lane modulo k when it has lanes, else a send or
 * receive's tag modulo k, and a copy the lane of the first send or receive that waits for it (a
 * pack), else of the first it waits for (an unpack), else 0. A plan without a dependency table has
 * one lane. */
void mc_rt_op_lanes(const mc_rt_plan_t *plan, uint32_t k, uint32_t *lane);
/* Builds the graph of a checked plan in the given order. */
int mc_rt_graph_build(const mc_rt_plan_t *plan, int order, mc_rt_graph_t *g, mc_rt_err_t *err);
void mc_rt_graph_free(mc_rt_graph_t *g);

/* One rank's progress through its graph: which ops may start now. The backends and the simulator's
 * executed-plan timing (sim --executed) share it, so they follow the same order. */
typedef struct mc_rt_exec {
    const mc_rt_plan_t *plan;
    mc_rt_graph_t g;
    uint32_t *left;             /* per node: dependencies not yet done */
    uint32_t *queue, head, tail; /* ready nodes, in the order they became ready */
    uint32_t ndone;             /* ops done */
} mc_rt_exec_t;

int mc_rt_exec_init(mc_rt_exec_t *x, const mc_rt_plan_t *plan, int order, mc_rt_err_t *err);
void mc_rt_exec_free(mc_rt_exec_t *x);
/* The next op whose dependencies are done (joins are passed through), or -1 when none is. With
 * pick, the pick-th ready op modulo their number instead of the oldest (tests of the order). */
int64_t mc_rt_exec_next(mc_rt_exec_t *x, uint64_t pick);
/* Marks op (or join) i done, making ready what waited only for it. */
void mc_rt_exec_done(mc_rt_exec_t *x, uint32_t i);
/* Whether every op is done. */
int mc_rt_exec_finished(const mc_rt_exec_t *x);

/* Runs a COPY op on host memory. */
void mc_rt_copy_host(const mc_rt_plan_t *plan, const mc_rt_op_t *op, const mc_rt_buffers_t *bufs);

/* Runs every rank's plan in this process on host buffers (bufs[r] for rank r) in the order of
 * its dependency graph; a receive with no matching send (or the reverse) is an error naming both
 * ranks and the step. */
int mc_rt_run_loopback(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                       mc_rt_err_t *err);

#ifdef MPI_VERSION
/* Bounded synchronization for drivers (every wait polls against a deadline; on a timeout the caller
 * should MPI_Abort, as requests may still be pending). A gate is a barrier that carries n (at most
 * MC_RT_GATE_MAX) values from every rank and gives every rank their sums and maxima; rank 0 names
 * the ranks that did not arrive, the others wait one second longer so that its message comes
 * first. The broadcast sends rank 0's bytes to every rank. Both use the tag mc_rt_mpi_sync_tag
 * (MPI_TAG_UB), which plans may not use. */
#define MC_RT_GATE_MAX 4
int mc_rt_mpi_gate(MPI_Comm comm, const char *stage, int n, const double *in, double *sum,
                   double *max, double timeout_s, mc_rt_err_t *err);
int mc_rt_mpi_bcast(MPI_Comm comm, const char *stage, void *buf, int bytes, double timeout_s,
                    mc_rt_err_t *err);
int mc_rt_mpi_sync_tag(MPI_Comm comm);

/* Runs this rank's plan with MPI point-to-point on host buffers; the plan's rank and nranks must
 * be comm's. Sends and receives are posted as their dependencies complete and progressed by one
 * MPI_Testsome loop; when no op completes for timeout_s seconds the run fails naming the rank, the
 * step and the oldest op still pending, after cancelling what is in flight (err->in_use when
 * some of it could not be). */
int mc_rt_run_mpi(const mc_rt_plan_t *plan, MPI_Comm comm, const mc_rt_buffers_t *bufs,
                  double timeout_s, mc_rt_err_t *err);
#endif

/* ---- The driver: what `meshcast run` does, for any program that has plans ---- */

/* A backend: either every rank in this process (run_all) or one rank per MPI process (run_rank,
 * comm pointing to an MPI_Comm). *seconds: the run alone. */
typedef struct mc_rt_backend {
    const char *name; /* loopback, loopback-gpu, mpi, nccl */
    const char *what; /* one line for help texts */
    int (*run_all)(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                   double *seconds, mc_rt_err_t *err);
    int (*run_rank)(const mc_rt_plan_t *plan, const void *comm, const mc_rt_buffers_t *bufs,
                    double timeout_s, double *seconds, mc_rt_err_t *err);
} mc_rt_backend_t;
extern const mc_rt_backend_t mc_rt_backends[]; /* ends with a NULL name */
const mc_rt_backend_t *mc_rt_backend_find(const char *name);

/* The stages of a driven run, where a fault test may stop a rank. */
enum { MC_RT_STAGE_SETUP, MC_RT_STAGE_TRANSFER, MC_RT_STAGE_CHECK, MC_RT_NSTAGES };
const char *mc_rt_stage_name(int stage);
int mc_rt_stage_parse(const char *name);

/* What the driver asks of the caller about the data: fill a rank's source, poison its
 * destination, count its wrong destination bytes, and (may be NULL) name an earlier rank whose
 * source buffer is the same, so that one process keeps one copy of replicated sources. */
typedef struct mc_rt_drive_hooks {
    void *ctx;
    void (*fill_src)(void *ctx, int rank, void *src);
    void (*poison_dst)(void *ctx, int rank, void *dst);
    uint64_t (*check_dst)(void *ctx, int rank, const void *dst);
    int (*same_source)(void *ctx, int rank);
} mc_rt_drive_hooks_t;

typedef struct mc_rt_drive_opts {
    const mc_rt_backend_t *backend;
    int64_t workspace;   /* bytes of every rank's workspace, -1: what its plan needs */
    double timeout_s;    /* every wait: set-up, transfer, result gathering */
    const void *comm;    /* an MPI_Comm, for backends with one process per rank */
    int absent_rank;     /* -1, or a rank that stops (SIGSTOP) after the set-up (fault tests) */
    int stop_rank;       /* -1, or a rank that stops itself (SIGSTOP) at stop_stage (fault tests) */
    int stop_stage;
} mc_rt_drive_opts_t;

typedef struct mc_rt_drive_result {
    int rank;          /* this process's rank (0 when every rank runs here) */
    double seconds;    /* the run alone, the slowest rank's */
    uint64_t wrong;    /* wrong destination bytes over all ranks */
    int started;       /* one process per rank: communication began, so after an error the caller
                        * should MPI_Abort (peers may wait on this rank) */
} mc_rt_drive_result_t;

/* Allocates the buffers of this process's ranks, fills them through the hooks, runs the plans with
 * the backend, checks every destination byte and, with one process per rank, gathers the results:
 * every wait ends within timeout_s without progress (plus one second for ranks other than 0) with
 * an error naming the rank and the stage; a rank that finished waits for the slowest one at the
 * check, so timeout_s must also cover how much earlier a rank may finish. */
int mc_rt_drive(int nranks, const mc_rt_plan_t *plans, const mc_rt_drive_opts_t *o,
                const mc_rt_drive_hooks_t *h, mc_rt_drive_result_t *res, mc_rt_err_t *err);
/* The host bytes a run of every rank in one process allocates (workspace -1: the plans'). */
uint64_t mc_rt_drive_host_bytes(int nranks, const mc_rt_plan_t *plans,
                                const mc_rt_drive_hooks_t *h, int64_t workspace);

/* ---- CUDA (libmeshcast_rt built with nvcc; otherwise these return MC_RT_ERR_UNSUPPORTED) ---- */

/* Number of CUDA devices, 0 when there is none or no driver; -1 when built without CUDA. */
int mc_rt_cuda_devices(void);

/* Every rank's plan on one GPU (device 0): the host buffers are copied to one device buffer set
 * per virtual rank, the plans run with the pack kernels and device-to-device copies, and the
 * destination buffers come back. *seconds gets the device time of the run alone. */
int mc_rt_run_loopback_gpu(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                           double *seconds, mc_rt_err_t *err);

/* Times op (a COPY of plan) on device buffers of the plan's sizes the way the runtime does it
 * (copy engine or pack kernel), with the pack kernel alone, and as a cudaMemcpyAsync of the same
 * bytes, each the best of iters runs (seconds). */
int mc_rt_cuda_bench_copy(const mc_rt_plan_t *plan, uint32_t op, int iters, double *runtime_s,
                          double *kernel_s, double *memcpy_s, mc_rt_err_t *err);

#ifdef MPI_VERSION
/* The nccl backend driven from host buffers: picks this rank's GPU (local rank modulo the
 * devices), shares the NCCL unique id through comm, copies the buffers in, runs and waits with
 * a deadline of timeout_s, and copies the destination back. *seconds: the run alone. */
int mc_rt_run_nccl_mpi(const mc_rt_plan_t *plan, MPI_Comm comm, const mc_rt_buffers_t *bufs,
                       double timeout_s, double *seconds, mc_rt_err_t *err);
#endif

#ifdef NCCL_MAJOR
/* Runs a COPY op (plan->ops[op]) on device buffers; generated code passes its own, specialized
 * to the schedule's boxes, to mc_rt_run_nccl. */
typedef int (*mc_rt_cuda_copy_fn)(const mc_rt_plan_t *plan, uint32_t op,
                                  const mc_rt_buffers_t *bufs, cudaStream_t stream,
                                  mc_rt_err_t *err);
/* A copy the way the runtime does it: the copy engine for contiguous or wide 2-D copies, else the
 * pack kernel, for any box. */
int mc_rt_copy_cuda(const mc_rt_plan_t *plan, uint32_t op, const mc_rt_buffers_t *bufs,
                    cudaStream_t stream, mc_rt_err_t *err);
/* The pack kernel alone. */
int mc_rt_copy_cuda_kernel(const mc_rt_plan_t *plan, uint32_t op, const mc_rt_buffers_t *bufs,
                           cudaStream_t stream, mc_rt_err_t *err);
/* Enqueues this rank's plan on stream: per step the packs, one ncclGroupStart/End holding the
 * step's ncclSend/ncclRecv, then the unpacks. Device buffers; copy NULL means mc_rt_copy_cuda.
 * Returns without waiting for the stream. */
int mc_rt_run_nccl(const mc_rt_plan_t *plan, ncclComm_t comm, const mc_rt_buffers_t *bufs,
                   cudaStream_t stream, mc_rt_cuda_copy_fn copy, mc_rt_err_t *err);
/* The same, recording events[s] on stream after step s (plan->nsteps events, created by the
 * caller), so that a wait can tell which step never finished. */
int mc_rt_run_nccl_traced(const mc_rt_plan_t *plan, ncclComm_t comm, const mc_rt_buffers_t *bufs,
                          cudaStream_t stream, mc_rt_cuda_copy_fn copy, cudaEvent_t *events,
                          mc_rt_err_t *err);
/* The lanes of the nccl backend on one rank: nlanes communicators of the same ranks in the same
 * order, and a stream each. timeout_s bounds every NCCL call on them that stays in progress
 * (their set-up, and a group that connects to a new peer). */
typedef struct mc_rt_nccl_lanes {
    int nlanes;
    double timeout_s;
    ncclComm_t comms[MC_RT_MAX_LANES];
    cudaStream_t streams[MC_RT_MAX_LANES];
} mc_rt_nccl_lanes_t;
/* Makes nlanes lanes from comm, collectively (every rank of comm calls it with the same nlanes):
 * each a non-blocking communicator split from comm (ncclCommSplit, polled with
 * ncclCommGetAsyncError) and a non-blocking stream. When the split is not done within timeout_s (a
 * peer missing) every lane made is aborted and the error names the rank and the lane; with a
 * blocking comm, NCCL may block inside ncclCommSplit itself. Call once, keep for every run. */
int mc_rt_nccl_lanes_split(ncclComm_t comm, int nlanes, double timeout_s, mc_rt_nccl_lanes_t *ln,
                           mc_rt_err_t *err);
/* A non-blocking communicator of nranks (ncclCommInitRankConfig, polled until timeout_s; on a
 * timeout it is aborted and the error names the rank). */
int mc_rt_nccl_init(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, double timeout_s,
                    mc_rt_err_t *err);
/* Destroys the lanes' communicators (abort: ncclCommAbort instead, after a timeout) and streams. */
void mc_rt_nccl_lanes_free(mc_rt_nccl_lanes_t *ln, int abort);
/* Enqueues this rank's plan on its lanes (at least mc_rt_plan_lanes(plan) of them; op i goes to
 * lane mc_rt_op_lanes(plan, ln->nlanes)): groups are issued in (step, lane) order on every rank,
 * each step's packs, one ncclGroupStart/End of its sends and receives and its unpacks on the
 * lane's stream; a dependency on an op of another lane is a CUDA event between the two streams.
 * The lanes start after the work already enqueued on stream, and stream waits for all of them, so
 * later work on stream sees the destination filled. Trees of different lanes do not wait for each
 * other; as the issue order is the same on every rank and every event points to an op issued
 * earlier, NCCL serializing the lanes' kernels cannot deadlock (it falls back to that order).
 * Returns without waiting for the streams. */
int mc_rt_run_nccl_lanes(const mc_rt_plan_t *plan, const mc_rt_nccl_lanes_t *ln,
                         const mc_rt_buffers_t *bufs, mc_rt_cuda_copy_fn copy,
                         cudaStream_t stream, mc_rt_err_t *err);
/* Waits for stream until timeout_s; on timeout aborts comm (may be NULL) and names the rank, and
 * with plan and events (from mc_rt_run_nccl_traced; both may be NULL) the first step that did
 * not finish. */
int mc_rt_cuda_wait(cudaStream_t stream, ncclComm_t comm, int rank, double timeout_s,
                    mc_rt_err_t *err);
int mc_rt_cuda_wait_steps(cudaStream_t stream, ncclComm_t comm, const mc_rt_plan_t *plan,
                          cudaEvent_t *events, double timeout_s, mc_rt_err_t *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
