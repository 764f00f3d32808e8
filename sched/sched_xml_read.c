/* Reads a schedule file: parses it without network or entities, validates it against the built-in
 * schema, rebuilds the task from its text, checks that the task still splits into the pieces the
 * file names, and resolves every route from node names to this topology's link ids. A link this
 * topology lacks is not a read error: it becomes a note that validate reports as a violation, so
 * that --force can check a schedule made for other hardware link by link. */
#include <inttypes.h>
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_internal.h"
#include "util/xml.h"

/* Node names sorted for lookup, and each node's outgoing links. */
typedef struct name_index {
    const mc_topo_t *topo;
    int *by_name;   /* node ids sorted by name */
    int *out_off;   /* per node: slice of out_link */
    int *out_link;
} name_index_t;

typedef struct reader {
    const char *name;
    const mc_topo_t *topo;
    mc_sched_t *s;
    name_index_t idx;
    mc_err_t *err;
    int force, nphases;   /* the phases read so far */
    int compact;          /* instances kept as they are (mc_sched_load_compact) */
    int *tmpl_k, *tmpl_tree, ntmpl, tmpl_cap, tmpl_tree_cap; /* the trees with template="" */
} reader_t;

static const mc_topo_t *cmp_topo; /* qsort has no context argument in C11 */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(cmp_topo->nodes[*(const int *)a].name, cmp_topo->nodes[*(const int *)b].name);
}

static void index_build(name_index_t *x, const mc_topo_t *t)
{
    x->topo = t;
    x->by_name = mc_xmalloc(sizeof(int) * (size_t)(t->nnodes + 1));
    for (int i = 0; i < t->nnodes; i++)
        x->by_name[i] = i;
    cmp_topo = t;
    mc_sort(x->by_name, (size_t)t->nnodes, sizeof(int), cmp_names);
    x->out_off = mc_xcalloc((size_t)t->nnodes + 1, sizeof(int));
    x->out_link = mc_xmalloc(sizeof(int) * (size_t)(t->nlinks + 1));
    for (int l = 0; l < t->nlinks; l++)
        x->out_off[t->links[l].src + 1]++;
    for (int i = 0; i < t->nnodes; i++)
        x->out_off[i + 1] += x->out_off[i];
    int *fill = mc_xmalloc(sizeof(int) * (size_t)(t->nnodes + 1));
    memcpy(fill, x->out_off, sizeof(int) * (size_t)t->nnodes);
    for (int l = 0; l < t->nlinks; l++)
        x->out_link[fill[t->links[l].src]++] = l;
    free(fill);
}

static void index_free(name_index_t *x)
{
    free(x->by_name);
    free(x->out_off);
    free(x->out_link);
}

static int index_node(const name_index_t *x, const char *name)
{
    int lo = 0, hi = x->topo->nnodes;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(x->topo->nodes[x->by_name[mid]].name, name);
        if (c == 0)
            return x->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

static int index_link(const name_index_t *x, int src, int dst)
{
    for (int j = x->out_off[src]; j < x->out_off[src + 1]; j++)
        if (x->topo->links[x->out_link[j]].dst == dst)
            return x->out_link[j];
    return -1;
}

static int line_of(xmlNodePtr n)
{
    return (int)xmlGetLineNo(n);
}

static int is_elem(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && !strcmp((const char *)n->name, name);
}

/* The attribute's value (caller frees with free()), or NULL when absent. */
static char *attr(xmlNodePtr n, const char *name)
{
    xmlChar *v = xmlGetProp(n, BAD_CAST name);
    if (!v)
        return NULL;
    char *s = mc_xstrdup((const char *)v);
    xmlFree(v);
    return s;
}

static mc_status_t attr_u64(reader_t *r, xmlNodePtr n, const char *name, uint64_t *out)
{
    char *v = attr(n, name);
    int bad = !v || mc_parse_u64(v, out) != 0;
    free(v);
    if (bad)
        return mc_err_set(r->err, MC_ERR_PARSE, "%s:%d: expected a byte count in %s=\"\"", r->name,
                          line_of(n), name);
    return MC_OK;
}

/* An integer attribute in [lo, hi]. */
static mc_status_t attr_int(reader_t *r, xmlNodePtr n, const char *name, int lo, int hi, int *out)
{
    char *v = attr(n, name);
    int64_t x = 0;
    int bad = !v || mc_parse_i64(v, &x) != 0 || x < lo || x > hi;
    free(v);
    if (bad)
        return mc_err_set(r->err, MC_ERR_INVALID, "%s:%d: expected %s between %d and %d", r->name,
                          line_of(n), name, lo, hi);
    *out = (int)x;
    return MC_OK;
}

static void add_note(mc_sched_t *s, char *note)
{
    MC_GROW(s->notes, s->note_cap, s->nnotes + 1);
    s->notes[s->nnotes++] = note;
}

/* Resolves the route "NAME NAME ..." into link ids; missing nodes or links become notes. */
static void read_route(reader_t *r, xmlNodePtr n, const char *route, mc_route_t *rt, int ti)
{
    char *copy = mc_xstrdup(route), *save = NULL;
    int prev = -1;
    const char *prev_name = NULL;
    rt->nlinks = 0;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        int node = index_node(&r->idx, tok);
        if (prev_name) {
            int l = prev >= 0 && node >= 0 ? index_link(&r->idx, prev, node) : -1;
            if (l < 0)
                add_note(r->s, mc_xasprintf("%s:%d: tree %d, edge %d -> %d: link %s -> %s does not "
                                            "exist on this topology",
                                            r->name, line_of(n), ti, rt->src_gpu, rt->dst_gpu,
                                            prev_name, tok));
            if (rt->nlinks < MC_ROUTE_MAX_LINKS)
                rt->links[rt->nlinks] = l;
            rt->nlinks++;
        }
        prev = node;
        prev_name = tok;
    }
    if (rt->nlinks > MC_ROUTE_MAX_LINKS) {
        add_note(r->s, mc_xasprintf("%s:%d: tree %d: a route of %d links (at most %d)", r->name,
                                    line_of(n), ti, rt->nlinks, MC_ROUTE_MAX_LINKS));
        rt->nlinks = MC_ROUTE_MAX_LINKS;
    }
    free(copy);
}

static mc_status_t read_edge(reader_t *r, xmlNodePtr n, int ti)
{
    mc_status_t st;
    int maxg = r->topo->ngpus - 1;
    mc_route_t rt = {.via_gpu = -1};
    MC_CHECK_GOTO(attr_int(r, n, "parent", 0, maxg, &rt.src_gpu), out, st);
    MC_CHECK_GOTO(attr_int(r, n, "child", 0, maxg, &rt.dst_gpu), out, st);
    char *via = attr(n, "via");
    if (via) {
        free(via);
        MC_CHECK_GOTO(attr_int(r, n, "via", 0, maxg, &rt.via_gpu), out, st);
    }
    char *route = attr(n, "route");
    read_route(r, n, route ? route : "", &rt, ti);
    free(route);
    st = mc_sched_add_edge_route(r->s, ti, &rt, r->err);
out:
    return st;
}

static mc_status_t read_tree(reader_t *r, xmlNodePtr n, int phase)
{
    mc_status_t st;
    int piece, root, nchunks, inflight = 1, ramp = 0;
    uint64_t offset, bytes;
    MC_CHECK_GOTO(attr_int(r, n, "piece", 0, r->s->task->npieces - 1, &piece), out, st);
    MC_CHECK_GOTO(attr_u64(r, n, "offset", &offset), out, st);
    MC_CHECK_GOTO(attr_u64(r, n, "bytes", &bytes), out, st);
    MC_CHECK_GOTO(attr_int(r, n, "root", 0, r->topo->ngpus - 1, &root), out, st);
    MC_CHECK_GOTO(attr_int(r, n, "chunks", 1, MC_SCHED_MAX_CHUNKS, &nchunks), out, st);
    if (xmlHasProp(n, BAD_CAST "inflight"))
        MC_CHECK_GOTO(attr_int(r, n, "inflight", 1, MC_SCHED_MAX_INFLIGHT, &inflight), out, st);
    if (xmlHasProp(n, BAD_CAST "ramp"))
        MC_CHECK_GOTO(attr_int(r, n, "ramp", 0, MC_SCHED_MAX_RAMP, &ramp), out, st);
    int ti = mc_sched_add_tree(r->s, piece, offset, bytes, root, phase, nchunks);
    r->s->trees[ti].inflight = inflight;
    r->s->trees[ti].ramp = ramp;
    char *rate = attr(n, "rate");
    int bad = rate && (mc_parse_double(rate, &r->s->trees[ti].rate) != 0 || !(r->s->trees[ti].rate > 0));
    free(rate);
    if (bad) {
        st = mc_err_set(r->err, MC_ERR_PARSE, "%s:%d: expected a positive rate in bytes/s",
                        r->name, line_of(n));
        goto out;
    }
    for (xmlNodePtr c = n->children; c; c = c->next)
        if (is_elem(c, "edge"))
            MC_CHECK_GOTO(read_edge(r, c, ti), out, st);
out:
    return st;
}

/* The <pieces> list must be the task's split: a schedule made by another version of the split
 * would send the wrong boxes. */
static mc_status_t check_pieces(reader_t *r, xmlNodePtr n)
{
    mc_status_t st = MC_OK;
    const mc_task_t *task = r->s->task;
    int i = 0;
    for (xmlNodePtr c = n->children; c; c = c->next) {
        if (!is_elem(c, "piece"))
            continue;
        if (i >= task->npieces)
            return mc_err_set(r->err, MC_ERR_INVALID, "%s:%d: the task splits into %d pieces, the "
                              "schedule lists more", r->name, line_of(c), task->npieces);
        const mc_piece_t *p = &task->pieces[i];
        mc_buf_t want = {0};
        mc_buf_printf(&want, "%d %d ", i, p->tensor);
        for (int d = 0; d < task->tensors[p->tensor].src.ndims; d++)
            mc_buf_printf(&want, "%s%" PRId64 ":%" PRId64, d ? "," : "", p->box.lo[d], p->box.hi[d]);
        mc_buf_printf(&want, " %" PRIu64, p->bytes);
        char *pn = attr(c, "n"), *pt = attr(c, "tensor"), *pb = attr(c, "box"), *py = attr(c, "bytes");
        char *got = mc_xasprintf("%s %s %s %s", pn, pt, pb, py);
        if (strcmp(got, want.data))
            st = mc_err_set(r->err, MC_ERR_INVALID, "%s:%d: piece \"%s\" (n tensor box bytes) differs "
                            "from the task's split \"%s\"; synthesize the schedule again",
                            r->name, line_of(c), got, want.data);
        free(pn);
        free(pt);
        free(pb);
        free(py);
        free(got);
        mc_buf_free(&want);
        if (st != MC_OK)
            return st;
        i++;
    }
    if (i != task->npieces)
        return mc_err_set(r->err, MC_ERR_INVALID, "%s:%d: the schedule lists %d pieces, the task "
                          "splits into %d", r->name, line_of(n), i, task->npieces);
    return st;
}

static mc_status_t read_task(reader_t *r, xmlNodePtr n)
{
    mc_status_t st;
    xmlChar *text = xmlNodeGetContent(n);
    mc_task_t *task = NULL;
    /* pad with the lines before <task> so the task parser's line numbers are the file's */
    mc_buf_t padded = {0};
    for (int i = 1; i < line_of(n); i++)
        mc_buf_printf(&padded, "\n");
    mc_buf_printf(&padded, "%s", text ? (const char *)text : "");
    st = mc_task_parse_text(padded.data, r->name, &task, r->err);
    if (st == MC_ERR_USAGE) { /* bad notation in a file is a bad file, not a bad command line */
        st = MC_ERR_PARSE;
        if (r->err)
            r->err->status = st;
    }
    if (st != MC_OK)
        goto out;
    r->s->task = task;
    r->s->owns_task = 1;
    MC_CHECK_GOTO(mc_task_check_topo(task, r->topo, r->err), out, st);
    MC_CHECK_GOTO(mc_task_split(task, r->err), out, st);
out:
    xmlFree(text);
    mc_buf_free(&padded);
    return st;
}

/* The schedule element's attributes. */
static mc_status_t read_header(reader_t *r, xmlNodePtr root, int force)
{
    mc_status_t st;
    mc_sched_t *s = r->s;
    char *strategy = attr(root, "strategy"), *params = attr(root, "params");
    char *fp = attr(root, "topology");
    snprintf(s->strategy, sizeof s->strategy, "%s", strategy ? strategy : "");
    snprintf(s->params, sizeof s->params, "%s", params ? params : "");
    int bad = !fp || sscanf(fp, "%" SCNx64, &s->topo_fingerprint) != 1;
    free(strategy);
    free(params);
    free(fp);
    if (bad) {
        st = mc_err_set(r->err, MC_ERR_PARSE, "%s:%d: expected topology=\"<16 hex digits>\"", r->name,
                        line_of(root));
        goto out;
    }
    if (s->topo_fingerprint != r->topo->fingerprint && !force) {
        st = mc_err_set(r->err, MC_ERR_INVALID, "%s: made for topology %016" PRIx64 ", but %s is %016"
                        PRIx64 "; use --force to check it link by link", r->name,
                        s->topo_fingerprint, r->topo->source, r->topo->fingerprint);
        goto out;
    }
    MC_CHECK_GOTO(attr_u64(r, root, "mem-limit", &s->mem_limit), out, st);
    MC_CHECK_GOTO(attr_u64(r, root, "workspace", &s->workspace), out, st);
out:
    return st;
}

/* <instance template="K" nodes="..." pieces="...">: template K's trees again on these nodes,
 * with these pieces (docs/schedule-format.md, "Symmetry"). */
static mc_status_t read_instance(reader_t *r, xmlNodePtr n)
{
    mc_status_t st;
    int k, ntmpl = 0, nnodes = 0, npieces = 0, cap = 0, pcap = 0;
    int *tmpl = NULL, *nodes = NULL, *pieces = NULL;
    char *names = attr(n, "nodes"), *list = attr(n, "pieces"), *save = NULL;
    char *where = mc_xasprintf("%s:%d", r->name, line_of(n));
    MC_CHECK_GOTO(attr_int(r, n, "template", 0, r->s->ntrees + r->s->inst_trees, &k), out, st);
    for (int i = 0; i < r->ntmpl; i++)
        if (r->tmpl_k[i] == k) {
            MC_GROW(tmpl, cap, ntmpl + 1);
            tmpl[ntmpl++] = r->tmpl_tree[i];
        }
    cap = 0;
    for (char *tok = strtok_r(names, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        MC_GROW(nodes, cap, nnodes + 1);
        if ((nodes[nnodes++] = index_node(&r->idx, tok)) < 0) {
            st = mc_err_set(r->err, MC_ERR_INVALID, "%s: node %s is not on this topology", where,
                            tok);
            goto out;
        }
    }
    for (char *tok = strtok_r(list, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        int64_t p;
        MC_GROW(pieces, pcap, npieces + 1);
        if (mc_parse_i64(tok, &p) || p < 0 || p >= r->s->task->npieces) {
            st = mc_err_set(r->err, MC_ERR_INVALID, "%s: expected pieces between 0 and %d",
                            where, r->s->task->npieces - 1);
            goto out;
        }
        pieces[npieces++] = (int)p;
    }
    if (!ntmpl || npieces != ntmpl) {
        st = mc_err_set(r->err, MC_ERR_INVALID, "%s: template %d has %d trees, the instance "
                        "lists %d pieces", where, k, ntmpl, npieces);
        goto out;
    }
    st = (r->compact ? mc_sched_sym_keep(r->s, r->topo, k, tmpl, ntmpl, nodes, nnodes, pieces,
                                         where, r->err)
                     : mc_sched_sym_expand(r->s, r->topo, tmpl, ntmpl, nodes, nnodes, pieces,
                                           where, r->err));
out:
    free(tmpl);
    free(nodes);
    free(pieces);
    free(names);
    free(list);
    free(where);
    return st;
}

/* One element as the streaming reader hands it over: the schedule element and <phase> as they
 * start, <task>, <pieces> and each <tree> whole (the schema fixes their order). A tree has at
 * most one edge per GPU it reaches: more is a hostile file, refused before it costs memory. */
static mc_status_t visit(void *ctx, xmlNodePtr n, int depth)
{
    reader_t *r = ctx;
    if (depth == 0)
        return read_header(r, n, r->force);
    if (is_elem(n, "task"))
        return read_task(r, n);
    if (is_elem(n, "pieces"))
        return check_pieces(r, n);
    if (is_elem(n, "phase")) {
        int k;
        r->nphases++;
        return attr_int(r, n, "n", r->nphases - 1, r->nphases - 1, &k);
    }
    if (is_elem(n, "instance"))
        return read_instance(r, n);
    if (!is_elem(n, "tree"))
        return MC_OK;
    int nedges = 0;
    for (xmlNodePtr c = n->children; c; c = c->next)
        nedges += is_elem(c, "edge");
    if (nedges >= r->topo->ngpus)
        return mc_err_set(r->err, MC_ERR_INVALID, "%s:%d: a tree of %d edges on a topology of %d "
                          "GPUs (at most one edge per GPU it reaches)", r->name, line_of(n), nedges,
                          r->topo->ngpus);
    mc_status_t st = read_tree(r, n, r->nphases - 1);
    char *t = attr(n, "template");
    if (st == MC_OK && t) {
        MC_GROW(r->tmpl_k, r->tmpl_cap, r->ntmpl + 1);
        MC_GROW(r->tmpl_tree, r->tmpl_tree_cap, r->ntmpl + 1);
        r->tmpl_tree[r->ntmpl] = r->s->ntrees - 1;
        st = attr_int(r, n, "template", 0, r->s->ntrees - 1, &r->tmpl_k[r->ntmpl++]);
    }
    free(t);
    return st;
}

static mc_status_t parse(const char *buf, size_t len, const char *name, const mc_topo_t *topo,
                         int force, int compact, mc_sched_t **out, mc_err_t *err)
{
    mc_status_t st;
    reader_t r = {.name = name, .topo = topo, .err = err, .force = force, .compact = compact};
    static const char *const whole[] = {"task", "pieces", "tree", NULL};
    size_t rng_len;
    const char *rng = mc_sched_schema_text(&rng_len);
    *out = NULL;
    r.s = mc_sched_new(NULL, topo, "");
    index_build(&r.idx, topo);
    MC_CHECK_GOTO(mc_xml_stream(buf, len, name, rng, rng_len, "schedule (docs/schedule-format.md)",
                                whole, visit, &r, err), out, st);
    if (r.nphases > r.s->nphases)
        r.s->nphases = r.nphases;
    *out = r.s;
    r.s = NULL;
out:
    index_free(&r.idx);
    free(r.tmpl_k);
    free(r.tmpl_tree);
    mc_sched_free(r.s);
    return st;
}

mc_status_t mc_sched_parse_memory(const char *buf, size_t len, const char *name,
                                  const mc_topo_t *topo, int force, mc_sched_t **out,
                                  mc_err_t *err)
{
    return parse(buf, len, name, topo, force, 0, out, err);
}

mc_status_t mc_sched_parse_memory_compact(const char *buf, size_t len, const char *name,
                                          const mc_topo_t *topo, int force, mc_sched_t **out,
                                          mc_err_t *err)
{
    return parse(buf, len, name, topo, force, 1, out, err);
}

static mc_status_t load(const char *path, const mc_topo_t *topo, int force, int compact,
                        mc_sched_t **out, mc_err_t *err)
{
    char *buf = NULL;
    size_t len = 0;
    *out = NULL;
    mc_status_t st = mc_read_file(path, &buf, &len, err);
    if (st == MC_OK)
        st = parse(buf, len, path, topo, force, compact, out, err);
    free(buf);
    return st;
}

mc_status_t mc_sched_load(const char *path, const mc_topo_t *topo, int force, mc_sched_t **out,
                          mc_err_t *err)
{
    return load(path, topo, force, 0, out, err);
}

mc_status_t mc_sched_load_compact(const char *path, const mc_topo_t *topo, int force,
                                  mc_sched_t **out, mc_err_t *err)
{
    return load(path, topo, force, 1, out, err);
}
