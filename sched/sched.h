/* sched: the schedule every part agrees on (DESIGN.md section 4). A schedule is made for one task
 * and one topology (named by its fingerprint). It is a set of trees: each carries a byte range of
 * one piece from a root GPU down GPU-level parent->child edges, in chunks pipelined down the tree;
 * each edge follows the topology's route between its two GPUs. Trees are grouped into ordered
 * phases; the trees of one phase share no link beyond its capacity. Local copies come from the
 * task. The XML form is docs/schedule-format.md (schema: sched/schedule.rng). */
#ifndef MC_SCHED_H
#define MC_SCHED_H

#include <stdint.h>

#include "layout/layout.h"
#include "topo/topo.h"
#include "util/util.h"

typedef struct mc_tree_edge {
    int parent, child;      /* global GPU ids */
    int nlinks;
    int links[MC_ROUTE_MAX_LINKS]; /* the route's link ids in the schedule's topology */
    int via_gpu;            /* PXN relay GPU of the route, -1 if none */
} mc_tree_edge_t;

/* The most chunks a tree may have: 16 Mi chunks of NCCL's smallest 128 KiB chunk is 2 TiB. */
#define MC_SCHED_MAX_CHUNKS (1 << 24)
/* The most chunks an edge may keep in flight (NCCL keeps 8). */
#define MC_SCHED_MAX_INFLIGHT 64
/* The longest ramp of a tree's chunks (mc_tree_chunk): its end chunks 1/256 of its middle ones. */
#define MC_SCHED_MAX_RAMP 8

typedef struct mc_tree {
    int piece;              /* index into task->pieces */
    uint64_t offset, bytes; /* byte range of the piece's row-major linearization */
    int root;               /* GPU sending it: a holder, or a GPU that received it earlier */
    int phase;              /* 0-based */
    int nchunks;            /* >= 1: the range moves in this many chunks, pipelined */
    int ramp;               /* 0: equal chunks; r >= 1: the first and last r chunks smaller,
                             * halving towards each end (mc_tree_chunk), so that the pipeline
                             * fills and drains in small chunks */
    int inflight;           /* >= 1: chunks an edge keeps in flight: a chunk's message overhead
                             * overlaps the bytes of the inflight - 1 chunks before it. NCCL's
                             * collective kernels keep NCCL_STEPS (8); meshcast's runtime sends a
                             * chunk once the one before is through: 1 (mc_sched_add_tree's) */
    double rate;            /* planned bytes/s per edge, or 0: the tree owns its links in its
                             * phase (see "Capacity" in docs/schedule-format.md) */
    int nedges;
    mc_tree_edge_t *edges;  /* each parent appears (as root or child) before its children */
    int edge_cap;
} mc_tree_t;

/* A group of trees kept compact (mc_sched_load_compact): a template's trees again on other nodes
 * with other pieces (docs/schedule-format.md, "Symmetry"). */
typedef struct mc_sched_tmpl {
    int k;                  /* its number in the file */
    int ntrees, *trees;     /* its trees, in file order */
    int nnodes, *nodes;     /* its nodes in order of first appearance (mc_sched_sym_walk) */
    int nlinks, *links;     /* the distinct links its trees cross */
    int *ends;              /* per link: the local numbers of its two end nodes */
    int ngpus, *gpus;       /* local numbers of the nodes it uses as GPUs (roots, edge ends, via) */
    int *loc_off, *loc;     /* tree j: loc[loc_off[j]] its root's local number, then per edge its
                             * parent's, child's and via GPU's (-1: none) */
} mc_sched_tmpl_t;

typedef struct mc_sched_inst {
    int tmpl;               /* index into mc_sched_t.tmpl */
    int *nodes;             /* the template's nodes, renamed */
    int *pieces;            /* per template tree */
    int *links;             /* the template's links on the renamed nodes */
} mc_sched_inst_t;

typedef struct mc_sched {
    mc_task_t *task;        /* split; owned when owns_task (read from a file) */
    int owns_task;
    uint64_t topo_fingerprint;
    char strategy[32];
    char params[256];       /* "key=value key=value" as the strategy chose them */
    int nphases;
    int ntrees;
    mc_tree_t *trees;
    int tree_cap;
    uint64_t mem_limit;     /* stated per-device peak memory bound in bytes, 0 when none */
    uint64_t workspace;     /* per-device staging bytes the schedule needs beyond its shards */
    int nnotes;             /* problems found reading the file (with force: links this topology */
    char **notes;           /* lacks); mc_sched_validate reports them as violations */
    int note_cap;
    int ntmpl, ninst, inst_cap; /* compact groups (mc_sched_load_compact only; 0 otherwise): */
    mc_sched_tmpl_t *tmpl;  /* their trees would follow the trees above, instance by instance */
    mc_sched_inst_t *inst;
    int inst_trees;         /* the trees the instances stand for */
} mc_sched_t;

/* A new, empty schedule for task (borrowed; must be split) on topo. */
mc_sched_t *mc_sched_new(mc_task_t *task, const mc_topo_t *topo, const char *strategy);
void mc_sched_free(mc_sched_t *s);

/* Adds a tree with no edges; returns its index. */
int mc_sched_add_tree(mc_sched_t *s, int piece, uint64_t offset, uint64_t bytes, int root,
                      int phase, int nchunks);
/* Adds the edge parent->child to tree ti with the topology's route between them. */
mc_status_t mc_sched_add_edge(mc_sched_t *s, const mc_topo_t *topo, int ti, int parent, int child,
                              mc_err_t *err);

/* Adds the edge parent->child to tree ti along a route the caller chose (route->src_gpu is the
 * parent, route->dst_gpu the child). */
mc_status_t mc_sched_add_edge_route(mc_sched_t *s, int ti, const mc_route_t *route, mc_err_t *err);

/* Adds a tree like `like` (its range, phase, chunks, their ramp, chunks in flight and rate; no
 * edges) for piece and root; like may be a tree of s. Returns its index. */
int mc_sched_add_tree_like(mc_sched_t *s, const mc_tree_t *like, int piece, int root);

/* The most chunks any tree of s keeps in flight per edge (1 for an empty schedule): above 1,
 * the schedule models NCCL's collective kernels, which meshcast's runtime does not reproduce. */
int mc_sched_inflight(const mc_sched_t *s);

/* Chunk k of a tree; *off is relative to the tree's offset. Without a ramp the range is cut into
 * nchunks chunks of ceil(bytes / nchunks) bytes, the last one shorter. With ramp r, chunk k of n
 * weighs w(k) = 2^(min(k, r) + min(n - 1 - k, r)) (the middle ones 4^r, each step towards an end
 * half the one before) and chunk k starts at floor(bytes x W(k) / W(n)), W(k) the weight of
 * chunks 0 .. k-1. */
void mc_tree_chunk(const mc_tree_t *t, int k, uint64_t *off, uint64_t *len);
/* What a staging slot must hold: the largest chunk of the tree (with a ramp, its middle chunks'
 * share rounded up, which no chunk exceeds). O(ramp). */
uint64_t mc_tree_chunk_max(const mc_tree_t *t);
/* Whether the tree's chunk count (1 .. MC_SCHED_MAX_CHUNKS) and ramp (0 .. MC_SCHED_MAX_RAMP) are
 * in range and every chunk has a byte: without a ramp, the last one; with one, the end chunks'
 * share bytes x w(0) / W(n) is at least a byte, so every floor difference is. */
int mc_tree_chunks_valid(const mc_tree_t *t);

/* Per link of topo (an array of topo->nlinks + 1, the caller frees it), the time it needs at
 * its full bandwidth for all the bytes of s's trees crossing it, in every phase (0 on a link of
 * no bandwidth). */
double *mc_sched_link_loads(const mc_sched_t *s, const mc_topo_t *topo);
/* The time the busiest link needs at its full bandwidth for all the bytes crossing it, in every
 * phase: a lower bound on the simulated makespan, since the simulator never runs a link above its
 * bandwidth and every chunk of a tree crosses every link of every edge's route once. */
double mc_sched_busiest_link_s(const mc_sched_t *s, const mc_topo_t *topo);

/* Sets every tree's rate to its max-min fair share of the links of its phase, so that trees that
 * share links within a phase are within capacity (a tree whose edges cross one link k times loads
 * it k times its rate). */
void mc_sched_plan_rates(mc_sched_t *s, const mc_topo_t *topo);

/* Weighted max-min fair sharing by progressive filling, shared by mc_sched_plan_rates and the
 * simulator. Flow f uses links links[off[f]..off[f+1]) (ids below the nlinks given to new) with
 * weights weight[...] (NULL: all 1); it gets rate[f] and loads each link weight x rate[f]; cap[l] is
 * link l's capacity. Same input, same rates; a flow that uses no link gets HUGE_VAL. */
typedef struct mc_sched_maxmin mc_sched_maxmin_t;
mc_sched_maxmin_t *mc_sched_maxmin_new(int nlinks);
void mc_sched_maxmin_free(mc_sched_maxmin_t *m);
void mc_sched_maxmin_solve(mc_sched_maxmin_t *m, int nflows, const int *off, const int *links,
                           const double *weight, const double *cap, double *rate);
/* mc_sched_maxmin_solve of unweighted flows where flow f stands for count[f] identical flows (the
 * same links in the same order): the rates, to the bit, that the solve of the flows written out
 * gives each of them (identical flows are fixed together, and a link is charged once per flow, by
 * as many subtractions). The simulator solves its flows by route this way (sim/sim_links.c). With
 * weight not NULL, count is not read. */
void mc_sched_maxmin_solve_counted(mc_sched_maxmin_t *m, int nflows, const int *off,
                                   const int *links, const double *weight, const int *count,
                                   const double *cap, double *rate);
/* After mc_sched_maxmin_solve (or _counted, with the same counts) of these flows on m: the rates of the flows not held (held[f] == 0)
 * on capacities cap, as mc_sched_maxmin_solve of those flows alone, in their order, gives them, to
 * the bit, without indexing the links again; the rates of the held flows are left as they are.
 * The simulator holds flows at their connection limits this way (sim/sim_links.c). */
void mc_sched_maxmin_resolve(mc_sched_maxmin_t *m, int nflows, const int *off, const int *links,
                             const double *weight, const char *held, const double *cap,
                             double *rate);

/* Appends text with XML's special characters escaped, for text and attribute values (the schedule
 * writer and the simulator's SVG timelines use it). */
void mc_sched_xml_escape(mc_buf_t *b, const char *text);

/* Byte-for-byte deterministic XML; written atomically. */
char *mc_sched_to_xml(const mc_sched_t *s, const mc_topo_t *topo);
mc_status_t mc_sched_save(const mc_sched_t *s, const mc_topo_t *topo, const char *path,
                          mc_err_t *err);
/* Reads a schedule. Routes are named by node names; with force, a schedule for another
 * topology (fingerprint mismatch) is read anyway and links missing on topo become violations at
 * validate time rather than read errors. */
mc_status_t mc_sched_load(const char *path, const mc_topo_t *topo, int force, mc_sched_t **out,
                          mc_err_t *err);
mc_status_t mc_sched_parse_memory(const char *buf, size_t len, const char *name,
                                  const mc_topo_t *topo, int force, mc_sched_t **out,
                                  mc_err_t *err);
/* As mc_sched_load, but instances stay compact (ninst) instead of being expanded into trees, after
 * the same checks (an instance that the expansion would refuse is refused with its message). Only
 * mc_sched_validate, mc_sim_run_compact, mc_sched_sym_* and mc_sched_free take such a schedule;
 * it is for checking and timing large files. */
mc_status_t mc_sched_load_compact(const char *path, const mc_topo_t *topo, int force,
                                  mc_sched_t **out, mc_err_t *err);
mc_status_t mc_sched_parse_memory_compact(const char *buf, size_t len, const char *name,
                                          const mc_topo_t *topo, int force, mc_sched_t **out,
                                          mc_err_t *err);

/* A compact schedule: 1 when every instance is a relabeling that keeps the template's checks:
 * its nodes distinct, its links with the template's bandwidths, used by no other tree or
 * instance, and each template's links used only by its trees. */
int mc_sched_sym_relabels(const mc_sched_t *s, const mc_topo_t *topo);
/* A compact schedule with its instances expanded into trees, as mc_sched_load reads the file
 * (borrows s's task): for what needs every tree. */
mc_sched_t *mc_sched_sym_expanded(const mc_sched_t *s, const mc_topo_t *topo);

/* Peak bytes a GPU holds while the schedule runs: its source and destination shards (minus what
 * they share) plus received data it only relays plus the workspace. */
uint64_t mc_sched_peak_mem(const mc_sched_t *s, int gpu);

/* Checks every rule of DESIGN.md section 4; appends one line per violation to out (may be NULL)
 * and returns the number of violations. A compact schedule's templates are checked once and each
 * instance only as a relabeling; when that does not prove it clean, the expanded schedule is
 * checked, so the lines are always those of the expanded schedule. */
int mc_sched_validate(const mc_sched_t *s, const mc_topo_t *topo, mc_buf_t *out);

/* The trees of `phase` (all trees when phase < 0) joined through shared links, transitively:
 * gid[t] gets tree t's group, groups numbered in order of their first tree, -1 for trees of other
 * phases; returns the number of groups. Links off the topology join nothing. */
int mc_sched_link_groups(const mc_sched_t *s, const mc_topo_t *topo, int phase, int *gid);

#endif
