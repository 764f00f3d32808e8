/* Shares of a piece for the meshcast strategy (docs/synthesis.md, "Shares"): when a piece is held
 * on several hosts and needed on several, a destination host that holds the piece itself is served
 * from inside, and the other destination hosts are cut into as many contiguous groups as there are
 * holder hosts, each group served from its own holder host. So a tensor replicated over many
 * data-parallel hosts is not funnelled through one sender, a host never fetches over the network
 * what it already has, and each share's trees stay inside one pair of hosts. Where fewer hosts
 * need the piece from outside than hold it, each of them is a share of its own that every holder
 * host may serve: a piece straddling two hosts holds only part of each host's NICs' reach. */
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

void mc_shares_free(mc_shares_t *sh)
{
    free(sh->s);
    free(sh->pool);
    memset(sh, 0, sizeof(*sh));
}

static int distinct_hosts(const mc_topo_t *topo, const int *gpus, int n, int *hosts)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        int h = mc_topo_gpu_host(topo, gpus[i]);
        if (k == 0 || hosts[k - 1] != h)
            hosts[k++] = h;
    }
    return k;
}

/* Whether ascending a[0..n) holds x: a share's hosts are up to every destination host of a
 * piece, tested for each of its destinations (thousands at 8192 GPUs). */
static int ascending_contains(const int *a, int n, int x)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && a[lo] == x;
}

/* Adds a share of piece p: its destinations on hosts[0..nh) (ascending), copied to the pool
 * (sized for every piece's destinations, so earlier shares' pointers stay put). */
static void add(mc_shares_t *out, const mc_topo_t *topo, int p, const mc_piece_t *pc,
                const int *hosts, int nh, int root_host, int open)
{
    int *dests = out->pool + out->npool;
    int n = 0;
    for (int i = 0; i < pc->ndests; i++)
        if (ascending_contains(hosts, nh, mc_topo_gpu_host(topo, pc->dests[i])))
            dests[n++] = pc->dests[i];
    out->npool += n;
    MC_GROW(out->s, out->cap, out->n + 1);
    out->s[out->n++] = (mc_share_t){p, n, dests, root_host, open, 0};
}

void mc_shares_build(const mc_task_t *task, const mc_topo_t *topo, mc_shares_t *out)
{
    memset(out, 0, sizeof(*out));
    size_t total = 1;
    for (int p = 0; p < task->npieces; p++)
        total += (size_t)task->pieces[p].ndests;
    out->pool = mc_xmalloc(sizeof(int) * total);
    for (int p = 0; p < task->npieces; p++) {
        const mc_piece_t *pc = &task->pieces[p];
        if (pc->ndests == 0)
            continue;
        /* GPU ids run host by host, so both lists come out ascending and grouped */
        int *dh = mc_xmalloc(sizeof(int) * (size_t)pc->ndests);
        int *sh = mc_xmalloc(sizeof(int) * (size_t)(pc->nholders + 1));
        int m = distinct_hosts(topo, pc->dests, pc->ndests, dh);
        int n = distinct_hosts(topo, pc->holders, pc->nholders, sh);
        if (n < 2 || m < 2) {
            add(out, topo, p, pc, dh, m, -1, 0);
        } else {
            int remote = 0;
            for (int i = 0; i < m; i++) {
                if (mc_ints_contain(sh, n, dh[i]))
                    add(out, topo, p, pc, &dh[i], 1, dh[i], 0);
                else
                    dh[remote++] = dh[i];
            }
            /* fewer than the holder hosts: each is open to all of them */
            int k = remote < n ? remote : n;
            for (int j = 0; j < k; j++)
                add(out, topo, p, pc, dh + j * remote / k, (j + 1) * remote / k - j * remote / k,
                    sh[j], remote < n);
        }
        free(dh);
        free(sh);
    }
}
