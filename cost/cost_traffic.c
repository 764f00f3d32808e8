/* The traffic each strategy would send for a task, as GPU-to-GPU transfers with their
 * store-and-forward depth (docs/cost-model.md). Each follows what its strategy does, not a fit:
 * meshcast moves every byte into a destination host once, spread over the host's network ports,
 * and fans it out inside the host, or sends straight from holders when that is faster (its
 * optimizer has both kinds of candidates); p2p sends every piece from its first holder to every
 * destination; alpa-bcast chains every piece through its destinations. */
#include <stdlib.h>

#include "cost/cost_internal.h"

/* The holder in hs[0..n) that has sent the least so far (the first on ties). */
static int least_sent(const mc_cost_topo_t *ct, const int *gpus, int n)
{
    int best = gpus[0];
    for (int i = 1; i < n; i++)
        if (ct->gpu_out[gpus[i]] < ct->gpu_out[best])
            best = gpus[i];
    return best;
}

/* From entry, which holds a share after `depth` hops, to every other destination: straight from
 * entry, or with ct->chain as a chain that starts at the destination after dests[first] (a ring,
 * what a switchless PCIe tree needs). Relays inside the host where they widen the path. *reached
 * gets the deepest hop. */
static mc_status_t spread(mc_cost_topo_t *ct, int entry, const int *dests, int n, int first,
                          double share, int depth, int *reached, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int at = entry, d = depth;
    *reached = depth;
    for (int k = 1; k <= n && st == MC_OK; k++) {
        int to = dests[(first + k) % n], r;
        if (to == entry)
            continue;
        st = cost_relay(ct, ct->chain ? at : entry, to, share, (ct->chain ? d : depth) + 1, &r,
                        err);
        if (ct->chain) {
            at = to;
            d = r;
        }
        if (r > *reached)
            *reached = r;
    }
    return st;
}

/* Inside one host: the destinations dests[0..n) get bytes from the local holders: the bytes
 * split into one share per destination or per holder, whichever is more (scatter and
 * all-gather, the bandwidth-optimal broadcast on a switch), or with ct->chain one share per
 * holder, each a pipelined chain through every destination from its own starting point; share j
 * goes from the least busy holder to its first destination, which passes it on. */
static mc_status_t fan_out_local(mc_cost_topo_t *ct, const int *holders, int nholders,
                                 const int *dests, int n, double bytes, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int m = ct->chain || nholders > n ? nholders : n;
    for (int j = 0; j < m && st == MC_OK; j++) {
        int first = (int)((int64_t)j * n / m), r, deepest;
        st = cost_relay(ct, least_sent(ct, holders, nholders), dests[first], bytes / m, 1, &r,
                        err);
        if (st == MC_OK)
            st = spread(ct, dests[first], dests, n, first, bytes / m, r, &deepest, err);
    }
    return st;
}

/* A host a piece's bytes can leave from: one that holds it, or one it has reached already. */
typedef struct source {
    int host;
    const int *gpus;    /* its GPUs that hold the bytes */
    int ngpus;
    int depth;          /* store-and-forward hops before they hold them */
} source_t;

/* Into another host: from the source host that has sent the least across so far (a holder host
 * or a destination host already served, so that hosts relay to hosts as meshcast's trees do),
 * one share per network port of the destination host (a tree per rail), entering at a
 * destination where there are enough, else at another GPU of the host, which passes it on to
 * every destination. *depth gets the hops after which every destination holds the bytes. */
static mc_status_t cross(mc_cost_topo_t *ct, const mc_piece_t *p, const source_t *src, int nsrc,
                         int hd, const int *dests, int n, int *depth, mc_err_t *err)
{
    const source_t *from = &src[0];
    for (int i = 1; i < nsrc; i++)
        if (ct->host_out[src[i].host] < ct->host_out[from->host] ||
            (ct->host_out[src[i].host] == ct->host_out[from->host] && src[i].depth < from->depth))
            from = &src[i];
    ct->host_out[from->host] += (double)p->bytes;
    const int *hg = ct->host_gpus + ct->host_start[hd];
    int ng = ct->host_start[hd + 1] - ct->host_start[hd];
    int nports = ct->host_ports[hd] > 0 ? ct->host_ports[hd] : n;
    int nentries = nports < ng ? nports : ng;
    double share = (double)p->bytes / nentries;
    mc_status_t st = MC_OK;
    *depth = from->depth;
    for (int r = 0, other = 0; r < nentries && st == MC_OK; r++) {
        int entry, first = r < n ? r : n - 1, deepest = 0;
        if (r < n) {
            entry = dests[r];
        } else {
            while (mc_ints_contain(dests, n, hg[other]))
                other++;
            entry = hg[other++];
        }
        st = cost_send(ct, least_sent(ct, from->gpus, from->ngpus), entry, share, from->depth + 1,
                       err);
        if (st == MC_OK)
            st = spread(ct, entry, dests, n, first, share, from->depth + 1, &deepest, err);
        if (deepest > *depth)
            *depth = deepest;
    }
    return st;
}

/* The holder hosts of a piece as sources (holders are ascending, so grouped by host); holders
 * inside a destination host serve it from inside. Returns the count. */
static int holder_sources(const mc_topo_t *t, const mc_piece_t *p, source_t *src)
{
    int n = 0;
    for (int i = 0; i < p->nholders; i++) {
        int h = mc_topo_gpu_host(t, p->holders[i]);
        if (n && src[n - 1].host == h) {
            src[n - 1].ngpus++;
            continue;
        }
        src[n++] = (source_t){h, p->holders + i, 1, 0};
    }
    return n;
}

mc_status_t cost_traffic_meshcast(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err)
{
    const mc_topo_t *t = ct->topo;
    mc_status_t st = MC_OK;
    source_t *src = mc_xmalloc(sizeof(source_t) * (size_t)(2 * t->nhosts + 1));
    for (int i = 0; i < task->npieces && st == MC_OK; i++) {
        const mc_piece_t *p = &task->pieces[i];
        int nsrc = holder_sources(t, p, src), nhold = nsrc;
        /* destinations grouped by host (they are ascending, so each host's are contiguous):
         * hosts holding the piece first, then the others, which may relay to later ones */
        for (int pass = 0; pass < 2 && st == MC_OK; pass++)
            for (int j = 0; j < p->ndests && st == MC_OK;) {
                int h = mc_topo_gpu_host(t, p->dests[j]), n = 0;
                while (j + n < p->ndests && mc_topo_gpu_host(t, p->dests[j + n]) == h)
                    n++;
                const source_t *local = NULL;
                for (int k = 0; k < nhold && !local; k++)
                    local = src[k].host == h ? &src[k] : NULL;
                if (pass == 0 && local)
                    st = fan_out_local(ct, local->gpus, local->ngpus, p->dests + j, n,
                                       (double)p->bytes, err);
                if (pass == 1 && !local) {
                    int depth = 0;
                    st = cross(ct, p, src, nsrc, h, p->dests + j, n, &depth, err);
                    src[nsrc++] = (source_t){h, p->dests + j, n, depth};
                }
                j += n;
            }
    }
    free(src);
    return st;
}

/* meshcast's star candidates: every destination straight from a holder, one on its own host if
 * there is one, the least busy of them. */
mc_status_t cost_traffic_direct(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err)
{
    const mc_topo_t *t = ct->topo;
    mc_status_t st = MC_OK;
    int *near = mc_xmalloc(sizeof(int) * (size_t)t->ngpus);
    for (int i = 0; i < task->npieces && st == MC_OK; i++) {
        const mc_piece_t *p = &task->pieces[i];
        for (int j = 0; j < p->ndests && st == MC_OK; j++) {
            int h = mc_topo_gpu_host(t, p->dests[j]), n = 0;
            for (int k = 0; k < p->nholders; k++)
                if (mc_topo_gpu_host(t, p->holders[k]) == h)
                    near[n++] = p->holders[k];
            int src = n ? least_sent(ct, near, n) : least_sent(ct, p->holders, p->nholders);
            st = cost_send(ct, src, p->dests[j], (double)p->bytes, 1, err);
        }
    }
    free(near);
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
        for (int j = 0; j < p->ndests && st == MC_OK; j++)
            st = cost_send(ct, src, p->dests[j], (double)p->bytes, 1, err);
    }
    return st;
}

mc_status_t cost_traffic_alpa_bcast(mc_cost_topo_t *ct, const mc_task_t *task, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    for (int i = 0; i < task->npieces && st == MC_OK; i++) {
        const mc_piece_t *p = &task->pieces[i];
        const mc_mesh_t *m = &task->meshes[task->tensors[p->tensor].dst.mesh];
        int prev = least_sent(ct, p->holders, p->nholders), depth = 1;
        for (int k = 0; k < m->ndevices && st == MC_OK; k++) {
            int d = m->devices[k];
            if (!mc_ints_contain(p->dests, p->ndests, d))
                continue;
            st = cost_send(ct, prev, d, (double)p->bytes, depth++, err);
            prev = d;
        }
    }
    return st;
}
