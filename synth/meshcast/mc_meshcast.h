/* Internals of the meshcast strategy (docs/synthesis.md): candidate trees per piece, the abstract
 * plan the optimizer works on (pieces split into units, candidates with per-link costs), the
 * greedy seed, the Z3 model, and the split of a task into link-disjoint components. The plan layer
 * knows nothing of topologies so that the model can be tested on hand-made inputs. */
#ifndef MC_MESHCAST_H
#define MC_MESHCAST_H

#include <stdint.h>

#include "layout/layout.h"
#include "synth/synth.h"
#include "topo/topo.h"
#include "util/util.h"

/* ---- shares (synth_meshcast_shares.c) ---- */

/* Some destinations of one piece, served from a holder host of their own. */
typedef struct mc_share {
    int piece;
    int ndests;
    const int *dests;     /* ascending; points into the shares' pool */
    int root_host;        /* holder host tried first, -1 for none */
    int open;             /* the piece's other holder hosts may serve it too */
    int fine;             /* it has priced trees: split into MC_PIECE_UNITS_FINE units; above 1,
                           * into that many (rail stripes: their split in whole units) */
} mc_share_t;

typedef struct mc_shares {
    int n, cap;
    mc_share_t *s;
    int *pool, npool;     /* every share's destinations, laid end to end */
} mc_shares_t;

/* Splits every piece with destinations into shares: one when it has a single holder host or a
 * single destination host; otherwise one per destination host that holds the piece itself
 * (served from inside), and the other destination hosts in contiguous groups, one per holder
 * host among those with the most GPUs that are not the piece's destinations (at most one host
 * per group), each open to every holder host where the groups are fewer than the holder hosts.
 * Destination hosts behind one bottleneck from the holders (by mc_host_flow: a leaf whose uplinks
 * carry less than its hosts' NICs) are not split between groups. */
void mc_shares_build(const mc_task_t *task, const mc_topo_t *topo, mc_shares_t *out);
void mc_shares_free(mc_shares_t *sh);

/* ---- candidate trees (candidates*.c) ---- */

typedef struct mc_cand {
    int piece;
    int root;
    int nedges;
    int *parent, *child;  /* GPU edges, each parent reached before its children */
    int depth;            /* edges on the longest root-to-leaf path */
    int nlinks;
    int *links;           /* topology link ids the tree's routes use, ascending */
    int *mult;            /* how many tree edges cross each of them */
    double sec_per_byte;  /* max over links of mult / bw: the pipelined tree's rate */
    double *edge_spb;     /* per edge: its slowest link's mult / bw */
    double *edge_hop;     /* per edge: alpha + route latency, paid by every chunk */
    int *edge_up;         /* per edge: the edge into its parent, -1 at the root */
    double *edge_conn_spb; /* per edge: 1 / its connection limit (mc_topo_conn_cap), 0 for none:
                           * one connection moves a chunk over the edge no faster */
    double conn_spb;      /* the largest of them: one copy of the tree moves no faster */
    int direct;           /* the star: every destination straight from the root (send/recv) */
    double stripe;        /* the fraction of its share the rail-stripe split gives it
                           * (candidates_rails.c; 0 for other trees) */
} mc_cand_t;

typedef struct mc_cands {
    int n, cap;
    mc_cand_t *c;
} mc_cands_t;

/* Candidates from further holder hosts stop being added beyond this many per share. */
#define MC_CAND_MAX 24

/* Appends the candidate trees of a share (at least one; each reaches all its destinations). Root
 * choices start at rotation rot (shares leaving the same host get different ones). With
 * no_relays, trees pass only through holders and destinations (a memory limit is set). With
 * wrap, chains across hosts visit them from the root's host on, wrapping around, rather than
 * in ascending order (the balanced synthesis: in ascending order, with every host sending, host
 * 0 forwards every other host's shares and the last host none). */
mc_status_t mc_cands_add_share(mc_cands_t *cs, const mc_task_t *task, const mc_topo_t *topo,
                               const mc_share_t *sh, int rot, int no_relays, int wrap,
                               mc_err_t *err);
void mc_cands_free(mc_cands_t *cs);
/* Drops the candidates from index n on. */
void mc_cands_truncate(mc_cands_t *cs, int n);

/* The host a share's rail stripes leave from: its own holder host, or the one host that holds
 * its piece; -1 when its holders span hosts (the shapes rotate over them, candidates.c). */
int mc_rails_host(const mc_task_t *task, const mc_topo_t *topo, const mc_share_t *sh);
/* Appends the rail-stripe trees of piece p seen as pc (candidates_rails.c) when it has
 * destinations outside root_host: per rail k of that host, the root hands the bytes once to its
 * host's GPU on rail k, which sends them on rail k across the other hosts (as a chain, or, where
 * root_host is the one host of senders hosts that shares leave, through one hub host that sends
 * to every other one), each entry GPU fanning out inside its host, and
 * fans them out inside the root host. The nshares shares leaving root_host divide its rails
 * (taken: per GPU, its rail given to an earlier share; the caller zeroes it once): a share has
 * trees on its own rails only. Sets each tree's stripe: the split that gives each of them an
 * equal part, spread evenly over the rail's two-level trees (over its chains where there are
 * none), and *units: the share's units, so that this split is whole units. Where no tree was
 * added or a tree of the split would carry under 1 MiB, the trees it added are dropped again and
 * stripes and units are 0: the share is exactly as the shapes left it. */
mc_status_t mc_cands_add_rails(mc_cands_t *cs, const mc_topo_t *topo, int p,
                               const mc_piece_t *pc, int root_host, int nshares, int senders,
                               char *taken, int *units, mc_err_t *err);
/* The rail trees of a small share (the last race, synth_meshcast_alt.c): as mc_cands_add_rails,
 * every tree kept whatever its bytes, and the crossing between hosts chosen by its alpha-beta
 * cost per rail (candidates_rails.c, choose_shape): through every remote host as a hub (two
 * message waits, each NIC sending about the stripe twice over), or a tree of a fan-out from 1 (a
 * chain) to the host count (a star). Each tree's stripe is its part of the share; trees that
 * carry none (the chains beside hubs) have stripe 0. Also where the root's host has one rail (one
 * NIC), if it is the only host sending (senders: how many hosts have shares leaving them). */
mc_status_t mc_cands_add_rails_small(mc_cands_t *cs, const mc_topo_t *topo, int p,
                                     const mc_piece_t *pc, int root_host, int nshares,
                                     int senders, char *taken, mc_err_t *err);
/* Takes the stripes back (stripe 0, the shares' units those of priced shares) where the stripe
 * split of the shares that have one loads its busiest link more than the fractional optimum
 * over every share's other trees (shapes and priced) does: there the stripes bring nothing the
 * others lack, and their units and chunking serve the split only. Share i's trees are
 * cs->c[first[i] .. first[i] + count[i]); frac_s: the optimum over all of them (pricing's). */
void mc_rails_unstripe(mc_cands_t *cs, const mc_task_t *task, const mc_topo_t *topo,
                       mc_shares_t *sh, const int *first, const int *count, double frac_s);

/* Relay trees (candidates_relay.c). Whether a share's per-message overheads matter: its best
 * candidate among cs->c[first .. first + n) alone takes more than a tenth over its bandwidth time;
 * *root gets the root of its star (its first holder). */
int mc_cands_small(const mc_cands_t *cs, int first, int n, uint64_t bytes, int *root);
/* How many other hosts than root's the share's destinations are on; -1 when fewer than two of
 * them share root's host (no stripe to make). */
int mc_cands_relay_hosts(const mc_topo_t *topo, const mc_share_t *sh, int root);
/* How many other hosts than root's the share's destinations are on; *nlocal: how many of them
 * share root's host. */
int mc_cands_hosts_away(const mc_topo_t *topo, const mc_share_t *sh, int root, int *nlocal);
/* Appends one tree per destination e of the share on root's host: root -> e, then from e to every
 * other destination (the host's shortest-path tree from e; the other hosts entered on e's rail,
 * as a tree of the given fan-out over their entry GPUs below e: 1 a chain, 0 each from e). Nothing
 * where mc_cands_relay_hosts is -1. */
mc_status_t mc_cands_add_relays(mc_cands_t *cs, const mc_topo_t *topo, const mc_share_t *sh,
                                int root, int fanout, mc_err_t *err);
/* The share's bytes twice, to its destinations on root's host and to the others: the relay trees
 * of the root's host alone (root -> e -> its other destinations), then one tree per NIC port of
 * root's host, root -> the first other host's GPU on that rail (the route through the rail's GPU,
 * no store-and-forward there), the other hosts below it as in mc_cands_add_relays; with hubs,
 * one such tree per port and other host, from that host's GPU on the rail. Where the
 * network's message wait is long, the root's links send the bytes to both at once while the
 * network's first message waits. Nothing when the share has no destination on another host. */
mc_status_t mc_cands_add_split(mc_cands_t *cs, const mc_topo_t *topo, const mc_share_t *sh,
                               int root, int fanout, int hubs, mc_err_t *err);
/* One tree of share sh from root (candidates.c): its destinations on root's host by the host's
 * shortest-path tree; the j-th other host entered from the GPU of root's host on the j-th NIC
 * after root's (root -> that GPU -> the other host's GPU on its rail), then that host's
 * shortest-path tree. Each NIC sends the bytes once and every destination is one network hop
 * from the root, where a chain is as many hops deep as it has hosts and a star sends them over
 * one NIC once per host. Nothing when it repeats a candidate. */
mc_status_t mc_cands_add_spread(mc_cands_t *cs, const mc_task_t *task, const mc_topo_t *topo,
                                const mc_share_t *sh, int root, mc_err_t *err);

/* Builds a GPU tree of piece p from edges (used by the generators); computes links,
 * multiplicities and rates from the topology's routes. Appends it to cs unless it repeats an
 * earlier candidate of the same piece; *index gets the new or the repeated one's index (-1 when
 * there are no edges). */
mc_status_t mc_cands_push(mc_cands_t *cs, const mc_topo_t *topo, int p, int root, int nedges,
                          const int *parent, const int *child, int *index, mc_err_t *err);

/* Chunks one copy of the tree of candidate c (one connection per edge) moving `bytes` is
 * pipelined in: chunk_bytes when set, else the count that minimizes the modelled time (the first
 * chunk down the longest path, the others at the pace of the slowest edge, every chunk paying
 * each edge's overhead, no edge faster than its connection limit; with rate > 0, no edge faster
 * than the copy's planned rate); and the time that pipelining adds to bytes x sec_per_byte when
 * the tree runs alone, as copies that carry its link rate (no connection limit). */
#define MC_CHUNKS_MAX 1024
int mc_cand_chunks(const mc_cand_t *c, uint64_t bytes, uint64_t chunk_bytes, double rate);
double mc_cand_overhead_s(const mc_cand_t *c, uint64_t bytes, uint64_t chunk_bytes);
/* Parallel copies of the tree (each its own connections, a slice of the bytes) that carry rate
 * bytes/s through its edges' connection limits; at least 1. */
int mc_cand_copies(const mc_cand_t *c, double rate);

/* The intra-host shortest-path tree (mc_topo_host_spt: Dijkstra over the host's GPUs, weight
 * 1/bw of the route) from src to every GPU in want[0..nwant): appends the edges to parent/child
 * (sized by the caller for the host's GPU count) and returns how many it appended, or -1 on
 * error. */
int mc_cands_host_spt(const mc_topo_t *topo, int src, const int *want, int nwant, int *parent,
                      int *child, mc_err_t *err);
/* The destinations want[0..nwant) of one host reached from the GPUs in[0..nin) of that host
 * (already in the tree) by a tree carrying `bytes` in chunks of `chunk` (candidates_fanout.c):
 * edge by edge, the one whose route least raises the tree's cost (below). Appends the edges to
 * parent/child (sized for the host's GPU count) and returns how many, -1 when a destination
 * cannot be reached. */
int mc_cands_host_fanout(const mc_topo_t *topo, const int *in, int nin, const int *want,
                         int nwant, double bytes, double chunk, int *parent, int *child);
/* The alpha-beta cost of the ne edges parent[i] -> child[i] (parents listed first) of one host's
 * part of a tree carrying `bytes` in chunks of `chunk`: its busiest link's time (the bytes over
 * each link as often as the tree's routes cross it; in *most) plus the latest arrival of a first
 * chunk (per edge its route's alpha and latency and a chunk at its bottleneck). */
double mc_cands_fanout_cost(const mc_topo_t *topo, const int *parent, const int *child, int ne,
                            double bytes, double chunk, double *most);
/* The root host's part of rail-stripe trees (candidates_home.c): n trees, tree e from roots[e]
 * first to firsts[e] (another GPU of the host), then to every one of dests, carrying ws[e]
 * stripes, while the stripes leave the host from dep_from[k] to dep_to[k] (k < ndep). */
typedef struct mc_home {
    int n;
    const int *roots, *firsts;
    const double *ws;
    const int *dests;
    int ndests;
    const int *dep_from, *dep_to;
    int ndep;
} mc_home_t;

/* Plans the trees of h around each other's load: edges parents first into par, chi at
 * e x (ndests + 2), their count in ne[e], the first npath[e] of them the path from the root to
 * the first GPU. Returns -1 when some GPU could not be reached. */
int mc_cands_home_trees(const mc_topo_t *topo, const mc_home_t *h, int *par, int *chi, int *ne,
                        int *npath);

/* Appends a tree built from edges like mc_cands_push, without looking for an earlier copy;
 * returns its index, or -1 on error. */
int mc_cands_append(mc_cands_t *cs, const mc_topo_t *topo, int p, int root, int nedges,
                    const int *parent, const int *child, mc_err_t *err);

/* ---- the fractional tree-packing model (candidates_frac.c) ---- */

/* Every share's bytes split over its candidate trees in any proportion, all trees at once; the
 * value is the busiest link's load in seconds. Solved by Frank-Wolfe on a soft maximum of the
 * link loads (multiplicative weights), deterministic and without an LP solver. */
typedef struct mc_frac {
    const mc_cands_t *cs;
    const mc_topo_t *topo;
    int nshares;
    int **cols;           /* per share: its candidates, indices into cs */
    int *ncols, *capcols;
    double *demand;       /* per share: bytes every destination receives */
    double *x;            /* per candidate of cs: its share's fraction on it */
    int capx;
    double *load;         /* per topology link: seconds of traffic */
    double *price;        /* per topology link: the link's dual, summing to 1 */
    double value_s;       /* the busiest link's load */
    double lower_s;       /* a lower bound on the optimum over these candidates (Lagrangian) */
    double depth_bias;    /* > 0: shares move toward columns of least price x (1 + bias x depth) */
    double fill_s;        /* > 0: ... and x mc_frac_fill(column, fill_s) */
} mc_frac_t;

/* Bisection steps of the line search of each Frank-Wolfe step. */
#define MC_FRAC_SEARCH 24

void mc_frac_init(mc_frac_t *f, const mc_cands_t *cs, const mc_topo_t *topo, int nshares,
                  const double *demand);
void mc_frac_free(mc_frac_t *f);
/* Makes candidate c a column of share s (at fraction 0). */
void mc_frac_add(mc_frac_t *f, int s, int c);
/* Steps per solve for the model's current size, within a fixed work (candidates_price.c). */
int mc_frac_steps(const mc_frac_t *f);
/* Improves the split for at most iters steps (a share without any fraction starts on its
 * cheapest column); fills value_s, lower_s, load and price. */
void mc_frac_solve(mc_frac_t *f, int iters);
/* Price of one byte on tree c: its links' prices (plus eps each) times multiplicity / bw. */
double mc_frac_tree_cost(const mc_frac_t *f, const mc_cand_t *c, double eps);
/* 1 + the relative pipeline fill of tree c carrying its bytes for about t_s seconds at its best
 * chunk count: n chunks cost t_s (depth - 1) / n of fill and n x hop of per-chunk delay (hop: its
 * slowest edge's alpha and latency), least at n = sqrt(t_s (depth - 1) / hop), where the two
 * add up to 2 sqrt(t_s (depth - 1) hop). Deeper trees and shorter transfers pay more. */
double mc_frac_fill(const mc_cand_t *c, double t_s);
/* Whether a tree of price a and depth da beats one of price b and depth db: cheaper, or as cheap
 * (within rounding) and shallower, since a deeper tree pays more pipeline fill for the same link
 * load. */
int mc_frac_cheaper(double a, int da, double b, int db);

/* ---- cheap trees under link prices (candidates_steiner.c) ---- */

/* The complete directed graph over some GPUs, edge a->b weighing the sum over its route's links
 * of (price + eps) / bw, and its all-pairs cheapest paths (igraph Dijkstra). */
typedef struct mc_steiner {
    const mc_topo_t *topo;
    int n;
    int *gpus;            /* node -> GPU */
    int *node;            /* GPU -> node, -1 outside */
    double *w;            /* [a * n + b]: edge weight */
    double *dist;         /* [a * n + b]: cheapest path */
    int *pred;            /* [a * n + b]: the node before b on a's cheapest path to b */
} mc_steiner_t;

mc_status_t mc_steiner_init(mc_steiner_t *g, const mc_topo_t *topo, const int *gpus, int n,
                            const double *price, double eps, mc_err_t *err);
void mc_steiner_free(mc_steiner_t *g);
/* A tree from root reaching every dest (Takahashi-Matsuyama: repeatedly the destination
 * nearest to the tree, by its cheapest path, relays allowed at any node), edges parents first
 * into parent/child (room for n - 1); returns the edge count, -1 when root or a destination is
 * not a node. *cost gets the tree's weight. */
int mc_steiner_tree(const mc_steiner_t *g, int root, const int *dests, int ndests, int *parent,
                    int *child, double *cost);

/* ---- column generation (candidates_price.c) ---- */

/* The splits pricing hands to the optimizer: the least busiest-link load found, and the same
 * columns split again preferring shallow trees (the simulator charges pipeline fill per level,
 * the model does not): by a fixed weight per level, and by each tree's own fill over the
 * transfer's length (mc_frac_fill), which weighs depth more on short transfers and slow hops. */
enum { MC_SPLIT_LOAD, MC_SPLIT_SHALLOW, MC_SPLIT_FILL, MC_SPLITS };

typedef struct mc_price_stats {
    int rounds;           /* pricing rounds run */
    int added;            /* trees added */
    double first_s;       /* fractional optimum over the initial candidates */
    double frac_s;        /* ... over the final ones */
} mc_price_stats_t;

/* Adds trees priced by link load: solves the fractional model over the shares' candidates,
 * prices every link by its dual, and for every share adds the cheapest tree under those prices
 * from any of its candidates' roots (or a holder on their hosts), with relays at any GPU of the
 * hosts its destinations and candidates touch, when it costs less than every candidate it has;
 * repeats while the optimum is more than 1% above bound_s and falls; then (up to 128 GPUs) again
 * with relays at any GPU for the shares that cross hosts, kept where that lowers the optimum by
 * 5%. Marks the shares that gained trees fine. Keeps each share's candidates contiguous
 * (first, count rewritten) and gives each candidate's fraction in each split, frac[k][c]
 * (caller frees each). */
mc_status_t mc_cands_price(mc_cands_t *cs, const mc_task_t *task, const mc_topo_t *topo,
                           mc_shares_t *sh, int *first, int *count, double bound_s,
                           double *frac[MC_SPLITS], mc_price_stats_t *stats, mc_err_t *err);

/* ---- the abstract plan (synth_meshcast_plan.c) ---- */

typedef struct mc_pcand {
    int piece;            /* plan-local piece index */
    int64_t unit_ps;      /* picoseconds per unit on its bottleneck link */
    int64_t fixed_ps;     /* per-use cost: hop overheads and pipeline fill */
    /* its edges, for the estimate at shared pace (mc_plan_shared_ps; priced shares only, else
     * nedges is 0): each edge's parent edge (-1 at the root), per-chunk overhead (alpha + route
     * latency) and the plan-local links of its route, edge_links[edge_at[e] .. edge_at[e + 1]) */
    int nedges;
    int *edge_up;
    int64_t *edge_hop_ps;
    int *edge_at, *edge_links;
    int nlinks;
    int *links;           /* plan-local link ids */
    int64_t *link_ps;     /* picoseconds per unit on each of its links */
} mc_pcand_t;

/* A tree's time carrying u units (0 for none). */
static inline int64_t mc_pcand_ps(const mc_pcand_t *pc, int u)
{
    return u > 0 ? u * pc->unit_ps + pc->fixed_ps : 0;
}

typedef struct mc_plan {
    int npieces;
    int *units;           /* per piece: the units its bytes are split into */
    int ncands;
    mc_pcand_t *cands;    /* grouped by piece, pieces in order */
    int nlinks;
} mc_plan_t;

/* A solution: units[c * nphases + k] units of candidate c run in phase k. */
typedef struct mc_plan_sol {
    int nphases;
    int *units;
    int64_t est_ps;       /* estimated makespan: sum over phases of the phase time */
} mc_plan_sol_t;

void mc_plan_free(mc_plan_t *pl);
void mc_plan_sol_free(mc_plan_sol_t *s);
/* A deep copy of src into dst. */
void mc_plan_sol_copy(const mc_plan_t *pl, const mc_plan_sol_t *src, mc_plan_sol_t *dst);
/* Phase time under the plan's cost model: the slowest tree, or the busiest link (trees of one
 * phase share links at planned rates). */
int64_t mc_plan_phase_ps(const mc_plan_t *pl, const mc_plan_sol_t *s, int k);
/* A lower bound on any solution's estimate: the load on every link that all of a piece's
 * candidates cross (a piece split over several trees may beat any one of them). */
int64_t mc_plan_lower_ps(const mc_plan_t *pl);
/* Checks a solution (every piece's units placed, none negative) and fills est_ps. Returns 0
 * when feasible. */
int mc_plan_check(const mc_plan_t *pl, mc_plan_sol_t *s);
/* Drops empty phases and orders the rest slowest first (phases are independent). */
void mc_plan_sol_compact(const mc_plan_t *pl, mc_plan_sol_t *s);

/* The plan that sends every piece whole on its direct candidate (flag per plan candidate), in
 * one phase: what point-to-point sends do. Returns -1 when a piece has no direct candidate. */
int mc_plan_direct(const mc_plan_t *pl, const int *direct, mc_plan_sol_t *out);

/* The plan that sends every piece whole, in one phase, on the candidate that carries most of it
 * in sol: the same trees without the small splits the estimate favoured. */
void mc_plan_whole(const mc_plan_t *pl, const mc_plan_sol_t *sol, mc_plan_sol_t *out);
/* The plan that sends every piece whole, in one phase, on the candidate that leaves the busiest
 * link least loaded, the largest pieces placed first (synth_meshcast_balance.c). */
void mc_plan_balanced(const mc_plan_t *pl, mc_plan_sol_t *out);
/* A solution's estimate with every tree's pipeline fill at the pace of its busiest link: per
 * phase, the busiest link, or the slowest tree as busy + (depth - 1) busy / n + n hop, busy its
 * busiest link's load, n its chunks at their best but none below min_chunk (cand[c]: plan
 * candidate c's tree; unit_bytes[p]: plan piece p's unit). Ranks the starting plans
 * (synth_meshcast_fill.c). */
int64_t mc_plan_fill_ps(const mc_plan_t *pl, const mc_cand_t *const *cand,
                        const uint64_t *unit_bytes, uint64_t min_chunk, const mc_plan_sol_t *s);

/* Whole units from fractional ones (x[c]: units of candidate c), in one phase: each candidate
 * keeps its whole part and the units left over go, one at a time, to the largest fractions
 * (lowest index on ties) or, by_load, to the candidate with a fraction left whose busiest link
 * stays least loaded (then the largest fraction): a piece's last units then spread over links
 * instead of piling where several pieces' fractions happen to be largest. */
void mc_plan_round(const mc_plan_t *pl, const double *x, int by_load, mc_plan_sol_t *sol);

/* Local descent on a one-phase solution (a rounded fractional split leaves whole units on slow
 * deep trees: their units and pipeline fill, which the fractional model does not count, can
 * outlast every link): one unit at a time moves from the slowest tree to the candidate of its
 * piece that lowers the estimate most (at an equal estimate: the sum of what the trees' times
 * exceed the busiest link by), while one does; est_ps is refilled. A solution of several phases
 * or an infeasible one is left as it is. */
void mc_plan_descend(const mc_plan_t *pl, mc_plan_sol_t *sol);

/* A one-phase tree's time when its links are shared, given load[] (ps, every link's load in the
 * phase, all its trees together): a link's load is also how long the tree's bytes take to cross
 * it, so each edge moves a chunk of n in its busiest link's load / n plus its overhead; the tree
 * pipelines n chunks, the first down its slowest path, the others behind it at its slowest edge's
 * pace, at the best n. Without edges: its busiest link's load plus its fixed cost. */
int64_t mc_plan_shared_ps(const mc_pcand_t *pc, const int64_t *load);
/* A one-phase solution's estimate with every tree at its shared pace (mc_plan_shared_ps): the
 * slowest tree or the busiest link. */
int64_t mc_plan_shared_est(const mc_plan_t *pl, const mc_plan_sol_t *sol);
/* mc_plan_descend under mc_plan_shared_est: one unit at a time from the slowest tree to the
 * candidate of its piece that lowers that estimate most, while one does and while *work_left
 * lasts (trees re-timed, each counted as its links and edges; what it used is taken from it).
 * Returns the estimate reached (-1 when sol is not one feasible phase, left as it is); est_ps
 * is refilled. */
int64_t mc_plan_descend_shared(const mc_plan_t *pl, mc_plan_sol_t *sol, int64_t *work_left);

/* Greedy seed and fallback (water filling): unit by unit, largest pieces first, each unit on the
 * candidate and phase that grow the estimate least (among equals, with balance, where the
 * candidate's own links stay least loaded; then on a tree already running); then rounds in which
 * every piece is lifted and filled again. Always feasible. */
void mc_plan_greedy(const mc_plan_t *pl, int balance, mc_plan_sol_t *out);

/* What a Z3 solve came to. */
typedef enum mc_z3_outcome {
    MC_Z3_NONE = -1,      /* no usable model */
    MC_Z3_STOPPED = 0,    /* stopped early (rlimit, budget, unknown) with a model */
    MC_Z3_OPTIMAL = 1,    /* proven optimal */
    MC_Z3_AT_BOUND = 2    /* the seed meets the lower bound: Z3 not needed */
} mc_z3_outcome_t;

typedef struct mc_z3_stats {
    mc_z3_outcome_t status;
    uint64_t rlimit_used;
    char reason[96];
} mc_z3_stats_t;

/* The relaxation, solved by GLPK's simplex over real units in one phase (synth_meshcast_lp.c):
 * the split of every piece over its candidates that minimizes the busiest link plus a
 * share-weighted pipelining cost. Returns 0 with its rounding to whole units in *out, or -1 with
 * *out untouched when the plan has more than 100 candidates or the simplex gave no optimum
 * within budget_s (0: no limit). */
int mc_plan_solve_lp(const mc_plan_t *pl, double budget_s, mc_plan_sol_t *out);

/* The integer model: Z3_optimize over whole units per candidate and phase (the seed's phases),
 * each used tree paying its fixed cost, the sum of phase times between lower and 1/64 below the
 * seed's estimate. *out holds a feasible solution no worse than seed (a copy of it when Z3 finds
 * nothing that much better). rlimit 0 = none; budget_s bounds the wall clock. */
mc_status_t mc_plan_solve_z3(const mc_plan_t *pl, const mc_plan_sol_t *seed, int64_t lower,
                             uint64_t rlimit, double budget_s, mc_plan_sol_t *out,
                             mc_z3_stats_t *stats, mc_err_t *err);

/* ---- staggered chunking (synth_meshcast_stagger.c) ---- */

/* The most chunks up to want that bytes can be cut into: none below min_chunk, and chunks of
 * ceil(bytes / n), every one non-empty; at least 1. */
uint64_t mc_chunks_within(uint64_t want, uint64_t bytes, uint64_t min_chunk);
/* Among the trees of one phase whose slowest link is the same, gives the j-th of m trees
 * 1 + spread * j/m times its chunks (none smaller than min_chunk bytes), so that their
 * per-message overheads do not all fall at once. */
void mc_sched_stagger(mc_sched_t *s, const mc_topo_t *topo, int spread, uint64_t min_chunk);
/* Cuts every tree of min_bytes or more into k channels (fewer where a channel would carry less
 * than min_chunk): copies of the tree over consecutive parts of its bytes, channel j of m in
 * 1 + spread * j/m times the tree's chunks (none below min_chunk), so that their per-message
 * overheads fall at different instants; the planned rates are stated again. A tree that does
 * not cross the network takes host_chunk in min_chunk's place. */
void mc_sched_channels(mc_sched_t *s, const mc_topo_t *topo, int k, int spread, uint64_t min_chunk,
                       uint64_t host_chunk, uint64_t min_bytes);
/* Puts the trees of s that share a phase and their edges (channels) out of phase
 * (synth_meshcast_phased.c): each takes mult times the most chunks of its set, rounded up (none below
 * net_chunk bytes, or host_chunk for a tree inside a host; at most MC_CHUNKS_MAX) and the j-th by
 * offset ramp j (mod MC_SCHED_MAX_RAMP + 1, less where its chunks would not all have a byte).
 * Returns whether any tree changed. */
int mc_sched_phased(mc_sched_t *s, const mc_topo_t *topo, double mult, uint64_t net_chunk,
                    uint64_t host_chunk);
/* Into *out, a copy of s in which every piece whose trees share a phase and whose largest tree
 * is rooted at a holder moves part of its bytes onto one more tree, where that is cheaper under
 * prices that grow steeply with s's link loads (synth_meshcast_side.c): its cheapest Steiner
 * tree to the piece's destinations, over the GPUs of s's trees. The part is scale times the one
 * fraction, for all those pieces, that minimizes the busiest link's time at full bandwidth;
 * each side tree is cut in chunks of its piece's trees' average size, none below min_chunk.
 * NULL when that lowers the busiest link by less than a thousandth, when s is compact
 * (mc_sched_load_compact), or when s's trees use more than 64 GPUs or their pieces' Steiner trees
 * would cost too much (SIDE_WORK_MAX). Rates planned. */
mc_status_t mc_sched_side(const mc_sched_t *s, const mc_topo_t *topo, double scale,
                          uint64_t min_chunk, mc_sched_t **out, mc_err_t *err);
/* Whether no edge of tree t of s crosses the network (its transfers stay inside hosts). */
int mc_sched_tree_in_host(const mc_sched_t *s, const mc_topo_t *topo, int t);
/* Whether no tree of s crosses the network and one is too small for 2 channels of its chunks of
 * min_chunk bytes each: then only a smaller floor can cut it (mc_sched_channels), and no tree
 * waits on the network, whose per-message overhead dwarfs what such cuts save. */
int mc_sched_host_held(const mc_sched_t *s, const mc_topo_t *topo, uint64_t min_chunk);
/* Whether a tree of s that crosses the network is too small for 2 channels of its chunks of
 * min_chunk bytes each: only a smaller network floor can cut it further. */
int mc_sched_net_held(const mc_sched_t *s, const mc_topo_t *topo, uint64_t min_chunk);
/* Into *out, a copy of s whose trees that leave their root's host from the root and fan out
 * inside it (no GPU there sending elsewhere) reach that host's GPUs back from their first host
 * across the network instead, each from the GPU there on its device (synth_meshcast_loopback.c);
 * NULL when no tree does. Rates planned. */
mc_status_t mc_sched_looped(const mc_sched_t *s, const mc_topo_t *topo, mc_sched_t **out,
                            mc_err_t *err);
/* Into *out, a copy of s whose pieces that have trees in relays (each piece's together) move on
 * those instead, the piece's bytes split over each run of them that reaches the same
 * destinations (multiples of 4 KiB; evenly, or by the trees' stripes where they have one: a tree
 * of stripe 0 there carries nothing), in phase 0, each
 * in its best chunk count at its planned rate (none below min_chunk bytes, unless alone it has
 * more); rates planned (synth_meshcast_striped.c). The counts come from chunks, the synthesis's
 * memo of them (synth_meshcast_chunks.c), or searched afresh where it is NULL. */
typedef struct mc_chunk_memo mc_chunk_memo_t;
mc_status_t mc_sched_striped(const mc_sched_t *s, const mc_topo_t *topo, const mc_cands_t *relays,
                             uint64_t min_chunk, mc_chunk_memo_t *chunks, mc_sched_t **out,
                             mc_err_t *err);
/* The spreads the referee tries: 1 .. MC_STAGGER_MAX. */
#define MC_STAGGER_MAX 3

/* ---- components (synth_meshcast_split.c) ---- */

/* The plans of a component, by kind: the solved one, the starting plans that were not the best
 * (refined too), every share on its direct tree, every share whole on the tree that carries most
 * of it in the solved plan. The referee races the schedules built from each kind. */
typedef enum mc_plan_kind {
    MC_PLAN_SOLVED,
    MC_PLAN_OTHER0,
    MC_PLAN_OTHER1,
    MC_PLAN_OTHER2,
    MC_PLAN_OTHER3,
    MC_PLAN_OTHER4,
    MC_PLAN_REPAIRED,     /* the best rounded split repaired (mc_plan_descend), raced as decoded */
    MC_PLAN_SHARED,       /* the best rounded split at shared pace (mc_plan_descend_shared) */
    MC_PLAN_DIRECT,
    MC_PLAN_WHOLE,
    MC_PLAN_BALANCED,     /* every share whole, placed by link load (mc_plan_balanced) */
    MC_PLAN_KINDS
} mc_plan_kind_t;

typedef struct mc_comp {
    int npieces;
    int *pieces;          /* share ids, ascending (the plan's pieces are shares) */
    int *cand_ids;        /* plan candidate -> index in the candidate list */
    mc_plan_t plan;
    int *link_ids;        /* plan-local link -> topology link */
    uint64_t *unit_bytes; /* per plan piece: the bytes of one of its units */
    int same_as;          /* index of an earlier component with the same model, else -1 */
    mc_plan_sol_t plans[MC_PLAN_KINDS]; /* by kind; has[k] when plans[k] was made */
    int has[MC_PLAN_KINDS];
} mc_comp_t;

/* Groups the shares into components whose candidates share no link, and builds each one's plan
 * (share i's candidates are cs->c[first[i] .. first[i]+count[i]); chunk_bytes: the caller's
 * pipeline chunk, 0 for each tree's best; frac: the fractional split of the priced shares' bytes
 * per candidate, or NULL, which sizes each tree's fixed cost). */
void mc_comps_build(const mc_task_t *task, const mc_topo_t *topo, const mc_shares_t *sh,
                    const mc_cands_t *cs, const int *first, const int *count, uint64_t chunk_bytes,
                    const double *frac, mc_comp_t **out, int *ncomps);
void mc_comps_free(mc_comp_t *comps, int n);

/* Units a piece is split into for the optimizer (finer for a share with priced trees: its
 * fractional split spreads bytes over more trees, some on slow links, and whole units of 1/32
 * would overload them), and the bytes of one unit. */
#define MC_PIECE_UNITS 32
#define MC_PIECE_UNITS_FINE 128
int mc_piece_units(uint64_t bytes, int fine, uint64_t *unit_bytes);

#endif
