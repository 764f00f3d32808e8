/* The cost model's frame: the wrapped topology (route cache, per-host lists, scratch), the
 * accounting of transfers onto links, and the time formula applied to the loaded links
 * (docs/cost-model.md). The strategies' traffic is in cost_traffic.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost/cost_internal.h"

static const char *const strategy_names[MC_COST__COUNT] = {"meshcast", "p2p", "alpa-bcast"};

int mc_cost_strategy_parse(const char *name, mc_cost_strategy_t *out)
{
    for (int s = 0; s < MC_COST__COUNT; s++)
        if (name && !strcmp(name, strategy_names[s])) {
            *out = (mc_cost_strategy_t)s;
            return 0;
        }
    return -1;
}

const char *mc_cost_strategy_name(mc_cost_strategy_t s)
{
    return (unsigned)s < MC_COST__COUNT ? strategy_names[s] : "?";
}

const char *mc_cost_bind_str(mc_cost_bind_t b)
{
    static const char *names[] = {"none", "link", "latency", "connection"};
    return (unsigned)b <= MC_COST_BIND_CONN ? names[b] : "?";
}

mc_cost_topo_t *mc_cost_topo_new(const mc_topo_t *topo)
{
    mc_cost_topo_t *ct = mc_xcalloc(1, sizeof(*ct));
    int nh = topo->nhosts, ng = topo->ngpus;
    ct->topo = topo;
    ct->hcap = 1024;
    ct->keys = mc_xmalloc(sizeof(int64_t) * (size_t)ct->hcap);
    ct->vals = mc_xmalloc(sizeof(int) * (size_t)ct->hcap);
    memset(ct->keys, 0xff, sizeof(int64_t) * (size_t)ct->hcap);
    ct->gpu_host = mc_xmalloc(sizeof(int) * (size_t)ng);
    for (int g = 0; g < ng; g++)
        ct->gpu_host[g] = mc_topo_gpu_host(topo, g);
    ct->host_start = mc_xcalloc((size_t)nh + 1, sizeof(int));
    ct->host_gpus = mc_xmalloc(sizeof(int) * (size_t)ng);
    ct->host_ports = mc_xcalloc((size_t)nh, sizeof(int));
    for (int g = 0; g < ng; g++)
        ct->host_start[mc_topo_gpu_host(topo, g) + 1]++;
    for (int h = 0; h < nh; h++)
        ct->host_start[h + 1] += ct->host_start[h];
    int *fill = mc_xmalloc(sizeof(int) * (size_t)nh);
    memcpy(fill, ct->host_start, sizeof(int) * (size_t)nh);
    for (int g = 0; g < ng; g++)
        ct->host_gpus[fill[mc_topo_gpu_host(topo, g)]++] = g;
    free(fill);
    ct->port_of = mc_xmalloc(sizeof(int) * (size_t)topo->nnodes);
    ct->gpu_port = mc_xmalloc(sizeof(int) * (size_t)ng);
    ct->host_pieces = mc_xcalloc((size_t)nh, sizeof(int));
    for (int g = 0; g < ng; g++)
        ct->gpu_port[g] = -2;
    ct->host_bw = mc_xmalloc(sizeof(double) * (size_t)nh);
    for (int h = 0; h < nh; h++)
        ct->host_bw[h] = mc_topo_host_net_bw(topo, h);
    ct->host_switched = mc_xcalloc((size_t)nh, 1);
    ct->host_relays = mc_xmalloc((size_t)nh);
    memset(ct->host_relays, -1, (size_t)nh);
    for (int i = 0; i < topo->nnodes; i++) {
        const mc_node_t *n = &topo->nodes[i];
        ct->port_of[i] = n->kind == MC_NODE_NET && n->host >= 0 ? ct->host_ports[n->host]++ : -1;
        if (n->kind == MC_NODE_NVS && n->host >= 0)
            ct->host_switched[n->host] = 1;
    }
    ct->port_base = mc_xcalloc((size_t)nh + 1, sizeof(int));
    for (int h = 0; h < nh; h++)
        ct->port_base[h + 1] = ct->port_base[h] + ct->host_ports[h];
    ct->port_in = mc_xcalloc((size_t)ct->port_base[nh] + 1, sizeof(double));
    ct->port_out = mc_xcalloc((size_t)ct->port_base[nh] + 1, sizeof(double));
    ct->load = mc_xcalloc((size_t)topo->nlinks, sizeof(double));
    ct->lstart = mc_xcalloc((size_t)topo->nlinks, sizeof(double));
    ct->ltail = mc_xcalloc((size_t)topo->nlinks, sizeof(double));
    ct->lheld = mc_xcalloc((size_t)topo->nlinks, sizeof(double));
    ct->lholders = mc_xcalloc((size_t)topo->nlinks, sizeof(int));
    ct->lfwd = mc_xcalloc((size_t)topo->nlinks, sizeof(double));
    ct->flows = mc_xcalloc((size_t)topo->nlinks, sizeof(int));
    ct->touched = mc_xmalloc(sizeof(int) * (size_t)topo->nlinks);
    ct->gpu_out = mc_xcalloc((size_t)ng, sizeof(double));
    ct->host_out = mc_xcalloc((size_t)nh, sizeof(double));
    ct->rail_leaving = mc_xcalloc((size_t)nh, sizeof(int));
    ct->rail_taken = mc_xcalloc((size_t)ng, 1);
    return ct;
}

void mc_cost_topo_free(mc_cost_topo_t *ct)
{
    if (!ct)
        return;
    free(ct->keys);
    free(ct->vals);
    free(ct->routes);
    free(ct->pool);
    free(ct->gpu_host);
    free(ct->host_start);
    free(ct->host_gpus);
    free(ct->host_ports);
    free(ct->port_of);
    free(ct->gpu_port);
    free(ct->port_base);
    free(ct->port_in);
    free(ct->port_out);
    free(ct->host_pieces);
    free(ct->host_bw);
    free(ct->host_switched);
    free(ct->host_relays);
    free(ct->gpu_nic);
    free(ct->load);
    free(ct->lstart);
    free(ct->ltail);
    free(ct->lheld);
    free(ct->lholders);
    free(ct->lfwd);
    free(ct->flows);
    free(ct->touched);
    free(ct->xfers);
    free(ct->times);
    free(ct->chains);
    free(ct->step_keys);
    free(ct->step_count);
    free(ct->gpu_out);
    free(ct->host_out);
    free(ct->rail_leaving);
    free(ct->rail_taken);
    free(ct);
}

static int slot_of(const mc_cost_topo_t *ct, int64_t key)
{
    uint64_t h = (uint64_t)key * 0x9e3779b97f4a7c15ull;
    int i = (int)(h >> 40) & (ct->hcap - 1);
    while (ct->keys[i] != -1 && ct->keys[i] != key)
        i = (i + 1) & (ct->hcap - 1);
    return i;
}

static void rehash(mc_cost_topo_t *ct)
{
    int64_t *keys = ct->keys;
    int *vals = ct->vals, cap = ct->hcap;
    ct->hcap *= 2;
    ct->keys = mc_xmalloc(sizeof(int64_t) * (size_t)ct->hcap);
    ct->vals = mc_xmalloc(sizeof(int) * (size_t)ct->hcap);
    memset(ct->keys, 0xff, sizeof(int64_t) * (size_t)ct->hcap);
    for (int i = 0; i < cap; i++)
        if (keys[i] != -1) {
            int s = slot_of(ct, keys[i]);
            ct->keys[s] = keys[i];
            ct->vals[s] = vals[i];
        }
    free(keys);
    free(vals);
}

/* The cached route from GPU a to GPU b (looked up in topo the first time). */
static mc_status_t route_of(mc_cost_topo_t *ct, int a, int b, int *index, mc_err_t *err)
{
    int64_t key = (int64_t)a * ct->topo->ngpus + b;
    int s = slot_of(ct, key);
    if (ct->keys[s] == key) {
        *index = ct->vals[s];
        return MC_OK;
    }
    mc_route_t r;
    mc_status_t st = mc_topo_route(ct->topo, a, b, &r, err);
    if (st != MC_OK)
        return st;
    MC_GROW(ct->routes, ct->route_cap, ct->nroutes + 1);
    MC_GROW(ct->pool, ct->pool_cap, ct->npool + r.nlinks);
    memcpy(ct->pool + ct->npool, r.links, sizeof(int) * (size_t)r.nlinks);
    ct->routes[ct->nroutes] = (cost_route_t){
        ct->npool, r.nlinks, mc_topo_links_delay(ct->topo, r.links, r.nlinks), r.bw,
        mc_topo_conn_cap(ct->topo, a, b, r.links, r.nlinks)};
    ct->npool += r.nlinks;
    ct->keys[s] = key;
    ct->vals[s] = *index = ct->nroutes++;
    if (++ct->hcount * 2 > ct->hcap)
        rehash(ct);
    return MC_OK;
}

mc_status_t cost_route(mc_cost_topo_t *ct, int a, int b, const cost_route_t **r, mc_err_t *err)
{
    int ri;
    mc_status_t st = route_of(ct, a, b, &ri, err);
    *r = st == MC_OK ? &ct->routes[ri] : NULL;
    return st;
}

mc_status_t cost_send(mc_cost_topo_t *ct, int a, int b, double bytes, int after, int *x,
                      mc_err_t *err)
{
    const cost_route_t *r;
    *x = after;
    if (a == b || bytes <= 0)
        return MC_OK;
    mc_status_t st = cost_route(ct, a, b, &r, err);
    if (st != MC_OK)
        return st;
    for (const int *l = ct->pool + r->first; l < ct->pool + r->first + r->n; l++) {
        if (ct->flows[*l]++ == 0)
            ct->touched[ct->ntouched++] = *l;
        ct->load[*l] += bytes;
    }
    ct->gpu_out[a] += bytes;
    MC_GROW(ct->xfers, ct->xfer_cap, ct->nxfers + 1);
    ct->xfers[ct->nxfers] = (cost_xfer_t){(int)(r - ct->routes), after,
                                          after >= 0 ? ct->xfers[after].depth + 1 : 1,
                                          ct->chunk_cap, bytes,
                                          ct->unit > 0 && ct->unit < bytes ? ct->unit : bytes};
    *x = ct->nxfers++;
    return MC_OK;
}

mc_status_t cost_gpu_port(mc_cost_topo_t *ct, int g, int *port, mc_err_t *err)
{
    const mc_topo_t *t = ct->topo;
    int h = ct->gpu_host[g];
    if (ct->gpu_port[g] == -2) {
        /* a route into g from the first GPU of another host names the port it arrives by */
        int from = ct->host_gpus[ct->host_start[(h + 1) % t->nhosts]], ri;
        ct->gpu_port[g] = -1;
        if (t->nhosts > 1 && ct->host_ports[h] > 0) {
            mc_status_t st = route_of(ct, from, g, &ri, err);
            if (st != MC_OK)
                return st;
            for (int i = 0; i < ct->routes[ri].n; i++) {
                int node = t->links[ct->pool[ct->routes[ri].first + i]].dst;
                if (t->nodes[node].host == h && ct->port_of[node] >= 0)
                    ct->gpu_port[g] = ct->port_of[node];
            }
        }
    }
    *port = ct->gpu_port[g];
    return MC_OK;
}

/* The busiest link of a->b's route if bytes more crossed it (seconds). */
static mc_status_t route_score(mc_cost_topo_t *ct, int a, int b, double bytes, double *score,
                               mc_err_t *err)
{
    const cost_route_t *r;
    mc_status_t st = cost_route(ct, a, b, &r, err);
    for (int i = 0; st == MC_OK && i < r->n; i++) {
        int l = ct->pool[r->first + i];
        *score = fmax(*score, (ct->load[l] + bytes) / ct->topo->links[l].bw);
    }
    return MC_OK;
}

/* Whether some pair of host h's GPUs has a relay whose two routes are both wider than theirs
 * (asked once per host: an NVSwitch host has none, so its transfers skip the pricing). */
static mc_status_t relays_help(mc_cost_topo_t *ct, int h, int *help, mc_err_t *err)
{
    if (ct->host_relays[h] >= 0) {
        *help = ct->host_relays[h];
        return MC_OK;
    }
    const int *gpus = ct->host_gpus + ct->host_start[h];
    int n = ct->host_start[h + 1] - ct->host_start[h];
    double *bw = mc_xcalloc((size_t)(n * n), sizeof(double));
    mc_status_t st = MC_OK;
    *help = 0;
    for (int i = 0; i < n * n && st == MC_OK; i++) {
        mc_route_t r;
        if (i / n != i % n && (st = mc_topo_route(ct->topo, gpus[i / n], gpus[i % n], &r, err)) ==
                                  MC_OK)
            bw[i] = r.bw;
    }
    for (int a = 0; a < n && st == MC_OK; a++)
        for (int b = 0; b < n; b++)
            for (int k = 0; k < n && a != b; k++)
                if (k != a && k != b && fmin(bw[a * n + k], bw[k * n + b]) > bw[a * n + b])
                    *help = 1;
    free(bw);
    if (st == MC_OK)
        ct->host_relays[h] = (signed char)*help;
    return st;
}

mc_status_t cost_relay(mc_cost_topo_t *ct, int a, int b, double bytes, int after, int *x,
                       mc_err_t *err)
{
    int h = ct->gpu_host[a], help = 0;
    mc_status_t st = MC_OK;
    *x = after;
    if (a != b && h == ct->gpu_host[b])
        st = relays_help(ct, h, &help, err);
    if (st != MC_OK || !help)
        return st != MC_OK ? st : cost_send(ct, a, b, bytes, after, x, err);
    const int *gpus = ct->host_gpus + ct->host_start[h];
    int n = ct->host_start[h + 1] - ct->host_start[h];
    double part = bytes / COST_RELAY_PARTS;
    for (int p = 0; p < COST_RELAY_PARTS && st == MC_OK; p++) {
        double best = 0;
        int via = -1;
        st = route_score(ct, a, b, part, &best, err);
        for (int k = 0; k < n && st == MC_OK; k++) {
            double score = 0;
            if (gpus[k] == a || gpus[k] == b)
                continue;
            st = route_score(ct, a, gpus[k], part, &score, err);
            if (st == MC_OK && score < best)
                st = route_score(ct, gpus[k], b, part, &score, err);
            if (st == MC_OK && score < best * (1 - 1e-9)) {
                best = score;
                via = gpus[k];
            }
        }
        int hop;
        if (st == MC_OK && via < 0)
            st = cost_send(ct, a, b, part, after, x, err);
        if (st == MC_OK && via >= 0)
            st = cost_send(ct, a, via, part, after, &hop, err);
        if (st == MC_OK && via >= 0)
            st = cost_send(ct, via, b, part, hop, x, err);
    }
    return st;
}


const cost_route_t *cost_last_route(const mc_cost_topo_t *ct)
{
    return &ct->routes[ct->xfers[ct->nxfers - 1].route];
}

static void reset(mc_cost_topo_t *ct)
{
    ct->unit = 0;
    ct->chunk_cap = 0;
    ct->relayed = 0;
    for (int i = 0; i < ct->ntouched; i++) {
        ct->load[ct->touched[i]] = 0;
        ct->flows[ct->touched[i]] = 0;
    }
    ct->ntouched = ct->nxfers = ct->nchains = 0;
    memset(ct->gpu_out, 0, sizeof(double) * (size_t)ct->topo->ngpus);
    memset(ct->host_out, 0, sizeof(double) * (size_t)ct->topo->nhosts);
    memset(ct->port_in, 0, sizeof(double) * (size_t)ct->port_base[ct->topo->nhosts]);
    memset(ct->port_out, 0, sizeof(double) * (size_t)ct->port_base[ct->topo->nhosts]);
    memset(ct->host_pieces, 0, sizeof(int) * (size_t)ct->topo->nhosts);
}

/* The busiest link a route crosses, once time_of has turned loads into seconds: its seconds
 * and how many transfers share it. */
static double route_pace(const mc_cost_topo_t *ct, const cost_route_t *r, int *flows, int *link)
{
    double pace = 0;
    *flows = 1;
    *link = ct->pool[r->first];
    for (int i = 0; i < r->n; i++) {
        int l = ct->pool[r->first + i];
        if (ct->load[l] > pace) {
            pace = ct->load[l];
            *flows = ct->flows[l];
            *link = l;
        }
    }
    return pace;
}

/* A forwarded hop of the split trees' plan (docs/cost-model.md, "Forwarded hops"): on a link
 * that holders' transfers keep busy from the start it streams the rest of the link's load behind
 * them, not all of it behind its own first chunk (*own); and once its link's load would be
 * through, only the forwarded hops on it are left to share it with its last chunk (*last: a
 * fan-out at home behind a hop into the host, on links the holders' hops through the host's NICs
 * kept busy first). */
static void split_hop(const mc_cost_topo_t *ct, const cost_time_t *m, const cost_time_t *up,
                      int cc, double cinv, double *own, double *last)
{
    int l = m->link;
    *own = fmin(*own, fmax(ct->lstart[l] + m->pace, m->first + (cc - 1) * m->alone * cinv));
    double at = up->last + m->delay;
    if (at >= fmin(ct->lstart[l], ct->ltail[l]) + m->pace)
        *last = fmin(*last, at + ct->lfwd[l] * cinv);
}

/* The makespan if every transfer moves in c chunks. A transfer's link share is taken as its
 * busiest link's load spread over that link's whole busy time (pace: every flow on a link ends
 * when the link's bytes are through), so it streams its c chunks at pace / c each. Its first
 * chunk leaves once the first chunk of the transfer before it has arrived, after the message
 * delay; its last one leaves once the last one before it has arrived, or once its own earlier
 * chunks are through, each paying the delay, of which the k connections on its busiest link
 * leave delay / k (one's delay falls while the others move bytes). k is the most of: the
 * transfers on that link, the strategy's staggered trees (ct->staggered), and the channels its
 * trees are cut into: up to ct->channels, each of c chunks of ct->min_chunk or more, cut from a
 * tree as small as the strategy makes (one unit, cost_xfer_t.unit), so a small piece has none
 * (docs/cost-model.md). The makespan is the latest last chunk. */
static double makespan(mc_cost_topo_t *ct, int c)
{
    static const double recip[COST_CHANNELS_MAX + 1] = {0, 1, 1 / 2., 1 / 3., 1 / 4., 1 / 5.,
                                                        1 / 6., 1 / 7., 1 / 8.};
    _Static_assert(COST_CHANNELS_MAX == 8, "recip lists 1 / k for every channel count k");
    double t = 0, inv = 1.0 / c;
    for (int i = 0; i < ct->nxfers; i++) {
        cost_time_t *m = &ct->times[i];
        const cost_time_t *up = ct->xfers[i].after >= 0 ? &ct->times[ct->xfers[i].after] : NULL;
        /* a tree too small for c chunks of the smallest size moves in fewer */
        int cc = m->maxc && m->maxc < c ? m->maxc : c;
        double cinv = cc == c ? inv : 1.0 / cc;
        double chunk = m->pace * cinv;
        double own, last;
        m->first = (up ? up->first : 0) + m->delay + chunk;
        /* channels of c chunks of ct->min_chunk or more each, cut from a tree of one unit */
        double cut = m->units * cinv;
        int ch = cut >= COST_CHANNELS_MAX ? COST_CHANNELS_MAX : (int)cut;
        own = up ? m->first + (cc - 1) * chunk : m->drained;
        last = up ? up->last + m->delay + chunk : 0; /* a holder's: drained */
        if (up && ct->split)
            split_hop(ct, m, up, cc, cinv, &own, &last);
        own += (cc - 1) * m->delay * (ch > m->flows ? recip[ch] : m->inv_flows);
        m->last = own > last ? own : last;
        if (m->last > t)
            t = m->last;
    }
    return t;
}

/* When a holder's transfer has its bytes through (cost_time_t.drained). The holders' transfers all
 * leave at the start, so a link that is the busiest of some of them moves bytes from the shortest
 * of their message delays on, and has its load through its busy time later; each of them ends
 * then, and no sooner than its own delay and its bytes alone. One behind a longer delay (into
 * another host, say) shares the link with those that started before it and still ends with the
 * link's load, as the simulator's max-min sharing has it: p2p's broadcast over two MI300X boxes
 * puts the send to GPU 1 (3.9 us of delay) and one to the other box (22.5 us) on GPU 0's xGMI
 * link to GPU 1, which ends 3.9 us plus its busy time in, not 22.5 us plus it. In the split
 * trees' plan, where the link also carries forwarded transfers (hops after a relay), those join
 * only once their first bytes have come in (their own and their sender's delays): until then the
 * holders have the link to themselves, then an equal share each, so they end before the link's
 * load is through (the hub hops share every NIC with the root hops: docs/cost-model.md,
 * "Forwarded hops"). */
static void drain_from_holders(mc_cost_topo_t *ct)
{
    for (int i = 0; i < ct->ntouched; i++) {
        int l = ct->touched[i];
        ct->lstart[l] = ct->ltail[l] = INFINITY;
        if (ct->split) {
            ct->lheld[l] = ct->lfwd[l] = 0;
            ct->lholders[l] = 0;
        }
    }
    for (int i = 0; i < ct->nxfers; i++) {
        const cost_time_t *m = &ct->times[i];
        int l = m->link, up = ct->xfers[i].after;
        if (up < 0)
            ct->lstart[l] = fmin(ct->lstart[l], m->delay);
        if (!ct->split)
            continue;
        double sec = ct->xfers[i].bytes / ct->topo->links[l].bw;
        if (up >= 0) {
            ct->ltail[l] = fmin(ct->ltail[l], ct->times[up].delay + m->delay);
            ct->lfwd[l] += sec;
        } else {
            ct->lheld[l] += sec;
            ct->lholders[l]++;
        }
    }
    for (int i = 0; i < ct->nxfers; i++) {
        cost_time_t *m = &ct->times[i];
        const cost_route_t *r = &ct->routes[ct->xfers[i].route];
        double bytes = ct->xfers[i].bytes;
        double alone = fmax(bytes / r->bw,
                            r->cap > 0 && ct->conns ? bytes / (r->cap * ct->conns) : 0);
        if (ct->xfers[i].after >= 0)
            continue;
        int l = m->link, nh = ct->lholders[l], nf = ct->flows[l] - nh;
        double start = ct->lstart[l], join = fmax(ct->ltail[l], start), end = start + m->pace;
        if (ct->split && nf > 0 && join < end) {
            double left = ct->lheld[l] - (join - start);
            end = fmin(end, left > 0 ? join + left * (nh + nf) / nh : start + ct->lheld[l]);
        }
        m->drained = fmax(end, m->delay + alone);
    }
}

/* The least makespan over chunk counts up to max_chunks, *best_c getting its count: powers of
 * two while the makespan falls (it has one minimum in c), then quarter octaves around the best:
 * within 10% of any count. */
static double best_makespan(mc_cost_topo_t *ct, int max_chunks, int *best_c)
{
    *best_c = 1;
    if (!ct->nxfers)
        return 0;
    double best = makespan(ct, 1);
    int best_k = 0;
    for (int k = 4; (1 << k / 4) <= max_chunks; k += 4) {
        double m = makespan(ct, 1 << k / 4);
        if (m >= best)
            break;
        best = m;
        *best_c = 1 << k / 4;
        best_k = k;
    }
    for (int k = best_k - 3; k <= best_k + 3; k++) {
        int c = (int)lround(pow(2, k / 4.0));
        if (k % 4 == 0 || c < 1 || c > max_chunks)
            continue;
        double m = makespan(ct, c);
        if (m < best) {
            best = m;
            *best_c = c;
        }
    }
    return best;
}

/* Chain transfers at the same depth on a link (the chains' lockstep: they all leave their roots
 * at once and move one hop per step), counted in an open hash of (link, depth) built per call. */
static void count_lockstep(mc_cost_topo_t *ct)
{
    int need = 0;
    for (int i = 0; i < ct->nchains; i++)
        for (int j = ct->chains[i].first; j < ct->chains[i].first + ct->chains[i].n; j++)
            need += ct->routes[ct->xfers[j].route].n;
    int cap = 64;
    while (cap < 2 * need)
        cap *= 2;
    if (cap > ct->step_cap) {
        free(ct->step_keys);
        free(ct->step_count);
        ct->step_keys = mc_xmalloc(sizeof(int64_t) * (size_t)cap);
        ct->step_count = mc_xmalloc(sizeof(int) * (size_t)cap);
        ct->step_cap = cap;
    }
    ct->step_mask = cap - 1;
    memset(ct->step_keys, 0xff, sizeof(int64_t) * (size_t)cap);
    for (int i = 0; i < ct->nchains; i++)
        for (int j = ct->chains[i].first; j < ct->chains[i].first + ct->chains[i].n; j++) {
            const cost_route_t *r = &ct->routes[ct->xfers[j].route];
            for (int k = 0; k < r->n; k++) {
                int s = step_slot(ct, ct->pool[r->first + k], ct->xfers[j].depth);
                if (ct->step_keys[s] < 0) {
                    ct->step_keys[s] = step_key(ct->pool[r->first + k], ct->xfers[j].depth);
                    ct->step_count[s] = 0;
                }
                ct->step_count[s]++;
            }
        }
}

/* The chains' time (alpa-bcast): each pipelines in its own chunk count c, not the count best for
 * the whole. A hop takes its message delay and a chunk at its share of its links: each link's
 * bandwidth over the chain transfers that cross it at the same step (count_lockstep), within the
 * connections' limit, at most the link's pace. A chain then takes its first chunk's way through
 * every hop and c - 1 more steps of its slowest hop (NCCL's pipelined ring, chain_time in
 * cost_traffic.c), and no less than its busiest link's pace plus a chunk on each other hop (the
 * link's transfers of every step end with it). The latest chain (docs/cost-model.md, "Chain
 * fill"). *chunks gets the most chunks a chain moves in. */
static double chains_time(mc_cost_topo_t *ct, int *chunks)
{
    const mc_topo_t *t = ct->topo;
    double latest = 0;
    count_lockstep(ct);
    for (int i = 0; i < ct->nchains; i++) {
        const cost_chain_t *ch = &ct->chains[i];
        double sum = 0, step = 0, pace = 0, slow = 0;
        for (int j = ch->first; j < ch->first + ch->n; j++) {
            const cost_route_t *r = &ct->routes[ct->xfers[j].route];
            double rate = INFINITY;
            for (int k = 0; k < r->n; k++) {
                int l = ct->pool[r->first + k];
                rate = fmin(rate, t->links[l].bw /
                                      ct->step_count[step_slot(ct, l, ct->xfers[j].depth)]);
            }
            if (r->cap > 0)
                rate = fmin(rate, r->cap * ct->conns);
            double own = fmin(ct->times[j].pace, ct->xfers[j].bytes / rate);
            double hop = ct->times[j].delay + own / ch->chunks;
            ct->times[j].first = hop; /* read by rings_floor */
            sum += hop;
            /* after the first chunk, staggered channels wait out each other's delays, and the
             * chunks in flight overlap them (mc_chain_time) */
            double one = own / ch->chunks; /* a chunk's time on the hop */
            step = fmax(step, fmax(one, (ct->times[j].delay / ch->overlap + one) / ch->inflight));
            if (ct->times[j].pace > pace) {
                pace = ct->times[j].pace;
                slow = hop;
            }
        }
        latest = fmax(latest, sum + (ch->chunks - 1) * step);
        if (!ct->ring_split)
            latest = fmax(latest, sum - slow + pace);
        *chunks = ch->chunks > *chunks ? ch->chunks : *chunks;
    }
    return latest;
}

/* The rings' floor in place of each chain's own (chains_time): the chains of the other pieces
 * load a ring's links too, and cross them at other depths, so no chain pays a link's whole load
 * and every hop of its own around it. A link is busy for its load from the earliest first chunk
 * that reaches it (the hops before, and its own message delay) and its last bytes still go on
 * for the shortest tail of hops after it (max-min sharing lets the crossings that started first
 * end first: an all-gather's ring ends with the crossing into its last host). The latest link. */
static double rings_floor(mc_cost_topo_t *ct)
{
    double latest = 0;
    for (int i = 0; i < ct->ntouched; i++)
        ct->lstart[ct->touched[i]] = ct->ltail[ct->touched[i]] = INFINITY;
    for (int i = 0; i < ct->nchains; i++) {
        const cost_chain_t *ch = &ct->chains[i];
        double sum = 0, pre = 0;
        for (int j = ch->first; j < ch->first + ch->n; j++)
            sum += ct->times[j].first;
        for (int j = ch->first; j < ch->first + ch->n; j++) {
            const cost_route_t *r = &ct->routes[ct->xfers[j].route];
            double head = pre + ct->times[j].delay, tail = sum - pre - ct->times[j].first;
            for (int k = 0; k < r->n; k++) {
                int l = ct->pool[r->first + k];
                ct->lstart[l] = fmin(ct->lstart[l], head);
                ct->ltail[l] = fmin(ct->ltail[l], tail);
            }
            pre += ct->times[j].first;
        }
    }
    for (int i = 0; i < ct->ntouched; i++) {
        int l = ct->touched[i];
        latest = fmax(latest, ct->lstart[l] + ct->load[l] + ct->ltail[l]);
    }
    return latest;
}

/* The estimate from the loaded links: the busiest link (bandwidth_s), and the makespan of the
 * transfers (above) for the chunk count up to max_chunks that minimizes it, or the chains' time
 * for a strategy that lays chains. */
static void time_of(mc_cost_topo_t *ct, int max_chunks, mc_cost_t *out)
{
    const mc_topo_t *t = ct->topo;
    double bw_s = 0;
    int link = -1, depth = 0;
    for (int i = 0; i < ct->ntouched; i++) {
        int l = ct->touched[i];
        double s = ct->load[l] /= t->links[l].bw; /* bytes to seconds, read by route_pace */
        if (s > bw_s || (s == bw_s && link >= 0 && l < link)) {
            bw_s = s;
            link = l;
        }
    }
    MC_GROW(ct->times, ct->time_cap, ct->nxfers);
    double conn_s = 0; /* the slowest connection held at its limit */
    for (int i = 0; i < ct->nxfers; i++) {
        const cost_route_t *r = &ct->routes[ct->xfers[i].route];
        int flows;
        /* a transfer's connections move no faster than their limit, however idle its links */
        double held = r->cap > 0 && ct->conns ? ct->xfers[i].bytes / (r->cap * ct->conns) : 0;
        ct->times[i].pace = fmax(route_pace(ct, r, &flows, &ct->times[i].link), held);
        conn_s = fmax(conn_s, held);
        ct->times[i].delay = r->delay;
        ct->times[i].alone = ct->xfers[i].bytes / r->bw;
        cost_time_t *m = &ct->times[i];
        m->flows = flows > ct->staggered ? flows : ct->staggered;
        m->inv_flows = 1.0 / m->flows;
        m->maxc = ct->xfers[i].maxc;
        /* channels only where the strategy cuts its trees into them */
        m->units = ct->channels > 1 ? ct->xfers[i].unit / ct->min_chunk : 0;
        if (ct->xfers[i].depth > depth)
            depth = ct->xfers[i].depth;
    }
    /* alpa-bcast's traffic is its chains, each pipelined on its own (chains_time); the others'
     * transfers stream at the chunk count best for the whole (makespan) */
    int best_c = 1;
    double best;
    if (ct->nchains) {
        best = chains_time(ct, &best_c);
        if (ct->ring_split)
            best = fmax(best, rings_floor(ct));
    } else {
        drain_from_holders(ct);
        best = best_makespan(ct, max_chunks, &best_c);
    }
    int held = conn_s > bw_s;
    bw_s = fmax(bw_s, conn_s);
    double overhead = best - bw_s;
    *out = (mc_cost_t){.seconds = best, .bandwidth_s = bw_s, .overhead_s = overhead,
                       .binding = link < 0 ? MC_COST_BIND_NONE
                                  : bw_s < overhead ? MC_COST_BIND_LATENCY
                                  : held ? MC_COST_BIND_CONN
                                         : MC_COST_BIND_LINK,
                       .link = link, .depth = depth, .chunks = best_c,
                       .confidence = link < 0 || best <= 0 ? 1.0 : bw_s / best};
}

/* The most chunks a transfer moves in: meshcast's trees down to MC_MIN_CHUNK_BYTES; a send/recv
 * is one message (alpa-bcast's chains have their own counts, cost_chain_t). */
static int max_chunks(mc_cost_strategy_t s, double bytes)
{
    double c = s == MC_COST_MESHCAST ? floor(bytes / COST_MESHCAST_CHUNK) : 1;
    return c < 1 ? 1 : c > 1024 ? 1024 : (int)c;
}

/* Whether a destination sits in a host without an NVSwitch, where a ring or a tree may beat a
 * star. */
static int ring_helps(const mc_cost_topo_t *ct, const mc_task_t *task)
{
    for (int i = 0; i < task->npieces; i++)
        for (int j = 0; j < task->pieces[i].ndests; j++)
            if (!ct->host_switched[ct->gpu_host[task->pieces[i].dests[j]]])
                return 1;
    return 0;
}

typedef mc_status_t (*traffic_fn)(mc_cost_topo_t *, const mc_task_t *, mc_err_t *);

/* One traffic pattern laid out and timed. */
static mc_status_t estimate(mc_cost_topo_t *ct, const mc_task_t *task, traffic_fn traffic,
                            mc_cost_strategy_t s, mc_cost_t *out, mc_err_t *err)
{
    reset(ct);
    /* meshcast staggers at least two trees on every bottleneck link (synth_meshcast_stagger.c),
     * as NCCL runs several channels per NIC: one's message overhead falls while another moves
     * bytes; and its referee cuts trees into up to COST_CHANNELS_MAX channels where they carry
     * enough bytes (mc_sched_channels) */
    ct->channels = s == MC_COST_MESHCAST ? COST_CHANNELS_MAX : 1;
    ct->staggered = s == MC_COST_MESHCAST ? 2 : 1;
    ct->min_chunk = s == MC_COST_MESHCAST ? COST_MESHCAST_CHUNK : (double)MC_NCCL_STEP_BYTES;
    /* p2p sends a transfer as one ncclSend; alpa-bcast runs each chain as NCCL's two duplicated
     * ring channels (synth_alpa_bcast.c); meshcast emits a tree whose edges have a connection
     * limit as enough parallel copies to carry its planned rate (synth_meshcast.c, add_copies) */
    ct->conns = s == MC_COST_P2P || traffic == cost_traffic_ring ? 1
                : s == MC_COST_ALPA_BCAST                      ? 2
                                                               : 0;
    mc_status_t st = traffic(ct, task, err);
    if (st != MC_OK)
        return st;
    /* a tree moves a piece, or a share of one, in chunks: the largest piece bounds their count */
    double largest = 0;
    for (int i = 0; i < task->npieces; i++)
        largest = fmax(largest, (double)task->pieces[i].bytes);
    time_of(ct, max_chunks(s, largest), out);
    return MC_OK;
}

/* meshcast's traffic estimated once more with one of its plan forms switched on (*form: ct's
 * straight, rails or split flag), kept in *out where it is faster. */
static mc_status_t plan_faster(mc_cost_topo_t *ct, const mc_task_t *task, int *form,
                               mc_cost_t *out, mc_err_t *err)
{
    mc_cost_t other;
    *form = 1;
    mc_status_t st = estimate(ct, task, cost_traffic_meshcast, MC_COST_MESHCAST, &other, err);
    *form = 0;
    if (st == MC_OK && other.seconds < out->seconds)
        *out = other;
    return st;
}

mc_status_t mc_cost_estimate(mc_cost_topo_t *ct, const mc_task_t *task, const mc_cost_opts_t *opts,
                             mc_cost_t *out, mc_err_t *err)
{
    static const traffic_fn traffic[MC_COST__COUNT] = {
        cost_traffic_meshcast, cost_traffic_p2p, cost_traffic_alpa_bcast};
    mc_cost_strategy_t s = opts ? opts->strategy : MC_COST_MESHCAST;
    if ((unsigned)s >= MC_COST__COUNT)
        return mc_err_set(err, MC_ERR_USAGE, "cost: unknown strategy %d", (int)s);
    mc_status_t st = mc_task_check_topo(task, ct->topo, err);
    if (st != MC_OK)
        return st;
    st = estimate(ct, task, traffic[s], s, out, err);
    /* meshcast's optimizer has trees that fan out by rings and spanning trees too, and the
     * stars of direct sends; it keeps whichever is fastest */
    int switchless = ring_helps(ct, task), relayed = ct->relayed;
    cost_fan_t best_fan = COST_FAN_STAR;
    for (int v = switchless ? COST_FAN_CHAIN : COST_FAN__COUNT;
         v <= COST_FAN__COUNT && st == MC_OK && s == MC_COST_MESHCAST; v++) {
        mc_cost_t other;
        ct->fan = v < COST_FAN__COUNT ? (cost_fan_t)v : COST_FAN_STAR;
        st = estimate(ct, task, v < COST_FAN__COUNT ? cost_traffic_meshcast : cost_traffic_direct,
                      s, &other, err);
        if (v < COST_FAN__COUNT)
            relayed |= ct->relayed;
        if (st == MC_OK && other.seconds < out->seconds) {
            *out = other;
            best_fan = ct->fan;
        }
        ct->fan = COST_FAN_STAR;
    }
    /* ... and trees that send a piece into every host straight from a holder host: hosts
     * relaying to hosts spare a lone holder host's ports, but each relay adds a crossing that a
     * piece too small to pipeline pays whole (an all-gather, whose every host holds as much as
     * it sends, gains nothing from relays) */
    if (st == MC_OK && s == MC_COST_MESHCAST && relayed) {
        ct->fan = best_fan;
        st = plan_faster(ct, task, &ct->straight, out, err);
        ct->fan = COST_FAN_STAR;
    }
    /* ... and rail stripes, for the pieces that leave a host holding all of them (cost_rails.c) */
    int stripes = 0, split = 0;
    if (st == MC_OK && s == MC_COST_MESHCAST)
        st = cost_rails_any(ct, task, &stripes, &split, err);
    if (st == MC_OK && stripes)
        st = plan_faster(ct, task, &ct->rails, out, err);
    /* ... and the split trees of the last race (synth_meshcast_alt.c), for the same pieces */
    if (st == MC_OK && split)
        st = plan_faster(ct, task, &ct->split, out, err);
    /* Without a switch, meshcast packs load-priced trees fractionally over every path (column
     * generation), which no single fan-out shape above expresses; it gets within its message
     * overheads of the lower bound's bandwidth term (the fluid optimum: cuts and max-flows) when
     * that is shorter. Only here is the bound worth its cost (switchless hosts are small). */
    mc_bound_t b;
    if (st == MC_OK && s == MC_COST_MESHCAST && switchless && !(opts && opts->fast) &&
        (st = mc_task_bound(task, ct->topo, &b, err)) == MC_OK &&
        b.seconds - b.latency_s + out->overhead_s < out->seconds) {
        out->bandwidth_s = b.seconds - b.latency_s;
        out->seconds = out->bandwidth_s + out->overhead_s;
        out->link = -1;
        out->binding = out->bandwidth_s >= out->overhead_s ? MC_COST_BIND_LINK
                                                           : MC_COST_BIND_LATENCY;
        out->confidence = out->seconds > 0 ? out->bandwidth_s / out->seconds : 1.0;
    }
    /* Last, as the strategy does (race_ring), NCCL's ring chains where its trees are further
     * than MC_ALT_ROOM from the bound, as they are and cut into 2 and 4 staggered channels; a
     * task with several consumers of a tensor has no ring */
    int one_consumer = 1;
    for (int i = 0; i < task->ntensors; i++)
        one_consumer &= task->tensors[i].nmore == 0;
    if (st == MC_OK && s == MC_COST_MESHCAST && switchless && !(opts && opts->fast) &&
        one_consumer && out->seconds > COST_ALT_ROOM * b.seconds) {
        for (int k = 1; k <= 4 && st == MC_OK; k *= 2) {
            mc_cost_t other;
            ct->ring_split = k;
            st = estimate(ct, task, cost_traffic_ring, s, &other, err);
            if (st == MC_OK && other.seconds < out->seconds)
                *out = other;
        }
        ct->ring_split = 0;
    }
    return st;
}
