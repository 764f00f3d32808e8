/* Internals of the cost model: the wrapped topology with its route cache and scratch, and the
 * traffic a strategy would send, laid onto links as it is added. */
#ifndef MC_COST_INTERNAL_H
#define MC_COST_INTERNAL_H

#include "cost/cost.h"
#include "topo/topo_chain.h"

/* What the strategies' schedules are cut into, as their synthesizers cut them: meshcast's smallest
 * chunk (MC_MIN_CHUNK_BYTES, NCCL's network P2P chunk), meshcast's most channels per tree
 * (MC_CHANNELS_MAX) and the units it splits a piece into, whole ones per tree (MC_PIECE_UNITS),
 * all in synth/meshcast/; NCCL's Simple step (alpa-bcast's chains) is MC_NCCL_STEP_BYTES. */
#define COST_MESHCAST_CHUNK (128.0 * 1024)
#define COST_CHANNELS_MAX 8
#define COST_PIECE_UNITS 32
/* How far above the bound meshcast's schedule must be for it to race NCCL's rings
 * (synth_meshcast_alt.c, MC_ALT_ROOM). */
#define COST_ALT_ROOM 1.02

/* One GPU-to-GPU transfer of the strategy's traffic. */
typedef struct cost_xfer {
    int route;      /* index into the route pool */
    int after;      /* the transfer that brings the sender these bytes, -1 from a holder */
    int depth;      /* store-and-forward hops up to and including this one */
    int maxc;       /* the most chunks it moves in (its tree's bytes over the smallest chunk),
                     * 0: as many as the estimate's count */
    double bytes;
    double unit;    /* the fewest bytes a tree of the strategy's carrying them may have */
} cost_xfer_t;

/* How meshcast's trees fan a share out inside a host: straight from where it enters (on a
 * switch), along a chain, or along the widest spanning tree (direct-connect and PCIe hosts). */
typedef enum { COST_FAN_STAR, COST_FAN_CHAIN, COST_FAN_TREE, COST_FAN__COUNT } cost_fan_t;

/* A transfer's timing under one chunk count (cost.c's makespan). */
typedef struct cost_time {
    double pace;    /* its busiest link's seconds */
    double delay;   /* its route's message delay */
    int flows;      /* connections on its busiest link whatever the chunks: its transfers or
                     * the strategy's staggered trees, the more */
    int maxc;       /* cost_xfer_t.maxc */
    double inv_flows; /* 1 / flows */
    double units;   /* its smallest tree's bytes over the strategy's smallest chunk, 0 for a
                     * strategy without channels */
    double first, last; /* arrival of its first and last chunk */
    int link;       /* its busiest link */
    double drained; /* from a holder: when its bytes are through (drain_from_holders) */
    double alone;   /* its bytes at its route's bandwidth, the link to itself */
} cost_time_t;

/* One chain (alpa-bcast's, or meshcast's ring): its transfers (ct->xfers[first .. first + n - 1])
 * and the chunk count it pipelines in on its own (cost_traffic.c, mc_chain_chunks). */
typedef struct cost_chain {
    int first, n;
    int chunks;
    int overlap;    /* staggered channels of one chain hiding each other's message delays */
    int inflight;   /* chunks an edge keeps in flight: NCCL's 8 for alpa-bcast, 1 for meshcast */
} cost_chain_t;

/* A cached route: its links in the pool and its message delay (alpha + hop latencies). */
typedef struct cost_route {
    int first, n;
    double delay;
    double bw;      /* its slowest link's bandwidth */
    double cap;     /* the most one connection moves over it (mc_topo_conn_cap), 0 for no limit */
} cost_route_t;

struct mc_cost_topo {
    const mc_topo_t *topo;
    /* route cache: open hash of (src * ngpus + dst) -> route index */
    int64_t *keys;
    int *vals, hcap, hcount;
    cost_route_t *routes;
    int nroutes, route_cap;
    int *pool, npool, pool_cap;
    /* per host: its GPUs in id order and its network ports */
    int *gpu_host;          /* GPU -> host, read on every transfer */
    int *host_start, *host_gpus, *host_ports;
    double *host_bw;        /* the host's network ports' bandwidth, bytes/s */
    int *port_of;           /* NET node -> its index among its host's ports, else -1 */
    int *gpu_port;          /* GPU -> the port its traffic from other hosts arrives by: -1 none,
                             * -2 not known yet */
    int *port_base;         /* host -> index of its first port in port_in / port_out */
    double *port_in, *port_out; /* per call: bytes planned through each port, in and out */
    int *host_pieces;       /* per call: pieces that must enter the host from another */
    char *host_switched;    /* the host has an NVSwitch: a ring never beats a star there */
    signed char *host_relays; /* a relay GPU widens some path of the host: 1, never: 0,
                               * not known yet: -1 */
    int *gpu_nic;           /* GPU -> the NIC NCCL picks for it (mc_topo_nearest_nics), looked
                             * up on the first alpa-bcast estimate */
    /* per call */
    double *load;       /* bytes per link */
    double *lstart;     /* per link: when the holders' transfers on it start moving bytes, or
                         * a ring's first chunk reaches it (rings_floor) */
    double *ltail;      /* per link: the shortest tail of ring hops after it (rings_floor), or
                         * when forwarded transfers join it (drain_from_holders) */
    double *lheld;      /* per link: the seconds of its holders' transfers (drain_from_holders) */
    int *lholders;      /* per link: holders' transfers whose busiest link it is */
    double *lfwd;       /* per link: the seconds of the forwarded transfers whose busiest it is */
    int *flows;         /* transfers per link */
    int *touched, ntouched;
    cost_xfer_t *xfers;
    int nxfers, xfer_cap;
    cost_time_t *times;     /* per transfer, time_cap of them */
    int time_cap;
    double *gpu_out;    /* bytes each GPU sends (holder choice) */
    double *host_out;   /* bytes each host sends across (source-host choice) */
    cost_chain_t *chains;   /* alpa-bcast's chains, chain_cap of them */
    int nchains, chain_cap;
    int64_t *step_keys;     /* chain transfers per (link, depth): an open hash, step_cap slots */
    int *step_count;
    int step_cap, step_mask;
    cost_fan_t fan;     /* how a share fans out inside a host */
    int straight;       /* meshcast: every host is served by a holder host, none relays */
    int relayed;        /* per estimate: some host was served by a host that does not hold the
                         * piece (so the straight candidate differs) */
    int channels;       /* the most channels the strategy cuts a tree into (1: none) */
    int staggered;      /* connections on every link whatever the bytes (staggered trees) */
    double min_chunk;   /* the smallest chunk a connection sends */
    double unit;        /* the piece being laid out: its smallest tree (0: each transfer) */
    int chunk_cap;      /* the piece being laid out: its transfers' most chunks (0: no cap) */
    int ring_split;     /* cost_traffic_ring: the channels meshcast cuts each ring chain into */
    int conns;          /* connections that carry one transfer, each held at the route's
                         * limit (cost_route_t.cap); 0: as many as its pace needs */
    int rails;          /* meshcast: pieces leaving one host are striped over its rails */
    int split;          /* meshcast: pieces leaving one host on split trees (cost_split_lay) */
    int *rail_leaving;  /* per call, per host: pieces whose holders all sit on it */
    int rail_senders;   /* per call: hosts that such pieces leave */
    char *rail_taken;   /* per call, per GPU: its rail given to an earlier piece */
};

static inline int64_t step_key(int link, int depth)
{
    return (int64_t)link << 20 | depth;
}

/* The slot of (link, depth) in ct->step_keys: its own, or the empty one where it goes. */
static inline int step_slot(const struct mc_cost_topo *ct, int link, int depth)
{
    int64_t key = step_key(link, depth);
    int s = (int)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 40) & ct->step_mask;
    while (ct->step_keys[s] != -1 && ct->step_keys[s] != key)
        s = (s + 1) & ct->step_mask;
    return s;
}

/* Adds a transfer of bytes from GPU a to GPU b along their route, after transfer `after` (-1:
 * a holder sends). *x gets its index, or `after` when nothing moves (a == b). */
mc_status_t cost_send(mc_cost_topo_t *ct, int a, int b, double bytes, int after, int *x,
                      mc_err_t *err);
/* The route from GPU a to GPU b (cached). */
mc_status_t cost_route(mc_cost_topo_t *ct, int a, int b, const cost_route_t **r, mc_err_t *err);
/* The route of the last transfer cost_send added. */
const cost_route_t *cost_last_route(const mc_cost_topo_t *ct);
/* The same, but inside a host as meshcast's load-priced trees do: the bytes go in
 * COST_RELAY_PARTS parts, each straight or through one relay GPU, whichever leaves the busiest
 * link of its path least loaded (a direct-connect host whose two GPUs share no NVLink relays
 * through one that has both); *x gets the last transfer made. */
#define COST_RELAY_PARTS 4
mc_status_t cost_relay(mc_cost_topo_t *ct, int a, int b, double bytes, int after, int *x,
                       mc_err_t *err);

/* The port (index among its host's network ports) GPU g receives traffic from other hosts by,
 * -1 when it has none. */
mc_status_t cost_gpu_port(mc_cost_topo_t *ct, int g, int *port, mc_err_t *err);

/* Lays a strategy's traffic for the task onto ct's links with cost_send. */
mc_status_t cost_traffic_meshcast(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err);
mc_status_t cost_traffic_direct(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err);
mc_status_t cost_traffic_p2p(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err);
mc_status_t cost_traffic_alpa_bcast(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err);
/* NCCL's ring chains as meshcast races them (race_ring): the nccl-ring strategy's chains, each
 * cut into ct->ring_split staggered channels. */
mc_status_t cost_traffic_ring(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err);

/* meshcast's rail stripes (cost_rails.c): whether some piece would be striped (*any: a piece
 * leaving a host that holds all of it, over two rails or more, in trees large enough) and whether
 * some piece leaves such a host at all (*split: cost_split_lay lays it); the per-call counts
 * cost_rails_lay reads; and piece p laid as stripes over its holder host's rails (*laid: 1) or
 * left to the other forms (0: it does not stripe). */
mc_status_t cost_rails_any(mc_cost_topo_t *ct, const mc_task_t *task, int *any, int *split,
                           mc_err_t *err);
void cost_rails_prepare(mc_cost_topo_t *ct, const mc_task_t *task);
mc_status_t cost_rails_lay(mc_cost_topo_t *ct, const mc_piece_t *p, int *laid, mc_err_t *err);
/* meshcast's split trees (synth/meshcast/candidates_relay.c, mc_cands_add_split): piece p, held
 * on one host and needed on others, laid as the relay trees of its holder host's destinations
 * (root -> e -> the others there) and, per NIC port of that host and other host j, root -> j's
 * GPU on the rail -> every other host's GPU on the rail, each fanning out at home; *laid: 0 when
 * p is not such a piece (nothing laid). */
mc_status_t cost_split_lay(mc_cost_topo_t *ct, const mc_piece_t *p, int *laid, mc_err_t *err);

#endif
