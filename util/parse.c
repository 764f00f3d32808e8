/* Strict number parsing, comment stripping, and human-readable formatting of sizes and times. */
#include "util/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int mc_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int mc_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int mc_parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

char *mc_strip_comment(char *line)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    size_t n = strlen(line);
    while (n && (line[n - 1] == ' ' || line[n - 1] == '\t' || line[n - 1] == '\r'))
        line[--n] = '\0';
    while (*line == ' ' || *line == '\t')
        line++;
    return line;
}

mc_status_t mc_parse_lines(char *text, mc_line_fn fn, void *ctx)
{
    mc_status_t st = MC_OK;
    int lineno = 1;
    for (char *line = text; line && st == MC_OK; lineno++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        st = fn(ctx, line, lineno);
        line = nl ? nl + 1 : NULL;
    }
    return st;
}

const char *mc_line_keyword(const char *line, const char *kw)
{
    size_t n = strlen(kw);
    if (strncmp(line, kw, n) || (line[n] != ' ' && line[n] != '\t'))
        return NULL;
    for (line += n; *line == ' ' || *line == '\t'; line++)
        ;
    return line;
}

const char *mc_fmt_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.2f %s", v, units[u]);
    return buf;
}

const char *mc_fmt_seconds(double s, char *buf, size_t len)
{
    if (s < 1e-3)
        snprintf(buf, len, "%.1f us", s * 1e6);
    else if (s < 1.0)
        snprintf(buf, len, "%.2f ms", s * 1e3);
    else if (s < 1e5)
        snprintf(buf, len, "%.3f s", s);
    else /* beyond a day the digits mean nothing, and a fixed format would not fit buf */
        snprintf(buf, len, "%.3g s", s);
    return buf;
}

double mc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
