/* Lanes shared by their estimated lockstep cost (emit_internal.h, mc_emit_share_*). When a phase
 * has more edges or trees on a GPU than there are lanes, some must share one, and in a lane the
 * nccl backend runs one group per micro-step: step s of every user ends when its slowest op does,
 * and the lane's steps follow each other. So two users of a lane cost each other what their steps
 * would take apart: the one of short steps waits for the one of long steps over the steps they
 * have in common, and a user whose steps come later waits for all of them. Each user is estimated
 * by the micro-steps it moves in (from its first to past its last) and the time of one of its
 * steps (the caller's: message overhead plus its part of its tree's planned time), and a user
 * that finds no lane free takes the one where the end of the lane's last user plus what its users
 * wait for each other in all is least. Users with steps of one length, and users whose steps are few next
 * to their partner's, then share (a short tree beside a long one of longer steps), where taking
 * the least used lane put a tree of 73 short chunks in step with one of 37 long ones. */
#include <stdlib.h>
#include <string.h>

#include "emit/emit_internal.h"

void mc_emit_share_init(mc_emit_share_t *sh, int ngpus, int nunits)
{
    memset(sh, 0, sizeof *sh);
    size_t n = (size_t)ngpus * MC_RT_MAX_LANES + 1;
    sh->head = mc_xcalloc(n, sizeof *sh->head);
    sh->stamp = mc_xcalloc(n, sizeof *sh->stamp);
    sh->mark = mc_xcalloc((size_t)nunits + 1, sizeof *sh->mark);
    sh->first = mc_xcalloc((size_t)nunits + 1, sizeof *sh->first);
    sh->last = mc_xcalloc((size_t)nunits + 1, sizeof *sh->last);
    sh->step_s = mc_xcalloc((size_t)nunits + 1, sizeof *sh->step_s);
}

void mc_emit_share_free(mc_emit_share_t *sh)
{
    free(sh->head);
    free(sh->stamp);
    free(sh->mark);
    free(sh->first);
    free(sh->last);
    free(sh->step_s);
    free(sh->ent_unit);
    free(sh->ent_next);
    free(sh->mem);
    free(sh->cut);
    memset(sh, 0, sizeof *sh);
}

void mc_emit_share_unit(mc_emit_share_t *sh, int unit, int first, int last, double step_s)
{
    sh->first[unit] = first;
    sh->last[unit] = last;
    sh->step_s[unit] = step_s;
}

static int cut_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The estimated end of the last of sh->mem[0..n) and, in *delay, what they wait for each other in
 * all: the lane runs its steps in order, each as long as the longest step of the users that move
 * in it. */
static double lane_end(mc_emit_share_t *sh, int n, double *delay)
{
    MC_GROW(sh->cut, sh->cut_cap, 2 * n + 1);
    int nc = 0;
    for (int i = 0; i < n; i++) {
        sh->cut[nc++] = sh->first[sh->mem[i]];
        sh->cut[nc++] = sh->last[sh->mem[i]];
    }
    qsort(sh->cut, (size_t)nc, sizeof *sh->cut, cut_cmp);
    double t = 0, end = 0;
    *delay = 0;
    for (int k = 0; k + 1 < nc; k++) {
        if (sh->cut[k] == sh->cut[k + 1])
            continue;
        double step = 0;
        for (int i = 0; i < n; i++) {
            int u = sh->mem[i];
            if (sh->first[u] <= sh->cut[k] && sh->cut[k] < sh->last[u] && sh->step_s[u] > step)
                step = sh->step_s[u];
        }
        t += step * (sh->cut[k + 1] - sh->cut[k]);
        for (int i = 0; i < n; i++) {
            int u = sh->mem[i];
            if (sh->last[u] != sh->cut[k + 1])
                continue;
            end = t > end ? t : end;
            *delay += t - sh->step_s[u] * (sh->last[u] - sh->first[u]);
        }
    }
    return end;
}

/* The users of lane l on gpus[0..n) in phase `cur`, each once, into sh->mem after its first
 * `from` entries; returns how many there are then. */
static int lane_users(mc_emit_share_t *sh, const int *gpus, int n, int l, int cur, int from)
{
    int m = from;
    sh->mark_cur++;
    for (int k = 0; k < n; k++) {
        size_t at = (size_t)gpus[k] * MC_RT_MAX_LANES + l;
        for (int e = sh->stamp[at] == cur ? sh->head[at] : -1; e >= 0; e = sh->ent_next[e]) {
            int u = sh->ent_unit[e];
            if (sh->mark[u] == sh->mark_cur)
                continue;
            sh->mark[u] = sh->mark_cur;
            MC_GROW(sh->mem, sh->mem_cap, m + 1);
            sh->mem[m++] = u;
        }
    }
    return m;
}

int mc_emit_share_pick(mc_emit_share_t *sh, const int *gpus, int n, int unit, int cur,
                       const unsigned char *apart)
{
    int best = 0, best_m = 0;
    double best_cost = -1;
    for (int l = 0; l < MC_RT_MAX_LANES; l++) {
        MC_GROW(sh->mem, sh->mem_cap, 1);
        sh->mem[0] = unit;
        int m = lane_users(sh, gpus, n, l, cur, 1);
        double delay, cost = lane_end(sh, m, &delay) + delay;
        int tie = best_cost >= 0 && cost <= best_cost * (1 + 1e-9);
        if (best_cost < 0 || cost < best_cost * (1 - 1e-9) ||
            (tie && (apart[l] < apart[best] || (apart[l] == apart[best] && m < best_m))))
            best = l, best_cost = cost, best_m = m;
    }
    return best;
}

void mc_emit_share_take(mc_emit_share_t *sh, const int *gpus, int n, int l, int unit, int cur)
{
    for (int k = 0; k < n; k++) {
        size_t at = (size_t)gpus[k] * MC_RT_MAX_LANES + l;
        if (sh->stamp[at] != cur)
            sh->stamp[at] = cur, sh->head[at] = -1;
        MC_GROW(sh->ent_unit, sh->ent_cap, sh->nent + 1);
        sh->ent_next = mc_xrealloc(sh->ent_next, (size_t)sh->ent_cap * sizeof *sh->ent_next);
        sh->ent_unit[sh->nent] = unit;
        sh->ent_next[sh->nent] = sh->head[at];
        sh->head[at] = sh->nent++;
    }
}
