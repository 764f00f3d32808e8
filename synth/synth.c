/* The strategy table (in the order 'meshcast bench' compares them) and mc_synth(), which runs one
 * strategy and refuses to hand back a schedule that does not validate. */
#include <string.h>

#include "synth/synth.h"

/* In the order bench shows them: the baselines first, the Z3 synthesizer last. */
static const mc_strategy_t all_strategies[] = {
    {"p2p", "Alpa send/recv: every destination pulls each piece from its first holder, all at once",
     mc_synth_p2p, 0},
    {"p2p-lb", "Alpa send/recv, least-loaded sender, no local all-gather (the paper's Send/Recv)",
     mc_synth_p2p_lb, 0},
    {"alpa-bcast",
     "Alpa broadcast: one NCCL ring broadcast per piece, (mesh, host) load balance, no barrier",
     mc_synth_alpa_bcast, 0},
    {"alpa-bcast-rounds",
     "alpa-bcast with a global barrier after each solver round (the paper's reading of its order)",
     mc_synth_alpa_bcast_rounds, 0},
    {"alpa-p2p",
     "Alpa's default: send/recv of a sharded destination, then its local all-gather inside hosts",
     mc_synth_alpa_p2p, 0},
    {"xla", "XLA SPMD ladder: permute, all-to-all, partial replication, else all-gather",
     mc_synth_xla, 0},
    {"collectives", "normal form (arXiv 2112.01075): peak max(src,dst) tile",
     mc_synth_collectives, 0},
    {"meshcast", "Z3 synthesizer: multicast trees planned within every link's capacity",
     mc_synth_meshcast, 0},
    {"nccl-ring", "NCCL's ring broadcast / all-gather on every piece, as a yardstick (calib suite)",
     mc_synth_nccl_ring, 1},
};

const mc_strategy_t *mc_synth_strategies(int *n)
{
    *n = (int)(sizeof(all_strategies) / sizeof(all_strategies[0]));
    return all_strategies;
}

const mc_strategy_t *mc_synth_find(const char *name)
{
    int n;
    const mc_strategy_t *s = mc_synth_strategies(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].name, name))
            return &s[i];
    return NULL;
}

/* "p2p, p2p-lb, ..." for messages. */
static void strategy_names(mc_buf_t *b)
{
    int n;
    const mc_strategy_t *s = mc_synth_strategies(&n);
    for (int i = 0; i < n; i++)
        mc_buf_printf(b, "%s%s", i ? ", " : "", s[i].name);
}

mc_status_t mc_synth(const char *strategy, mc_task_t *task, const mc_topo_t *topo,
                     const mc_synth_opts_t *opts, mc_sched_t **out, mc_err_t *err)
{
    mc_synth_opts_t defaults = MC_SYNTH_OPTS_DEFAULT;
    mc_buf_t msg = {0};
    mc_sched_t *s = NULL;
    mc_status_t st = MC_OK;
    const mc_strategy_t *strat = mc_synth_find(strategy);
    *out = NULL;
    if (!strat) {
        strategy_names(&msg);
        st = mc_err_set(err, MC_ERR_USAGE, "unknown strategy '%s': expected one of %s", strategy,
                        msg.data ? msg.data : "(none)");
        goto out;
    }
    if (!opts)
        opts = &defaults;
    MC_CHECK_GOTO(strat->fn(task, topo, opts, &s, err), out, st);
    if ((st = mc_synth_check_memory(s, topo, opts->memory_limit, err)) != MC_OK) {
        mc_sched_free(s);
        goto out;
    }
    int nbad = mc_sched_validate(s, topo, &msg);
    if (nbad) {
        st = mc_err_set(err, MC_ERR_INTERNAL,
                        "strategy %s made a schedule with %d violation%s:\n%.*s", strategy, nbad,
                        nbad == 1 ? "" : "s", (int)(msg.len && msg.data[msg.len - 1] == '\n'
                                                         ? msg.len - 1 : msg.len),
                        msg.data ? msg.data : "");
        mc_sched_free(s);
        goto out;
    }
    *out = s;
out:
    mc_buf_free(&msg);
    return st;
}
