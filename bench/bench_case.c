/* Case files (docs/bench-format.md): directives 'suite', 'topology', 'default' and 'case', and
 * between cases the task-file lines ('mesh', 'move') of the current case. Also lists the case
 * files of a folder and matches case names against --cases patterns. */
#include <dirent.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

void mc_bench_suite_free(mc_bench_suite_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->ncases; i++) {
        free(s->cases[i].name);
        free(s->cases[i].desc);
        free(s->cases[i].topo_path);
        free(s->cases[i].task_text);
        free(s->cases[i].op);
        free(s->cases[i].via);
        free(s->cases[i].source);
    }
    free(s->cases);
    free(s->name);
    free(s->path);
    free(s);
}

/* The directive keyword of a line ("" for none) and what follows it, blanks trimmed. */
static const char *directive(char *line, char **rest)
{
    static const char *const kws[] = {"suite", "topology", "default", "case", "measured"};
    for (size_t i = 0; i < sizeof(kws) / sizeof(kws[0]); i++) {
        size_t n = strlen(kws[i]);
        if (!strncmp(line, kws[i], n) && (line[n] == ' ' || line[n] == '\t' || !line[n])) {
            char *r = line + n;
            while (*r == ' ' || *r == '\t')
                r++;
            *rest = r;
            return kws[i];
        }
    }
    *rest = line;
    return "";
}

/* A path in a case file is relative to the file's folder. */
static char *resolve(const char *file, const char *path)
{
    const char *slash = strrchr(file, '/');
    if (path[0] == '/' || !slash)
        return mc_xstrdup(path);
    return mc_xasprintf("%.*s/%s", (int)(slash - file), file, path);
}

typedef struct case_parse {
    mc_bench_suite_t *s;
    const char *path;
    char *topo;          /* current topology, resolved */
    mc_buf_t text;       /* task text of the open case */
    int text_lines;      /* lines already in text (blank or not) */
} case_parse_t;

/* Appends line `lineno` (1-based) to the open case's text, padding with blank lines. */
static void case_append(case_parse_t *p, int lineno, const char *line)
{
    while (p->text_lines < lineno - 1) {
        mc_buf_append(&p->text, "\n", 1);
        p->text_lines++;
    }
    mc_buf_printf(&p->text, "%s\n", line);
    p->text_lines++;
}

static void case_close(case_parse_t *p)
{
    if (p->s->ncases == 0)
        return;
    mc_bench_case_t *c = &p->s->cases[p->s->ncases - 1];
    if (!c->task_text) {
        c->task_text = p->text.data ? p->text.data : mc_xstrdup("");
        p->text = (mc_buf_t){0};
    }
}

static mc_status_t case_open(case_parse_t *p, char *rest, int lineno, mc_err_t *err)
{
    if (!*rest)
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: expected 'case NAME [description]'", p->path,
                          lineno);
    if (!p->topo)
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: expected a 'topology FILE' line before the "
                          "first case", p->path, lineno);
    size_t n = strcspn(rest, " \t");
    char *desc = rest + n;
    while (*desc == ' ' || *desc == '\t')
        desc++;
    for (int i = 0; i < p->s->ncases; i++)
        if (strlen(p->s->cases[i].name) == n && !strncmp(p->s->cases[i].name, rest, n))
            return mc_err_set(err, MC_ERR_PARSE, "%s:%d: case '%.*s' already defined on line %d",
                              p->path, lineno, (int)n, rest, p->s->cases[i].line);
    case_close(p);
    MC_GROW(p->s->cases, p->s->case_cap, p->s->ncases + 1);
    mc_bench_case_t *c = &p->s->cases[p->s->ncases++];
    *c = (mc_bench_case_t){.name = mc_xasprintf("%.*s", (int)n, rest), .desc = mc_xstrdup(desc),
                           .topo_path = mc_xstrdup(p->topo), .line = lineno};
    p->text_lines = 0;
    return MC_OK;
}

/* 'measured OP GBPS STRATEGY SOURCE' inside a case: a published nccl-tests figure and the strategy
 * that writes the same operation as a schedule. */
static mc_status_t case_measured(case_parse_t *p, char *rest, int lineno, mc_err_t *err)
{
    static const char *const ops[] = {"sendrecv", "broadcast", "all_gather"};
    char op[32], via[64];
    double gbps;
    int used = 0, known = 0;
    mc_bench_case_t *c = p->s->ncases ? &p->s->cases[p->s->ncases - 1] : NULL;
    if (!c || c->task_text)
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: 'measured' belongs inside a case", p->path,
                          lineno);
    if (c->op)
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: case '%s' already has a 'measured' line",
                          p->path, lineno, c->name);
    if (sscanf(rest, "%31s %lf %63s %n", op, &gbps, via, &used) != 3 || !rest[used] ||
        !(gbps > 0))
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: expected 'measured OP GBPS STRATEGY SOURCE' "
                          "(GBPS a positive bus bandwidth, SOURCE where it is published)", p->path,
                          lineno);
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        known |= !strcmp(op, ops[i]);
    if (!known)
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: unknown operation '%s': expected sendrecv, "
                          "broadcast or all_gather", p->path, lineno, op);
    if (!mc_synth_find(via))
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: unknown strategy '%s'", p->path, lineno, via);
    c->op = mc_xstrdup(op);
    c->via = mc_xstrdup(via);
    c->source = mc_xstrdup(rest + used);
    c->measured_gbps = gbps;
    return MC_OK;
}

static mc_status_t parse_line(case_parse_t *p, char *raw, int lineno, mc_err_t *err)
{
    char *line = mc_strip_comment(raw), *rest;
    const char *kw = directive(line, &rest);
    if (!*line)
        return MC_OK;
    if (!strcmp(kw, "case"))
        return case_open(p, rest, lineno, err);
    if (!strcmp(kw, "measured"))
        return case_measured(p, rest, lineno, err);
    if (!strcmp(kw, "suite") || !strcmp(kw, "topology") || !strcmp(kw, "default")) {
        if (!*rest)
            return mc_err_set(err, MC_ERR_PARSE, "%s:%d: expected a value after '%s'", p->path,
                              lineno, kw);
        if (!strcmp(kw, "suite")) {
            free(p->s->name);
            p->s->name = mc_xstrdup(rest);
        } else if (!strcmp(kw, "topology")) {
            free(p->topo);
            p->topo = resolve(p->path, rest);
        } else if (!strcmp(rest, "yes") || !strcmp(rest, "no")) {
            p->s->default_run = !strcmp(rest, "yes");
        } else {
            return mc_err_set(err, MC_ERR_PARSE, "%s:%d: expected 'default yes' or 'default no'",
                              p->path, lineno);
        }
        return MC_OK;
    }
    if (p->s->ncases == 0 || p->s->cases[p->s->ncases - 1].task_text)
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: expected a directive (suite, topology, "
                          "default, case) before task lines, got '%.40s'", p->path, lineno, line);
    case_append(p, lineno, line);
    return MC_OK;
}

/* The file name without folder and ".cases". */
static char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 6 && !strcmp(b + n - 6, ".cases"))
        n -= 6;
    return mc_xasprintf("%.*s", (int)n, b);
}

mc_status_t mc_bench_suite_load(const char *path, mc_bench_suite_t **out, mc_err_t *err)
{
    char *data = NULL;
    size_t len;
    mc_status_t st;
    case_parse_t p = {.path = path};
    p.s = mc_xcalloc(1, sizeof(*p.s));
    p.s->path = mc_xstrdup(path);
    p.s->default_run = 1;
    MC_CHECK_GOTO(mc_read_file(path, &data, &len, err), out, st);
    int lineno = 1;
    for (char *line = data; line; lineno++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        /* Topology changes after a case apply from the next case on: close the open one first. */
        char *peek;
        const char *kw = directive(mc_strip_comment(line), &peek);
        if (*kw && strcmp(kw, "suite") && strcmp(kw, "measured"))
            case_close(&p);
        MC_CHECK_GOTO(parse_line(&p, line, lineno, err), out, st);
        line = nl ? nl + 1 : NULL;
    }
    case_close(&p);
    if (p.s->ncases == 0) {
        st = mc_err_set(err, MC_ERR_PARSE, "%s: expected at least one 'case NAME' line", path);
        goto out;
    }
    for (int i = 0; i < p.s->ncases; i++)
        if (!p.s->cases[i].task_text[strspn(p.s->cases[i].task_text, " \t\n")]) {
            st = mc_err_set(err, MC_ERR_PARSE, "%s:%d: case '%s' has no 'mesh'/'move' lines", path,
                            p.s->cases[i].line, p.s->cases[i].name);
            goto out;
        }
    if (!p.s->name)
        p.s->name = base_name(path);
    *out = p.s;
    p.s = NULL;
out:
    mc_bench_suite_free(p.s);
    free(p.topo);
    mc_buf_free(&p.text);
    free(data);
    return st;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

mc_status_t mc_bench_list(const char *dir, char ***paths, int *n, mc_err_t *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return mc_err_set(err, MC_ERR_IO, "%s: cannot open the benchmark folder", dir);
    char **list = NULL;
    int cnt = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= 6 || strcmp(e->d_name + len - 6, ".cases") || e->d_name[0] == '.')
            continue;
        MC_GROW(list, cap, cnt + 1);
        list[cnt++] = mc_xasprintf("%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (cnt)
        mc_sort(list, (size_t)cnt, sizeof(*list), cmp_str);
    *paths = list;
    *n = cnt;
    return MC_OK;
}

int mc_bench_match(const char *patterns, const char *name)
{
    if (!patterns)
        return 1;
    char *copy = mc_xstrdup(patterns), *save = NULL;
    int hit = 0;
    for (char *p = strtok_r(copy, ",", &save); p && !hit; p = strtok_r(NULL, ",", &save))
        hit = fnmatch(p, name, 0) == 0;
    free(copy);
    return hit;
}
