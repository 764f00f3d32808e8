/* The traffic each strategy would send for a task, as GPU-to-GPU transfers, each after the
 * transfer that brings its sender the bytes (docs/cost-model.md). Each follows what its strategy
 * does, not a fit: meshcast moves every byte into a destination host once, spread over the
 * host's network ports, and fans it out inside the host, or sends straight from holders when
 * that is faster (its optimizer has both kinds of candidates); p2p sends every piece from its
 * first holder to every destination; alpa-bcast chains every piece through its destinations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost_internal.h"
#include "topo/topo_rings.h"

/* The most chains NCCL's ring broadcast runs (synth_alpa_bcast.c, BCAST_MAX_CHAINS). */
#define BCAST_MAX_CHAINS 32

/* The holder in hs[0..n) that has sent the least so far (the first on ties). */
static int least_sent(const mc_cost_topo_t *ct, const int *gpus, int n)
{
    int best = gpus[0];
    for (int i = 1; i < n; i++)
        if (ct->gpu_out[gpus[i]] < ct->gpu_out[best])
            best = gpus[i];
    return best;
}

/* The next hop of a chain or tree inside a host: among the senders from[0..nfrom) and the
 * destinations not yet reached, the pair joined by the widest route (the first on ties, so the
 * earliest sender: trees stay shallow). */
static mc_status_t widest(mc_cost_topo_t *ct, const int *from, int nfrom, const int *dests,
                          int n, uint64_t done, int *u, int *v, mc_err_t *err)
{
    double best = -1;
    mc_status_t st = MC_OK;
    for (int i = 0; i < nfrom && st == MC_OK; i++)
        for (int q = 0; q < n && st == MC_OK; q++) {
            const cost_route_t *r;
            if ((done >> q & 1) || (st = cost_route(ct, from[i], dests[q], &r, err)) != MC_OK ||
                r->bw <= best)
                continue;
            best = r->bw;
            *u = i;
            *v = q;
        }
    return st;
}

/* From entry, which holds a share once transfer `after` ends, to every other destination, by
 * ct->fan: straight from entry (dests from dests[first] on); a chain that goes on each time to
 * the destination with the widest route from where it is (a ring along the fast links, what a
 * switchless PCIe tree needs); or the widest spanning tree grown from entry (a direct-connect
 * host's NVLinks). Relays inside the host where they widen a route. *last gets the last
 * transfer made (after when none). Hosts of more than 64 GPUs fan out straight. */
static mc_status_t spread(mc_cost_topo_t *ct, int entry, const int *dests, int n, int first,
                          double share, int after, int *last, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    *last = after;
    if (ct->fan == COST_FAN_STAR || n > 64) {
        for (int k = 1; k <= n && st == MC_OK; k++)
            if (dests[(first + k) % n] != entry)
                st = cost_relay(ct, entry, dests[(first + k) % n], share, after, last, err);
        return st;
    }
    int from[65], xfer[65], nfrom = 1;
    uint64_t done = 0;
    from[0] = entry;
    xfer[0] = after;
    for (int q = 0; q < n; q++)
        done |= dests[q] == entry ? 1ull << q : 0;
    while (st == MC_OK && done != (n == 64 ? ~0ull : (1ull << n) - 1)) {
        int u = 0, v = 0;
        /* a chain sends only from its end */
        int lo = ct->fan == COST_FAN_CHAIN ? nfrom - 1 : 0;
        st = widest(ct, from + lo, nfrom - lo, dests, n, done, &u, &v, err);
        if (st == MC_OK)
            st = cost_relay(ct, from[lo + u], dests[v], share, xfer[lo + u], last, err);
        done |= 1ull << v;
        from[nfrom] = dests[v];
        xfer[nfrom++] = *last;
    }
    return st;
}

/* Inside one host: the destinations dests[0..n) get bytes from the local holders: the bytes
 * split into one share per destination or per holder, whichever is more; share j goes from the
 * least busy holder to its own first destination, which passes it on (spread): scatter and
 * all-gather, the bandwidth-optimal broadcast on a switch, and its ring and tree forms. */
static mc_status_t fan_out_local(mc_cost_topo_t *ct, const int *holders, int nholders,
                                 const int *dests, int n, double bytes, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int m = nholders > n ? nholders : n;
    for (int j = 0; j < m && st == MC_OK; j++) {
        int first = (int)((int64_t)j * n / m), x, last;
        st = cost_relay(ct, least_sent(ct, holders, nholders), dests[first], bytes / m, -1, &x,
                        err);
        if (st == MC_OK)
            st = spread(ct, dests[first], dests, n, first, bytes / m, x, &last, err);
    }
    return st;
}

/* A host a piece's bytes can leave from: one that holds it, or one it has reached already. */
typedef struct source {
    int host;
    const int *gpus;    /* its GPUs that hold the bytes */
    int ngpus;
    int after;          /* the transfer after which they hold them, -1 for holders */
    int depth;          /* store-and-forward hops before that */
} source_t;

/* The GPU a share arriving by port `port` of host hd enters at: a destination that port serves,
 * else another GPU it serves (a relay), else the first destination. */
static mc_status_t entry_of(mc_cost_topo_t *ct, int hd, int port, const int *dests, int n,
                            int *entry, mc_err_t *err)
{
    const int *hg = ct->host_gpus + ct->host_start[hd];
    int ng = ct->host_start[hd + 1] - ct->host_start[hd], q;
    mc_status_t st = MC_OK;
    *entry = -1;
    for (int i = 0; i < n && st == MC_OK && *entry < 0; i++)
        if ((st = cost_gpu_port(ct, dests[i], &q, err)) == MC_OK && q == port)
            *entry = dests[i];
    for (int i = 0; i < ng && st == MC_OK && *entry < 0; i++)
        if ((st = cost_gpu_port(ct, hg[i], &q, err)) == MC_OK && q == port)
            *entry = hg[i];
    if (*entry < 0)
        *entry = dests[0];
    return st;
}

/* The port (rail) a share from host hs into host hd takes: the one whose busier end, the source
 * host's port or the destination host's, has the fewest bytes planned; its bytes are added. */
static int pick_port(mc_cost_topo_t *ct, int hs, int hd, double bytes)
{
    int nd = ct->host_ports[hd], ns = ct->host_ports[hs], best = 0;
    double best_load = INFINITY;
    double *in = ct->port_in + ct->port_base[hd], *out = ct->port_out + ct->port_base[hs];
    for (int r = 0; r < nd; r++) {
        double load = fmax(in[r], ns ? out[r % ns] : 0) + 1e-3 * (in[r] + (ns ? out[r % ns] : 0));
        if (load < best_load) {
            best_load = load;
            best = r;
        }
    }
    if (nd) {
        in[best] += bytes;
        if (ns)
            out[best % ns] += bytes;
    }
    return best;
}

/* Into another host: from the source host that has sent the least across so far (a holder host
 * or a destination host already served, so that hosts relay to hosts as meshcast's trees do),
 * over the destination host's network ports (a tree per rail): each piece splits into as many
 * shares as it takes for the host's pieces to spread evenly over its ports, and each share takes
 * the least busy port at both ends. A share enters at a GPU its port serves and is passed on to
 * every destination. *served describes the host as a source for later hosts. */
static mc_status_t cross(mc_cost_topo_t *ct, const mc_piece_t *p, const source_t *src, int nsrc,
                         int hd, const int *dests, int n, source_t *served, mc_err_t *err)
{
    /* the shallowest source that sending the piece does not make the busiest sender of them
     * (so that hosts relay to hosts in a tree of logarithmic depth, not a chain, where the
     * traffic leaves room), else the one that has sent the least, the shallowest on ties */
    double busiest = 0;
    for (int i = 0; i < nsrc; i++)
        busiest = fmax(busiest, ct->host_out[src[i].host]);
    /* the straight candidate (cost.c) for a piece too small for meshcast's referee to cut its
     * trees into channels (under two chunks a tree of one unit): it cannot pipeline a relay */
    int straight = (double)p->bytes < COST_PIECE_UNITS * 2 * COST_MESHCAST_CHUNK;
    const source_t *from = NULL;
    for (int i = 0; i < nsrc && !(straight && ct->straight); i++)
        if (ct->host_out[src[i].host] + (double)p->bytes <= busiest &&
            (!from || src[i].depth < from->depth))
            from = &src[i];
    /* the straight candidate: the holder host that has sent the least (holders come first) */
    for (int i = 0; straight && ct->straight && i < nsrc && src[i].depth == 0; i++)
        if (!from || ct->host_out[src[i].host] < ct->host_out[from->host])
            from = &src[i];
    for (int i = 0, fallback = !from; fallback && i < nsrc; i++)
        if (i == 0 || ct->host_out[src[i].host] < ct->host_out[from->host] ||
            (ct->host_out[src[i].host] == ct->host_out[from->host] && src[i].depth < from->depth))
            from = &src[i];
    ct->host_out[from->host] += (double)p->bytes;
    ct->relayed |= straight && from->depth > 0;
    int nports = ct->host_ports[hd] > 0 ? ct->host_ports[hd] : 1;
    int pieces = ct->host_pieces[hd] > 0 ? ct->host_pieces[hd] : 1;
    int a = nports, b = pieces;
    while (b) {
        int c = a % b;
        a = b;
        b = c;
    }
    int shares = nports / a; /* shares x pieces = lcm(ports, pieces): every port the same count */
    double share = (double)p->bytes / shares;
    mc_status_t st = MC_OK;
    *served = (source_t){hd, dests, n, from->after, from->depth + 1};
    /* A small piece goes straight to each destination (meshcast's direct candidates) when the
     * host's ports carry the n - 1 extra copies of every piece entering the host (each piece
     * sent this way, the ports carry them all) in less time than the hop inside the host that
     * a tree adds would cost. */
    const cost_route_t *hop;
    if (n > 1 && (st = cost_route(ct, dests[0], dests[1], &hop, err)) == MC_OK &&
        (n - 1) * (double)p->bytes * pieces / ct->host_bw[hd] < hop->delay) {
        for (int k = 0; k < n && st == MC_OK; k++) {
            int port;
            st = cost_gpu_port(ct, dests[k], &port, err);
            if (st == MC_OK && port >= 0) {
                ct->port_in[ct->port_base[hd] + port] += (double)p->bytes;
                if (ct->host_ports[from->host])
                    ct->port_out[ct->port_base[from->host] + port % ct->host_ports[from->host]] +=
                        (double)p->bytes;
            }
            if (st == MC_OK)
                st = cost_send(ct, least_sent(ct, from->gpus, from->ngpus), dests[k],
                               (double)p->bytes, from->after, &served->after, err);
        }
        served->depth = from->depth + 1;
        return st;
    }
    for (int r = 0; r < shares && st == MC_OK; r++) {
        int entry, first = 0, x = -1, last;
        st = entry_of(ct, hd, pick_port(ct, from->host, hd, share), dests, n, &entry, err);
        while (st == MC_OK && first < n - 1 && dests[first] != entry)
            first++;
        if (st == MC_OK)
            st = cost_send(ct, least_sent(ct, from->gpus, from->ngpus), entry, share,
                           from->after, &x, err);
        if (st == MC_OK)
            st = spread(ct, entry, dests, n, first, share, x, &last, err);
        /* the host passes the piece on as it enters, as a tree does, not once it has fanned out */
        served->after = x;
    }
    return st;
}

/* The holder hosts of a piece as sources (holders are ascending, so grouped by host); holders
 * inside a destination host serve it from inside. Returns the count. */
static int holder_sources(const mc_cost_topo_t *ct, const mc_piece_t *p, source_t *src)
{
    int n = 0;
    for (int i = 0; i < p->nholders; i++) {
        int h = ct->gpu_host[p->holders[i]];
        if (n && src[n - 1].host == h) {
            src[n - 1].ngpus++;
            continue;
        }
        src[n++] = (source_t){h, p->holders + i, 1, -1, 0};
    }
    return n;
}

/* Counts, per host, the pieces that enter it from another host. */
static void count_entering(mc_cost_topo_t *ct, const mc_piece_t *p, source_t *src)
{
    int nhold = holder_sources(ct, p, src);
    for (int j = 0, k = 0; j < p->ndests;) {
        int h = ct->gpu_host[p->dests[j]];
        while (j < p->ndests && ct->gpu_host[p->dests[j]] == h)
            j++;
        while (k < nhold && src[k].host < h)
            k++;
        if (k == nhold || src[k].host != h)
            ct->host_pieces[h]++;
    }
}

mc_status_t cost_traffic_meshcast(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err)
{
    const mc_topo_t *t = ct->topo;
    mc_status_t st = MC_OK;
    source_t *src = mc_xmalloc(sizeof(source_t) * (size_t)(2 * t->nhosts + 1));
    for (int i = 0; i < task->npieces; i++)
        count_entering(ct, &task->pieces[i], src);
    if (ct->rails)
        cost_rails_prepare(ct, task);
    for (int i = 0; i < task->npieces && st == MC_OK; i++) {
        const mc_piece_t *p = &task->pieces[i];
        int nsrc = holder_sources(ct, p, src), nhold = nsrc, laid = 0;
        if (ct->rails && ((st = cost_rails_lay(ct, p, &laid, err)) != MC_OK || laid))
            continue;
        if (ct->split && ((st = cost_split_lay(ct, p, &laid, err)) != MC_OK || laid))
            continue;
        ct->unit = (double)p->bytes / COST_PIECE_UNITS;
        /* destinations grouped by host (GPUs are numbered host by host and both lists ascend, so
         * each host's are contiguous and hosts come in order): hosts holding the piece first,
         * then the others, which may relay to later ones */
        for (int pass = 0; pass < 2 && st == MC_OK; pass++)
            for (int j = 0, k = 0; j < p->ndests && st == MC_OK;) {
                int h = ct->gpu_host[p->dests[j]], n = 0;
                while (j + n < p->ndests && ct->gpu_host[p->dests[j + n]] == h)
                    n++;
                while (k < nhold && src[k].host < h)
                    k++;
                const source_t *local = k < nhold && src[k].host == h ? &src[k] : NULL;
                if (pass == 0 && local)
                    st = fan_out_local(ct, local->gpus, local->ngpus, p->dests + j, n,
                                       (double)p->bytes, err);
                if (pass == 1 && !local) {
                    st = cross(ct, p, src, nsrc, h, p->dests + j, n, &src[nsrc], err);
                    nsrc++;
                }
                j += n;
            }
    }
    free(src);
    return st;
}

/* meshcast's star candidates: every destination straight from a holder, the least busy one on
 * its own host if there is one, else the holders in turn from the least busy one. */
mc_status_t cost_traffic_direct(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    source_t *src = mc_xmalloc(sizeof(source_t) * (size_t)(ct->topo->nhosts + 1));
    for (int i = 0; i < task->npieces && st == MC_OK; i++) {
        const mc_piece_t *p = &task->pieces[i];
        int nhold = holder_sources(ct, p, src), turn = 0;
        ct->unit = (double)p->bytes / COST_PIECE_UNITS;
        for (int k = 1; k < p->nholders; k++)
            if (ct->gpu_out[p->holders[k]] < ct->gpu_out[p->holders[turn]])
                turn = k;
        for (int j = 0, k = 0; j < p->ndests && st == MC_OK; j++) {
            int h = ct->gpu_host[p->dests[j]], from;
            while (k < nhold && src[k].host < h)
                k++;
            if (k < nhold && src[k].host == h) {
                from = least_sent(ct, src[k].gpus, src[k].ngpus);
            } else {
                from = p->holders[turn];
                turn = (turn + 1) % p->nholders;
            }
            int x;
            st = cost_send(ct, from, p->dests[j], (double)p->bytes, -1, &x, err);
        }
    }
    free(src);
    return st;
}

/* The first holder in the source mesh's device order (Alpa's replica order). */
static int first_holder(const mc_task_t *task, const mc_piece_t *p)
{
    const mc_mesh_t *m = &task->meshes[task->tensors[p->tensor].src.mesh];
    for (int i = 0; i < m->ndevices; i++)
        if (mc_ints_contain(p->holders, p->nholders, m->devices[i]))
            return m->devices[i];
    return p->holders[0];
}

mc_status_t cost_traffic_p2p(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    for (int i = 0; i < task->npieces && st == MC_OK; i++) {
        const mc_piece_t *p = &task->pieces[i];
        int src = first_holder(task, p);
        for (int j = 0, x; j < p->ndests && st == MC_OK; j++)
            st = cost_send(ct, src, p->dests[j], (double)p->bytes, -1, &x, err);
    }
    return st;
}

/* The chunk count a chain of n routes picks for bytes, at most NCCL's steps in them (and 4096),
 * as the strategies pick it (synth_chain_chunks). */
static int chain_chunks(const double *delay, const double *bw, int n, double bytes, double steps,
                        int inflight)
{
    return mc_chain_chunks(delay, bw, n, bytes, (int)fmax(1, fmin(floor(steps), 4096)), inflight);
}

/* Scratch for one broadcast's ring plan, sized for every GPU (alpa_tensor). */
typedef struct ring_scratch {
    int *group;     /* the sender, then the destinations in the consumer mesh's order */
    int *run_of;    /* per host: its run (index among the group's hosts), -1 when none */
    int *start;     /* per run: where its GPUs start in gpus[] (nruns + 1 of them) */
    int *gpus;      /* the group's GPUs run by run, in rank order inside a run */
    int *entry;     /* per run: its GPUs that bring a NIC no earlier GPU of it brought */
    int *nentries;
    double *delay, *bw; /* one chain's routes, for its chunk count */
    const mc_topo_ring_search_t **found; /* per run: NCCL's searched rings, NULL: rank order */
    int *order;         /* one run's GPUs in a chain's order */
    mc_topo_ring_cache_t *rings;
} ring_scratch_t;

/* NCCL's ring broadcast of a piece as alpa-bcast runs it (synth_ring.c): the ring keeps each
 * host's ranks together, hosts in rank order; it runs one chain per NIC that every host of the
 * group can drive (inside a single host one per ring NCCL's search finds where no NVSwitch joins
 * the GPUs, else one), chain c entering each host other than the sender's at the c-th GPU of it
 * that brings a NIC of its own and going round the host's searched ring c (rank order without
 * one), and the bytes split evenly over the chains (each chain is NCCL's two duplicated channels:
 * ct->conns). Gives the chain count; *nruns gets the group's hosts, whose GPUs are in rs->gpus
 * run by run, entries in rs->entry, searched rings in rs->found. */
static mc_status_t ring_plan(mc_cost_topo_t *ct, ring_scratch_t *rs, int n, int *nruns_out,
                             int *nchains_out, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int nruns = 0;
    for (int i = 0; i < n; i++) {
        int h = ct->gpu_host[rs->group[i]];
        if (rs->run_of[h] < 0) {
            rs->run_of[h] = nruns;
            rs->start[++nruns] = 0;
        }
        rs->start[rs->run_of[h] + 1]++;
    }
    rs->start[0] = 0;
    for (int r = 0; r < nruns; r++) {
        rs->start[r + 1] += rs->start[r];
        rs->nentries[r] = 0;
    }
    for (int i = 0; i < n; i++) {
        int g = rs->group[i], r = rs->run_of[ct->gpu_host[g]];
        int pos = rs->start[r] + rs->nentries[r]++; /* nentries counts placed GPUs for now */
        rs->gpus[pos] = g;
    }
    int nchains = nruns > 1 ? BCAST_MAX_CHAINS : 1;
    for (int r = 0; r < nruns; r++) {
        int k = 0;
        for (int j = rs->start[r]; j < rs->start[r + 1]; j++) {
            int net = ct->gpu_nic[rs->gpus[j]], fresh = net >= 0;
            for (int e = 0; e < k && fresh; e++)
                fresh = ct->gpu_nic[rs->gpus[rs->start[r] + rs->entry[rs->start[r] + e]]] != net;
            if (fresh)
                rs->entry[rs->start[r] + k++] = j - rs->start[r];
        }
        rs->nentries[r] = k;
        if (nruns > 1 && k < nchains)
            nchains = k;
        rs->run_of[ct->gpu_host[rs->gpus[rs->start[r]]]] = -1;
        int len = rs->start[r + 1] - rs->start[r];
        rs->found[r] = NULL;
        if (st == MC_OK && len > 1 && mc_topo_ring_searched(ct->topo, rs->gpus[rs->start[r]]))
            st = mc_topo_ring_search_cached(rs->rings, ct->topo, rs->gpus + rs->start[r], len,
                                            &rs->found[r], err);
    }
    if (nruns == 1 && rs->found[0])
        nchains = rs->found[0]->nrings < BCAST_MAX_CHAINS ? rs->found[0]->nrings : BCAST_MAX_CHAINS;
    *nruns_out = nruns;
    *nchains_out = nchains < 1 ? 1 : nchains;
    return st;
}

/* One tensor's broadcasts to one consumer's mesh (Alpa reshards a tensor to each consumer on
 * its own): each is NCCL's ring broadcast (ring_plan), every chain of it pipelined. Alpa's workers
 * issue every broadcast at once (no barrier between its solver's rounds), so they share the links
 * (the transfers, timed together) and the estimate is at least the slowest chain alone. */
static mc_status_t alpa_tensor(mc_cost_topo_t *ct, const mc_task_t *task, int tensor, int mesh,
                               ring_scratch_t *rs, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    const mc_mesh_t *m = &task->meshes[mesh];
    for (int i = 0; i < task->npieces && st == MC_OK; i++) {
        const mc_piece_t *p = &task->pieces[i];
        int n = 1;
        for (int k = 0; k < m->ndevices && p->tensor == tensor; k++)
            if (mc_ints_contain(p->dests, p->ndests, m->devices[k]))
                rs->group[n++] = m->devices[k];
        if (n == 1)
            continue;
        /* Alpa balances senders by host: the holder on the host that has sent the least */
        int root = p->holders[0];
        for (int k = 1; k < p->nholders; k++) {
            int g = p->holders[k], hg = ct->gpu_host[g], hp = ct->gpu_host[root];
            if (ct->host_out[hg] < ct->host_out[hp] ||
                (ct->host_out[hg] == ct->host_out[hp] && ct->gpu_out[g] < ct->gpu_out[root]))
                root = g;
        }
        ct->host_out[ct->gpu_host[root]] += (double)p->bytes;
        rs->group[0] = root;
        int nruns, nchains;
        if ((st = ring_plan(ct, rs, n, &nruns, &nchains, err)) != MC_OK)
            break;
        double bytes = (double)p->bytes / nchains;
        for (int c = 0; c < nchains && st == MC_OK; c++) {
            int first = ct->nxfers, after = -1, hops = 0, prev = root;
            for (int r = 0; r < nruns && st == MC_OK; r++) {
                int len = rs->start[r + 1] - rs->start[r];
                int at = r > 0 && rs->nentries[r] ? rs->entry[rs->start[r] + c % rs->nentries[r]]
                                                  : 0;
                for (int j = 0; j < len; j++)
                    rs->order[j] = rs->gpus[rs->start[r] + (at + j) % len];
                if (rs->found[r])
                    mc_topo_ring_from(rs->found[r], len, c, rs->order[0], rs->order);
                for (int j = 0; j < len && st == MC_OK; j++) {
                    int d = rs->order[j];
                    if (d == prev)
                        continue;
                    st = cost_send(ct, prev, d, bytes, after, &after, err);
                    if (st == MC_OK) {
                        const cost_route_t *rt = cost_last_route(ct);
                        rs->bw[hops] = rt->cap > 0 ? fmin(rt->bw, rt->cap * ct->conns) : rt->bw;
                        rs->delay[hops++] = rt->delay;
                    }
                    prev = d;
                }
            }
            MC_GROW(ct->chains, ct->chain_cap, ct->nchains + 1);
            ct->chains[ct->nchains++] = (cost_chain_t){
                .first = first, .n = ct->nxfers - first,
                /* NCCL's steps are of a chain's half: each of its two channels moves one */
                .chunks = chain_chunks(rs->delay, rs->bw, hops, bytes,
                                       bytes / 2 / MC_NCCL_STEP_BYTES, MC_NCCL_STEPS),
                .overlap = 1, .inflight = MC_NCCL_STEPS};
        }
    }
    return st;
}

mc_status_t cost_traffic_alpa_bcast(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    size_t ng = (size_t)ct->topo->ngpus + 2, nh = (size_t)ct->topo->nhosts;
    if (!ct->gpu_nic)
        ct->gpu_nic = mc_topo_nearest_nics(ct->topo);
    ring_scratch_t rs = {mc_xmalloc(sizeof(int) * ng), mc_xmalloc(sizeof(int) * (nh ? nh : 1)),
                         mc_xmalloc(sizeof(int) * ng), mc_xmalloc(sizeof(int) * ng),
                         mc_xmalloc(sizeof(int) * ng), mc_xmalloc(sizeof(int) * ng),
                         mc_xmalloc(sizeof(double) * ng), mc_xmalloc(sizeof(double) * ng),
                         mc_xcalloc(ng, sizeof(*rs.found)), mc_xmalloc(sizeof(int) * ng),
                         mc_topo_ring_cache_new()};
    memset(rs.run_of, 0xff, sizeof(int) * nh);
    for (int t = 0; t < task->ntensors && st == MC_OK; t++)
        for (int c = 0; c <= task->tensors[t].nmore && st == MC_OK; c++)
            st = alpa_tensor(ct, task, t, mc_tensor_consumer(&task->tensors[t], c)->mesh, &rs,
                             err);
    free(rs.group);
    free(rs.run_of);
    free(rs.start);
    free(rs.gpus);
    free(rs.entry);
    free(rs.nentries);
    free(rs.delay);
    free(rs.bw);
    free(rs.found);
    free(rs.order);
    mc_topo_ring_cache_free(rs.rings);
    return st;
}

mc_status_t cost_traffic_ring(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err)
{
    const mc_topo_t *t = ct->topo;
    mc_status_t st = MC_OK;
    size_t ng = (size_t)t->ngpus + 1;
    int *chain = mc_xmalloc(sizeof(int) * ng), *order = mc_xmalloc(sizeof(int) * ng), moving = 0;
    double *delay = mc_xmalloc(sizeof(double) * ng), *bw = mc_xmalloc(sizeof(double) * ng);
    mc_topo_ring_cache_t *cache = mc_topo_ring_cache_new();
    for (int i = 0; i < task->npieces; i++)
        moving += task->pieces[i].ndests > 0;
    int k = ct->ring_split;
    for (int i = 0; i < task->npieces && st == MC_OK; i++) {
        const mc_piece_t *p = &task->pieces[i];
        const mc_mesh_t *mesh = &task->meshes[task->tensors[p->tensor].dst.mesh];
        if (!p->ndests)
            continue;
        /* the nccl-ring strategy's chains (synth_nccl_ring.c): NCCL's rings of the mesh */
        int root = first_holder(task, p);
        mc_topo_rings_t *r = NULL;
        if ((st = mc_topo_rings_new(t, mesh->devices, mesh->ndevices, root, cache, &r, err)))
            break;
        int channels = mc_topo_rings_channels(t, r, root);
        int sharers = mc_topo_rings_sharing(r, channels) * moving;
        double bytes = (double)p->bytes / channels;
        for (int c = 0; c < channels && st == MC_OK; c++) {
            int n = mc_topo_rings_chain(r, root, p->dests, p->ndests, c, order, chain);
            /* its chunk count as the strategy picks it for the whole chain, the channels of
             * every ring sharing its hops (synth_chain_chunks) */
            for (int j = 1; j < n && st == MC_OK; j++) {
                const cost_route_t *rt;
                st = cost_route(ct, chain[j - 1], chain[j], &rt, err);
                if (st == MC_OK) {
                    delay[j - 1] = rt->delay;
                    bw[j - 1] = rt->bw / sharers;
                }
            }
            int c0 = chain_chunks(delay, bw, n - 1, bytes, bytes / MC_NCCL_STEP_BYTES, 1);
            /* meshcast's race cuts the chain into k staggered channels, channel m of k in
             * c0 (k + m) / k chunks of at least COST_MESHCAST_CHUNK (mc_sched_channels) */
            int m = bytes / COST_MESHCAST_CHUNK < k ? (int)(bytes / COST_MESHCAST_CHUNK) : k;
            m = m < 1 ? 1 : m;
            for (int ch = 0; ch < m && st == MC_OK; ch++) {
                double part = bytes / m, most = floor(part / COST_MESHCAST_CHUNK);
                double want = m > 1 ? floor((double)c0 * (m + ch) / m) : c0;
                int first = ct->nxfers, after = -1;
                for (int j = 1; j < n && st == MC_OK; j++)
                    st = cost_send(ct, chain[j - 1], chain[j], part, after, &after, err);
                MC_GROW(ct->chains, ct->chain_cap, ct->nchains + 1);
                ct->chains[ct->nchains++] = (cost_chain_t){
                    .first = first, .n = ct->nxfers - first,
                    .chunks = (int)fmax(1, m > 1 ? fmin(want, most) : want), .overlap = m,
                    .inflight = 1};
            }
        }
        mc_topo_rings_free(r);
    }
    mc_topo_ring_cache_free(cache);
    free(chain);
    free(order);
    free(delay);
    free(bw);
    return st;
}
