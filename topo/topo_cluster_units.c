/* Attribute values of cluster XML with units: bandwidths ("400Gb/s", "50 GB/s"), latencies
 * ("1us"), oversubscription ratios ("2:1") and bounded counts. Every unit is decimal, as in NCCL
 * and nccl-tests: 1 GB/s = 1e9 bytes/s, 1 Gb/s = 1e9 bits/s. */
#include <libxml/tree.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "topo/topo_bounds.h"
#include "topo/topo_cluster.h"

typedef struct unit {
    const char *name;
    double scale; /* to bytes/s or seconds */
} unit_t;

static const unit_t bw_units[] = {
    {"kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8}, {"Gb/s", 1e9 / 8}, {"Tb/s", 1e12 / 8},
    {"kbps", 1e3 / 8}, {"Mbps", 1e6 / 8}, {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8},
    {"kB/s", 1e3},     {"MB/s", 1e6},     {"GB/s", 1e9},     {"TB/s", 1e12},
    {NULL, 0},
};

static const unit_t time_units[] = {
    {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}, {NULL, 0},
};

static void unit_list(const unit_t *units, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const unit_t *u = units; u->name && used < len; u++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", u->name);
}

/* Splits "12.5 Gb/s" into the number and the unit that follows (spaces allowed between). */
static int parse_with_unit(const char *s, const unit_t *units, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v))
        return -1;
    while (*end == ' ')
        end++;
    for (const unit_t *u = units; u->name; u++) {
        if (!strcmp(end, u->name)) {
            *out = v * u->scale;
            return 0;
        }
    }
    return -1;
}

/* The attribute's value, or NULL when absent; the caller xmlFree()s it. */
static char *attr(xmlNodePtr node, const char *name)
{
    return (char *)xmlGetProp(node, BAD_CAST name);
}

static mc_status_t bad_attr(xmlNodePtr node, const char *name, const char *value,
                            const char *path, const char *expected, mc_err_t *err)
{
    return mc_err_set(err, MC_ERR_INVALID, "%s:%ld: <%s %s=\"%s\">: expected %s", path,
                      xmlGetLineNo(node), (const char *)node->name, name, value, expected);
}

static mc_status_t attr_quantity(xmlNodePtr node, const char *name, const char *path,
                                 const unit_t *units, const char *what, int zero_ok, double *out,
                                 mc_err_t *err)
{
    char *s = attr(node, name);
    if (!s)
        return MC_OK;
    mc_status_t st = MC_OK;
    double v;
    char list[160], expected[256];
    if (parse_with_unit(s, units, &v)) {
        unit_list(units, list, sizeof list);
        snprintf(expected, sizeof expected, "a %s: a number and one of the units %s", what, list);
        st = bad_attr(node, name, s, path, expected, err);
    } else if (v < 0 || (!zero_ok && v == 0)) {
        snprintf(expected, sizeof expected, "a %s %s", what, zero_ok ? ">= 0" : "> 0");
        st = bad_attr(node, name, s, path, expected, err);
    } else if (mc_topo_quantity_check(units == bw_units ? MC_QTY_BANDWIDTH : MC_QTY_LATENCY, v,
                                      expected, sizeof expected)) {
        st = bad_attr(node, name, s, path, expected, err);
    } else {
        *out = v;
    }
    xmlFree(s);
    return st;
}

mc_status_t mc_cluster_attr_bw(xmlNodePtr node, const char *name, const char *path, double *out,
                               mc_err_t *err)
{
    return attr_quantity(node, name, path, bw_units, "bandwidth", 0, out, err);
}

mc_status_t mc_cluster_attr_latency(xmlNodePtr node, const char *name, const char *path,
                                    double *out, mc_err_t *err)
{
    return attr_quantity(node, name, path, time_units, "latency", 1, out, err);
}

mc_status_t mc_cluster_attr_ratio(xmlNodePtr node, const char *name, const char *path,
                                  double *out, mc_err_t *err)
{
    char *s = attr(node, name);
    if (!s)
        return MC_OK;
    mc_status_t st = MC_OK;
    char *colon = strchr(s, ':');
    double num, den = 1.0;
    if (colon)
        *colon = '\0';
    char expected[96] = "a ratio of positive numbers such as \"2:1\" or \"2\"";
    if (mc_parse_double(s, &num) || (colon && mc_parse_double(colon + 1, &den)) || !(num > 0) ||
        !(den > 0) || mc_topo_quantity_check(MC_QTY_RATIO, num / den, expected, sizeof expected)) {
        if (colon)
            *colon = ':';
        st = bad_attr(node, name, s, path, expected, err);
    } else {
        *out = num / den;
    }
    xmlFree(s);
    return st;
}

mc_status_t mc_cluster_attr_count(xmlNodePtr node, const char *name, const char *path,
                                  int64_t max, int64_t *out, mc_err_t *err)
{
    char *s = attr(node, name);
    if (!s)
        return MC_OK;
    mc_status_t st = MC_OK;
    /* Decimal only: the schema's positiveInteger allows leading zeros, which strtoll's base 0
     * would read as octal. */
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > max) {
        char expected[96];
        snprintf(expected, sizeof expected, "a whole number from 1 to %lld", (long long)max);
        st = bad_attr(node, name, s, path, expected, err);
    } else {
        *out = v;
    }
    xmlFree(s);
    return st;
}
