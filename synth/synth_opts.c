/* Setting synthesis options from text, so that every command that runs strategies ('synth',
 * 'bench') accepts the same option values with the same messages. */
#include <stdlib.h>
#include <string.h>

#include "synth/synth.h"

/* A byte count with an optional 1024-based suffix (K, M, G, T, with or without "iB"). */
static int parse_bytes(const char *text, uint64_t *out)
{
    static const char suffixes[] = "KMGT";
    char *num = mc_xstrdup(text);
    size_t len = strlen(num);
    uint64_t mult = 1, v;
    if (len > 2 && !strcmp(num + len - 2, "iB"))
        num[len -= 2] = '\0';
    const char *p = len ? strchr(suffixes, num[len - 1]) : NULL;
    if (p) {
        for (const char *q = suffixes; q <= p; q++)
            mult *= 1024;
        num[len - 1] = '\0';
    }
    int rc = mc_parse_u64(num, &v);
    free(num);
    if (rc || (v && mult > UINT64_MAX / v))
        return -1;
    *out = v * mult;
    return 0;
}

double mc_synth_budget_s(const mc_synth_opts_t *o)
{
    if (o->budget_s > 0)
        return o->budget_s;
    return o->rlimit ? MC_SYNTH_NO_BUDGET_S : MC_SYNTH_BUDGET_DEFAULT_S;
}

mc_status_t mc_synth_opts_set(mc_synth_opts_t *o, const char *key, const char *value,
                              mc_err_t *err)
{
    if (!strcmp(key, "budget")) {
        if (mc_parse_double(value, &o->budget_s) || !(o->budget_s > 0))
            return mc_err_set(err, MC_ERR_USAGE, "--budget: expected seconds > 0, got '%s'",
                              value);
    } else if (!strcmp(key, "rlimit")) {
        if (mc_parse_u64(value, &o->rlimit))
            return mc_err_set(err, MC_ERR_USAGE, "--rlimit: expected an integer, got '%s'", value);
    } else if (!strcmp(key, "memory-limit")) {
        if (parse_bytes(value, &o->memory_limit))
            return mc_err_set(err, MC_ERR_USAGE, "--memory-limit: expected bytes (suffix K, M, G, "
                              "T), got '%s'", value);
    } else if (!strcmp(key, "chunk")) {
        if (parse_bytes(value, &o->chunk_bytes) || !o->chunk_bytes)
            return mc_err_set(err, MC_ERR_USAGE, "--chunk: expected bytes > 0 (suffix K, M, G, "
                              "T), got '%s'", value);
    } else if (!strcmp(key, "in-flight")) {
        int64_t n;
        if (mc_parse_i64(value, &n) || n < 1 || n > MC_SCHED_MAX_INFLIGHT)
            return mc_err_set(err, MC_ERR_USAGE, "--in-flight: expected chunks in flight between 1 "
                              "and %d, got '%s'", MC_SCHED_MAX_INFLIGHT, value);
        o->inflight = (int)n;
    } else if (!strcmp(key, "sim-work")) {
        uint64_t w;
        if (mc_parse_u64(value, &w) || w > INT64_MAX)
            return mc_err_set(err, MC_ERR_USAGE, "--sim-work: expected an integer, got '%s'",
                              value);
        o->sim_work = (int64_t)w;
    } else {
        return mc_err_set(err, MC_ERR_USAGE, "unknown synthesis option '%s'", key);
    }
    return MC_OK;
}
