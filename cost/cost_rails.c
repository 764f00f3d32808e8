/* meshcast's rail stripes in the cost model (docs/cost-model.md, "Rail stripes"): a piece whose
 * holders sit on one host and that has destinations on others is striped over the root host's
 * NIC rails as synth/meshcast/candidates_rails.c builds it: the root hands each stripe once to
 * its host's GPU on rail k, which sends it out on its own NIC, along a chain over the other hosts
 * or through two-level hub trees, each host's GPU on rail k fanning it out at home. The traffic
 * is laid onto the links like every other strategy's; cost.c races it against the rest. */
#include <stdlib.h>
#include <string.h>

#include "cost/cost_internal.h"

/* As candidates_rails.c: hub trees up to this many remote hosts, no stripe split coarser than
 * NCCL's network chunk per unit, no tree under 8 such chunks, at most this many units. */
#define RAIL_HUBS_MAX 16
#define RAIL_UNIT_MIN (128.0 * 1024)
#define RAIL_TREE_MIN (1024.0 * 1024)
#define RAIL_UNITS_MAX 1024

/* The host all of p's holders sit on, -1 when they span hosts. */
static int holder_host(const mc_cost_topo_t *ct, const mc_piece_t *p)
{
    int h = p->nholders > 0 ? ct->gpu_host[p->holders[0]] : -1;
    for (int i = 1; i < p->nholders && h >= 0; i++)
        if (ct->gpu_host[p->holders[i]] != h)
            h = -1;
    return h;
}

void cost_rails_prepare(mc_cost_topo_t *ct, const mc_task_t *task)
{
    memset(ct->rail_leaving, 0, sizeof(int) * (size_t)ct->topo->nhosts);
    memset(ct->rail_taken, 0, (size_t)ct->topo->ngpus);
    ct->rail_senders = 0;
    for (int i = 0; i < task->npieces; i++) {
        int h = holder_host(ct, &task->pieces[i]);
        if (h >= 0)
            ct->rail_senders += ct->rail_leaving[h]++ == 0;
    }
}

/* Host h's GPU on rail k (its k-th GPU), -1 when it has fewer. */
static int on_rail(const mc_cost_topo_t *ct, int h, int k)
{
    return k < ct->host_start[h + 1] - ct->host_start[h] ? ct->host_gpus[ct->host_start[h] + k]
                                                          : -1;
}

/* From src, which holds the stripe once transfer `after` ends, to every destination of p on
 * host h other than src, straight (the hosts with rails have a switch). */
static mc_status_t fan_home(mc_cost_topo_t *ct, const mc_piece_t *p, int h, int src,
                            double bytes, int after, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    for (int i = 0, x; i < p->ndests && st == MC_OK; i++)
        if (ct->gpu_host[p->dests[i]] == h && p->dests[i] != src)
            st = cost_relay(ct, src, p->dests[i], bytes, after, &x, err);
    return st;
}

/* Where rail k's stripe enters host h: its GPU on that rail, else its first destination. */
static int entry(const mc_cost_topo_t *ct, const mc_piece_t *p, int h, int k)
{
    int g = on_rail(ct, h, k);
    for (int i = 0; g < 0 && i < p->ndests; i++)
        if (ct->gpu_host[p->dests[i]] == h)
            g = p->dests[i];
    return g;
}

/* The rails of host h0 that leave by a port of their own (the port GPU x receives by from other
 * hosts; the root r0's own rail where it shares one), marked in usable[]; returns how many. */
static mc_status_t usable_rails(mc_cost_topo_t *ct, int h0, int r0, char *usable, int *n,
                                mc_err_t *err)
{
    int ndev = ct->host_start[h0 + 1] - ct->host_start[h0], own = -2, port[65];
    mc_status_t st = MC_OK;
    *n = 0;
    for (int k = 0; k < ndev && st == MC_OK; k++)
        if ((st = cost_gpu_port(ct, on_rail(ct, h0, k), &port[k], err)) == MC_OK &&
            on_rail(ct, h0, k) == r0)
            own = port[k];
    for (int k = 0; k < ndev && st == MC_OK; k++) {
        usable[k] = port[k] >= 0 && (port[k] == own ? on_rail(ct, h0, k) == r0
                                                    : !mc_ints_contain(port, k, port[k]));
        *n += usable[k];
    }
    return st;
}

/* The rails piece p stripes over, as candidates_rails.c's assign_rails gives them: of nrails
 * usable ones, nrails over the pieces leaving the host (at least one), the first not yet taken
 * from the root's rail on (all freed when too few are left). */
static int assign(mc_cost_topo_t *ct, int h0, int d0, int nrails, const char *usable, char *mine)
{
    int ndev = ct->host_start[h0 + 1] - ct->host_start[h0], nfree = 0, got = 0;
    char *taken = ct->rail_taken + ct->host_start[h0];
    int leaving = ct->rail_leaving[h0];
    int span = leaving > 1 ? nrails / leaving : nrails;
    span = span < 1 ? 1 : span;
    for (int k = 0; k < ndev; k++)
        nfree += usable[k] && !taken[k];
    if (nfree < span)
        memset(taken, 0, (size_t)ndev);
    memset(mine, 0, (size_t)ndev);
    for (int i = 0; i < ndev && got < span; i++) {
        int k = (d0 + i) % ndev;
        if (usable[k] && !taken[k]) {
            taken[k] = mine[k] = 1;
            got++;
        }
    }
    return got;
}

/* What striping piece p looks like before its rails are given: its holder host, the remote
 * destination hosts, whether it has destinations at home, its root's rail, the usable rails. */
typedef struct stripes {
    int h0, hosts[1024], nh, local, r0, d0, ndev, nusable, hubs;
    char usable[65];
} stripes_t;

/* Fills *sp; *ok: the piece leaves a host that holds all of it over two rails or more. */
static mc_status_t stripes_of(mc_cost_topo_t *ct, const mc_piece_t *p, stripes_t *sp, int *ok,
                              mc_err_t *err)
{
    *ok = 0;
    sp->h0 = holder_host(ct, p);
    sp->nh = sp->local = sp->d0 = 0;
    if (sp->h0 < 0)
        return MC_OK;
    for (int i = 0; i < p->ndests; i++) {
        int h = ct->gpu_host[p->dests[i]];
        sp->local |= h == sp->h0;
        if (h != sp->h0 && (sp->nh == 0 || sp->hosts[sp->nh - 1] != h) && sp->nh < 1024)
            sp->hosts[sp->nh++] = h;
    }
    sp->ndev = ct->host_start[sp->h0 + 1] - ct->host_start[sp->h0];
    if (sp->nh == 0 || sp->ndev < 2 || sp->ndev > 64)
        return MC_OK;
    sp->r0 = p->holders[0];
    while (on_rail(ct, sp->h0, sp->d0) != sp->r0)
        sp->d0++;
    mc_status_t st = usable_rails(ct, sp->h0, sp->r0, sp->usable, &sp->nusable, err);
    *ok = st == MC_OK && sp->nusable >= 2;
    return st;
}

/* Sets sp->hubs for a piece given nrails rails: hub trees where one host sends or the piece has
 * several rails, as candidates_rails.c. */
static void set_hubs(const mc_cost_topo_t *ct, stripes_t *sp, int nrails)
{
    sp->hubs = sp->nh >= 2 && sp->nh <= RAIL_HUBS_MAX && (ct->rail_senders == 1 || nrails >= 2)
                   ? sp->nh
                   : 0;
}

/* The trees per rail over nrails rails: one per hub, else one chain, or on the root's own rail
 * when it shares its host's fan-out with other GPUs, one per other GPU it starts from. Whether
 * they are in whole units of a network chunk or more, and no smaller than RAIL_TREE_MIN (else the
 * share stays on the shapes, as in candidates_rails.c). */
static int stripe_fits(const stripes_t *sp, const mc_piece_t *p, int nrails)
{
    int most = sp->hubs ? sp->hubs : sp->local && nrails > 1 ? sp->ndev - 1 : 1;
    double lcm = (double)nrails * most;
    return (double)p->bytes / nrails / most >= RAIL_TREE_MIN && lcm <= RAIL_UNITS_MAX &&
           (double)p->bytes / RAIL_UNIT_MIN >= lcm;
}

mc_status_t cost_rails_any(mc_cost_topo_t *ct, const mc_task_t *task, int *any, int *split,
                           mc_err_t *err)
{
    mc_status_t st = MC_OK;
    stripes_t sp;
    cost_rails_prepare(ct, task);
    *any = *split = 0;
    for (int i = 0; i < task->npieces && st == MC_OK && !*any; i++) {
        int ok, span;
        st = stripes_of(ct, &task->pieces[i], &sp, &ok, err);
        span = ok && ct->rail_leaving[sp.h0] > 1 ? sp.nusable / ct->rail_leaving[sp.h0]
                                                 : sp.nusable;
        span = span < 1 ? 1 : span;
        set_hubs(ct, &sp, span);
        *split |= ok;
        *any = ok && stripe_fits(&sp, &task->pieces[i], span);
    }
    return st;
}

mc_status_t cost_rails_lay(mc_cost_topo_t *ct, const mc_piece_t *p, int *laid, mc_err_t *err)
{
    stripes_t sp;
    char mine[65];
    int ok;
    *laid = 0;
    mc_status_t st = stripes_of(ct, p, &sp, &ok, err);
    if (st != MC_OK || !ok)
        return st;
    int nrails = assign(ct, sp.h0, sp.d0, sp.nusable, sp.usable, mine);
    set_hubs(ct, &sp, nrails);
    int h0 = sp.h0, nh = sp.nh, local = sp.local, r0 = sp.r0, ndev = sp.ndev, hubs = sp.hubs;
    const int *hosts = sp.hosts;
    if (!stripe_fits(&sp, p, nrails))
        return MC_OK;
    int turn = local && nrails > 1;
    double stripe = (double)p->bytes / nrails;
    *laid = 1;
    for (int k = 0; k < ndev && st == MC_OK; k++) {
        if (!mine[k])
            continue;
        int x = on_rail(ct, h0, k), root = mc_ints_contain(p->holders, p->nholders, x) ? x : r0;
        int mid = -1, own = root == x && turn;
        ct->unit = stripe / (hubs ? hubs : own ? ndev - 1 : 1);
        ct->chunk_cap = (int)(ct->unit / RAIL_UNIT_MIN) > 1 ? (int)(ct->unit / RAIL_UNIT_MIN) : 1;
        /* without destinations at home, x is only the route's PXN hop */
        if (!local)
            x = root;
        else if (x != root)
            st = cost_send(ct, root, x, stripe, -1, &mid, err);
        /* the root host's own fan-out: from x, or on the root's rail from each other GPU */
        for (int j = 1; own && j < ndev && st == MC_OK; j++) {
            int y = on_rail(ct, h0, (k + j) % ndev), hop;
            st = cost_send(ct, root, y, stripe / (ndev - 1), -1, &hop, err);
            if (st == MC_OK)
                st = fan_home(ct, p, h0, y, stripe / (ndev - 1), hop, err);
        }
        if (local && !own && st == MC_OK)
            st = fan_home(ct, p, h0, x, stripe, mid, err);
        if (!hubs) {
            for (int i = 0, from = x, after = mid; i < nh && st == MC_OK; i++) {
                int e = entry(ct, p, hosts[i], k);
                if ((st = cost_send(ct, from, e, stripe, after, &after, err)) == MC_OK)
                    st = fan_home(ct, p, hosts[i], e, stripe, after, err);
                from = e;
            }
            continue;
        }
        for (int j = 0; j < nh && st == MC_OK; j++) {
            int hub = entry(ct, p, hosts[j], k), in;
            double part = stripe / hubs;
            if ((st = cost_send(ct, x, hub, part, mid, &in, err)) == MC_OK)
                st = fan_home(ct, p, hosts[j], hub, part, in, err);
            for (int i = 0; i < nh && st == MC_OK; i++) {
                int e = entry(ct, p, hosts[i], k), at;
                if (i != j && (st = cost_send(ct, hub, e, part, in, &at, err)) == MC_OK)
                    st = fan_home(ct, p, hosts[i], e, part, at, err);
            }
        }
    }
    ct->chunk_cap = 0;
    return st;
}

mc_status_t cost_split_lay(mc_cost_topo_t *ct, const mc_piece_t *p, int *laid, mc_err_t *err)
{
    stripes_t sp;
    int ok;
    *laid = 0;
    mc_status_t st = stripes_of(ct, p, &sp, &ok, err);
    if (st != MC_OK || !ok)
        return st;
    int root = sp.r0, nlocal = 0, nrails = 0;
    for (int i = 0; i < p->ndests; i++)
        nlocal += ct->gpu_host[p->dests[i]] == sp.h0;
    for (int k = 0; k < sp.ndev; k++)
        nrails += sp.usable[k];
    *laid = 1;
    /* the holder host: its destinations each take a part from the root and send it to the others */
    for (int i = 0; i < p->ndests && st == MC_OK; i++) {
        int e = p->dests[i], x;
        if (ct->gpu_host[e] != sp.h0)
            continue;
        ct->unit = (double)p->bytes / nlocal;
        if ((st = cost_send(ct, root, e, ct->unit, -1, &x, err)) == MC_OK)
            st = fan_home(ct, p, sp.h0, e, ct->unit, x, err);
    }
    /* the other hosts: per rail and hub host, root -> hub -> every other host */
    double part = (double)p->bytes / nrails / sp.nh;
    ct->unit = part;
    for (int k = 0; k < sp.ndev && st == MC_OK; k++)
        for (int j = 0; j < sp.nh && sp.usable[k] && st == MC_OK; j++) {
            int hub = entry(ct, p, sp.hosts[j], k), in;
            if ((st = cost_send(ct, root, hub, part, -1, &in, err)) == MC_OK)
                st = fan_home(ct, p, sp.hosts[j], hub, part, in, err);
            for (int i = 0; i < sp.nh && st == MC_OK; i++) {
                int e = entry(ct, p, sp.hosts[i], k), at;
                if (i != j && (st = cost_send(ct, hub, e, part, in, &at, err)) == MC_OK)
                    st = fan_home(ct, p, sp.hosts[i], e, part, at, err);
            }
        }
    return st;
}
