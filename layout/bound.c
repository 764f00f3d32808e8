/* Lower bounds on the time of any schedule for a task on a topology (array-redistribution.md
 * section 5.3). Every term must stay a true lower bound, because the simulator is tested against
 * it: capacities are generous (a GPU's every link counts; a set of hosts gets the maximum flow
 * between its GPUs and the rest) and bytes are counted as the least that must cross (distinct
 * bytes, relaying allowed). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout_internal.h"

const char *mc_bound_kind_str(mc_bound_kind_t k)
{
    static const char *names[] = {"ingress", "egress", "host-cut", "mesh-cut", "latency", "none"};
    return (unsigned)k <= MC_BOUND_NONE ? names[k] : "?";
}

static int gpu_host(const mc_topo_t *topo, int gpu)
{
    return mc_topo_gpu_host(topo, gpu);
}

/* Distinct hosts of a GPU list into hosts[] (stamp[] marks them with mark); returns the count. */
static int hosts_of(const mc_topo_t *topo, const int *gpus, int n, int *stamp, int mark, int *hosts)
{
    int nh = 0;
    for (int i = 0; i < n; i++) {
        int h = gpu_host(topo, gpus[i]);
        if (stamp[h] != mark) {
            stamp[h] = mark;
            hosts[nh++] = h;
        }
    }
    return nh;
}

void mc_task_host_bytes(const mc_task_t *task, const mc_topo_t *topo, uint64_t *in, uint64_t *out)
{
    int nh = topo->nhosts;
    int *hold = mc_xmalloc(sizeof(int) * (size_t)nh), *need = mc_xmalloc(sizeof(int) * (size_t)nh);
    int *hold_stamp = mc_xmalloc(sizeof(int) * (size_t)nh);
    int *need_stamp = mc_xmalloc(sizeof(int) * (size_t)nh);
    for (int h = 0; h < nh; h++) {
        in[h] = out[h] = 0;
        hold_stamp[h] = need_stamp[h] = -1;
    }
    for (int i = 0; i < task->npieces; i++) {
        const mc_piece_t *p = &task->pieces[i];
        int nhold = hosts_of(topo, p->holders, p->nholders, hold_stamp, i, hold);
        int nneed = hosts_of(topo, p->dests, p->ndests, need_stamp, i, need);
        for (int j = 0; j < nneed; j++)
            if (hold_stamp[need[j]] != i)
                in[need[j]] += p->bytes;
        /* Held by one host only: it must leave that host if any other host needs it. */
        if (nhold == 1 && (nneed > 1 || (nneed == 1 && need[0] != hold[0])))
            out[hold[0]] += p->bytes;
    }
    free(hold);
    free(need);
    free(hold_stamp);
    free(need_stamp);
}

/* How fast bytes can enter (into != 0) or leave a set of hosts: the maximum flow between the set's
 * GPUs, where all data starts and ends, and everything outside it (network switches are outside
 * every set). It is at most the capacity of the links crossing the boundary, and less when the
 * links behind them are slower (a 48 GB/s PCIe hop in front of a 50 GB/s NIC). Only the set's
 * own nodes enter the flow graph, everything outside is one node, so it stays small. */
static double set_capacity(const mc_topo_t *topo, const char *in_set, int into)
{
    int *id = mc_xmalloc(sizeof(int) * (size_t)topo->nnodes), k = 0;
    for (int i = 0; i < topo->nnodes; i++) {
        int h = topo->nodes[i].host;
        id[i] = h >= 0 && in_set[h] ? k++ : -1;
    }
    const int gpus = k, outside = k + 1; /* gpus: one node joined to every GPU of the set */
    igraph_vector_int_t edges;
    igraph_vector_t cap;
    igraph_vector_int_init(&edges, 0);
    igraph_vector_init(&cap, 0);
    for (int i = 0; i < topo->nlinks; i++) {
        const mc_link_t *l = &topo->links[i];
        int s = id[l->src] >= 0 ? id[l->src] : outside, d = id[l->dst] >= 0 ? id[l->dst] : outside;
        if (s == outside && d == outside)
            continue;
        igraph_vector_int_push_back(&edges, s);
        igraph_vector_int_push_back(&edges, d);
        igraph_vector_push_back(&cap, l->bw);
    }
    for (int i = 0; i < topo->nnodes; i++)
        if (id[i] >= 0 && topo->nodes[i].kind == MC_NODE_GPU) {
            igraph_vector_int_push_back(&edges, into ? id[i] : gpus);
            igraph_vector_int_push_back(&edges, into ? gpus : id[i]);
            igraph_vector_push_back(&cap, HUGE_VAL);
        }
    igraph_t g;
    igraph_real_t flow = 0;
    if (igraph_create(&g, &edges, k + 2, IGRAPH_DIRECTED) == IGRAPH_SUCCESS) {
        if (igraph_maxflow_value(&g, &flow, into ? outside : gpus, into ? gpus : outside, &cap,
                                 NULL) != IGRAPH_SUCCESS)
            flow = 0;
        igraph_destroy(&g);
    }
    igraph_vector_int_destroy(&edges);
    igraph_vector_destroy(&cap);
    free(id);
    return flow;
}

/* The least message overhead each resource's traffic pays. Every message waits the largest alpha
 * of its route's link kinds before its bytes move, so nothing enters a GPU before the cheapest
 * alpha of its incoming links, nothing leaves one before the cheapest of its outgoing links, and
 * nothing crosses between hosts before the cheapest alpha of a cross-host link. */
typedef struct alphas {
    double *in, *out; /* per GPU */
    double cross;
} alphas_t;

static void alphas_init(alphas_t *a, const mc_topo_t *topo)
{
    a->in = mc_xmalloc(sizeof(double) * (size_t)topo->ngpus);
    a->out = mc_xmalloc(sizeof(double) * (size_t)topo->ngpus);
    a->cross = INFINITY;
    for (int g = 0; g < topo->ngpus; g++)
        a->in[g] = a->out[g] = INFINITY;
    for (int i = 0; i < topo->nlinks; i++) {
        const mc_link_t *l = &topo->links[i];
        const mc_node_t *s = &topo->nodes[l->src], *d = &topo->nodes[l->dst];
        double al = mc_topo_alpha(l->kind);
        if (s->host != d->host)
            a->cross = fmin(a->cross, al);
        if (d->kind == MC_NODE_GPU && d->gpu >= 0)
            a->in[d->gpu] = fmin(a->in[d->gpu], al);
        if (s->kind == MC_NODE_GPU && s->gpu >= 0)
            a->out[s->gpu] = fmin(a->out[s->gpu], al);
    }
}

static void alphas_free(alphas_t *a)
{
    free(a->in);
    free(a->out);
}

/* The largest term of one kind so far: bandwidth time plus its own alpha. */
typedef struct best {
    double bw, alpha;
    int where;
} best_t;

/* Keeps the larger of the current term and bytes/capacity + alpha; fails when bytes must cross
 * a cut with no capacity at all. */
static mc_status_t term(best_t *best, uint64_t bytes, double cap, double alpha, int at,
                        const char *what, const mc_topo_t *topo, mc_err_t *err)
{
    if (bytes == 0)
        return MC_OK;
    if (!(cap > 0))
        return mc_err_set(err, MC_ERR_INVALID, "%s %d must pass %llu bytes but no link of %s "
                          "can carry them", what, at, (unsigned long long)bytes, topo->source);
    double bw = (double)bytes / cap;
    alpha = isfinite(alpha) ? alpha : 0;
    if (best->where < 0 || bw + alpha > best->bw + best->alpha)
        *best = (best_t){bw, alpha, at};
    return MC_OK;
}

/* A GPU receives need(d) bytes over its incoming links, the first after the cheapest alpha of
 * its incoming links, or after a cross-host alpha when every piece it needs comes from other
 * hosts (the bytes crossed before reaching it). */
static mc_status_t ingress(const mc_task_t *task, const mc_topo_t *topo, const alphas_t *al,
                           best_t *best, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    uint64_t *need = mc_xcalloc((size_t)topo->ngpus, sizeof(uint64_t));
    double *first = mc_xmalloc(sizeof(double) * (size_t)topo->ngpus);
    int *stamp = mc_xmalloc(sizeof(int) * (size_t)topo->nhosts);
    for (int g = 0; g < topo->ngpus; g++)
        first[g] = INFINITY;
    for (int h = 0; h < topo->nhosts; h++)
        stamp[h] = -1;
    for (int i = 0; i < task->npieces; i++) {
        const mc_piece_t *p = &task->pieces[i];
        for (int j = 0; j < p->nholders; j++)
            stamp[gpu_host(topo, p->holders[j])] = i;
        for (int j = 0; j < p->ndests; j++) {
            int d = p->dests[j];
            double a = stamp[gpu_host(topo, d)] == i ? al->in[d] : fmax(al->in[d], al->cross);
            need[d] += p->bytes;
            first[d] = fmin(first[d], a);
        }
    }
    for (int g = 0; g < topo->ngpus && st == MC_OK; g++)
        st = term(best, need[g], mc_topo_gpu_ingress_bw(topo, g), first[g], g, "GPU", topo, err);
    free(need);
    free(first);
    free(stamp);
    return st;
}

static const mc_task_t *sort_task;
static int cmp_holders(const void *a, const void *b)
{
    const mc_piece_t *x = &sort_task->pieces[*(const int *)a];
    const mc_piece_t *y = &sort_task->pieces[*(const int *)b];
    if (x->nholders != y->nholders)
        return x->nholders - y->nholders;
    return memcmp(x->holders, y->holders, sizeof(int) * (size_t)x->nholders);
}

/* Pieces with the same holder set form a group; each of their bytes must leave the group once
 * (relays may fan it out afterwards). Pieces of different tensors with the same holders add. */
static mc_status_t egress(const mc_task_t *task, const mc_topo_t *topo, const alphas_t *al,
                          best_t *best, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int *order = mc_xmalloc(sizeof(int) * (size_t)task->npieces);
    for (int i = 0; i < task->npieces; i++)
        order[i] = i;
    double *out = mc_xmalloc(sizeof(double) * (size_t)topo->ngpus);
    for (int g = 0; g < topo->ngpus; g++)
        out[g] = mc_topo_gpu_egress_bw(topo, g);
    sort_task = task;
    mc_sort(order, (size_t)task->npieces, sizeof(int), cmp_holders);
    for (int i = 0; i < task->npieces && st == MC_OK;) {
        const mc_piece_t *p = &task->pieces[order[i]];
        uint64_t bytes = 0;
        int j = i;
        for (; j < task->npieces && cmp_holders(&order[i], &order[j]) == 0; j++)
            bytes += task->pieces[order[j]].bytes;
        double cap = 0, alpha = INFINITY;
        for (int h = 0; h < p->nholders; h++) {
            cap += out[p->holders[h]];
            alpha = fmin(alpha, al->out[p->holders[h]]);
        }
        st = term(best, bytes, cap, alpha, p->holders[0], "holder group of GPU", topo, err);
        i = j;
    }
    free(out);
    free(order);
    return st;
}

/* Both directions of the cut around a set of hosts: bytes in over the links entering it, bytes
 * out over the links leaving it, each after a cross-host alpha. */
static mc_status_t cut(best_t *best, uint64_t in, uint64_t out, const char *set, int at,
                       const char *what, const mc_topo_t *topo, const alphas_t *al, mc_err_t *err)
{
    mc_status_t st = term(best, in, set_capacity(topo, set, 1), al->cross, at, what, topo, err);
    if (st == MC_OK)
        st = term(best, out, set_capacity(topo, set, 0), al->cross, at, what, topo, err);
    return st;
}

/* Cuts around each host. */
static mc_status_t host_cut(const mc_task_t *task, const mc_topo_t *topo, const alphas_t *al,
                            best_t *best, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    int nh = topo->nhosts;
    uint64_t *in = mc_xmalloc(sizeof(uint64_t) * (size_t)nh);
    uint64_t *out = mc_xmalloc(sizeof(uint64_t) * (size_t)nh);
    char *set = mc_xcalloc((size_t)nh, 1);
    mc_task_host_bytes(task, topo, in, out);
    for (int h = 0; h < nh && st == MC_OK; h++) {
        if (!in[h] && !out[h])
            continue;
        set[h] = 1;
        st = cut(best, in[h], out[h], set, h, "host", topo, al, err);
        set[h] = 0;
    }
    free(in);
    free(out);
    free(set);
    return st;
}

/* Cuts around the hosts of each mesh: bytes needed inside held by no host inside, and bytes held
 * only inside needed outside. */
static mc_status_t mesh_cut(const mc_task_t *task, const mc_topo_t *topo, const alphas_t *al,
                            best_t *best, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    char *set = mc_xmalloc((size_t)topo->nhosts);
    for (int m = 0; m < task->nmeshes && st == MC_OK; m++) {
        memset(set, 0, (size_t)topo->nhosts);
        for (int i = 0; i < task->meshes[m].ndevices; i++)
            set[gpu_host(topo, task->meshes[m].devices[i])] = 1;
        uint64_t in = 0, out = 0;
        for (int i = 0; i < task->npieces; i++) {
            const mc_piece_t *p = &task->pieces[i];
            int any_hold = 0, all_hold = 1, any_need = 0, need_out = 0;
            for (int j = 0; j < p->nholders; j++) {
                int inside = set[gpu_host(topo, p->holders[j])];
                any_hold |= inside;
                all_hold &= inside;
            }
            for (int j = 0; j < p->ndests; j++) {
                int inside = set[gpu_host(topo, p->dests[j])];
                any_need |= inside;
                need_out |= !inside;
            }
            in += any_need && !any_hold ? p->bytes : 0;
            out += all_hold && need_out ? p->bytes : 0;
        }
        st = cut(best, in, out, set, m, "the hosts of mesh", topo, al, err);
    }
    free(set);
    return st;
}

mc_status_t mc_task_bound(const mc_task_t *task, const mc_topo_t *topo, mc_bound_t *bound,
                          mc_err_t *err)
{
    mc_bound_t b = {0};
    b.binding = MC_BOUND_NONE;
    b.where = -1;
    best_t best[4];
    for (int k = 0; k < 4; k++)
        best[k] = (best_t){0, 0, -1};
    alphas_t al = {0};
    mc_status_t st;
    MC_CHECK_GOTO(mc_task_check_topo(task, topo, err), out, st);
    if (task->npieces == 0)
        goto out;
    alphas_init(&al, topo);
    MC_CHECK_GOTO(ingress(task, topo, &al, &best[MC_BOUND_INGRESS], err), out, st);
    MC_CHECK_GOTO(egress(task, topo, &al, &best[MC_BOUND_EGRESS], err), out, st);
    MC_CHECK_GOTO(host_cut(task, topo, &al, &best[MC_BOUND_HOST_CUT], err), out, st);
    MC_CHECK_GOTO(mesh_cut(task, topo, &al, &best[MC_BOUND_MESH_CUT], err), out, st);
    b.ingress_s = best[MC_BOUND_INGRESS].bw;
    b.egress_s = best[MC_BOUND_EGRESS].bw;
    b.host_cut_s = best[MC_BOUND_HOST_CUT].bw;
    b.mesh_cut_s = best[MC_BOUND_MESH_CUT].bw;
    /* Ties go to the earlier term: a GPU's own links before its host's before its mesh's. */
    int k_max = MC_BOUND_INGRESS;
    for (int k = 1; k < 4; k++)
        if (best[k].bw + best[k].alpha > best[k_max].bw + best[k_max].alpha)
            k_max = k;
    b.binding = best[k_max].alpha > best[k_max].bw ? MC_BOUND_LATENCY : (mc_bound_kind_t)k_max;
    b.where = best[k_max].where;
    b.latency_s = best[k_max].alpha;
    b.seconds = best[k_max].bw + best[k_max].alpha;
out:
    alphas_free(&al);
    if (st == MC_OK)
        *bound = b;
    return st;
}
