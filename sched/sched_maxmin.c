/* Weighted max-min fair rates by progressive filling: repeatedly find the link whose remaining
 * capacity per unit of unfixed weight is smallest, fix its flows at that level, and charge them to
 * their other links. A link's level never drops as flows are fixed elsewhere (up to rounding), so
 * a priority queue with lazy re-keying finds the next bottleneck: pop the least (key, link), drop
 * it if its flows are all fixed, queue it again at its level if that rose above its key, else fix
 * its flows at its level. The simulator solves hundreds of thousands of problems; on the small
 * ones (tens of links) a scan over the links still open picks the same link in the same order,
 * keys and all (solve_scan). On the larger ones (hundreds of links, where most links are closed
 * by other links' fixes before their key comes up) the initial keys are radix-sorted once and
 * only the re-keyed links go through a heap (solve_sorted): a closed link costs a test instead of
 * a heap pop. Both stop once every flow is fixed. A solve again with some flows held (the
 * simulator's connection limits) keeps the link index (mc_sched_maxmin_resolve). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

struct mc_sched_maxmin {
    int nlinks;
    unsigned epoch;
    unsigned *stamp;  /* per link: epoch it was last set up in */
    double *cap_rem;  /* per link */
    double *wsum;     /* per link: weight of its unfixed flows (weighted solves; unweighted, the
                       * weight is nunfixed, a sum of ones, exact) */
    int weighted;     /* this solve was given weights */
    int *nunfixed;    /* per link */
    int *lpos;        /* per link: fill position in ent[] */
    int *used, *loff; /* links of this solve, and their slices of ent[] */
    int *ent, ent_cap;/* flow ids per link */
    char *fixed;
    int fixed_cap;
    const int *count; /* per flow of this solve: how many identical flows it stands for (NULL: 1) */
    struct heap_item {
        uint64_t bits; /* the key, as key_bits() gives it */
        int link;
    } *heap;
    int nheap, heap_cap;
    int nused;        /* links of the last solve of two flows or more, for a resolve */
    /* solve_scan: the links still open, each with its key (as the heap would hold it), its
     * level and its place in used[], side by side; lpos[l] is then link l's place in open[] (-1
     * once closed). A level changes only where fix_link charges a flow, so fix_link lists the
     * links it charges (touched, once each: tmark) and only those are looked at again. */
    struct scan_item {
        double key, lev;
        int link, i;
    } *open;
    double *eff; /* per place in open[]: the greater of its lev and key, by which the scan picks */
    int scan_cap;
    int *touched, ntouched, *nsub;
    unsigned tstamp, *tmark;
    char *in_stale;   /* the links solve_scan holds in the heap: open ones whose level rose above
                       * their key (or fell back to it, or that closed since) */
    /* solve_sorted: the links by initial (key, link), and the radix sort's other buffer */
    struct heap_item *srt, *srt_tmp;
    int srt_cap;
    uint64_t *lbits; /* per link: whether this solve uses it */
};

/* Links of one solve up to which solve_scan picks the bottlenecks: it costs the links still open
 * per link fixed, solve_sorted a radix sort of the links and a logarithm per re-keyed link. Both
 * give the same rates; 64 rather than 256 since the simulator gives one link of each set of twins
 * (sim/sim_twins.c): on the 1 GiB all-gather over eight MI250 hosts, 256 -> 64 took its
 * instructions from 16.6 G to 15.2 G (32: 15.2 G), callgrind. */
#define MM_SCAN_LINKS 64

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
    m->lbits = mc_xcalloc(n / 64 + 1, sizeof(uint64_t));
    m->touched = mc_xcalloc(n, sizeof(int));
    m->tmark = mc_xcalloc(n, sizeof(unsigned));
    m->nsub = mc_xcalloc(n, sizeof(int));
    m->in_stale = mc_xcalloc(n, 1);
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
    free(m->open);
    free(m->eff);
    free(m->srt);
    free(m->srt_tmp);
    free(m->lbits);
    free(m->touched);
    free(m->tmark);
    free(m->nsub);
    free(m->in_stale);
    free(m);
}

/* The heap holds its keys as key_bits() (below), integers of the keys' order, so that its
 * comparisons are integer ones. */
static int heap_less(const struct heap_item *a, const struct heap_item *b)
{
    return a->bits < b->bits || (a->bits == b->bits && a->link < b->link);
}

static void heap_push(mc_sched_maxmin_t *m, uint64_t bits, int link)
{
    MC_GROW(m->heap, m->heap_cap, m->nheap + 1);
    int i = m->nheap++;
    struct heap_item it = {bits, link};
    while (i > 0 && heap_less(&it, &m->heap[(i - 1) / 2])) {
        m->heap[i] = m->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->heap[i] = it;
}

static struct heap_item heap_pop(mc_sched_maxmin_t *m)
{
    struct heap_item top = m->heap[0], last = m->heap[--m->nheap];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, s = l;
        if (l >= m->nheap)
            break;
        if (l + 1 < m->nheap && heap_less(&m->heap[l + 1], &m->heap[l]))
            s = l + 1;
        if (!heap_less(&m->heap[s], &last))
            break;
        m->heap[i] = m->heap[s];
        i = s;
    }
    if (m->nheap > 0)
        m->heap[i] = last;
    return top;
}

static double level(const mc_sched_maxmin_t *m, int l)
{
    return m->cap_rem[l] > 0 ? m->cap_rem[l] / (m->weighted ? m->wsum[l] : m->nunfixed[l]) : 0.0;
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
    for (int f = 0; f < nflows; f++) {
        int k = m->count ? m->count[f] : 1;
        for (int j = off[f]; j < off[f + 1]; j++) {
            int l = links[j];
            if (m->stamp[l] != m->epoch) {
                m->stamp[l] = m->epoch;
                m->cap_rem[l] = cap[l];
                m->wsum[l] = 0;
                m->nunfixed[l] = 0;
                m->lpos[l] = 0;
                m->used[nused++] = l;
            }
            if (weight)
                m->wsum[l] += weight[j];
            m->nunfixed[l] += k;
            m->lpos[l]++; /* its entries, one per flow given */
        }
    }
    m->loff[0] = 0;
    for (int i = 0; i < nused; i++) {
        int l = m->used[i];
        m->loff[i + 1] = m->loff[i] + m->lpos[l];
        m->lpos[l] = m->loff[i];
    }
    MC_GROW(m->ent, m->ent_cap, off[nflows]);
    for (int f = 0; f < nflows; f++)
        for (int j = off[f]; j < off[f + 1]; j++)
            m->ent[m->lpos[links[j]]++] = f;
    return nused;
}

/* Fixes the unfixed flows of link l at rate x and charges them to all their links; returns how
 * many it fixed. The links it charges are listed in touched (once each: tmark). Unweighted, every
 * flow this call fixes takes the same x, so a link's remaining capacity is its capacity less x
 * once per flow crossing it (a flow standing for k identical flows: k times, as the k flows
 * would be), in any order: the subtractions are counted (nsub) and made at the end, one after the
 * other, and only on the links still open, since a closed link's remaining capacity is not read
 * again in the solve (the queue and the scan drop it; a solve or resolve sets it afresh). The
 * bottleneck itself always closes. One subtraction of k x would round differently. */
static int fix_link(mc_sched_maxmin_t *m, int i, double x, const int *off, const int *links,
                     const double *weight, double *rate)
{
    if (++m->tstamp == 0) { /* wrapped: old marks could collide */
        memset(m->tmark, 0, sizeof(unsigned) * (size_t)m->nlinks);
        m->tstamp = 1;
    }
    m->ntouched = 0;
    int n = 0;
    for (int e = m->loff[i]; e < m->loff[i + 1]; e++) {
        int f = m->ent[e], k = m->count ? m->count[f] : 1;
        if (m->fixed[f])
            continue;
        m->fixed[f] = 1;
        n += k;
        rate[f] = x;
        for (int j = off[f]; j < off[f + 1]; j++) {
            int l2 = links[j];
            if (m->tmark[l2] != m->tstamp) {
                m->tmark[l2] = m->tstamp;
                m->touched[m->ntouched++] = l2;
                m->nsub[l2] = 0;
            }
            if (weight) {
                m->cap_rem[l2] -= weight[j] * x;
                m->wsum[l2] -= weight[j];
                m->nunfixed[l2]--;
                continue;
            }
            m->nsub[l2] += k;
            m->nunfixed[l2] -= k;
        }
    }
    for (int t = 0; t < m->ntouched && !weight; t++) {
        int l2 = m->touched[t];
        if (m->nunfixed[l2] <= 0)
            continue;
        double c = m->cap_rem[l2];
        for (int r = 0; r < m->nsub[l2]; r++)
            c -= x;
        m->cap_rem[l2] = c;
    }
    return n;
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

/* A key as an integer of the same order: keys are levels, never NaN; -0 counts as +0, as
 * comparisons of doubles do. */
static uint64_t key_bits(double k)
{
    uint64_t u;
    k = k == 0 ? 0.0 : k;
    memcpy(&u, &k, sizeof u);
    return u >> 63 ? ~u : u | (1ull << 63);
}

/* Sorts m->srt[a..a+n), in link order, by (key, link). Few items go by insertion; more are dealt
 * into groups by the bits below the highest where their keys differ (the keys of one solve share
 * their sign and leading bits, and spread below them), log2(n) bits up to 8, each group stable,
 * so in link order, and each sorted in turn the same way; a group whose keys are all the same is
 * in order already. It replaces a least-significant-first radix sort of all eight bytes, which
 * took 7% of the instructions of the MI250 hosts' 1 GiB all-gather (callgrind). */
static void sort_items(mc_sched_maxmin_t *m, int a, int n)
{
    struct heap_item *it = m->srt + a, *tmp = m->srt_tmp + a;
    if (n <= 16) {
        for (int i = 1; i < n; i++) {
            struct heap_item x = it[i];
            int j = i;
            for (; j > 0 && heap_less(&x, &it[j - 1]); j--)
                it[j] = it[j - 1];
            it[j] = x;
        }
        return;
    }
    uint64_t differ = 0;
    for (int i = 1; i < n; i++)
        differ |= it[i].bits ^ it[0].bits;
    if (!differ)
        return;
    /* as many groups as about the items, up to 256: bits below the highest that differs */
    int w = 31 - __builtin_clz((unsigned)n), top = 63 - __builtin_clzll(differ);
    w = w > 8 ? 8 : w;
    int sh = top + 1 - w < 0 ? 0 : top + 1 - w, ng = 1 << w;
    unsigned cnt[256], at = 0;
    memset(cnt, 0, sizeof(unsigned) * (size_t)ng);
    for (int i = 0; i < n; i++)
        cnt[it[i].bits >> sh & (unsigned)(ng - 1)]++;
    for (int v = 0; v < ng; v++) {
        unsigned c = cnt[v];
        cnt[v] = at;
        at += c;
    }
    for (int i = 0; i < n; i++)
        tmp[cnt[it[i].bits >> sh & (unsigned)(ng - 1)]++] = it[i];
    memcpy(it, tmp, sizeof(*it) * (size_t)n);
    for (int v = 0, from = 0; v < ng; v++) { /* cnt[v] is now where group v ends */
        if ((int)cnt[v] - from > 1)
            sort_items(m, a + from, (int)cnt[v] - from);
        from = (int)cnt[v];
    }
}

/* The queue's pops, its initial entries from the sorted links and the re-keyed ones from the
 * heap: each link has one entry in one of them, and the least of the two heads is the least
 * entry, so the pops come in the same order as from one heap. A closed link at the sorted head
 * is passed over: the queue would drop it when popped, and nothing else happens in between. */
static void solve_sorted(mc_sched_maxmin_t *m, int nused, int nleft, const int *off,
                         const int *links, const double *weight, double *rate)
{
    if (nused > m->srt_cap) {
        m->srt = mc_xrealloc(m->srt, sizeof(*m->srt) * (size_t)nused);
        m->srt_tmp = mc_xrealloc(m->srt_tmp, sizeof(*m->srt) * (size_t)nused);
        m->srt_cap = nused;
    }
    /* the links in order, from a bitmap of those used, for the sort's ties */
    int lo = m->nlinks, hi = 0;
    for (int i = 0; i < nused; i++) {
        int l = m->used[i];
        m->lpos[l] = i; /* used[] order is the local index fix_link takes */
        m->lbits[l >> 6] |= 1ull << (l & 63);
        lo = l < lo ? l : lo;
        hi = l > hi ? l : hi;
    }
    int n = 0;
    for (int w = lo >> 6; w <= hi >> 6; w++)
        for (uint64_t b = m->lbits[w]; b; b &= b - 1) {
            int l = 64 * w + __builtin_ctzll(b);
            m->srt[n++] = (struct heap_item){key_bits(level(m, l)), l};
        }
    for (int w = lo >> 6; w <= hi >> 6; w++)
        m->lbits[w] = 0;
    sort_items(m, 0, nused);
    m->nheap = 0;
    for (int h = 0; nleft > 0;) {
        while (h < nused && m->nunfixed[m->srt[h].link] <= 0)
            h++;
        uint64_t key;
        int l;
        if (m->nheap > 0 && (h == nused || heap_less(&m->heap[0], &m->srt[h]))) {
            struct heap_item it = heap_pop(m);
            if (m->nunfixed[it.link] <= 0)
                continue;
            key = it.bits;
            l = it.link;
        } else if (h < nused) {
            key = m->srt[h].bits;
            l = m->srt[h++].link;
        } else {
            return;
        }
        double x = level(m, l);
        uint64_t xb = key_bits(x);
        if (xb > key) {
            heap_push(m, xb, l);
            continue;
        }
        nleft -= fix_link(m, m->lpos[l], x, off, links, weight, rate);
    }
}

/* The first place of the least of e[0..n), n >= 1, in four independent chains (one chain waits on
 * each comparison in turn), each keeping its first least; of chains with the same least, the
 * first place. Levels are never NaN (a +0 and a -0 compare equal, and the first is taken). */
static int first_least(const double *e, int n)
{
    double a = e[0], b = e[0], c = e[0], d = e[0];
    int ia = 0, ib = 0, ic = 0, id = 0, j = 1;
    for (; j + 4 <= n; j += 4) {
        ia = e[j] < a ? j : ia;
        a = e[j] < a ? e[j] : a;
        ib = e[j + 1] < b ? j + 1 : ib;
        b = e[j + 1] < b ? e[j + 1] : b;
        ic = e[j + 2] < c ? j + 2 : ic;
        c = e[j + 2] < c ? e[j + 2] : c;
        id = e[j + 3] < d ? j + 3 : id;
        d = e[j + 3] < d ? e[j + 3] : d;
    }
    for (; j < n; j++) {
        ia = e[j] < a ? j : ia;
        a = e[j] < a ? e[j] : a;
    }
    /* of two chains' least, the smaller, or the first place on a tie */
    if (b < a || (b == a && ib < ia)) {
        a = b;
        ia = ib;
    }
    if (d < c || (d == c && id < ic)) {
        c = d;
        ic = id;
    }
    return c < a || (c == a && ic < ia) ? ic : ia;
}

/* The queue's pops without a queue. Between two fixes nothing changes, so the pops up to the
 * next fix are: in (key, link) order, every link pushed again at its level while that is above
 * its key, until the first whose level is not; that link is the least by (its level if above its
 * key, else its key; link), and the links pushed again on the way are those before it by (key,
 * link) whose level is above their key. One pass finds the link: open[] is in link order, so the
 * first place of the least is the least link of the least (two passes, the least and then its
 * least link, were half of the solve's instructions); a link closed keeps its place, out of
 * reach of the pass at an infinite eff, until the closed ones outnumber the open and are dropped
 * in order. The links whose level rose above their key wait in the heap by (key, link) (their key
 * does not change while they wait), and those before the link found leave it re-keyed (a link
 * whose level fell back to its key, or that closed, leaves it then with nothing done, as the
 * queue would), so a link waiting behind the pick costs nothing per fix; the links whose flows
 * are all fixed leave the open set (the queue would drop them when popped).
 * The passes read the levels kept in open[]: a fix sets them again on the links it charged, the
 * same quotient of the same figures as computed afresh, and closes those it emptied. */
static void solve_scan(mc_sched_maxmin_t *m, int nused, int nleft, const int *off,
                       const int *links, const double *weight, double *rate)
{
    if (nused > m->scan_cap) {
        m->open = mc_xrealloc(m->open, sizeof(*m->open) * (size_t)nused);
        m->eff = mc_xrealloc(m->eff, sizeof(double) * (size_t)nused);
        m->scan_cap = nused;
    }
    struct scan_item *o = m->open;
    double *eff = m->eff;
    int n = 0, nopen = 0, lo = m->nlinks, hi = 0;
    m->nheap = 0;
    for (int i = 0; i < nused; i++) {
        int l = m->used[i];
        m->lpos[l] = i;
        m->lbits[l >> 6] |= 1ull << (l & 63);
        lo = l < lo ? l : lo;
        hi = l > hi ? l : hi;
    }
    for (int w = lo >> 6; w <= hi >> 6; w++) {
        for (uint64_t b = m->lbits[w]; b; b &= b - 1) {
            int l = 64 * w + __builtin_ctzll(b), i = m->lpos[l];
            m->lpos[l] = -1;
            if (m->nunfixed[l] <= 0)
                continue;
            double x = level(m, l);
            m->lpos[l] = n;
            eff[n] = x;
            o[n++] = (struct scan_item){x, x, l, i};
        }
        m->lbits[w] = 0;
    }
    nopen = n;
    while (nleft > 0 && nopen > 0) {
        int best = first_least(eff, n), bl = o[best].link, bi = o[best].i;
        double x = o[best].lev;
        struct heap_item pick = {key_bits(eff[best]), bl};
        while (m->nheap > 0 && heap_less(&m->heap[0], &pick)) {
            int l = heap_pop(m).link, p = m->lpos[l];
            if (p >= 0 && o[p].lev > o[p].key)
                o[p].key = o[p].lev;
            m->in_stale[l] = 0;
        }
        nleft -= fix_link(m, bi, x, off, links, weight, rate);
        for (int t = 0; t < m->ntouched; t++) {
            int l = m->touched[t], p = m->lpos[l];
            if (p < 0)
                continue;
            if (m->nunfixed[l] > 0) {
                o[p].lev = level(m, l);
                eff[p] = o[p].lev > o[p].key ? o[p].lev : o[p].key;
                if (o[p].lev > o[p].key && !m->in_stale[l]) {
                    m->in_stale[l] = 1;
                    heap_push(m, key_bits(o[p].key), l);
                }
                continue;
            }
            eff[p] = HUGE_VAL;
            m->lpos[l] = -1;
            nopen--;
        }
        if (n > 2 * nopen) {
            int k = 0;
            for (int j = 0; j < n; j++)
                if (m->lpos[o[j].link] == j) {
                    o[k] = o[j];
                    eff[k] = eff[j];
                    m->lpos[o[k].link] = k;
                    k++;
                }
            n = k;
        }
    }
    for (int s = 0; s < m->nheap; s++)
        m->in_stale[m->heap[s].link] = 0;
    m->nheap = 0;
}

/* The bottlenecks of the links of this solve (m->used) whose flows are set up (m->fixed, and the
 * links' sums): by the scan or the sort, as the links not closed yet are few or many. */
static void solve_open(mc_sched_maxmin_t *m, int nused, int nleft, const int *off,
                       const int *links, const double *weight, double *rate)
{
    int nopen = 0;
    for (int i = 0; i < nused; i++)
        nopen += m->nunfixed[m->used[i]] > 0;
    if (nopen <= MM_SCAN_LINKS)
        solve_scan(m, nused, nleft, off, links, weight, rate);
    else
        solve_sorted(m, nused, nleft, off, links, weight, rate);
}

/* The flows' count: every flow with a link counted count[f] times (NULL: once). */
static int flows_left(const mc_sched_maxmin_t *m, int nflows, const int *off)
{
    int nleft = 0;
    for (int f = 0; f < nflows; f++)
        if (off[f + 1] > off[f])
            nleft += m->count ? m->count[f] : 1;
    return nleft;
}

void mc_sched_maxmin_solve(mc_sched_maxmin_t *m, int nflows, const int *off, const int *links,
                           const double *weight, const double *cap, double *rate)
{
    mc_sched_maxmin_solve_counted(m, nflows, off, links, weight, NULL, cap, rate);
}

void mc_sched_maxmin_solve_counted(mc_sched_maxmin_t *m, int nflows, const int *off,
                                   const int *links, const double *weight, const int *count,
                                   const double *cap, double *rate)
{
    m->count = weight ? NULL : count;
    m->weighted = weight != NULL;
    if (nflows == 1 && (!m->count || m->count[0] == 1)) {
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
    int nleft = flows_left(m, nflows, off);
    m->nused = nused;
    solve_open(m, nused, nleft, off, links, weight, rate);
}

/* The solve of the flows not held, in their order, as a problem of their own would be: the same
 * links with their flows (the held ones are fixed already, so fixing a link skips them, as if
 * they were not there), each link's sums over the flows not held, summed in the same order; the
 * links only held flows cross are closed from the start. Only the index is kept. */
void mc_sched_maxmin_resolve(mc_sched_maxmin_t *m, int nflows, const int *off, const int *links,
                             const double *weight, const char *held, const double *cap,
                             double *rate)
{
    if (nflows == 1 && (!m->count || m->count[0] == 1)) { /* solved without an index */
        if (!held[0])
            solve_one(off, links, weight, cap, rate);
        return;
    }
    m->weighted = weight != NULL;
    for (int i = 0; i < m->nused; i++) {
        int l = m->used[i];
        m->cap_rem[l] = cap[l];
        m->wsum[l] = 0;
        m->nunfixed[l] = 0;
    }
    int nleft = 0;
    for (int f = 0; f < nflows; f++) {
        m->fixed[f] = held[f] || off[f + 1] == off[f];
        if (held[f])
            continue;
        int k = m->count ? m->count[f] : 1;
        nleft += m->fixed[f] ? 0 : k;
        rate[f] = HUGE_VAL;
        for (int j = off[f]; j < off[f + 1]; j++) {
            if (weight)
                m->wsum[links[j]] += weight[j];
            m->nunfixed[links[j]] += k;
        }
    }
    solve_open(m, m->nused, nleft, off, links, weight, rate);
}
