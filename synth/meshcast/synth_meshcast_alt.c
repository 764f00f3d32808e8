/* The meshcast referee's last races (docs/synthesis.md, "Small pieces"): the winner against
 * whole other schedules built from it, its small pieces on relay trees (the striped schedule)
 * and NCCL's rings, each as it is and cut into staggered channels; then itself with its chunks
 * ramped, with its channels out of phase (synth_meshcast_phased.c) and with side trees on the
 * links it leaves idle (synth_meshcast_side.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth/meshcast/mc_meshcast.h"
#include "synth/meshcast/synth_meshcast_run.h"

/* A schedule the last races try in place of the winner: built from the winner, its trees across
 * the network in chunks of min_chunk bytes or more where it chooses their chunks, or NULL in *out
 * when it does not apply. */
typedef mc_status_t (*alt_fn)(const run_t *r, const mc_sched_t *winner, const void *arg,
                              uint64_t min_chunk, mc_sched_t **out, mc_err_t *err);

/* Whether d cannot replace the winner (timed *v): its busiest link needs longer at full
 * bandwidth than the winner's time (by more than the simulator's rounding), and the simulator
 * never runs a link above its bandwidth, so d cannot finish first whatever allowance it is given;
 * nor can d cut into channels, which carry the same bytes over the same links. An invalid d is
 * not lost: certify reports it. */
static int lost(const run_t *r, const mc_sched_t *d, const verdict_t *v, mc_buf_t *buf)
{
    return mc_sched_busiest_link_s(d, r->topo) > v->t * (1 + 1e-6) &&
           mc_valid_memo_check(r->valid, d, r->topo, buf) == 0;
}

/* Whether d, simulated at dv, replaces the winner s, timed v: faster by more than the
 * simulator's rounding (it takes instants within 1e-12 of each other for one, sim.c), or no
 * slower with fewer trees (a try that ends after v->t is stopped at that horizon). On the uneven
 * 4 MiB reshuffle over eight DGX-1 boxes NCCL's rings (24,192 trees) simulated 3e-15 of their
 * time below the 4,032-tree plan, both 226.4 us, and replaced it: a schedule six times the size
 * for nothing. */
static int replaces(const mc_sched_t *d, const verdict_t *dv, const mc_sched_t *s,
                    const verdict_t *v)
{
    if (!dv->simulated)
        return 0;
    double tie = 1e-12 * v->t;
    return dv->t < v->t - tie || (dv->t <= v->t && d->ntrees < s->ntrees);
}

/* Races the schedule that make builds against the winner *s (timed *v), as it is and cut into
 * staggered channels (tries[0..ntries), below: more chunks on the later channels, or fewer: at
 * 128 KiB a small tree's chunks cannot grow), each within a part of what
 * is left of r->last_work_left and up to the fastest time so far; the fastest replaces *s and *v,
 * named plan. Each tree alone on its connections idles its links between its chunks, which the
 * channels hide (mc_sched_channels).
 * The race stops where it cannot win: at once when the schedule is lost (above), leaving its
 * allowance to the races after it, which can only find a faster schedule with it (on a 1 GiB
 * all-gather over 8 OCI A100 boxes the first two relay sets' busiest links need 5.60 and 11.2 ms,
 * the rings' 5.51 ms, the winner 5.21 ms: each try ran 0.15-0.3 s of CPU to lose); and after a
 * try its allowance did not cover (neither timed to the end nor past the winner's time), as the
 * referee's channel race does: the later tries cut the same trees into more channels.
 * With net, where the first try has a tree across the network that the 128 KiB floor holds
 * (mc_sched_net_held), the tries are run again with make's trees and the channels on
 * MC_NET_CHUNK_BYTES ("+net" in the plan's name): the hub trees of a 4 MiB broadcast over eight
 * p4d hosts, 144 KiB each, moved in one chunk each, in lockstep, a network wait per level (2.19
 * of the bound; 1.87 on the smaller floor). The rings (NCCL's chunking) and the looped race (the
 * winner's trees) do not take it: it won nothing there, and their builds, done again for each
 * try, are most of their CPU (the rings' search: 2.78 -> 4.79 G instructions on the 4 MiB host
 * broadcast over eight MI250 hosts). */
/* Channels of race_alt's tries: {count, stagger} (mc_sched_channels), {1, 0} as it is. */
static const int race_tries[][2] = {{1, 0}, {2, 1}, {4, 1}, {8, 1}, {2, -1}, {4, -1}};
/* The rail trees' (mc_meshcast_race_striped): as they are and in 2 channels, more chunks on the
 * later one or fewer. At 16 MiB over four DGX H100 hosts, host 0's shards went 135.5 -> 111.8 us
 * in the fewer (2.00 -> 1.65 of the bound); 4 and 8 channels won none of those cases. */
static const int rail_tries[][2] = {{1, 0}, {2, 1}, {2, -1}};
/* The looped winner's (mc_meshcast_race_looped): as it is, the winner's channels kept. */
static const int as_is[][2] = {{1, 0}};

/* What race_alt races: the schedule make builds from the winner (with arg), named plan, as its
 * tries cut it, each try within most work. */
typedef struct alt_race {
    alt_fn make;
    const void *arg;
    const char *plan;
    const int (*tries)[2];
    size_t ntries;
    int64_t most;
} alt_race_t;

/* One pass of a's tries, their chunks and channels on floor ("+net" in the plan's name on
 * MC_NET_CHUNK_BYTES). *held (NULL: not asked) gets whether the first try has a tree across the
 * network that MC_MIN_CHUNK_BYTES holds (mc_sched_net_held), and 0 where a try is lost or not
 * covered (stop). make builds the same schedule from the same winner, so each try cuts a
 * copy of one build, made again only after a try has replaced the winner: the rings' search,
 * done again for each try, was 2.3 G of the 3.5 G instructions of the ring race on the uneven
 * 4 MiB reshuffle over eight MI250 hosts. */
static mc_status_t race_pass(run_t *r, mc_sched_t **s, verdict_t *v, const alt_race_t *a,
                             uint64_t floor, int *held, mc_buf_t *buf, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    mc_sched_t *made = NULL; /* make's schedule from the winner *s, before a try cuts it */
    int stop = 0;            /* a try lost or was not covered */
    for (size_t i = 0; i < a->ntries && r->last_work_left > 0; i++) {
        verdict_t dv;
        char name[MC_PLAN_NAME_MAX];
        if (!made)
            st = a->make(r, *s, a->arg, floor, &made, err);
        if (st != MC_OK || !made)
            break;
        mc_sched_t *d = mc_meshcast_copy(made, r->topo);
        if (held && i == 0)
            *held = mc_sched_net_held(d, r->topo, MC_MIN_CHUNK_BYTES);
        int n = snprintf(name, sizeof name, "%s%s", a->plan,
                         floor == MC_NET_CHUNK_BYTES ? "+net" : "");
        const int *try = a->tries[i];
        if (try[0] > 1) {
            /* inside hosts, channels may cut chunks below the network's (channels_run) */
            int host = mc_sched_host_held(d, r->topo, MC_MIN_CHUNK_BYTES);
            mc_sched_channels(d, r->topo, try[0], try[1], floor,
                              host ? MC_HOST_CHUNK_BYTES : floor, 0);
            snprintf(name + n, sizeof name - (size_t)n, "+ch%ds%d", try[0], try[1]);
        }
        if (i == 0 && lost(r, d, v, buf)) {
            mc_sched_free(d);
            stop = 1;
            break;
        }
        int64_t given = r->last_work_left < a->most ? r->last_work_left : a->most;
        r->sim_work_left = given;
        st = mc_meshcast_certify(r, d, name, &r->sim_work_left, v->t, NULL, &dv, err);
        r->last_work_left -= given - r->sim_work_left;
        if (st == MC_OK && replaces(d, &dv, *s, v)) {
            mc_sched_free(*s);
            *s = d;
            *v = dv;
            mc_sched_free(made); /* made from the winner replaced */
            made = NULL;
        } else {
            mc_sched_free(d);
        }
        if (st != MC_OK)
            break;
        stop = !dv.simulated && !dv.beaten;
        if (stop)
            break;
    }
    /* lost or not covered: on a smaller floor the same bytes cross the same links, in more flows */
    if (stop && held)
        *held = 0;
    mc_sched_free(made);
    return st;
}

static mc_status_t race_alt(run_t *r, mc_sched_t **s, verdict_t *v, alt_fn make, const void *arg,
                            const char *plan, const int (*tries)[2], size_t ntries, int64_t most,
                            int net, mc_err_t *err)
{
    const alt_race_t a = {make, arg, plan, tries, ntries, most};
    mc_buf_t buf = {0};
    int held = 0;
    mc_status_t st = race_pass(r, s, v, &a, MC_MIN_CHUNK_BYTES, net ? &held : NULL, &buf, err);
    if (st == MC_OK && held)
        st = race_pass(r, s, v, &a, MC_NET_CHUNK_BYTES, NULL, &buf, err);
    mc_buf_free(&buf);
    return st;
}

static mc_status_t striped_alt(const run_t *r, const mc_sched_t *winner, const void *relays,
                               uint64_t min_chunk, mc_sched_t **out, mc_err_t *err)
{
    return mc_sched_striped(winner, r->topo, relays, min_chunk, r->chunks, out, err);
}

/* The relay race is worth its simulations for shares with rail stripes only this far above the
 * bound. */
#define MC_RAIL_ALT_ROOM 1.15

/* The rail trees of the n small shares in shares[] (mc_cands_add_rails_small), each seen as its
 * piece, the rails of a host divided among all the shares that leave it (as gen_cands does). */
static mc_status_t add_rails(const run_t *r, const int *shares, int n, mc_cands_t *out,
                             mc_err_t *err)
{
    const mc_topo_t *topo = r->topo;
    int *leaving = mc_xcalloc((size_t)topo->nhosts + 1, sizeof(int));
    char *taken = mc_xcalloc((size_t)topo->ngpus + 1, 1);
    mc_status_t st = MC_OK;
    int senders = 0;
    for (int i = 0; i < r->sh.n; i++) {
        int h = mc_rails_host(r->task, topo, &r->sh.s[i]);
        senders += h >= 0 && leaving[h] == 0;
        leaving[h >= 0 ? h : topo->nhosts]++;
    }
    for (int j = 0; j < n && st == MC_OK; j++) {
        const mc_share_t *sh = &r->sh.s[shares[j]];
        mc_piece_t view = r->task->pieces[sh->piece];
        int h = mc_rails_host(r->task, topo, sh);
        view.ndests = sh->ndests;
        view.dests = (int *)sh->dests;
        if (h >= 0)
            st = mc_cands_add_rails_small(out, topo, sh->piece, &view, h, leaving[h], senders,
                                          taken, err);
    }
    free(leaving);
    free(taken);
    return st;
}

/* Small pieces (docs/synthesis.md, "Small pieces"): the plan's trees are chosen for link load,
 * and a chain that loads every link once pays one per-message overhead per hop, seven on an
 * 8-GPU NVSwitch host. So where a piece's best candidate alone pays more than a tenth over its
 * bandwidth time (mc_cands_small), the winner *s (timed *v) is raced against itself with those
 * pieces on their relay trees instead, split evenly (mc_sched_striped), the other hosts entered
 * as a chain, a binary tree or each from the relay (where they differ). */
mc_status_t mc_meshcast_race_striped(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err)
{
    /* the other hosts below each relay as a chain, a binary tree, and each from the relay */
    static const struct {
        int fanout, remote; /* differs from the chain from this many other hosts on */
        int split;          /* the root's host and the others apart (mc_cands_add_split), 2: with
                             * a tree per other host as the hub of each rail (a binary tree or a
                             * star over the other hosts from the first won none of the 13 cases
                             * the split trees sped up in the sweep between hosts); 3: the share's
                             * rail trees, their crossing chosen by its alpha-beta cost
                             * (mc_cands_add_rails_small); 4: the other hosts spread over the
                             * root host's NICs, one tree (mc_cands_add_spread) */
        const char *name;
    } sets[] = {{0, 1, 3, "rails"},        {1, 0, 0, "striped"}, {2, 3, 0, "striped-tree"},
                {0, 2, 0, "striped-star"}, {1, 1, 1, "split"},   {0, 2, 2, "split-hubs"},
                {0, 2, 4, "spread"}};
    enum { NSETS = sizeof sets / sizeof sets[0] };
    mc_cands_t relays = {0};
    mc_status_t st = MC_OK;
    int remote = 0, away = 0; /* the most other hosts: of shares with relays, of any share */
    int *shares = NULL, *roots = NULL, n = 0; /* the shares raced on relay trees, their roots */
    if (v->t <= MC_ALT_ROOM * r->bound.seconds)
        return MC_OK;
    shares = mc_xmalloc(sizeof(int) * (size_t)(r->sh.n + 1));
    roots = mc_xmalloc(sizeof(int) * (size_t)(r->sh.n + 1));
    for (int i = 0; i < r->sh.n; i++) {
        const mc_share_t *sh = &r->sh.s[i];
        const mc_piece_t *pc = &r->task->pieces[sh->piece];
        int root;
        /* a share with rail stripes (fine above 1: their units) is striped over its host's
         * GPUs already, each stripe tree of 1 MiB or more (candidates_rails.c): within
         * MC_RAIL_ALT_ROOM of the bound, racing these too took a 1 GiB broadcast over 8 OCI A100
         * boxes from 1.3 to 2.7 s of CPU and won nothing; further off, they may (64 MiB over two
         * OCI H100 boxes: 1.500 -> 1.487) */
        if (sh->ndests != pc->ndests ||
            (sh->fine > 1 && v->t <= MC_RAIL_ALT_ROOM * r->bound.seconds) ||
            !mc_cands_small(&r->cs, r->first[i], r->count[i], pc->bytes, &root))
            continue;
        int h = mc_cands_relay_hosts(r->topo, sh, root), nlocal;
        int a = mc_cands_hosts_away(r->topo, sh, root, &nlocal);
        remote = h > remote ? h : remote;
        away = a > away ? a : away;
        shares[n] = i;
        roots[n++] = root;
    }
    /* each set's trees are made when it is raced: one the allowance does not reach is not made
     * (those of the split sets were a quarter of the 1 GiB all-gather over 8 OCI A100 boxes'
     * synthesis, and raced none) */
    for (int k = 0; k < NSETS && n && r->last_work_left > 0; k++) {
        if ((sets[k].split ? away : remote) < sets[k].remote)
            continue;
        if (sets[k].split == 3) {
            MC_CHECK_GOTO(add_rails(r, shares, n, &relays, err), out, st);
        }
        for (int j = 0; j < n && sets[k].split != 3; j++) {
            const mc_share_t *sh = &r->sh.s[shares[j]];
            MC_CHECK_GOTO(sets[k].split == 4 ? mc_cands_add_spread(&relays, r->task, r->topo, sh,
                                                                   roots[j], err)
                          : sets[k].split ? mc_cands_add_split(&relays, r->topo, sh, roots[j],
                                                               sets[k].fanout, sets[k].split > 1,
                                                               err)
                                          : mc_cands_add_relays(&relays, r->topo, sh, roots[j],
                                                                sets[k].fanout, err),
                          out, st);
        }
        /* the rail trees as they are and in 2 channels only (rail_tries): at 4 MiB they are a
         * chunk each, which channels do not cut, and at 1 GiB (56 trees of 18 MiB over 8 MI300X
         * hosts) the 4-channel try was not covered by its allowance (2.3 M units, 0.3 s, for
         * nothing); but each try may take two thirds of the allowance, as the referee's first
         * channel try: the 2 channels of 56 stripes over 8 DGX H100 hosts stopped at a third
         * (2.3 of 3.3 ms) */
        if (relays.n)
            MC_CHECK_GOTO(race_alt(r, s, v, striped_alt, &relays, sets[k].name,
                                   sets[k].split == 3 ? rail_tries : race_tries,
                                   sets[k].split == 3 ? sizeof rail_tries / sizeof rail_tries[0]
                                                      : sizeof race_tries / sizeof race_tries[0],
                                   sets[k].split == 3 ? 2 * MC_SIM_CHANNEL_WORK
                                                      : MC_SIM_CHANNEL_WORK,
                                   1, err),
                          out, st);
        mc_cands_free(&relays);
    }
out:
    mc_cands_free(&relays);
    free(shares);
    free(roots);
    return st;
}

static mc_status_t ring_alt(const run_t *r, const mc_sched_t *winner, const void *arg,
                            uint64_t min_chunk, mc_sched_t **out, mc_err_t *err)
{
    (void)arg;
    (void)min_chunk;
    mc_err_t ignored = {0};
    mc_synth_opts_t o = *r->opts;
    o.inflight = 1;
    *out = NULL;
    if (mc_synth_nccl_ring(r->task, r->topo, &o, out, &ignored) != MC_OK)
        return MC_OK; /* a task the ring does not take (several consumers) */
    memcpy((*out)->strategy, winner->strategy, sizeof (*out)->strategy);
    (void)err;
    return MC_OK;
}

/* Rings (docs/synthesis.md, "Small pieces"): every piece down one chain from its holder through
 * its destinations in the destination mesh's order, split over NCCL's channels (the nccl-ring
 * strategy), as it is and in 2 and 4 staggered channels. On an all-gather over boxes joined by
 * one slow NIC each, the ring crosses every NIC once per piece with no fan-out to pay for
 * (4 MiB over four 8-GPU RTX 3090 boxes: 1.39 of the bound against the trees' 1.89). */
mc_status_t mc_meshcast_race_ring(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err)
{
    if (v->t <= MC_ALT_ROOM * r->bound.seconds)
        return MC_OK;
    return race_alt(r, s, v, ring_alt, NULL, "ring", race_tries, 3, MC_SIM_CHANNEL_WORK, 0, err);
}

/* The winner looped back, only where that lowers its busiest link's time at full bandwidth: a
 * looped tree moves the root host's share off its GPU links onto NIC ports, which the simulator
 * can only turn into a gain where those links bounded the winner (otherwise its simulation
 * would be spent for nothing). */
static mc_status_t looped_alt(const run_t *r, const mc_sched_t *winner, const void *arg,
                              uint64_t min_chunk, mc_sched_t **out, mc_err_t *err)
{
    (void)arg;
    (void)min_chunk;
    mc_status_t st = mc_sched_looped(winner, r->topo, out, err);
    if (st == MC_OK && *out &&
        mc_sched_busiest_link_s(*out, r->topo) >= mc_sched_busiest_link_s(winner, r->topo)) {
        mc_sched_free(*out);
        *out = NULL;
    }
    return st;
}

/* Room for a winner's name that a try's suffix (`+ramp2`, `+ch4+phased0.5`) follows. */
#define PLAN_BASE_MAX (MC_PLAN_NAME_MAX - 24)

/* The winner's plan name (its params' plan=) with suffix, into out. */
static void winner_plan(const verdict_t *v, const char *suffix, char *out, size_t size)
{
    const char *at = strstr(v->params, "plan=");
    snprintf(out, size, "%.*s%s", at ? (int)strcspn(at + 5, " ") : 0, at ? at + 5 : "", suffix);
}

/* The winner with every tree of at least MC_RAMP_CHUNKS chunks ramped (arg: the ramp), where its
 * chunks stay non-empty; none when no tree is. */
#define MC_RAMP_CHUNKS 3
static mc_status_t ramp_alt(const run_t *r, const mc_sched_t *winner, const void *arg,
                            uint64_t min_chunk, mc_sched_t **out, mc_err_t *err)
{
    (void)min_chunk;
    (void)err;
    int ramped = 0;
    *out = mc_meshcast_copy(winner, r->topo);
    for (int t = 0; t < (*out)->ntrees; t++) {
        mc_tree_t *tr = &(*out)->trees[t];
        int was = tr->ramp;
        tr->ramp = tr->nchunks >= MC_RAMP_CHUNKS ? *(const int *)arg : was;
        if (!mc_tree_chunks_valid(tr))
            tr->ramp = was;
        ramped |= tr->ramp != was;
    }
    if (!ramped) {
        mc_sched_free(*out);
        *out = NULL;
    }
    return MC_OK;
}

/* Ramped chunks (docs/synthesis.md, "Session 37"): where many trees start at once, their first
 * chunks share the root's links and each reaches its relay late, and their last ones leave the
 * far links to drain alone; smaller end chunks fill and drain the pipelines sooner (two OCI H100
 * boxes, 64 MiB from GPU 0 over 28 trees: 306.9 -> 288.3 us with ramp 2). On an idle chain of
 * equal hops a ramp is slower (tests/unit/test_sim.c), so it is raced, as it is only: the
 * winner's channels are kept. */
mc_status_t mc_meshcast_race_ramp(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err)
{
    static const int ramps[] = {1, 2};
    mc_status_t st = MC_OK;
    char base[PLAN_BASE_MAX], plan[MC_PLAN_NAME_MAX];
    if (v->t <= MC_ALT_ROOM * r->bound.seconds)
        return MC_OK;
    winner_plan(v, "", base, sizeof base); /* both named after the winner before the first */
    for (size_t i = 0; i < sizeof ramps / sizeof ramps[0] && st == MC_OK; i++) {
        snprintf(plan, sizeof plan, "%s+ramp%d", base, ramps[i]);
        st = race_alt(r, s, v, ramp_alt, &ramps[i], plan, as_is, 1, 2 * MC_SIM_CHANNEL_WORK, 0,
                      err);
    }
    return st;
}

/* Looped back (synth_meshcast_loopback.c): a broadcast's root sends its own rail's stripe over
 * its GPU links to its host as well as out of its NIC, so those links carry the whole piece; its
 * host's GPUs can take that stripe over their idle NIC ports instead (eight MI300X hosts, 1 GiB
 * from GPU 0: 1.246 -> 1.180 of the bound). As it is only: the winner's channels are kept. */
mc_status_t mc_meshcast_race_looped(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err)
{
    char plan[MC_PLAN_NAME_MAX];
    if (v->t <= MC_ALT_ROOM * r->bound.seconds)
        return MC_OK;
    winner_plan(v, "+looped", plan, sizeof plan);
    return race_alt(r, s, v, looped_alt, NULL, plan, as_is, 1, 2 * MC_SIM_CHANNEL_WORK, 0, err);
}

/* A try of channels out of phase: the schedule it is built from, the channels every tree of it
 * is cut into first (1: none) and the multiple of chunks. */
typedef struct phased_try {
    const mc_sched_t *from;
    int channels;
    double mult;
} phased_try_t;

/* The schedule of try arg with its channels out of phase (mc_sched_channels, spread 0, then
 * mc_sched_phased): inside hosts down to MC_HOST_CHUNK_BYTES, across the network to
 * MC_NET_CHUNK_BYTES; none when no two trees share their edges. Built from the winner the tries
 * began with, not the one before it. */
static mc_status_t phased_alt(const run_t *r, const mc_sched_t *winner, const void *arg,
                              uint64_t min_chunk, mc_sched_t **out, mc_err_t *err)
{
    (void)winner;
    (void)min_chunk;
    (void)err;
    const phased_try_t *p = arg;
    *out = mc_meshcast_copy(p->from, r->topo);
    if (p->channels > 1)
        mc_sched_channels(*out, r->topo, p->channels, 0, MC_NET_CHUNK_BYTES, MC_HOST_CHUNK_BYTES,
                          0);
    if (!mc_sched_phased(*out, r->topo, p->mult, MC_NET_CHUNK_BYTES, MC_HOST_CHUNK_BYTES)) {
        mc_sched_free(*out);
        *out = NULL;
    }
    return MC_OK;
}

/* A winner this close to the bound is left as it is, by the phased race and the side trees'.
 * Out of phase, the 1 GiB broadcast in one bridged H100 PCIe box went 1.0020 -> 1.0007 of it
 * (NCCL's ring, `alpa-bcast`, 1.0014), and a 1 GiB chain over four GH200 hosts 1.0165 -> 1.0032. */
#define MC_PHASED_ROOM 1.001

/* Channels out of phase (synth_meshcast_phased.c): the winner's own channels in as many chunks as
 * the most of each set and in two and four times that (which is fastest is not monotone in the
 * count: 1 GiB broadcasts from one GPU over four HGX A100 boards 1.003, 1.010, 1.068 of the
 * winner's time; over four GH200 hosts 0.994, 0.989, 0.987); then every tree cut into 2 and 4
 * channels first, each in half as many chunks as its tree (chunks of the tree's size), as many and
 * twice as many (a 4 MiB broadcast in an 8-GPU PCIe box, 4 channels: 1.258 -> 1.155 of the bound;
 * an all-gather of 64 MiB over RCCL's 16-GCD MI250 VM, 2 channels: 1.430 -> 1.389). Of the six
 * tries of 2 and 4 channels at half, 1 and 2 times the chunks, the four at 1 and 2 times gained
 * most over RCCL's 810 cases; the half on 2 channels takes the 256 MiB all-gather on the DGX-1,
 * NCCL's rings in 2 channels, from 1.1040 to 1.1016 of the bound (`xla` 1.1008). The tries share
 * the race's allowance, so their order decides which are covered: the half last was not covered
 * on that all-gather; the cheaper tries first (by chunk crossings) lost 3 of RCCL's cases; this
 * order loses one win (the 64 MiB all-gather over two `topo_16p1h` boxes) to the tries without
 * the half. */
static const phased_try_t phased_tries[] = {
    {.channels = 1, .mult = 1},   {.channels = 1, .mult = 2}, {.channels = 1, .mult = 4},
    {.channels = 2, .mult = 0.5}, {.channels = 2, .mult = 1}, {.channels = 2, .mult = 2},
    {.channels = 4, .mult = 1},   {.channels = 4, .mult = 2},
};

mc_status_t mc_meshcast_race_phased(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    char base[PLAN_BASE_MAX], plan[MC_PLAN_NAME_MAX];
    if (v->t <= MC_PHASED_ROOM * r->bound.seconds)
        return MC_OK;
    winner_plan(v, "", base, sizeof base);
    mc_sched_t *from = mc_meshcast_copy(*s, r->topo);
    for (size_t i = 0; i < sizeof phased_tries / sizeof phased_tries[0] && st == MC_OK; i++) {
        phased_try_t p = phased_tries[i];
        p.from = from;
        int n = snprintf(plan, sizeof plan, "%s", base);
        if (p.channels > 1)
            n += snprintf(plan + n, sizeof plan - (size_t)n, "+ch%d", p.channels);
        snprintf(plan + n, sizeof plan - (size_t)n, "+phased%g", p.mult);
        st = race_alt(r, s, v, phased_alt, &p, plan, as_is, 1, 2 * MC_SIM_CHANNEL_WORK, 0, err);
    }
    mc_sched_free(from);
    return st;
}

/* The fraction of the pieces' bytes a round of side trees moves, of the one that evens the
 * busiest links at full bandwidth: those links are then as busy as any, and the side trees,
 * deeper than the winner's, pay more fill and overheads on them. Over RCCL's 810 cases, rounds
 * of half of it gained more than rounds of three quarters (87 cases faster against 73), and the
 * whole of it lost on `direct`'s DGX-1 all-gather (docs/synthesis.md, "Session 42"). */
#define MC_SIDE_SCALE 0.5
/* At most this many rounds, each of the winner of the round before (its side trees shrunk as
 * its other trees, and one more per piece under the prices of its own loads). */
#define MC_SIDE_ROUNDS 4

static mc_status_t side_alt(const run_t *r, const mc_sched_t *winner, const void *arg,
                            uint64_t min_chunk, mc_sched_t **out, mc_err_t *err)
{
    (void)arg;
    return mc_sched_side(winner, r->topo, MC_SIDE_SCALE, min_chunk, out, err);
}

/* Side trees (synth_meshcast_side.c), in rounds while each wins. */
mc_status_t mc_meshcast_race_side(run_t *r, mc_sched_t **s, verdict_t *v, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    char plan[MC_PLAN_NAME_MAX];
    if (v->t <= MC_PHASED_ROOM * r->bound.seconds)
        return MC_OK;
    for (int i = 0; i < MC_SIDE_ROUNDS && st == MC_OK; i++) {
        double was = v->t;
        winner_plan(v, "+side", plan, sizeof plan);
        st = race_alt(r, s, v, side_alt, NULL, plan, as_is, 1, 2 * MC_SIM_CHANNEL_WORK, 0, err);
        if (v->t >= was)
            break;
    }
    return st;
}
