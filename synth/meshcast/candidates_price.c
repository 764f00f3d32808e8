/* Column generation for the meshcast strategy (docs/synthesis.md, "Candidates priced by link
 * load"): the shape-based candidates are a start; the fractional model prices every link by its
 * load, and each share gets the cheapest tree under those prices (candidates_steiner.c) when it
 * costs less than every tree it has, i.e. when it lowers the fractional optimum; where no share
 * finds one far above the bound, a packing round (multiplicative weights) looks for several
 * complementary trees at once. The loop stops within 0.3% of the task's bound, when nothing more
 * is found, or when the optimum stops falling. Everything is counted in steps, never in time, so
 * results repeat exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"

/* Pricing rounds; Frank-Wolfe steps per solve of the fractional model, at most MC_PRICE_STEPS and
 * fewer on large models, so that a solve costs about MC_PRICE_WORK link updates, but at least
 * MC_PRICE_MIN_STEPS: each solve starts from the split before it. 20 instead of 40 left every
 * schedule of the suites and 1,095 of the 1,098 sweep tasks as they were (one 1.5% slower, two
 * 2-3% faster) and the 64-GPU all-gather over eight H100 hosts, whose solves all stood at the
 * floor (190,000 link crossings), synthesizing 9% faster (medians of five runs, 2.01 -> 1.82 s). */
#define MC_PRICE_ROUNDS 40
#define MC_PRICE_STEPS 3000
#define MC_PRICE_MIN_STEPS 20
#define MC_PRICE_WORK 2000000.0
/* Stop when the fractional optimum is within this factor of the bound. */
#define MC_PRICE_CLOSE 1.003
/* Rounds stop after MC_PRICE_STALL in a row that did not lower the optimum by this factor (the
 * duals are approximate, so one round may add a tree that only pays with the next). */
#define MC_PRICE_PROGRESS 0.998
#define MC_PRICE_STALL 6
/* The shallow split moves shares toward the column of least price x (1 + this x depth). */
#define MC_PRICE_DEPTH 0.03
/* Trees one share may gain in a round of ties (price_round). */
#define MC_PRICE_TIE_TREES 4
/* Roots tried per share, and trees one share may gain. */
#define MC_PRICE_ROOTS 8
#define MC_PRICE_MAX_NEW 32
/* Price every link carries on top of its dual, relative to the average dual: among trees that
 * cost the same at the duals, the one with fewer link crossings wins. */
#define MC_PRICE_EPS 0.01

/* The price graphs of one round, one per set of GPUs (shares over the same GPUs share one). */
typedef struct graphs {
    int n, cap;
    int **gpus;           /* per graph: its GPUs, ascending, -1 terminated */
    mc_steiner_t *g;
} graphs_t;

static void graphs_free(graphs_t *gs)
{
    for (int i = 0; i < gs->n; i++) {
        free(gs->gpus[i]);
        mc_steiner_free(&gs->g[i]);
    }
    free(gs->gpus);
    free(gs->g);
    memset(gs, 0, sizeof(*gs));
}

static int same_list(const int *a, const int *b)
{
    for (; *a >= 0 && *a == *b; a++, b++)
        ;
    return *a == *b;
}

/* The graph over gpus[0..n) (ascending, gpus[n] == -1), built on first use. */
static mc_status_t graph_of(graphs_t *gs, const mc_topo_t *topo, const int *gpus, int n,
                            const double *price, double eps, const mc_steiner_t **out,
                            mc_err_t *err)
{
    for (int i = 0; i < gs->n; i++)
        if (same_list(gs->gpus[i], gpus)) {
            *out = &gs->g[i];
            return MC_OK;
        }
    if (gs->n == gs->cap) {
        int cap = gs->cap;
        MC_GROW(gs->gpus, cap, gs->n + 1);
        MC_GROW(gs->g, gs->cap, gs->n + 1);
    }
    mc_status_t st = mc_steiner_init(&gs->g[gs->n], topo, gpus, n, price, eps, err);
    if (st != MC_OK)
        return st;
    gs->gpus[gs->n] = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    memcpy(gs->gpus[gs->n], gpus, sizeof(int) * (size_t)(n + 1));
    *out = &gs->g[gs->n++];
    return MC_OK;
}

/* The GPUs a share's new trees may use, ascending and -1 terminated, into gpus; returns their
 * number: those of its hosts (ascending, -1 terminated) but the destinations of its piece that
 * other shares serve, which would receive its bytes twice (a relay receives them too). */
static int share_gpus(const mc_topo_t *topo, const mc_piece_t *pc, const mc_share_t *sh,
                      const int *hosts, int *gpus)
{
    int n = 0, pd = 0, sd = 0;
    for (int k = 0; hosts[k] >= 0; k++) {
        int first, count = mc_topo_host_gpus(topo, hosts[k], &first);
        for (int i = first; i < first + count; i++) {
            /* both lists ascending: walked along with i */
            while (pd < pc->ndests && pc->dests[pd] < i)
                pd++;
            while (sd < sh->ndests && sh->dests[sd] < i)
                sd++;
            int other = pd < pc->ndests && pc->dests[pd] == i &&
                        !(sd < sh->ndests && sh->dests[sd] == i);
            if (!other)
                gpus[n++] = i;
        }
    }
    gpus[n] = -1;
    return n;
}

static void add_host(const mc_topo_t *topo, int gpu, int *hosts, int *nh)
{
    int h = mc_topo_gpu_host(topo, gpu);
    if (!mc_ints_contain(hosts, *nh, h))
        hosts[(*nh)++] = h;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Once the rounds stop, up to this many GPUs, the new trees of a share that crosses hosts may
 * relay at any GPU of the topology: under leaves and spines, a host beside a destination's host
 * takes the bytes in over another spine than the destination's own port and hands them on inside
 * the leaf (one-NIC RTX 3090 boxes under leaves of three at 3:1: 2.01 -> 1.30 of the bound).
 * Those rounds stand only where they lower the fractional optimum by MC_PRICE_ANYWHERE_GAIN:
 * trees through far hosts that gain less lose more to their depth in the simulator than the
 * model credits them (six MI300X boxes under leaves: 1.4% lower, 8% slower). They are few and
 * never tied: where they pay, the first does most (RTX 3090 boxes: 1.99 -> 1.28 ms, then 1.28),
 * and over 64 GPUs each costs a Steiner search per share and root. A share inside one host
 * widens too (session 40): where a host's sockets are joined by a link slower than their NICs,
 * the bytes between them go out to another host and back (an all-to-all over two hosts of eight
 * L40S GPUs, four 400 Gb/s NICs each: 2.33 -> 1.20 of the bound; the inter-socket link carried
 * every cross-socket byte). Above this size, the Steiner graph of every share would be the whole
 * cluster's. */
#define MC_PRICE_ANYWHERE_GPUS 128
#define MC_PRICE_ANYWHERE_GAIN 0.05
#define MC_PRICE_ANYWHERE_ROUNDS 4

/* Share s's hosts (those its destinations and its candidates touch, or with anywhere every host;
 * ascending, -1 terminated) and the roots its new trees may have
 * (its candidates' roots, then the holders on their hosts, at most MC_PRICE_ROOTS); returns the
 * number of roots. */
static int share_scope(const mc_frac_t *f, const mc_task_t *task, const mc_share_t *sh, int s,
                       int anywhere, int *hosts, int *roots)
{
    const mc_topo_t *topo = f->topo;
    const mc_piece_t *pc = &task->pieces[sh->piece];
    int nh = 0, nr = 0;
    for (int i = 0; i < sh->ndests; i++)
        add_host(topo, sh->dests[i], hosts, &nh);
    for (int j = 0; j < f->ncols[s]; j++) {
        const mc_cand_t *c = &f->cs->c[f->cols[s][j]];
        add_host(topo, c->root, hosts, &nh);
        for (int e = 0; e < c->nedges; e++)
            add_host(topo, c->child[e], hosts, &nh);
        if (nr < MC_PRICE_ROOTS && !mc_ints_contain(roots, nr, c->root))
            roots[nr++] = c->root;
    }
    int nrh = 0, *rh = mc_xmalloc(sizeof(int) * (size_t)(nr + 1));
    for (int i = 0; i < nr; i++)
        add_host(topo, roots[i], rh, &nrh);
    for (int i = 0; i < pc->nholders && nr < MC_PRICE_ROOTS; i++)
        if (mc_ints_contain(rh, nrh, mc_topo_gpu_host(topo, pc->holders[i])) &&
            !mc_ints_contain(roots, nr, pc->holders[i]))
            roots[nr++] = pc->holders[i];
    free(rh);
    if (anywhere)
        for (nh = 0; nh < topo->nhosts; nh++)
            hosts[nh] = nh;
    mc_sort(hosts, (size_t)nh, sizeof(int), cmp_int);
    hosts[nh] = -1;
    return nr;
}

/* Edges on the longest root-to-leaf path of a tree given parents first (depth: scratch per GPU). */
static int depth_of(const int *parent, const int *child, int ne, int *depth)
{
    int most = 0;
    depth[parent[0]] = 0;
    for (int e = 0; e < ne; e++) {
        depth[child[e]] = depth[parent[e]] + 1;
        if (depth[child[e]] > most)
            most = depth[child[e]];
    }
    return most;
}

/* Whether share s already has a tree with these edges from this root. */
static int known(const mc_frac_t *f, int s, int root, int ne, const int *parent, const int *child)
{
    for (int j = 0; j < f->ncols[s]; j++) {
        const mc_cand_t *c = &f->cs->c[f->cols[s][j]];
        int same = c->root == root && c->nedges == ne;
        for (int e = 0; e < ne && same; e++)
            same = c->parent[e] == parent[e] && c->child[e] == child[e];
        if (same)
            return 1;
    }
    return 0;
}

/* Appends the tree given by edges to the candidates as a new column of share s (marking the
 * share fine). Returns its index, -2 when s already has that tree, -1 on error. */
static int add_column(mc_frac_t *f, mc_cands_t *cs, mc_shares_t *sh, int s, int root, int ne,
                      const int *parent, const int *child, mc_err_t *err)
{
    if (known(f, s, root, ne, parent, child))
        return -2;
    int c = mc_cands_append(cs, f->topo, sh->s[s].piece, root, ne, parent, child, err);
    if (c < 0)
        return -1;
    f->cs = cs;
    mc_frac_add(f, s, c);
    sh->s[s].fine += !sh->s[s].fine;
    return c;
}

/* Price of one byte on the tree given by edges, at prices (plus eps per link). */
static double edges_cost(const mc_topo_t *topo, const double *price, double eps,
                         const int *parent, const int *child, int ne)
{
    double cost = 0;
    for (int e = 0; e < ne; e++) {
        mc_route_t r;
        mc_err_t ignored = {0};
        if (mc_topo_route(topo, parent[e], child[e], &r, &ignored) != MC_OK)
            return HUGE_VAL;
        for (int i = 0; i < r.nlinks; i++)
            cost += (price[r.links[i]] + eps) / topo->links[r.links[i]].bw;
    }
    return cost;
}

/* The cheapest tree found (cheapest_tree): its edges parents first, their count (0: none), root,
 * depth and price. */
typedef struct found {
    int *parent, *child, ne, root, depth;
    double cost;
} found_t;

/* The cheapest of share's trees from each of roots[0..nr) in g (the shallowest among equals),
 * priced as g weighs it or, with judge, at judge's prices plus eps per link, into *best (whose
 * arrays have room for n - 1 edges); par, chi and depth are scratch for n GPUs. */
static void cheapest_tree(const mc_steiner_t *g, const mc_share_t *share, const int *roots, int nr,
                          const double *judge, double eps, int *par, int *chi, int *depth,
                          found_t *best)
{
    best->ne = 0;
    for (int i = 0; i < nr; i++) {
        double cost;
        int ne = mc_steiner_tree(g, roots[i], share->dests, share->ndests, par, chi, &cost);
        if (ne <= 0)
            continue;
        int d = depth_of(par, chi, ne, depth);
        if (judge)
            cost = edges_cost(g->topo, judge, eps, par, chi, ne);
        if (best->ne == 0 || mc_frac_cheaper(cost, d, best->cost, best->depth)) {
            best->cost = cost;
            best->depth = d;
            best->ne = ne;
            best->root = roots[i];
            memcpy(best->parent, par, sizeof(int) * (size_t)ne);
            memcpy(best->child, chi, sizeof(int) * (size_t)ne);
        }
    }
}

/* One pricing round: every share's cheapest tree at the current duals, added when it costs less
 * than the share's cheapest column (or as little and shallower). With tie, a round that found
 * nothing is tried again for a tree as cheap as the cheapest column but different: the duals of a
 * degenerate split (several links equally loaded, e.g. every link out of a broadcast's root) do
 * not say which tree would relieve it, so the links of the share's cheapest columns are priced
 * up for the search, and the tree found is judged at the true prices. Returns the number added,
 * -1 on error. */
static int price_round(mc_frac_t *f, mc_cands_t *cs, const mc_task_t *task, mc_shares_t *sh,
                       int *gained, int tie, int anywhere, mc_err_t *err)
{
    const mc_topo_t *topo = f->topo;
    int n = topo->ngpus, added = 0;
    double eps = 0, top = 0;
    for (int l = 0; l < topo->nlinks; l++) {
        eps += f->price[l];
        top = f->price[l] > top ? f->price[l] : top;
    }
    eps = MC_PRICE_EPS * eps / (topo->nlinks > 0 ? topo->nlinks : 1);
    graphs_t gs = {0};
    int *hosts = mc_xmalloc(sizeof(int) * (size_t)(topo->nhosts + 1));
    int *roots = mc_xmalloc(sizeof(int) * MC_PRICE_ROOTS);
    int *par = mc_xmalloc(sizeof(int) * (size_t)(2 * n + 1));
    int *chi = par + n;
    found_t b = {.parent = mc_xmalloc(sizeof(int) * (size_t)(2 * n + 1))};
    b.child = b.parent + n;
    int *depth = mc_xcalloc((size_t)n + 1, sizeof(int));
    double *bumped = tie ? mc_xmalloc(sizeof(double) * (size_t)(topo->nlinks + 1)) : NULL;
    int *scope_gpus = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    for (int s = 0; s < sh->n && added >= 0; s++) {
        const mc_share_t *share = &sh->s[s];
        if (gained[s] >= MC_PRICE_MAX_NEW)
            continue;
        int nr = share_scope(f, task, share, s, anywhere, hosts, roots);
        int nscope = share_gpus(topo, &task->pieces[share->piece], share, hosts, scope_gpus);
        double have = HUGE_VAL;
        int hdepth = 0;
        for (int j = 0; j < f->ncols[s]; j++) {
            const mc_cand_t *t = &f->cs->c[f->cols[s][j]];
            double c = mc_frac_tree_cost(f, t, eps);
            if (j == 0 || mc_frac_cheaper(c, t->depth, have, hdepth)) {
                have = c;
                hdepth = t->depth;
            }
        }
        if (tie) {
            memcpy(bumped, f->price, sizeof(double) * (size_t)topo->nlinks);
            for (int j = 0; j < f->ncols[s]; j++) {
                const mc_cand_t *t = &f->cs->c[f->cols[s][j]];
                if (mc_frac_tree_cost(f, t, eps) > have * (1 + 1e-9))
                    continue;
                for (int i = 0; i < t->nlinks; i++)
                    bumped[t->links[i]] = f->price[t->links[i]] + top;
            }
        }
        /* a tie round looks for up to MC_PRICE_TIE_TREES trees, each found priced up in turn:
         * relieving k equally loaded links takes k new trees at once */
        for (int k = 0; k < (tie ? MC_PRICE_TIE_TREES : 1) && gained[s] < MC_PRICE_MAX_NEW; k++) {
            const mc_steiner_t *g;
            mc_steiner_t own = {0};
            if (tie) {
                if (mc_steiner_init(&own, topo, scope_gpus, nscope, bumped, eps, err) != MC_OK) {
                    added = -1;
                    break;
                }
                g = &own;
            } else if (graph_of(&gs, topo, scope_gpus, nscope, f->price, eps, &g, err) != MC_OK) {
                added = -1;
                break;
            }
            cheapest_tree(g, share, roots, nr, tie ? f->price : NULL, eps, par, chi, depth, &b);
            mc_steiner_free(&own);
            int better = b.ne > 0 && (mc_frac_cheaper(b.cost, b.depth, have, hdepth) ||
                                      (tie && b.cost <= have * (1 + 1e-9)));
            if (!better)
                break;
            int c = add_column(f, cs, sh, s, b.root, b.ne, b.parent, b.child, err);
            if (c < 0) {
                added = c == -1 ? -1 : added;
                break;
            }
            gained[s]++;
            added++;
            for (int i = 0; tie && i < cs->c[c].nlinks; i++)
                bumped[cs->c[c].links[i]] = f->price[cs->c[c].links[i]] + top;
        }
    }
    graphs_free(&gs);
    free(hosts);
    free(roots);
    free(par);
    free(b.parent);
    free(depth);
    free(bumped);
    free(scope_gpus);
    return added;
}

/* A packing round lays each share's demand in this many parts, each on its own tree. */
#define MC_PACK_PARTS 8
/* Sharpness of the packing round's prices: a link's price is exp(MC_PACK_SHARP x its load over
 * the busiest link's), so one as loaded as the busiest costs e^MC_PACK_SHARP times an idle one. */
#define MC_PACK_SHARP 8.0
/* Packing rounds run only this far above the bound. */
#define MC_PACK_ROOM 1.10

/* Adds the load of part bytes on the tree given by edges to load (per link, seconds). */
static void part_load(const mc_topo_t *topo, const int *parent, const int *child, int ne,
                      double part, double *load)
{
    for (int e = 0; e < ne; e++) {
        mc_route_t r;
        mc_err_t ignored = {0};
        if (mc_topo_route(topo, parent[e], child[e], &r, &ignored) != MC_OK)
            continue;
        for (int i = 0; i < r.nlinks; i++)
            load[r.links[i]] += part / topo->links[r.links[i]].bw;
    }
}

/* A packing round (Garg and Koenemann's multiplicative weights, a few steps of them), for when
 * the duals name no cheaper tree but the optimum is far from the bound: the duals of a
 * degenerate split price only its busiest links, and one tree that avoids them only moves the
 * load onto others, where relieving them takes several trees at once (the six arc-disjoint
 * arborescences of a broadcast on a six-link mesh). Each share's demand is laid on the loads of
 * the split in MC_PACK_PARTS parts, each on the cheapest tree at prices exponential in the loads
 * so far, so each part avoids the links the parts before it took; every tree found is added and
 * the fractional model then splits the share over them. Returns the number added, -1 on error. */
static int pack_round(mc_frac_t *f, mc_cands_t *cs, const mc_task_t *task, mc_shares_t *sh,
                      int *gained, mc_err_t *err)
{
    const mc_topo_t *topo = f->topo;
    int n = topo->ngpus, nl = topo->nlinks, added = 0;
    double *load = mc_xmalloc(sizeof(double) * (size_t)(2 * nl + 1)), *price = load + nl;
    int *hosts = mc_xmalloc(sizeof(int) * (size_t)(topo->nhosts + 1));
    int *roots = mc_xmalloc(sizeof(int) * MC_PRICE_ROOTS);
    int *par = mc_xmalloc(sizeof(int) * (size_t)(2 * n + 1)), *chi = par + n;
    found_t b = {.parent = mc_xmalloc(sizeof(int) * (size_t)(2 * n + 1))};
    b.child = b.parent + n;
    int *depth = mc_xcalloc((size_t)n + 1, sizeof(int));
    int *scope_gpus = mc_xmalloc(sizeof(int) * (size_t)(n + 1));
    memcpy(load, f->load, sizeof(double) * (size_t)nl);
    for (int s = 0; s < sh->n && added >= 0; s++) {
        const mc_share_t *share = &sh->s[s];
        int nr = share_scope(f, task, share, s, 0, hosts, roots);
        int nscope = share_gpus(topo, &task->pieces[share->piece], share, hosts, scope_gpus);
        double part = f->demand[s] / MC_PACK_PARTS;
        for (int k = 0; k < MC_PACK_PARTS && gained[s] < MC_PRICE_MAX_NEW; k++) {
            double top = 0, eps = 0;
            for (int l = 0; l < nl; l++)
                top = load[l] > top ? load[l] : top;
            for (int l = 0; l < nl; l++) {
                price[l] = top > 0 ? exp(MC_PACK_SHARP * (load[l] - top) / top) : 1;
                eps += price[l];
            }
            eps = MC_PRICE_EPS * eps / (nl > 0 ? nl : 1);
            mc_steiner_t g;
            if (mc_steiner_init(&g, topo, scope_gpus, nscope, price, eps, err) != MC_OK) {
                added = -1;
                break;
            }
            cheapest_tree(&g, share, roots, nr, NULL, 0, par, chi, depth, &b);
            mc_steiner_free(&g);
            if (b.ne <= 0)
                break;
            int c = add_column(f, cs, sh, s, b.root, b.ne, b.parent, b.child, err);
            if (c == -1) {
                added = -1;
                break;
            }
            if (c >= 0) {
                gained[s]++;
                added++;
            }
            part_load(topo, b.parent, b.child, b.ne, part, load);
        }
    }
    free(load);
    free(hosts);
    free(roots);
    free(par);
    free(b.parent);
    free(depth);
    free(scope_gpus);
    return added;
}

/* Adds the two-level trees of every share whose root and destinations share a host: from its
 * root, through each other GPU r of that host, then from r to every other destination. On a
 * full mesh these are the link-disjoint arborescences of Edmonds' theorem, which the Steiner
 * heuristic does not single out among the trees of equal load (it finds chains and three-level
 * trees there). Returns the number added. */
static int seed_two_level(mc_frac_t *f, mc_cands_t *cs, mc_shares_t *sh, mc_err_t *err)
{
    const mc_topo_t *topo = f->topo;
    int n = topo->ngpus, added = 0;
    int *par = mc_xmalloc(sizeof(int) * (size_t)(2 * n + 1));
    int *chi = par + n;
    for (int s = 0; s < sh->n && added >= 0; s++) {
        const mc_share_t *share = &sh->s[s];
        if (share->ndests < 2 || f->ncols[s] == 0)
            continue;
        int root = f->cs->c[f->cols[s][0]].root, h = mc_topo_gpu_host(topo, root), local = 1;
        for (int i = 0; i < share->ndests; i++)
            local &= mc_topo_gpu_host(topo, share->dests[i]) == h;
        for (int r = 0; r < n && local; r++) {
            if (r == root || mc_topo_gpu_host(topo, r) != h)
                continue;
            int ne = 0;
            par[ne] = root;
            chi[ne++] = r;
            for (int i = 0; i < share->ndests; i++)
                if (share->dests[i] != r) {
                    par[ne] = r;
                    chi[ne++] = share->dests[i];
                }
            int c = add_column(f, cs, sh, s, root, ne, par, chi, err);
            if (c == -1) {
                added = -1;
                break;
            }
            added += c >= 0;
        }
    }
    free(par);
    return added;
}

/* (mc_meshcast.h) A step reads every link crossing of every column and evaluates the soft
 * maximum over the links in use once per step of its line search. */
int mc_frac_steps(const mc_frac_t *f)
{
    double nnz = 1;
    char *on = mc_xcalloc((size_t)f->topo->nlinks + 1, 1);
    for (int s = 0; s < f->nshares; s++)
        for (int j = 0; j < f->ncols[s]; j++) {
            const mc_cand_t *c = &f->cs->c[f->cols[s][j]];
            nnz += c->nlinks;
            for (int i = 0; i < c->nlinks; i++) {
                nnz += on[c->links[i]] ? 0 : MC_FRAC_SEARCH;
                on[c->links[i]] = 1;
            }
        }
    free(on);
    double steps = MC_PRICE_WORK / nnz;
    return steps > MC_PRICE_STEPS ? MC_PRICE_STEPS
           : steps < MC_PRICE_MIN_STEPS ? MC_PRICE_MIN_STEPS : (int)steps;
}

/* Moves every share's candidates together, in the order the fractional model lists them; x[k]
 * gets split k's fractions (each indexed by the original candidates) in that order. */
static void regroup(mc_cands_t *cs, const mc_frac_t *f, int *first, int *count,
                    double *const split[MC_SPLITS], double *x[MC_SPLITS])
{
    mc_cand_t *c = mc_xmalloc(sizeof(mc_cand_t) * (size_t)(cs->n + 1));
    for (int k = 0; k < MC_SPLITS; k++)
        x[k] = mc_xcalloc((size_t)cs->n + 1, sizeof(double));
    int n = 0;
    for (int s = 0; s < f->nshares; s++) {
        first[s] = n;
        count[s] = f->ncols[s];
        for (int j = 0; j < f->ncols[s]; j++) {
            for (int k = 0; k < MC_SPLITS; k++)
                x[k][n] = split[k][f->cols[s][j]];
            c[n++] = cs->c[f->cols[s][j]];
        }
    }
    free(cs->c);
    cs->c = c;
    cs->n = cs->cap = n;
}

/* What rounds that may be undone change (relays anywhere, packing), kept to be put back. */
typedef struct price_mark {
    int ncands, capx, *ncols, *gained, *fine;
    double *x, *load, *price, value_s, lower_s;
    mc_price_stats_t stats;
} price_mark_t;

static void mark_take(price_mark_t *m, const mc_frac_t *f, const mc_cands_t *cs,
                      const mc_shares_t *sh, const int *gained, const mc_price_stats_t *stats)
{
    int nl = f->topo->nlinks;
    m->ncands = cs->n;
    m->capx = f->capx;
    m->ncols = mc_xmalloc(sizeof(int) * (size_t)(3 * sh->n + 1));
    m->gained = m->ncols + sh->n;
    m->fine = m->gained + sh->n;
    for (int s = 0; s < sh->n; s++) {
        m->ncols[s] = f->ncols[s];
        m->gained[s] = gained[s];
        m->fine[s] = sh->s[s].fine;
    }
    m->x = mc_xmalloc(sizeof(double) * (size_t)(f->capx + 2 * nl + 1));
    m->load = m->x + f->capx;
    m->price = m->load + nl;
    memcpy(m->x, f->x, sizeof(double) * (size_t)f->capx);
    memcpy(m->load, f->load, sizeof(double) * (size_t)nl);
    memcpy(m->price, f->price, sizeof(double) * (size_t)nl);
    m->value_s = f->value_s;
    m->lower_s = f->lower_s;
    m->stats = *stats;
}

static void mark_back(const price_mark_t *m, mc_frac_t *f, mc_cands_t *cs, mc_shares_t *sh,
                      int *gained, mc_price_stats_t *stats)
{
    int nl = f->topo->nlinks;
    mc_cands_truncate(cs, m->ncands);
    for (int s = 0; s < sh->n; s++) {
        f->ncols[s] = m->ncols[s];
        gained[s] = m->gained[s];
        sh->s[s].fine = m->fine[s];
    }
    memcpy(f->x, m->x, sizeof(double) * (size_t)m->capx);
    memcpy(f->load, m->load, sizeof(double) * (size_t)nl);
    memcpy(f->price, m->price, sizeof(double) * (size_t)nl);
    f->value_s = m->value_s;
    f->lower_s = m->lower_s;
    *stats = m->stats;
}

static void mark_free(price_mark_t *m)
{
    free(m->ncols);
    free(m->x);
}

/* A packing round (pack_round) and the fractional model solved with its trees, which stay only
 * where they lower the optimum by more than MC_PRICE_PROGRESS: where they do not, they are more
 * candidates for the integer stage to spread units over for nothing (an uneven 4 MiB reshuffle
 * on RCCL's topo_8p_ts1: 65 such trees, 29.4 -> 32.9 us). Returns the number kept, -1 on
 * error. */
static int packed(mc_frac_t *f, mc_cands_t *cs, const mc_task_t *task, mc_shares_t *sh,
                  int *gained, mc_price_stats_t *stats, mc_err_t *err)
{
    price_mark_t m;
    mark_take(&m, f, cs, sh, gained, stats);
    int added = pack_round(f, cs, task, sh, gained, err);
    if (added > 0) {
        mc_frac_solve(f, mc_frac_steps(f));
        if (f->value_s > MC_PRICE_PROGRESS * m.value_s) {
            mark_back(&m, f, cs, sh, gained, stats);
            added = 0;
        }
    }
    mark_free(&m);
    return added;
}

/* Pricing rounds (price_round; without anywhere, tied where a round finds nothing) while the
 * optimum is above MC_PRICE_CLOSE of the bound and falls, at most most of them. */
static mc_status_t price_rounds(mc_frac_t *f, mc_cands_t *cs, const mc_task_t *task,
                                mc_shares_t *sh, int *gained, double bound_s, int anywhere,
                                int most, mc_price_stats_t *stats, mc_err_t *err)
{
    int stalled = 0;
    for (int round = 0; round < most && f->value_s > MC_PRICE_CLOSE * bound_s; round++) {
        double before = f->value_s;
        int added = price_round(f, cs, task, sh, gained, 0, anywhere, err);
        if (added == 0 && !anywhere)
            added = price_round(f, cs, task, sh, gained, 1, anywhere, err);
        int pack = added == 0 && !anywhere && f->value_s > MC_PACK_ROOM * bound_s;
        if (pack)
            added = packed(f, cs, task, sh, gained, stats, err); /* solved already */
        stats->rounds++;
        if (added < 0)
            return MC_ERR_INTERNAL;
        if (added == 0)
            break;
        stats->added += added;
        if (!pack)
            mc_frac_solve(f, mc_frac_steps(f));
        stalled = f->value_s > MC_PRICE_PROGRESS * before ? stalled + 1 : 0;
        if (stalled >= MC_PRICE_STALL)
            break;
    }
    return MC_OK;
}

/* Whether some share touches fewer hosts than there are: relays anywhere would widen its scope. */
static int anywhere_widens(const mc_frac_t *f, const mc_task_t *task, const mc_shares_t *sh)
{
    const mc_topo_t *topo = f->topo;
    int widens = 0, *hosts = mc_xmalloc(sizeof(int) * (size_t)(topo->nhosts + 1));
    int roots[MC_PRICE_ROOTS];
    for (int s = 0; s < sh->n && !widens; s++) {
        share_scope(f, task, &sh->s[s], s, 0, hosts, roots);
        int nh = 0;
        while (hosts[nh] >= 0)
            nh++;
        widens = nh < topo->nhosts;
    }
    free(hosts);
    return widens;
}

/* The rounds with relays anywhere (see MC_PRICE_ANYWHERE_GPUS), put back unless they lower the
 * fractional optimum by MC_PRICE_ANYWHERE_GAIN. */
static mc_status_t price_anywhere(mc_frac_t *f, mc_cands_t *cs, const mc_task_t *task,
                                  mc_shares_t *sh, int *gained, double bound_s,
                                  mc_price_stats_t *stats, mc_err_t *err)
{
    if (f->topo->ngpus > MC_PRICE_ANYWHERE_GPUS || f->value_s <= MC_PRICE_CLOSE * bound_s ||
        !anywhere_widens(f, task, sh))
        return MC_OK;
    price_mark_t m;
    mark_take(&m, f, cs, sh, gained, stats);
    mc_status_t st = price_rounds(f, cs, task, sh, gained, bound_s, 1, MC_PRICE_ANYWHERE_ROUNDS,
                                  stats, err);
    if (st == MC_OK && f->value_s > (1 - MC_PRICE_ANYWHERE_GAIN) * m.value_s)
        mark_back(&m, f, cs, sh, gained, stats);
    mark_free(&m);
    return st;
}

mc_status_t mc_cands_price(mc_cands_t *cs, const mc_task_t *task, const mc_topo_t *topo,
                           mc_shares_t *sh, int *first, int *count, double bound_s,
                           double *frac[MC_SPLITS], mc_price_stats_t *stats, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_frac_t f;
    double *demand = mc_xmalloc(sizeof(double) * (size_t)(sh->n + 1));
    int *gained = mc_xcalloc((size_t)sh->n + 1, sizeof(int));
    double *split[MC_SPLITS] = {NULL};
    memset(stats, 0, sizeof(*stats));
    for (int s = 0; s < sh->n; s++)
        demand[s] = (double)task->pieces[sh->s[s].piece].bytes;
    mc_frac_init(&f, cs, topo, sh->n, demand);
    for (int s = 0; s < sh->n; s++)
        for (int j = 0; j < count[s]; j++)
            mc_frac_add(&f, s, first[s] + j);
    /* a share with rail stripes starts from their split (a few hundred Frank-Wolfe steps from
     * its cheapest tree reach 1.09 of it on 8 rail hosts; near its optimum, it is the start) */
    for (int s = 0; s < sh->n; s++)
        for (int j = 0; j < count[s]; j++)
            f.x[first[s] + j] = cs->c[first[s] + j].stripe;
    mc_frac_solve(&f, mc_frac_steps(&f));
    stats->first_s = f.value_s;
    if (price_rounds(&f, cs, task, sh, gained, bound_s, 0, MC_PRICE_ROUNDS, stats, err) != MC_OK ||
        price_anywhere(&f, cs, task, sh, gained, bound_s, stats, err) != MC_OK) {
        st = MC_ERR_INTERNAL;
        goto out;
    }
    stats->frac_s = f.value_s;
    /* the split found (the two-level trees added at fraction 0), then one afresh preferring
     * shallow trees */
    if (stats->added) {
        int seeded = seed_two_level(&f, cs, sh, err);
        if (seeded < 0) {
            st = MC_ERR_INTERNAL;
            goto out;
        }
        stats->added += seeded;
    }
    for (int k = 0; k < MC_SPLITS; k++) {
        if (k != MC_SPLIT_LOAD && stats->added) {
            memset(f.x, 0, sizeof(double) * (size_t)f.capx);
            f.depth_bias = k == MC_SPLIT_SHALLOW ? MC_PRICE_DEPTH : 0;
            f.fill_s = k == MC_SPLIT_FILL ? stats->frac_s : 0;
            mc_frac_solve(&f, mc_frac_steps(&f));
        }
        split[k] = mc_xmalloc(sizeof(double) * (size_t)(f.capx + 1));
        memcpy(split[k], f.x, sizeof(double) * (size_t)f.capx);
    }
out:
    for (int k = 0; k < MC_SPLITS; k++)
        if (!split[k]) {
            split[k] = mc_xmalloc(sizeof(double) * (size_t)(f.capx + 1));
            memcpy(split[k], f.x, sizeof(double) * (size_t)f.capx);
        }
    regroup(cs, &f, first, count, split, frac);
    for (int k = 0; k < MC_SPLITS; k++)
        free(split[k]);
    mc_frac_free(&f);
    free(demand);
    free(gained);
    return st;
}
