/* Internals shared by the lower-bound files of layout/ (bound.c, bound_net.c, bound_cut.c,
 * bound_flow.c, bound_lp.c, flow.c): the maximum-flow network, the topology seen as one, the
 * message overheads every term adds, and how a term is kept when it is the largest of its kind. */
#ifndef MC_BOUND_INTERNAL_H
#define MC_BOUND_INTERNAL_H

#include "layout/layout_internal.h"

/* A flow network whose arc ids are stable: arc a's residual twin is a ^ 1. */
typedef struct mc_flow {
    int n, m, cap_m;
    int *head, *next, *to;
    double *cap, *res;
    int *level, *iter, *queue;
    long long work; /* arcs scanned by the solves so far, a deterministic measure of effort */
} mc_flow_t;

void mc_flow_init(mc_flow_t *f, int nnodes);
void mc_flow_free(mc_flow_t *f);
/* Adds an arc u -> v and returns its id. */
int mc_flow_arc(mc_flow_t *f, int u, int v, double cap);
void mc_flow_set(mc_flow_t *f, int arc, double cap);
/* The maximum flow from s to t under the capacities as set (the network itself is unchanged). */
double mc_flow_max(mc_flow_t *f, int s, int t);

/* The topology as a flow network over a region: the nodes of some hosts get their own flow nodes
 * and every other node (other hosts, network switches) is contracted into one node "outside",
 * which can only add flow, so capacities stay generous and the bounds valid. A super source and a
 * super sink reach every GPU of the region and the outside node through terminal arcs of
 * capacity 0 until a term switches them on. */
typedef struct mc_bound_net {
    mc_flow_t flow;
    const mc_topo_t *topo;
    const double *cap;         /* per link, the index's */
    int source, sink, outside; /* outside is -1 when the region is the whole topology */
    int *src_arc, *snk_arc;    /* per global GPU; -1 for GPUs outside the region */
    int out_src_arc, out_snk_arc;
    int *on, non;              /* terminal arcs switched on since the last clear */
} mc_bound_net_t;

/* The nodes and links of each host (a link under both its ends' hosts), so that a network over
 * a few hosts of a large cluster is built from their parts only. */
typedef struct mc_bound_index {
    int *node_start, *nodes; /* host h: nodes[node_start[h] .. node_start[h + 1]) */
    int *link_start, *links;
    int *node_id;            /* scratch for mc_bound_net_init, -1 between uses */
    double *cap;             /* per link: the capacity the terms count (mc_bound_route_caps) */
} mc_bound_index_t;

/* Topologies of at most this many GPUs have their links' capacities counted by routes
 * (mc_bound_route_caps); above, every link counts whole. */
#define MC_BOUND_ROUTE_GPUS 64

/* Per link, the capacity the terms count, into cap[topo->nlinks]: every transfer of a schedule
 * follows mc_topo_route between two GPUs (DESIGN.md section 4; relays are tree edges), so a link
 * that no route between two GPUs takes carries nothing in any schedule, and counts 0 (the PCIe
 * links of GPUs that reach every peer over xGMI or NVLink, on a host without another host's
 * traffic). The others count their bandwidth. Up to MC_BOUND_ROUTE_GPUS GPUs (all pairs
 * routed); above, every link counts. */
void mc_bound_route_caps(const mc_topo_t *topo, double *cap);

void mc_bound_index_init(mc_bound_index_t *x, const mc_topo_t *topo);
void mc_bound_index_free(mc_bound_index_t *x);

/* Topologies up to this many links are kept whole in the networks of the flow and cut terms, so
 * that a thin link between switches counts; larger ones keep only the hosts a term touches. */
#define MC_BOUND_WHOLE_LINKS 2048

/* hosts: per host, nonzero when in the region; NULL for the whole topology. */
void mc_bound_net_init(mc_bound_net_t *n, const mc_topo_t *topo, const mc_bound_index_t *x,
                       const char *hosts);
void mc_bound_net_free(mc_bound_net_t *n);
/* All terminal arcs back to 0. */
void mc_bound_net_clear(mc_bound_net_t *n);
/* Makes a GPU (or, with gpu -1, the outside node) a source or a sink of the next solve. */
void mc_bound_net_source(mc_bound_net_t *n, int gpu);
void mc_bound_net_sink(mc_bound_net_t *n, int gpu);
double mc_bound_net_value(mc_bound_net_t *n);
/* A lower bound on the value, from paths of one or two arcs, in one pass. */
double mc_bound_net_lower(mc_bound_net_t *n);

/* Pieces with the same holders and destinations, merged (bound_class.c): p is the first piece
 * of the class (its holders and dests), bytes those of all its pieces. */
typedef struct mc_bound_class {
    const mc_piece_t *p;
    uint64_t bytes;
} mc_bound_class_t;

/* The classes of the task's pieces into *out (freed by the caller), in the order of their first
 * pieces; returns their count. */
int mc_bound_classes(const mc_task_t *task, mc_bound_class_t **out);

/* What every term reads: per GPU the least message overhead its incoming and outgoing traffic
 * pays (bound.c says why) and the sums of its link bandwidths, the cheapest cross-host overhead,
 * the hosts' parts for building flow networks, and the task's classes of pieces. */
typedef struct mc_bound_ctx {
    double *in, *out; /* alphas per GPU */
    double cross;
    double *in_bw, *out_bw;
    mc_bound_index_t index;
    mc_bound_class_t *cls; /* the task's pieces by holders and destinations */
    int ncls;
    int routed; /* every pair of GPUs routed (up to MC_BOUND_ROUTE_GPUS) */
} mc_bound_ctx_t;

/* The largest term of one kind so far: bandwidth time plus its own alpha. */
typedef struct mc_best {
    double bw, alpha;
    int where;
} mc_best_t;

/* Keeps the larger of *best and bytes/capacity + alpha, with where = at; fails when bytes must
 * cross a cut with no capacity at all (what and at name the cut in the message). Returns 1 in
 * *kept when the new term replaced *best (kept may be NULL). */
mc_status_t mc_bound_term(mc_best_t *best, uint64_t bytes, double cap, double alpha, int at,
                          const char *what, const mc_topo_t *topo, int *kept, mc_err_t *err);

/* Sorts the indices of the classes of al into order[] so that classes with the same holder set
 * (and, with by_dests, the same destinations) are adjacent; group g is
 * order[start[g]..start[g + 1]). Returns the number of groups; start has al->ncls + 1 entries. */
int mc_bound_holder_groups(const mc_bound_ctx_t *al, int by_dests, int *order, int *start);

/* Whether a term of bytes over a flow network's value plus alpha cannot exceed floor nor *best,
 * judged by mc_bound_net_lower: then it need not be solved. */
int mc_bound_skip(mc_bound_net_t *net, uint64_t bytes, double alpha, double floor,
                  const mc_best_t *best);

/* The host-relay term (bound_relay_hosts.c): per host A, the
 * bytes held only on A against A's maximum flow out and the other hosts' maximum flows in
 * (cap_in, cap_out: per host, 0 where not computed), where bytes relayed by a third host wait
 * two network waits. best->where is A. */
mc_status_t mc_bound_relay_hosts(const mc_topo_t *topo, const mc_bound_ctx_t *al,
                                 const double *cap_in, const double *cap_out, mc_best_t *best,
                                 mc_err_t *err);
/* The reach term (bound_reach.c; needs al->routed): per holder group and GPU m that needs its
 * bytes, m's incoming links each open when the group's bytes can first reach it over them.
 * best->where is m. */
mc_status_t mc_bound_reach(const mc_topo_t *topo, const mc_bound_ctx_t *al, mc_best_t *best,
                           mc_err_t *err);
/* The cut term (bound_cut.c): sets of GPUs inside a host and unions of hosts; *set says which
 * set binds. Sets whose term cannot exceed floor (the largest term of the other kinds) are
 * skipped. */
mc_status_t mc_bound_cut(const mc_topo_t *topo, const mc_bound_ctx_t *al, double floor,
                         mc_best_t *best, mc_bound_set_t *set, mc_err_t *err);
/* The per-destination flow term (bound_flow.c): best->where is the destination, *holder the
 * first holder of the group that binds. Pairs that cannot exceed floor are skipped. */
mc_status_t mc_bound_flow(const mc_topo_t *topo, const mc_bound_ctx_t *al, double floor,
                          mc_best_t *best, int *holder, mc_err_t *err);
/* The lp term (bound_lp.c): left as it is when the task is too large to solve, or when its
 * optimum cannot exceed floor (0: always solved). */
void mc_bound_lp(const mc_topo_t *topo, const mc_bound_ctx_t *al, double floor, mc_best_t *best);

#endif
