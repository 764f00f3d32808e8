/* The chains an NCCL ring broadcast runs. Alpa creates one communicator per broadcast with the
 * sender as rank 0 and the receivers as ranks 1..k; NCCL's ring keeps the ranks of a node together
 * and visits nodes in rank order, and a broadcast moves data along the ring from the root to the
 * root's predecessor, pipelined in chunks. NCCL runs several channels, each its own ring, and
 * spreads them over the NICs a node's GPUs are close to; so a broadcast becomes one chain per NIC
 * that every host in the group can drive, each entering a host at a GPU next to a different NIC,
 * and the bytes are split over the chains. Inside a host whose GPUs are joined by direct links
 * (no NVSwitch) a chain goes round the ring NCCL's topology search finds over the group's GPUs of
 * that host (topo/topo_rings.h; chain c on ring c), and a broadcast inside one such host runs a
 * chain per searched ring; elsewhere a host's GPUs follow rank order and one host is one chain. */
#include <stdlib.h>
#include <string.h>

#include "synth/synth_internal.h"
#include "topo/topo_rings.h"

struct synth_ring {
    const mc_topo_t *topo;
    int *local_net;  /* per GPU: the nearest network port of its own host (node id), -1 if none */
    mc_topo_ring_cache_t *rings;  /* NCCL's searched rings, per set of GPUs */
};

synth_ring_t *synth_ring_new(const mc_topo_t *topo)
{
    synth_ring_t *r = mc_xcalloc(1, sizeof(*r));
    r->topo = topo;
    r->local_net = mc_topo_nearest_nics(topo);
    r->rings = mc_topo_ring_cache_new();
    return r;
}

void synth_ring_free(synth_ring_t *r)
{
    if (!r)
        return;
    free(r->local_net);
    mc_topo_ring_cache_free(r->rings);
    free(r);
}

/* The group's GPUs on one host, in rank order, and the positions of the GPUs that bring a NIC
 * no earlier GPU of the host brought (where chains may enter). */
typedef struct host_run {
    int host;
    int n, *gpus;
    int nentries, *entries;
} host_run_t;

static int collect_hosts(const synth_ring_t *r, const int *group, int ngroup, host_run_t *runs)
{
    const mc_topo_t *t = r->topo;
    int nruns = 0;
    for (int i = 0; i < ngroup; i++) {
        int h = mc_topo_gpu_host(t, group[i]), k = 0;
        while (k < nruns && runs[k].host != h)
            k++;
        if (k == nruns) {
            runs[k].host = h;
            runs[k].n = runs[k].nentries = 0;
            nruns++;
        }
        host_run_t *run = &runs[k];
        int net = r->local_net[group[i]], fresh = net >= 0;
        for (int j = 0; j < run->nentries && fresh; j++)
            fresh = r->local_net[run->gpus[run->entries[j]]] != net;
        if (fresh)
            run->entries[run->nentries++] = run->n;
        run->gpus[run->n++] = group[i];
    }
    return nruns;
}

mc_status_t synth_ring_plan(synth_ring_t *r, int root, const int *dests, int ndests,
                            int max_chains, int *order, int *nchains, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int ngroup = ndests + 1;
    int *group = mc_xmalloc(sizeof(int) * (size_t)ngroup);
    host_run_t *runs = mc_xcalloc((size_t)ngroup, sizeof(*runs));
    int *store = mc_xmalloc(sizeof(int) * 2 * (size_t)ngroup * (size_t)ngroup);
    const mc_topo_ring_search_t **found = mc_xcalloc((size_t)ngroup, sizeof(*found));
    group[0] = root;
    memcpy(group + 1, dests, sizeof(int) * (size_t)ndests);
    for (int i = 0; i < ngroup; i++) {
        runs[i].gpus = store + 2 * (size_t)i * (size_t)ngroup;
        runs[i].entries = runs[i].gpus + ngroup;
    }
    int nruns = collect_hosts(r, group, ngroup, runs);
    for (int h = 0; h < nruns && st == MC_OK; h++)
        if (runs[h].n > 1 && mc_topo_ring_searched(r->topo, runs[h].gpus[0]))
            st = mc_topo_ring_search_cached(r->rings, r->topo, runs[h].gpus, runs[h].n, &found[h],
                                            err);
    if (st != MC_OK)
        goto out;
    /* Inside one host NCCL's rings ride NVLink, not NICs: a chain per searched ring, else one. */
    int n = nruns > 1 ? max_chains : found[0] ? found[0]->nrings : 1;
    for (int h = 0; h < nruns && nruns > 1; h++)
        if (runs[h].nentries < n)
            n = runs[h].nentries;
    n = n < 1 ? 1 : n > max_chains ? max_chains : n;
    for (int c = 0; c < n; c++) {
        int *o = order + (size_t)c * (size_t)ngroup, k = 0;
        for (int h = 0; h < nruns; h++) {
            /* The root's host starts at the root; every other host at chain c's entry GPU. */
            int start = h == 0 ? 0 : runs[h].entries[c % (runs[h].nentries ? runs[h].nentries : 1)];
            if (!runs[h].nentries)
                start = 0;
            if (found[h])
                mc_topo_ring_from(found[h], runs[h].n, c, runs[h].gpus[start], o + k);
            else
                for (int j = 0; j < runs[h].n; j++)
                    o[k + j] = runs[h].gpus[(start + j) % runs[h].n];
            k += runs[h].n;
        }
    }
    *nchains = n;
out:
    free(found);
    free(group);
    free(runs);
    free(store);
    return st;
}

mc_status_t synth_add_chain(mc_sched_t *s, const mc_topo_t *topo, int piece, uint64_t offset,
                            uint64_t bytes, int phase, const int *gpus, int n,
                            uint64_t chunk_bytes, int sharers, int inflight, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int ti = mc_sched_add_tree(s, piece, offset, bytes, gpus[0], phase, 1);
    s->trees[ti].inflight = inflight;
    for (int i = 1; i < n; i++)
        MC_CHECK_GOTO(mc_sched_add_edge(s, topo, ti, gpus[i - 1], gpus[i], err), out, st);
    s->trees[ti].nchunks = synth_chain_chunks(s, topo, ti, chunk_bytes, sharers);
out:
    return st;
}

uint64_t synth_even_part(uint64_t bytes, uint64_t esize, int n, int k)
{
    uint64_t elems = bytes / esize, nn = (uint64_t)n;
    if (k == n - 1) /* what the n - 1 parts before it leave */
        return bytes - (elems / nn * (nn - 1) + elems % nn) * esize;
    return (elems / nn + ((uint64_t)k < elems % nn)) * esize;
}
