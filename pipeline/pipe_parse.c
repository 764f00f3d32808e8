/* The pipeline file (docs/pipeline.md): one statement per line, '#' comments. Stages are meshes
 * in the task-file notation and moves are task-file moves, read by layout/'s parser, so a pipeline
 * file reports the same column-precise errors as a task file, prefixed with its own name and
 * line. Each move joins the group of its (source stage, destination stage, direction); a group is
 * kept as a task of its own, ready for synthesis. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"

typedef struct parser {
    mc_pipe_t *p;
    mc_task_t *all;     /* every stage's mesh and every declared move: checks names and meshes */
    const char *name;
    int line;
    double (*flops)[2]; /* per stage: forward and backward FLOP, for times given in flop (the
                         * stage's time is -1 until the file's gpu-rate is known) */
    mc_err_t *err;
} parser_t;

static mc_status_t fail(parser_t *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static mc_status_t fail(parser_t *ps, const char *fmt, ...)
{
    char msg[sizeof(ps->err->msg)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return mc_err_set(ps->err, MC_ERR_PARSE, "%s:%d: %s", ps->name, ps->line, msg);
}

/* Prefixes the message layout/'s parser left in err with the file and line. */
static mc_status_t located(parser_t *ps)
{
    char msg[sizeof(ps->err->msg)];
    snprintf(msg, sizeof(msg), "%s", ps->err->msg);
    return fail(ps, "%s", msg);
}

/* Splits the last blank-separated word off s (in place); NULL when s holds fewer than two. */
static char *split_last(char *s)
{
    char *end = s + strlen(s);
    while (end > s && end[-1] != ' ' && end[-1] != '\t')
        end--;
    if (end == s)
        return NULL;
    char *word = end;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *end = '\0';
    return *word ? word : NULL;
}

static const struct {
    const char *suffix;
    double scale;   /* seconds per unit; 0 for flop */
} time_units[] = {{"flop", 0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"s", 1}};

/* "12ms", "0.5s", "350us", "3.1e12flop": *seconds, or *flop when in flop (*seconds then -1). */
static mc_status_t parse_time(parser_t *ps, const char *what, const char *text, double *seconds,
                              double *flop)
{
    size_t n = strlen(text);
    for (size_t u = 0; u < sizeof(time_units) / sizeof(time_units[0]); u++) {
        size_t k = strlen(time_units[u].suffix);
        if (n <= k || strcmp(text + n - k, time_units[u].suffix))
            continue;
        char num[64];
        double v;
        snprintf(num, sizeof(num), "%.*s", (int)(n - k), text);
        if (n - k >= sizeof(num) || mc_parse_double(num, &v) != 0 || v < 0)
            break;
        *seconds = time_units[u].scale > 0 ? v * time_units[u].scale : -1;
        *flop = time_units[u].scale > 0 ? 0 : v;
        return MC_OK;
    }
    return fail(ps, "expected the %s time as a number and a unit (s, ms, us, ns or flop), such as "
                "12ms or 3.1e12flop, got '%s'", what, text);
}

#define STAGE_SYNTAX "'stage NAME={AXIS:SIZE,...}@DEVICES forward TIME backward TIME'"

static mc_status_t parse_stage(parser_t *ps, char *rest)
{
    char *bwd = split_last(rest), *kb = bwd ? split_last(rest) : NULL;
    char *fwd = kb ? split_last(rest) : NULL, *kf = fwd ? split_last(rest) : NULL;
    if (!kf || strcmp(kf, "forward") || strcmp(kb, "backward"))
        return fail(ps, "expected " STAGE_SYNTAX);
    if (mc_task_add_mesh(ps->all, rest, ps->err) != MC_OK)
        return located(ps);
    const mc_mesh_t *m = &ps->all->meshes[ps->all->nmeshes - 1];
    for (int d = 0; d < m->ndevices; d++)
        for (int s = 0; s < ps->p->nstages; s++)
            if (mc_ints_contain(ps->all->meshes[s].devices, ps->all->meshes[s].ndevices,
                                m->devices[d]))
                return fail(ps, "GPU %d of stage %s is already in stage %s (line %d); expected "
                            "disjoint meshes", m->devices[d], m->name, ps->p->stages[s].name,
                            ps->p->stages[s].line);
    mc_pipe_t *p = ps->p;
    MC_GROW(p->stages, p->stage_cap, p->nstages + 1);
    ps->flops = mc_xrealloc(ps->flops, sizeof(*ps->flops) * (size_t)(p->nstages + 1));
    mc_pipe_stage_t *st = &p->stages[p->nstages];
    memset(st, 0, sizeof(*st));
    snprintf(st->name, sizeof(st->name), "%s", m->name);
    st->mesh_text = mc_xstrdup(rest);
    st->ngpus = m->ndevices;
    st->line = ps->line;
    p->nstages++;
    double *f = ps->flops[p->nstages - 1];
    if (parse_time(ps, "forward", fwd, &st->fwd_s, &f[0]) != MC_OK ||
        parse_time(ps, "backward", bwd, &st->bwd_s, &f[1]) != MC_OK)
        return MC_ERR_PARSE;
    return MC_OK;
}

int mc_pipe_group_dst(const mc_pipe_group_t *g, int k)
{
    return k == 0 ? g->dst : g->more[k - 1];
}

void mc_pipe_group_to(const mc_pipe_t *p, const mc_pipe_group_t *g, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int k = 0; k <= g->nmore && off < len; k++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s", k ? "," : "",
                                p->stages[mc_pipe_group_dst(g, k)].name);
}

/* Whether group g receives at exactly the n stages dsts (in any order). */
static int same_dsts(const mc_pipe_group_t *g, const int *dsts, int n)
{
    if (g->nmore + 1 != n)
        return 0;
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int k = 0; k <= g->nmore; k++)
            found |= mc_pipe_group_dst(g, k) == dsts[i];
        if (!found)
            return 0;
    }
    return 1;
}

/* The group from src to the n stages dsts (one, or a skip connection's several consumers),
 * created with their meshes when new. */
static mc_status_t group_for(parser_t *ps, int src, const int *dsts, int n, int backward,
                             mc_pipe_group_t **out)
{
    mc_pipe_t *p = ps->p;
    for (int g = 0; g < p->ngroups; g++)
        if (p->groups[g].src == src && same_dsts(&p->groups[g], dsts, n)) {
            *out = &p->groups[g];
            return MC_OK;
        }
    MC_GROW(p->groups, p->group_cap, p->ngroups + 1);
    mc_pipe_group_t *g = &p->groups[p->ngroups++];
    *g = (mc_pipe_group_t){.src = src, .dst = dsts[0], .nmore = n - 1, .backward = backward,
                           .task = mc_task_new(), .same_as = -1};
    memcpy(g->more, dsts + 1, sizeof(int) * (size_t)(n - 1));
    if (mc_task_add_mesh(g->task, p->stages[src].mesh_text, ps->err) != MC_OK)
        return located(ps);
    for (int k = 0; k < n; k++)
        if (mc_task_add_mesh(g->task, p->stages[dsts[k]].mesh_text, ps->err) != MC_OK)
            return located(ps);
    *out = g;
    return MC_OK;
}

/* The "MESH[SPECS]" that ends one side of a move, and its length. */
static const char *mesh_part(const char *side, size_t len, size_t *out_len)
{
    while (len && (side[len - 1] == ' ' || side[len - 1] == '\t'))
        len--;
    if (!len || side[len - 1] != ']')
        return NULL;
    size_t i = len - 1;
    int depth = 0;
    for (;; i--) {
        depth += side[i] == ']' ? 1 : side[i] == '[' ? -1 : 0;
        if (depth == 0 || i == 0)
            break;
    }
    while (i && (side[i - 1] == ' ' || side[i - 1] == '\t'))
        i--;
    while (i && side[i - 1] != ' ' && side[i - 1] != '\t' && side[i - 1] != ']')
        i--;
    *out_len = len - i;
    return side + i;
}

/* Consumer c of the destination side ("B[...], D[...]"): its text up to the next ',' outside
 * brackets, and its length (the parser has read the side, so it has consumer c). */
static const char *consumer_part(const char *side, int c, size_t *len)
{
    const char *end = side;
    for (int depth = 0; *end && (depth || *end != ','); end++) {
        depth += *end == '[' || *end == '(' || *end == '{';
        depth -= *end == ']' || *end == ')' || *end == '}';
    }
    if (c == 0 || !*end) {
        *len = (size_t)(end - side);
        return side;
    }
    return consumer_part(end + 1, c - 1, len);
}

/* The gradient of move mv (written as body, "SRC -> DST, ..." without its name) from its
 * consumer c: the same tensor from that consumer's layout back to the source layout (each
 * consumer's gradient is its own tensor; the producer adds them up). */
static char *reversed_move(const mc_tensor_move_t *mv, const char *body, int c)
{
    const char *arrow = strstr(body, "->");
    size_t sl = 0, dl = 0, cl = 0;
    const char *src = mesh_part(body, (size_t)(arrow - body), &sl);
    const char *part = consumer_part(arrow + 2, c, &cl);
    const char *dst = mesh_part(part, cl, &dl);
    mc_buf_t b = {0};
    mc_buf_printf(&b, "%s: %s[", mv->name, mc_dtype_name(mv->src.dtype));
    for (int k = 0; k < mv->src.ndims; k++)
        mc_buf_printf(&b, "%s%lld", k ? "," : "", (long long)mv->src.shape[k]);
    mc_buf_printf(&b, "] %.*s -> %.*s", (int)dl, dst, (int)sl, src);
    return b.data;
}

typedef enum { MOVE_FORWARD, MOVE_BACKWARD, MOVE_ACTIVATION } move_kind_t;

static mc_status_t add_to_group(parser_t *ps, int src, const int *dsts, int n, const char *text)
{
    mc_pipe_group_t *g = NULL;
    mc_status_t st = group_for(ps, src, dsts, n, src > dsts[0], &g);
    if (st == MC_OK && mc_task_add_move(g->task, text, ps->err) != MC_OK)
        st = located(ps);
    return st;
}

static mc_status_t parse_move(parser_t *ps, const char *rest, move_kind_t kind)
{
    if (mc_task_add_move(ps->all, rest, ps->err) != MC_OK)
        return located(ps);
    const mc_tensor_move_t *mv = &ps->all->tensors[ps->all->ntensors - 1];
    int src = mv->src.mesh, dsts[MC_MAX_CONSUMERS], n = mv->nmore + 1;
    for (int c = 0; c < n; c++) {
        int dst = dsts[c] = mc_tensor_consumer(mv, c)->mesh; /* ps->all: the stages' meshes */
        if (src == dst)
            return fail(ps, "tensor %s stays in stage %s; expected a move between two stages",
                        mv->name, ps->p->stages[src].name);
        if ((kind == MOVE_BACKWARD) != (src > dst))
            return fail(ps, "tensor %s goes from stage %s to stage %s; expected a %s move (%s)",
                        mv->name, ps->p->stages[src].name, ps->p->stages[dst].name,
                        kind == MOVE_BACKWARD ? "backward" : "forward",
                        kind == MOVE_BACKWARD ? "to an earlier stage" : "to a later stage");
    }
    /* Named explicitly, so that the group task keeps the file's name for it. */
    const char *colon = strchr(rest, ':'), *bracket = strchr(rest, '[');
    const char *body = colon && (!bracket || colon < bracket) ? colon + 1 : rest;
    char *named = mc_xasprintf("%s: %s", mv->name, body);
    mc_status_t st = add_to_group(ps, src, dsts, n, named);
    free(named);
    for (int c = 0; c < n && st == MC_OK && kind == MOVE_ACTIVATION; c++) {
        char *grad = reversed_move(mv, body, c);
        st = add_to_group(ps, dsts[c], &src, 1, grad);
        free(grad);
    }
    return st;
}

static mc_status_t parse_count(parser_t *ps, const char *text, const char *what, int64_t max,
                               int64_t *out)
{
    if (mc_parse_i64(text, out) != 0 || *out < 1 || *out > max)
        return fail(ps, "expected %s (1 to %lld), got '%s'", what, (long long)max, text);
    return MC_OK;
}

static mc_status_t parse_line(void *ctx, char *line, int lineno)
{
    parser_t *ps = ctx;
    ps->line = lineno;
    line = mc_strip_comment(line);
    if (!*line)
        return MC_OK;
    mc_pipe_t *p = ps->p;
    const char *rest;
    int64_t n;
    if ((rest = mc_line_keyword(line, "topology"))) {
        if (p->topo_path)
            return fail(ps, "expected one 'topology' line (the topology is already given)");
        p->topo_path = mc_xstrdup(rest);
        return MC_OK;
    }
    if ((rest = mc_line_keyword(line, "microbatches"))) {
        if (p->microbatches)
            return fail(ps, "expected one 'microbatches' line (the count is already given)");
        if (parse_count(ps, rest, "a micro-batch count", 1000000, &n) != MC_OK)
            return MC_ERR_PARSE;
        p->microbatches = (int)n;
        return MC_OK;
    }
    if ((rest = mc_line_keyword(line, "gpu-rate"))) {
        if (mc_parse_double(rest, &p->gpu_rate) != 0 || p->gpu_rate <= 0)
            return fail(ps, "expected the FLOP/s one GPU achieves, such as 125e12, got '%s'",
                        rest);
        return MC_OK;
    }
    if ((rest = mc_line_keyword(line, "stage"))) {
        if (ps->all->ntensors)
            return fail(ps, "expected every stage before the first move");
        return parse_stage(ps, (char *)rest);
    }
    static const struct {
        const char *kw;
        move_kind_t kind;
    } moves[] = {{"activation", MOVE_ACTIVATION}, {"forward", MOVE_FORWARD},
                 {"backward", MOVE_BACKWARD}};
    for (size_t k = 0; k < sizeof(moves) / sizeof(moves[0]); k++)
        if ((rest = mc_line_keyword(line, moves[k].kw)))
            return parse_move(ps, rest, moves[k].kind);
    return fail(ps, "expected 'topology', 'microbatches', 'gpu-rate', 'stage', 'activation', "
                "'forward' or 'backward', got '%.40s'", line);
}

/* Whole-file rules, checked once every line is read. */
static mc_status_t finish(parser_t *ps)
{
    mc_pipe_t *p = ps->p;
    if (!p->nstages)
        return mc_err_set(ps->err, MC_ERR_PARSE, "%s: expected at least one 'stage' line",
                          ps->name);
    if (!p->microbatches)
        return mc_err_set(ps->err, MC_ERR_PARSE, "%s: expected a 'microbatches N' line",
                          ps->name);
    /* Each step and transfer is a bar of the timeline, kept until the end. */
    int64_t items = ((int64_t)2 * p->nstages + p->ngroups) * p->microbatches;
    if (items > MC_PIPE_MAX_ITEMS)
        return mc_err_set(ps->err, MC_ERR_PARSE, "%s: %d stages, %d transfers and %d "
                          "micro-batches make %lld steps and transfers; expected at most %d",
                          ps->name, p->nstages, p->ngroups, p->microbatches, (long long)items,
                          MC_PIPE_MAX_ITEMS);
    for (int s = 0; s < p->nstages; s++) {
        mc_pipe_stage_t *st = &p->stages[s];
        if (st->fwd_s >= 0 && st->bwd_s >= 0)
            continue;
        if (p->gpu_rate <= 0)
            return mc_err_set(ps->err, MC_ERR_PARSE, "%s:%d: stage %s gives a time in flop; "
                              "expected a 'gpu-rate FLOPS' line", ps->name, st->line, st->name);
        double rate = p->gpu_rate * st->ngpus;
        if (st->fwd_s < 0)
            st->fwd_s = ps->flops[s][0] / rate;
        if (st->bwd_s < 0)
            st->bwd_s = ps->flops[s][1] / rate;
    }
    return MC_OK;
}

mc_status_t mc_pipe_parse_text(const char *text, const char *name, mc_pipe_t **out, mc_err_t *err)
{
    mc_err_t scratch = {0};
    parser_t ps = {.p = mc_xcalloc(1, sizeof(mc_pipe_t)), .all = mc_task_new(), .name = name,
                   .err = err ? err : &scratch};
    ps.p->name = mc_xstrdup(name);
    char *copy = mc_xstrdup(text);
    mc_status_t st = mc_parse_lines(copy, parse_line, &ps);
    if (st == MC_OK)
        st = finish(&ps);
    free(copy);
    free(ps.flops);
    mc_task_free(ps.all);
    if (st != MC_OK) {
        mc_pipe_free(ps.p);
        ps.p = NULL;
    }
    *out = ps.p;
    return st;
}

mc_status_t mc_pipe_load(const char *path, mc_pipe_t **out, mc_err_t *err)
{
    char *data = NULL;
    *out = NULL;
    mc_status_t st;
    MC_CHECK_GOTO(mc_read_text_file(path, &data, err), out, st);
    MC_CHECK_GOTO(mc_pipe_parse_text(data, path, out, err), out, st);
    const char *slash = strrchr(path, '/');
    if ((*out)->topo_path && (*out)->topo_path[0] != '/' && slash) {
        char *joined = mc_xasprintf("%.*s/%s", (int)(slash - path), path, (*out)->topo_path);
        free((*out)->topo_path);
        (*out)->topo_path = joined;
    }
out:
    free(data);
    return st;
}

void mc_pipe_free(mc_pipe_t *p)
{
    if (!p)
        return;
    for (int s = 0; s < p->nstages; s++)
        free(p->stages[s].mesh_text);
    for (int g = 0; g < p->ngroups; g++) {
        mc_task_free(p->groups[g].task);
        free(p->groups[g].links);
    }
    free(p->stages);
    free(p->groups);
    free(p->topo_path);
    free(p->name);
    free(p);
}
