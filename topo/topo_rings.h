/* The rings NCCL runs a ring collective on over a list of GPUs (topo/topo_rings.c,
 * topo/topo_rings_search.c): its channels, and the order of the GPUs on each. A pure question
 * about the topology, asked by the nccl-ring baseline (synth/) and by the cost model's mirror of
 * it (cost/). */
#ifndef MC_TOPO_RINGS_H
#define MC_TOPO_RINGS_H

#include "topo/topo.h"

/* The rings NCCL's topology search (ncclTopoCompute) finds over the GPUs of one host. */
typedef struct mc_topo_ring_search {
    int nrings;     /* rings found, after the search's channel duplication; 0: none searched */
    double speed;   /* bandwidth of one ring, bytes/s */
    int ops;        /* search steps spent (NCCL's time budgets count the same steps) */
    int *order;     /* nrings x n GPU ids: ring r visits order[r * n .. r * n + n) in turn */
} mc_topo_ring_search_t;

/* Searches rings over gpus[0..n) (GPUs of one host) as NCCL does on a single node: a ring is a
 * cycle through every GPU whose every hop's route has the ring's speed left on each of its links;
 * speeds come from NCCL's speed arrays (RCCL's for AMD GPUs); routes over NVLink or xGMI alone
 * are tried before those over PCIe, then through a CPU, then across CPUs; the search keeps the
 * most rings x speed within NCCL's step budgets. Deterministic. Free with
 * mc_topo_ring_search_free. */
mc_status_t mc_topo_ring_search(const mc_topo_t *t, const int *gpus, int n,
                                mc_topo_ring_search_t *out, mc_err_t *err);
void mc_topo_ring_search_free(mc_topo_ring_search_t *r);

/* Searches found once per set of GPUs (a strategy or estimate that asks for many). */
typedef struct mc_topo_ring_cache mc_topo_ring_cache_t;
mc_topo_ring_cache_t *mc_topo_ring_cache_new(void);
void mc_topo_ring_cache_free(mc_topo_ring_cache_t *c);
/* mc_topo_ring_search over gpus[0..n) (any order, one host), kept in c: *out stays valid until
 * c is freed. */
mc_status_t mc_topo_ring_search_cached(mc_topo_ring_cache_t *c, const mc_topo_t *t,
                                       const int *gpus, int n, const mc_topo_ring_search_t **out,
                                       mc_err_t *err);
/* Whether NCCL's search decides the rings of GPUs on gpu's host: no NVSwitch joins it (on an
 * NVSwitch every order is as good, and NCCL tries each GPU's neighbours in rank order first). */
int mc_topo_ring_searched(const mc_topo_t *t, int gpu);
/* mc_topo_ring_searched, kept in c (NULL: asked afresh): a ring strategy asks it of every GPU of
 * every piece's ring, and igraph lists each one's links (0.28 G instructions of the rings of the
 * uneven 4 MiB reshuffle over eight MI250 hosts). */
int mc_topo_ring_searched_cached(mc_topo_ring_cache_t *c, const mc_topo_t *t, int gpu);
/* Where a channel's ring of a host runs: from GPU first round the searched ring s (order of n
 * GPUs, the ring c mod s->nrings) into out[0..n). */
void mc_topo_ring_from(const mc_topo_ring_search_t *s, int n, int c, int first, int *out);

/* A ring collective's rings over a list of GPUs, as NCCL builds them: the list's runs of
 * consecutive GPUs on one host (NCCL keeps a node's ranks together), each on a host without
 * NVSwitch searched (mc_topo_ring_search), each on an NVSwitch host kept in the list's order
 * (there every order is as good, and NCCL's search tries the GPUs' neighbours first). */
typedef struct mc_topo_rings {
    int n, *gpus;        /* the ring's GPUs: the list, with the root (if outside it) added */
    int nruns, *start;   /* run r is gpus[start[r] .. start[r + 1]), on one host */
    const mc_topo_ring_search_t **found;  /* per run: its rings, nrings 0 where the run keeps
                                           * the list's order */
    mc_topo_ring_search_t *search;  /* per run: the search, when it came from no cache */
} mc_topo_rings_t;

/* The rings over gpus[0..n), with root (-1: none) added at the head of the first run on its host
 * (or as a run of its own first) when it is not in the list and not on an NVSwitch: NCCL's
 * communicator for a broadcast holds its root. A root left off the ring sends to the ring's
 * first GPU of the channel. Searches come from cache (NULL: searched afresh). */
mc_status_t mc_topo_rings_new(const mc_topo_t *t, const int *gpus, int n, int root,
                              mc_topo_ring_cache_t *cache, mc_topo_rings_t **out, mc_err_t *err);
void mc_topo_rings_free(mc_topo_rings_t *r);

/* Channel c's ring (order[0..r->n)): every run entered at its c-th GPU, then round its host's
 * ring of channel c (the searched rings in turn, or the list's order). Across hosts the c-th GPU
 * sits next to the host's c-th NIC: NCCL's rings leave and enter a host through one NIC each. */
void mc_topo_rings_order(const mc_topo_rings_t *r, int c, int *order);

/* The chain of channel c that moves a buffer of root's to dests[0..ndests) (NCCL's ring
 * broadcast, or one rank's block of a ring all-gather): root, then the destinations in the
 * channel's ring order from root's position on (from the ring's first GPU when root is off the
 * ring). order is scratch of r->n; returns the chain's length in out. */
int mc_topo_rings_chain(const mc_topo_rings_t *r, int root, const int *dests, int ndests, int c,
                        int *order, int *out);
/* Of channels channels, how many share a hop: on one host with searched rings those of one ring
 * (the rings are apart), else all of them. */
int mc_topo_rings_sharing(const mc_topo_rings_t *r, int channels);

/* The channels a ring collective rooted at root runs. On one host: the searched rings, doubled
 * as NCCL's connect step doubles them (at most its MAXCHANNELS, 64), or root's NVLink lanes on an
 * NVSwitch host (1 without NVLink, at most 32). Over several hosts: root's NVLink lanes rounded
 * up to a whole number per network port of root's host, at most 32. */
int mc_topo_rings_channels(const mc_topo_t *t, const mc_topo_rings_t *r, int root);

#endif
