/* Shares of a piece for the meshcast strategy (docs/synthesis.md, "Shares"): when a piece is held
 * on several hosts and needed on several, its destination hosts are cut into as many contiguous
 * groups as there are holder hosts (at most one per destination host), each group served from its
 * own holder host. So a tensor replicated over many data-parallel hosts is not funnelled through
 * one sender, and each share's trees stay inside one pair of hosts. */
#include <stdlib.h>
#include <string.h>

#include "synth/mc_meshcast.h"

void mc_shares_free(mc_shares_t *sh)
{
    free(sh->s);
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

static void add(mc_shares_t *sh, int p, const int *dests, int n, int root_host)
{
    MC_GROW(sh->s, sh->cap, sh->n + 1);
    sh->s[sh->n++] = (mc_share_t){p, n, dests, root_host};
}

void mc_shares_build(const mc_task_t *task, const mc_topo_t *topo, mc_shares_t *out)
{
    memset(out, 0, sizeof(*out));
    for (int p = 0; p < task->npieces; p++) {
        const mc_piece_t *pc = &task->pieces[p];
        if (pc->ndests == 0)
            continue;
        /* GPU ids run host by host, so both lists come out ascending and grouped */
        int *dh = mc_xmalloc(sizeof(int) * (size_t)pc->ndests);
        int *sh = mc_xmalloc(sizeof(int) * (size_t)(pc->nholders + 1));
        int m = distinct_hosts(topo, pc->dests, pc->ndests, dh);
        int n = distinct_hosts(topo, pc->holders, pc->nholders, sh);
        int k = n >= 2 && m >= 2 ? (n < m ? n : m) : 1;
        int first = 0;
        for (int j = 0; j < k; j++) {
            int hi = (j + 1) * m / k, root = k > 1 ? sh[j % n] : -1;
            int last = first;
            while (last < pc->ndests && mc_topo_gpu_host(topo, pc->dests[last]) <= dh[hi - 1])
                last++;
            /* a group holding the piece itself serves itself */
            for (int i = j * m / k; i < hi && k > 1; i++)
                for (int s = 0; s < n; s++)
                    if (sh[s] == dh[i])
                        root = sh[s];
            add(out, p, pc->dests + first, last - first, root);
            first = last;
        }
        free(dh);
        free(sh);
    }
}
