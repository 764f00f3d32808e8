/* pipeline: a training pipeline over meshes (DESIGN.md section 1). A pipeline file
 * (docs/pipeline.md) names the stages (each a mesh with a forward and a backward time per
 * micro-batch), the micro-batch count and the tensors that cross between stages. The tensors that
 * go from one stage to another in one direction form one resharding task (a "group"); its
 * schedule is synthesized once with a chosen strategy and timed by the flow-level simulator. An
 * event simulation then runs the 1F1B (PipeDream-flush) or eager-1F1B order of every stage, with
 * compute occupying a stage's GPUs and each group's transfer occupying the links its schedule
 * uses, and reports the iteration time, the bubble, the communication left on the critical path
 * and the activations each stage stores at its peak. */
#ifndef MC_PIPELINE_H
#define MC_PIPELINE_H

#include "layout/layout.h"
#include "synth/synth.h"
#include "topo/topo.h"
#include "util/util.h"

typedef struct mc_pipe_stage {
    char name[MC_NAME_MAX];
    char *mesh_text;        /* the mesh as written ("A={host:1,gpu:4}@0..3") */
    int ngpus;
    double fwd_s, bwd_s;    /* per micro-batch */
    int line;
} mc_pipe_stage_t;

/* All tensors that cross from stage src to stage dst in one direction: one resharding task. */
typedef struct mc_pipe_group {
    int src, dst;           /* stage indices; src < dst forward, src > dst backward */
    int nmore;              /* further receiving stages: a skip connection written as one move */
    int more[MC_MAX_CONSUMERS - 1]; /* with several consumers is one transfer to all of them */
    int backward;
    mc_task_t *task;        /* the two stages' meshes and the tensors, as a task file would */
    /* Filled by mc_pipe_time_comm (tests may set them directly): */
    double seconds;         /* one micro-batch's transfer, simulated */
    double arrive_s[MC_MAX_CONSUMERS]; /* with several receiving stages, when each one's GPUs
                             * have received their last byte (a stage that a relay serves later
                             * waits longer); one stage waits the whole transfer */
    double bound_s;         /* the task's lower bound */
    uint64_t bytes;         /* bytes the destinations receive */
    int nlinks;
    int *links;             /* topology links its schedule loads */
    int same_as;            /* the earlier group whose schedule it reuses, moved onto its GPUs;
                             * -1 when synthesized for it */
} mc_pipe_group_t;

typedef struct mc_pipe {
    char *name;             /* file name, for messages */
    char *topo_path;        /* from the 'topology' line, relative to the file's folder; or NULL */
    int microbatches;
    double gpu_rate;        /* FLOP/s per GPU, 0 when not given */
    int nstages, stage_cap;
    mc_pipe_stage_t *stages;
    int ngroups, group_cap;
    mc_pipe_group_t *groups;
    int timed;              /* mc_pipe_time_comm ran */
} mc_pipe_t;

/* The most steps and transfers (each a span of the result) one pipeline may have. */
#define MC_PIPE_MAX_ITEMS 10000000

/* Reads a pipeline file; errors name the file, the line and what was expected (MC_ERR_PARSE).
 * mc_pipe_parse_text reads the same format from memory; a relative topology path is then kept as
 * written. */
mc_status_t mc_pipe_load(const char *path, mc_pipe_t **out, mc_err_t *err);
mc_status_t mc_pipe_parse_text(const char *text, const char *name, mc_pipe_t **out, mc_err_t *err);
void mc_pipe_free(mc_pipe_t *p);

/* Receiving stage k (0..nmore) of a group: dst, then the further ones. */
int mc_pipe_group_dst(const mc_pipe_group_t *g, int k);
/* The receiving stages' names, ',' between them ("B" or "B,D"), into buf. */
void mc_pipe_group_to(const mc_pipe_t *p, const mc_pipe_group_t *g, char *buf, size_t len);

/* Synthesizes every group's schedule with the strategy, validates and simulates it, and fills the
 * group's seconds, bytes and links. A group whose task is an earlier group's on other GPUs, where
 * each edge of that schedule has a route of the same links (kind by kind, bandwidth by bandwidth)
 * between the corresponding GPUs, reuses that schedule moved onto its GPUs (validated again and
 * simulated on its own links) instead of a synthesis of its own. */
mc_status_t mc_pipe_time_comm(mc_pipe_t *p, const mc_topo_t *topo, const char *strategy,
                              const mc_synth_opts_t *opts, mc_err_t *err);

typedef enum { MC_PIPE_1F1B, MC_PIPE_EAGER_1F1B } mc_pipe_order_t;
const char *mc_pipe_order_name(mc_pipe_order_t order);
/* Returns 0 and sets *order for "1f1b" or "eager-1f1b". */
int mc_pipe_order_parse(const char *name, mc_pipe_order_t *order);

/* One step of a stage's order: micro-batch mb forward or backward, at Alpa's clock tick. */
typedef struct mc_pipe_op {
    int mb;
    int backward;
    int tick;
} mc_pipe_op_t;

/* Warm-up forwards of stage i (0-based) of s stages with b micro-batches: min(s-i-1, b) for
 * 1F1B, min(b, 2(s-i)-1) for eager-1F1B. */
int mc_pipe_warmup(mc_pipe_order_t order, int s, int b, int i);
/* Stage i's 2b steps in execution order. Eager-1F1B follows Alpa's
 * OverlapFriendlyPipeDreamSchedule: after the warm-up it alternates backward and forward, and a
 * backward waits for tick (s-1) + (2 bwd_idx + 1) + (s-1-i). */
void mc_pipe_order_ops(mc_pipe_order_t order, int s, int b, int i, mc_pipe_op_t *ops);
/* The most micro-batches whose forward ran and whose backward did not, over the order. */
int mc_pipe_peak_stored(const mc_pipe_op_t *ops, int nops);

/* A bar of the timeline: a stage's compute, or a group's transfer of one micro-batch. */
typedef struct mc_pipe_span {
    int stage;              /* compute: the stage; transfer: the sending stage */
    int group;              /* -1 for compute */
    int mb, backward;
    double t0, t1;
} mc_pipe_span_t;

typedef struct mc_pipe_result {
    mc_pipe_order_t order;
    double iteration_s;     /* the last backward's end */
    double bubble;          /* 1 - (compute time of all stages) / (stages x iteration) */
    double exposed_comm_s;  /* transfer time on the critical path (including waits for links) */
    double critical_compute_s; /* compute time on it; the two add up to iteration_s */
    int critical_transfers; /* transfers on it */
    int *peak_stored;       /* per stage */
    int nspans;
    mc_pipe_span_t *spans;  /* compute spans first (stage by stage), then transfers */
} mc_pipe_result_t;

/* Runs the event simulation of one order with the groups' times (all zero when no_comm). Two
 * transfers that load a common link never overlap: the later one waits for the link (first come,
 * first served), so no two transfers both get a shared link's full bandwidth. */
mc_status_t mc_pipe_simulate(const mc_pipe_t *p, mc_pipe_order_t order, int no_comm,
                             mc_pipe_result_t *res, mc_err_t *err);
void mc_pipe_result_free(mc_pipe_result_t *res);

/* An SVG with one section per result: per stage a compute lane and a communication lane (the
 * sender's), forward and backward in two colours. Caller frees. */
char *mc_pipe_timeline_svg(const mc_pipe_t *p, const mc_pipe_result_t *res, int nres,
                           const char *title);

#endif
