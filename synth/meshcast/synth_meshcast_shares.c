/* Shares of a piece for the meshcast strategy (docs/synthesis.md, "Shares"): when a piece is held
 * on several hosts and needed on several, a destination host that holds the piece itself is served
 * from inside, and the other destination hosts are cut into as many contiguous groups as there are
 * holder hosts, each group served from its own holder host. So a tensor replicated over many
 * data-parallel hosts is not funnelled through one sender, a host never fetches over the network
 * what it already has, and each share's trees stay inside one pair of hosts. A holder host whose
 * other GPUs mostly need the piece themselves reaches few of its NICs (two holders among six
 * destinations): only the holder hosts with the most GPUs free to carry trees get groups, and
 * where groups are fewer than the holder hosts, every group is open to all of them. */
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

/* Orders the holder hosts sh[0..n) of pc by how many of their GPUs its trees may pass through
 * (all but the destinations their own share serves: a tree through one would bring it the bytes
 * twice), most first (ties in host order), and returns how many have the most. A host that
 * holds the piece on two GPUs and needs it on the other six sends through two NICs only. */
static int strongest_first(const mc_topo_t *topo, const mc_piece_t *pc, int *sh, int n)
{
    int *free_gpus = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    for (int j = 0; j < n; j++) {
        int first;
        free_gpus[j] = mc_topo_host_gpus(topo, sh[j], &first);
    }
    for (int i = 0, j = 0; i < pc->ndests; i++) {
        int h = mc_topo_gpu_host(topo, pc->dests[i]);
        while (j < n && sh[j] < h)
            j++;
        if (j < n && sh[j] == h)
            free_gpus[j]--;
    }
    for (int i = 1; i < n; i++) /* insertion sort, stable */
        for (int j = i; j > 0 && free_gpus[j] > free_gpus[j - 1]; j--) {
            int c = free_gpus[j], h = sh[j];
            free_gpus[j] = free_gpus[j - 1];
            sh[j] = sh[j - 1];
            free_gpus[j - 1] = c;
            sh[j - 1] = h;
        }
    int most = 1;
    while (most < n && free_gpus[most] == free_gpus[0])
        most++;
    free(free_gpus);
    return most;
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
            /* a group per holder host among those with the most GPUs free to carry trees (at
             * most one remote host each), open to every holder host where the groups are fewer
             * than the holder hosts */
            int strong = strongest_first(topo, pc, sh, n);
            int k = remote < strong ? remote : strong, open = k < n;
            for (int j = 0; j < k; j++)
                add(out, topo, p, pc, dh + j * remote / k, (j + 1) * remote / k - j * remote / k,
                    sh[j], open);
        }
        free(dh);
        free(sh);
    }
}
