/* Shares of a piece for the meshcast strategy (docs/synthesis.md, "Shares"): when a piece is held
 * on several hosts and needed on several, a destination host that holds the piece itself is served
 * from inside, and the other destination hosts are cut into as many contiguous groups as there are
 * holder hosts, each group served from its own holder host. So a tensor replicated over many
 * data-parallel hosts is not funnelled through one sender, a host never fetches over the network
 * what it already has, and each share's trees stay inside one pair of hosts. A holder host whose
 * other GPUs mostly need the piece themselves reaches few of its NICs (two holders among six
 * destinations): only the holder hosts with the most GPUs free to carry trees get groups, and
 * where groups are fewer than the holder hosts, every group is open to all of them. Destination
 * hosts behind one bottleneck from the holders (a leaf whose uplinks carry less than its hosts'
 * NICs) stay in one group: two groups would send the piece through it twice, one sends it once
 * and relays it inside. */
#include <math.h>
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

/* Two groups behind one bottleneck each need the piece's bytes through it: they stay one unless
 * that takes this much longer than one group relaying inside, by the capacities alone. */
#define MC_SHARES_APART 1.1

/* The remote destination hosts dh[0..m) of a piece held on hosts sh[0..n), cut into units that
 * groups never split: contiguous runs where the capacity from the holders into a run and the next
 * host together (F) is so short of the two apart that serving them from two groups (the bytes
 * twice through F, once into each) takes MC_SHARES_APART longer than from one. unit[u] is the
 * index in dh of unit u's first host, unit[nunits] = m; returns nunits. */
static int units_of(mc_host_flow_t *hf, const int *sh, int n, const int *dh, int m, int *unit)
{
    int nu = 0;
    unit[nu++] = 0;
    double run = mc_host_flow(hf, sh, n, dh, 1);
    for (int i = 1; i < m; i++) {
        int at = unit[nu - 1];
        double one = mc_host_flow(hf, sh, n, dh + i, 1);
        double both = mc_host_flow(hf, sh, n, dh + at, i + 1 - at);
        double least = both < run ? both : run;
        least = one < least ? one : least;
        double apart = fmax(2 / both, fmax(1 / run, 1 / one));
        if (least > 0 && apart > MC_SHARES_APART / least) {
            run = both;
            continue;
        }
        unit[nu++] = i;
        run = one;
    }
    unit[nu] = m;
    return nu;
}

/* Units already found, by holder and remote hosts (the pieces of one tensor mostly share them):
 * at most MC_UNITS_MEMO entries, the oldest replaced first. Both are made on first use (e set:
 * tried; hf stays NULL on a topology too large for mc_host_flow). */
#define MC_UNITS_MEMO 256

typedef struct units_entry {
    int *sh, n, *dh, m, *unit, nu;
} units_entry_t;

typedef struct units_memo {
    mc_host_flow_t *hf;
    units_entry_t *e;
    int ne, next;
} units_memo_t;

/* The units of remote hosts dh[0..m) from holder hosts sh[0..n) (ascending: the key), into
 * *unit (the memo's; valid until the next call); returns their number, or -1 where the topology
 * is too large for mc_host_flow (every host a unit). */
static int units_memo_get(units_memo_t *um, const mc_topo_t *topo, const int *sh, int n,
                          const int *dh, int m, const int **unit)
{
    for (int i = 0; i < um->ne; i++) {
        const units_entry_t *e = &um->e[i];
        if (e->n == n && e->m == m && memcmp(e->sh, sh, sizeof(int) * (size_t)n) == 0 &&
            memcmp(e->dh, dh, sizeof(int) * (size_t)m) == 0) {
            *unit = e->unit;
            return e->nu;
        }
    }
    if (!um->e) {
        um->hf = mc_host_flow_new(topo);
        um->e = mc_xcalloc(MC_UNITS_MEMO, sizeof(units_entry_t));
    }
    if (!um->hf)
        return -1;
    units_entry_t *e = &um->e[um->next];
    um->next = (um->next + 1) % MC_UNITS_MEMO;
    um->ne += um->ne < MC_UNITS_MEMO;
    free(e->sh);
    e->sh = mc_xmalloc(sizeof(int) * (size_t)(n + 2 * m + 1));
    e->dh = e->sh + n;
    e->unit = e->dh + m;
    memcpy(e->sh, sh, sizeof(int) * (size_t)n);
    memcpy(e->dh, dh, sizeof(int) * (size_t)m);
    e->n = n;
    e->m = m;
    e->nu = units_of(um->hf, sh, n, dh, m, e->unit);
    *unit = e->unit;
    return e->nu;
}

static void units_memo_free(units_memo_t *um)
{
    for (int i = 0; i < um->ne; i++)
        free(um->e[i].sh);
    free(um->e);
    mc_host_flow_free(um->hf);
}

void mc_shares_build(const mc_task_t *task, const mc_topo_t *topo, mc_shares_t *out)
{
    units_memo_t um = {0};
    const int *unit = NULL;
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
             * than the holder hosts; the remote hosts in units (units_of), the memo keyed by the
             * holder hosts ascending, as they are before strongest_first orders them */
            int nu = remote > 1 ? units_memo_get(&um, topo, sh, n, dh, remote, &unit) : -1;
            int strong = strongest_first(topo, pc, sh, n);
            if (nu < 0) {
                nu = remote;
                unit = NULL;
            }
            int k = nu < strong ? nu : strong;
            int open = k < n;
            for (int j = 0; j < k; j++) {
                int a = j * nu / k, b = (j + 1) * nu / k;
                int from = unit ? unit[a] : a, to = unit ? unit[b] : b;
                add(out, topo, p, pc, dh + from, to - from, sh[j], open);
            }
        }
        free(dh);
        free(sh);
    }
    units_memo_free(&um);
}
