/* Helpers shared by the subcommands: error printing, usage errors, JSON output, topology
 * loading and its option, the synthesis options, and the check that emit and run make before
 * they act on a schedule. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "sched/sched.h"

int cli_fail(const mc_err_t *err)
{
    fprintf(stderr, "meshcast: %s\n", err->msg[0] ? err->msg : mc_status_str(err->status));
    return mc_status_exit_code(err->status);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "meshcast %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nsee 'meshcast %s --help'\n", cmd);
    return MC_EXIT_USAGE;
}

int cli_wants_help(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            return 0;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return 1;
    }
    return 0;
}

void cli_print_json(json_t *o)
{
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    printf("%s\n", text);
    free(text);
    json_decref(o);
}

/* The topology options of this process: one command runs per process. */
static mc_topo_load_opts_t load_opts = MC_TOPO_LOAD_OPTS_DEFAULT;

/* A NIC port's speed one may assume, Gb/s: NCCL reads speeds up to 10 Tb/s. */
#define CLI_MAX_NIC_GBPS 10000

int cli_topo_option(const char *cmd, int opt, const char *arg)
{
    int64_t v;
    if (opt == CLI_OPT_ASSUME_GPU) {
        if (mc_topo_gpu_model(arg, &load_opts.assume_gpu) != 0)
            return cli_usage_error(cmd, "--assume-gpu expects a GPU model or its PCI device id, "
                                   "one of: %s; got '%s'", mc_topo_gpu_models(), arg);
        return MC_EXIT_OK;
    }
    if (opt == CLI_OPT_ASSUME_NIC) {
        if (mc_parse_i64(arg, &v) != 0 || v < 1 || v > CLI_MAX_NIC_GBPS)
            return cli_usage_error(cmd, "--assume-nic-gbps expects a speed in Gb/s from 1 to %d, "
                                   "got '%s'", CLI_MAX_NIC_GBPS, arg);
        load_opts.assume_nic_mbps = (int)v * 1000;
        return MC_EXIT_OK;
    }
    if (mc_parse_i64(arg, &v) != 0 || v < 0 || v > MC_TOPO_MAX_ASSUMED_NVLINKS)
        return cli_usage_error(cmd, "--assume-nvlink expects a number of NVLinks from 0 to %d, "
                               "got '%s'", MC_TOPO_MAX_ASSUMED_NVLINKS, arg);
    load_opts.assume_nvlink = (int)v;
    return MC_EXIT_OK;
}

int cli_synth_option(const char *cmd, mc_synth_opts_t *opts, const char *name, const char *arg)
{
    mc_err_t err = {0};
    if (mc_synth_opts_set(opts, name, arg, &err) != MC_OK)
        return cli_usage_error(cmd, "%s", err.msg);
    return MC_EXIT_OK;
}

mc_status_t cli_load_topo(const char *path, int quiet, mc_topo_t **out, mc_err_t *err)
{
    mc_status_t st = mc_topo_load_with(path, &load_opts, out, err);
    if (st == MC_OK && !quiet)
        for (int i = 0; i < (*out)->nwarnings; i++)
            fprintf(stderr, "meshcast: warning: %s\n", (*out)->warnings[i]);
    return st;
}

void cli_warn_inflight(const mc_sched_t *s, const char *path)
{
    if (mc_sched_inflight(s) > 1)
        fprintf(stderr, "meshcast: warning: %s keeps up to %d chunks in flight per edge, as NCCL's "
                "collective kernels do; meshcast's runtime sends one at a time, so it runs slower "
                "than meshcast sim times it\n", path, mc_sched_inflight(s));
}

mc_status_t cli_check_sched(const mc_sched_t *s, const mc_topo_t *topo, const char *path,
                            int force, mc_err_t *err)
{
    mc_buf_t out = {0};
    cli_warn_inflight(s, path);
    if (s->topo_fingerprint != topo->fingerprint) /* loaded at all only with --force */
        fprintf(stderr, "meshcast: warning: %s was made for topology %016" PRIx64 ", not %s (%016"
                PRIx64 "); checked link by link because of --force\n", path, s->topo_fingerprint,
                topo->source, topo->fingerprint);
    int nviol = mc_sched_validate(s, topo, &out);
    if (nviol && out.len)
        fputs(out.data, stderr);
    mc_buf_free(&out);
    if (!nviol)
        return MC_OK;
    if (force) {
        fprintf(stderr, "meshcast: warning: %s: %d violation%s (meshcast validate's rules); going "
                "on because of --force\n", path, nviol, nviol == 1 ? "" : "s");
        return MC_OK;
    }
    return mc_err_set(err, MC_ERR_INVALID, "%s: %d violation%s (meshcast validate's rules, listed "
                      "above); refusing it (--force goes on anyway)", path, nviol,
                      nviol == 1 ? "" : "s");
}
