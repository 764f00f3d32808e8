/* Weighted max-min fair rates by progressive filling: repeatedly find the link whose remaining
 * capacity per unit of unfixed weight is smallest, fix its flows at that level, and charge them to
 * their other links. A link's level never drops as flows are fixed elsewhere (up to rounding), so
 * a heap with lazy re-keying finds the next bottleneck in O(log links). The simulator solves
 * hundreds of thousands of small problems (tens of links), where most of the heap's pops were of
 * links whose flows were all fixed already: there, a scan over the links still open picks the
 * same link in the same order, keys and all (solve_scan), at a fraction of the cost. */
#include <math.h>
#include <stdlib.h>

#include "sched/sched.h"

struct mc_sched_maxmin {
    int nlinks;
    unsigned epoch;
    unsigned *stamp;  /* per link: epoch it was last set up in */
    double *cap_rem;  /* per link */
    double *wsum;     /* per link: weight of its unfixed flows */
    int *nunfixed;    /* per link */
    int *lpos;        /* per link: fill position in ent[] */
    int *used, *loff; /* links of this solve, and their slices of ent[] */
    int *ent, ent_cap;/* flow ids per link */
    char *fixed;
    int fixed_cap;
    struct heap_item {
        double key;
        int link;
    } *heap;
    int nheap, heap_cap;
    /* solve_scan: per link of the solve, its key (as the heap would hold it) and its level */
    double *key, *lev;
    int *open, scan_cap;
};

/* Links of one solve up to which solve_scan picks the bottlenecks: it costs the links still open
 * per link fixed, the heap a logarithm per link and per stale or closed pop. */
#define MM_SCAN_LINKS 256

mc_sched_maxmin_t *mc_sched_maxmin_new(int nlinks)
{
    mc_sched_maxmin_t *m = mc_xcalloc(1, sizeof(*m));
    size_t n = (size_t)(nlinks > 0 ? nlinks : 1);
    m->nlinks = nlinks;
    m->stamp = mc_xcalloc(n, sizeof(*m->stamp));
    m->cap_rem = mc_xcalloc(n, sizeof(double));
    m->wsum = mc_xcalloc(n, sizeof(double));
    m->nunfixed = mc_xcalloc(n, sizeof(int));
    m->lpos = mc_xcalloc(n, sizeof(int));
    m->used = mc_xcalloc(n, sizeof(int));
    m->loff = mc_xcalloc(n + 1, sizeof(int));
    return m;
}

void mc_sched_maxmin_free(mc_sched_maxmin_t *m)
{
    if (!m)
        return;
    free(m->stamp);
    free(m->cap_rem);
    free(m->wsum);
    free(m->nunfixed);
    free(m->lpos);
    free(m->used);
    free(m->loff);
    free(m->ent);
    free(m->fixed);
    free(m->heap);
    free(m->key);
    free(m->lev);
    free(m->open);
    free(m);
}

/* The heap's order: by key, then by link. */
static int before(double ka, int la, double kb, int lb)
{
    return ka < kb || (ka == kb && la < lb);
}

static int heap_less(const struct heap_item *a, const struct heap_item *b)
{
    return before(a->key, a->link, b->key, b->link);
}

static void heap_push(mc_sched_maxmin_t *m, double key, int link)
{
    MC_GROW(m->heap, m->heap_cap, m->nheap + 1);
    int i = m->nheap++;
    m->heap[i] = (struct heap_item){key, link};
    while (i > 0 && heap_less(&m->heap[i], &m->heap[(i - 1) / 2])) {
        struct heap_item t = m->heap[i];
        m->heap[i] = m->heap[(i - 1) / 2];
        m->heap[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static struct heap_item heap_pop(mc_sched_maxmin_t *m)
{
    struct heap_item top = m->heap[0];
    m->heap[0] = m->heap[--m->nheap];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, s = i;
        if (l < m->nheap && heap_less(&m->heap[l], &m->heap[s]))
            s = l;
        if (r < m->nheap && heap_less(&m->heap[r], &m->heap[s]))
            s = r;
        if (s == i)
            break;
        struct heap_item t = m->heap[i];
        m->heap[i] = m->heap[s];
        m->heap[s] = t;
        i = s;
    }
    return top;
}

static double level(const mc_sched_maxmin_t *m, int l)
{
    return m->cap_rem[l] > 0 ? m->cap_rem[l] / m->wsum[l] : 0.0;
}

/* Sets up the per-link sums and the link -> flows index; returns how many links are used. */
static int index_links(mc_sched_maxmin_t *m, int nflows, const int *off, const int *links,
                       const double *weight, const double *cap)
{
    int nused = 0;
    if (++m->epoch == 0) { /* wrapped: old stamps could collide */
        for (int l = 0; l < m->nlinks; l++)
            m->stamp[l] = 0;
        m->epoch = 1;
    }
    for (int j = 0; j < off[nflows]; j++) {
        int l = links[j];
        if (m->stamp[l] != m->epoch) {
            m->stamp[l] = m->epoch;
            m->cap_rem[l] = cap[l];
            m->wsum[l] = 0;
            m->nunfixed[l] = 0;
            m->used[nused++] = l;
        }
        if (weight)
            m->wsum[l] += weight[j];
        m->nunfixed[l]++;
    }
    m->loff[0] = 0;
    for (int i = 0; i < nused; i++) {
        int l = m->used[i];
        if (!weight) /* a sum of ones, exact */
            m->wsum[l] = m->nunfixed[l];
        m->lpos[l] = m->loff[i];
        m->loff[i + 1] = m->loff[i] + m->nunfixed[l];
    }
    MC_GROW(m->ent, m->ent_cap, off[nflows]);
    for (int f = 0; f < nflows; f++)
        for (int j = off[f]; j < off[f + 1]; j++)
            m->ent[m->lpos[links[j]]++] = f;
    return nused;
}

/* Fixes the unfixed flows of link l at rate x and charges them to all their links. */
static void fix_link(mc_sched_maxmin_t *m, int i, double x, const int *off, const int *links,
                     const double *weight, double *rate)
{
    for (int e = m->loff[i]; e < m->loff[i + 1]; e++) {
        int f = m->ent[e];
        if (m->fixed[f])
            continue;
        m->fixed[f] = 1;
        rate[f] = x;
        for (int j = off[f]; j < off[f + 1]; j++) {
            int l2 = links[j];
            double w = weight ? weight[j] : 1.0;
            m->cap_rem[l2] -= w * x;
            m->wsum[l2] -= w;
            m->nunfixed[l2]--;
        }
    }
}

/* One flow alone (the common case between link-disjoint trees): its narrowest link. A link it
 * crosses k times gives it cap / k, as in the general case. */
static void solve_one(const int *off, const int *links, const double *weight, const double *cap,
                      double *rate)
{
    *rate = HUGE_VAL;
    for (int j = off[0]; j < off[1]; j++) {
        double w = 0;
        for (int k = off[0]; k < off[1]; k++)
            if (links[k] == links[j])
                w += weight ? weight[k] : 1.0;
        double r = cap[links[j]] > 0 ? cap[links[j]] / w : 0.0;
        if (r < *rate)
            *rate = r;
    }
}

/* Fixes the links in heap order: pop the least (key, link); a link whose flows are all fixed is
 * dropped; one whose level rose above its key is pushed again at its level; else its flows are
 * fixed at its level. */
static void solve_heap(mc_sched_maxmin_t *m, int nused, const int *off, const int *links,
                       const double *weight, double *rate)
{
    /* used[] order becomes the local index; remember it through lpos for re-keyed links. */
    m->nheap = 0;
    for (int i = 0; i < nused; i++) {
        m->lpos[m->used[i]] = i;
        heap_push(m, level(m, m->used[i]), m->used[i]);
    }
    while (m->nheap > 0) {
        struct heap_item it = heap_pop(m);
        int l = it.link;
        if (m->nunfixed[l] <= 0)
            continue;
        double x = level(m, l);
        if (x > it.key) {
            heap_push(m, x, l);
            continue;
        }
        fix_link(m, m->lpos[l], x, off, links, weight, rate);
    }
}

/* solve_heap's pops without the heap. Between two fixes nothing changes, so the pops up to the
 * next fix are: in (key, link) order, every link pushed again at its level while that is above
 * its key, until the first whose level is not; that link is the least by (its level if above its
 * key, else its key; link), and the links pushed again on the way are those before it by (key,
 * link) whose level is above their key. One pass finds the link, a second re-keys those; the
 * links whose flows are all fixed leave the open set (the heap would drop them when popped). */
static void solve_scan(mc_sched_maxmin_t *m, int nused, const int *off, const int *links,
                       const double *weight, double *rate)
{
    if (nused > m->scan_cap) {
        m->key = mc_xrealloc(m->key, sizeof(double) * (size_t)nused);
        m->lev = mc_xrealloc(m->lev, sizeof(double) * (size_t)nused);
        m->open = mc_xrealloc(m->open, sizeof(int) * (size_t)nused);
        m->scan_cap = nused;
    }
    for (int i = 0; i < nused; i++) {
        m->key[i] = level(m, m->used[i]);
        m->open[i] = i;
    }
    for (int nopen = nused;;) {
        int best = -1;
        double bk = 0;
        for (int j = 0; j < nopen;) {
            int i = m->open[j], l = m->used[i];
            if (m->nunfixed[l] <= 0) {
                m->open[j] = m->open[--nopen];
                continue;
            }
            double x = level(m, l), k = x > m->key[i] ? x : m->key[i];
            m->lev[j++] = x;
            if (best < 0 || before(k, l, bk, m->used[best])) {
                best = i;
                bk = k;
            }
        }
        if (best < 0)
            return;
        int bl = m->used[best];
        double x = level(m, bl);
        for (int j = 0; j < nopen; j++) {
            int i = m->open[j];
            if (m->lev[j] > m->key[i] && before(m->key[i], m->used[i], bk, bl))
                m->key[i] = m->lev[j];
        }
        fix_link(m, best, x, off, links, weight, rate);
    }
}

void mc_sched_maxmin_solve(mc_sched_maxmin_t *m, int nflows, const int *off, const int *links,
                           const double *weight, const double *cap, double *rate)
{
    if (nflows == 1) {
        solve_one(off, links, weight, cap, rate);
        return;
    }
    int nused = index_links(m, nflows, off, links, weight, cap);
    if (nflows > m->fixed_cap) {
        m->fixed = mc_xrealloc(m->fixed, (size_t)nflows);
        m->fixed_cap = nflows;
    }
    for (int f = 0; f < nflows; f++) {
        m->fixed[f] = off[f + 1] == off[f];
        rate[f] = HUGE_VAL;
    }
    if (nused <= MM_SCAN_LINKS)
        solve_scan(m, nused, off, links, weight, rate);
    else
        solve_heap(m, nused, off, links, weight, rate);
}
