/* Writes a schedule as XML (docs/schedule-format.md). The text depends only on the schedule and
 * the topology's node names: trees are listed phase by phase in the order they were added, groups
 * of trees that repeat an earlier group on other nodes as instances of it (sched_symmetry.c),
 * numbers in one fixed format, so the same schedule always gives the same bytes. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched_internal.h"

/* XML's entity for c, NULL for a character written as it is. */
static const char *entity(char c)
{
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&apos;";
    default: return NULL;
    }
}

/* Runs of plain characters are appended whole: a schedule file names two nodes per link of
 * every route. */
void mc_sched_xml_escape(mc_buf_t *b, const char *s)
{
    while (*s) {
        size_t n = 0;
        while (s[n] && !entity(s[n]))
            n++;
        mc_buf_append(b, s, n);
        if (!s[n])
            break;
        mc_buf_str(b, entity(s[n]));
        s += n + 1;
    }
}

static void put_box(mc_buf_t *b, const mc_box_t *box, int ndims)
{
    for (int d = 0; d < ndims; d++) {
        mc_buf_num(b, d ? "," : "", box->lo[d]);
        mc_buf_num(b, ":", box->hi[d]);
    }
}

/* The route as the names of the nodes it passes, from the parent GPU to the child GPU. */
static void put_route(mc_buf_t *b, const mc_tree_edge_t *e, const mc_topo_t *topo)
{
    for (int j = 0; j < e->nlinks; j++) {
        int l = e->links[j];
        const char *name = l >= 0 && l < topo->nlinks ? topo->nodes[topo->links[l].src].name : "?";
        mc_sched_xml_escape(b, name);
        mc_buf_append(b, " ", 1);
        if (j == e->nlinks - 1)
            mc_sched_xml_escape(b, l >= 0 && l < topo->nlinks ? topo->nodes[topo->links[l].dst].name : "?");
    }
}

/* A tree and its edges, written number by number (mc_buf_num): printf was two thirds of the
 * writing of a schedule of 16,128 trees. */
static void put_tree(mc_buf_t *b, const mc_tree_t *t, const mc_topo_t *topo, int template)
{
    mc_buf_num(b, "    <tree piece=\"", t->piece);
    mc_buf_unum(b, "\" offset=\"", t->offset);
    mc_buf_unum(b, "\" bytes=\"", t->bytes);
    mc_buf_num(b, "\" root=\"", t->root);
    mc_buf_num(b, "\" chunks=\"", t->nchunks);
    if (t->inflight > 1)
        mc_buf_num(b, "\" inflight=\"", t->inflight);
    if (t->ramp > 0)
        mc_buf_num(b, "\" ramp=\"", t->ramp);
    if (template >= 0)
        mc_buf_num(b, "\" template=\"", template);
    mc_buf_str(b, "\"");
    if (t->rate > 0)
        mc_buf_printf(b, " rate=\"%.17g\"", t->rate);
    mc_buf_str(b, t->nedges ? ">\n" : "/>\n");
    for (int e = 0; e < t->nedges; e++) {
        const mc_tree_edge_t *ed = &t->edges[e];
        mc_buf_num(b, "      <edge parent=\"", ed->parent);
        mc_buf_num(b, "\" child=\"", ed->child);
        if (ed->via_gpu >= 0)
            mc_buf_num(b, "\" via=\"", ed->via_gpu);
        mc_buf_str(b, "\" route=\"");
        put_route(b, ed, topo);
        mc_buf_str(b, "\"/>\n");
    }
    if (t->nedges)
        mc_buf_str(b, "    </tree>\n");
}

/* The instances: each one's node names and pieces, in its template's order. */
static void put_symmetry(mc_buf_t *b, const mc_sched_t *s, const mc_topo_t *topo,
                         const mc_sched_sym_t *sym)
{
    if (!sym->ninst)
        return;
    mc_buf_printf(b, "  <symmetry>\n");
    for (int i = 0; i < sym->ninst; i++) {
        const mc_sched_instance_t *in = &sym->inst[i];
        mc_buf_num(b, "    <instance template=\"", in->template);
        mc_buf_str(b, "\" nodes=\"");
        for (int k = 0; k < in->nnodes; k++) {
            mc_sched_xml_escape(b, topo->nodes[in->nodes[k]].name);
            mc_buf_str(b, k + 1 < in->nnodes ? " " : "\" pieces=\"");
        }
        for (int k = 0; k < in->ntrees; k++) {
            mc_buf_num(b, "", s->trees[in->trees[k]].piece);
            mc_buf_str(b, k + 1 < in->ntrees ? " " : "\"/>\n");
        }
    }
    mc_buf_printf(b, "  </symmetry>\n");
}

char *mc_sched_to_xml(const mc_sched_t *s, const mc_topo_t *topo)
{
    mc_buf_t b = {0};
    mc_buf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<!-- meshcast schedule; format: docs/schedule-format.md -->\n"
                      "<schedule version=\"1\" strategy=\"");
    mc_sched_xml_escape(&b, s->strategy);
    mc_buf_printf(&b, "\" params=\"");
    mc_sched_xml_escape(&b, s->params);
    mc_buf_printf(&b, "\" topology=\"%016" PRIx64 "\" mem-limit=\"%" PRIu64
                      "\" workspace=\"%" PRIu64 "\">\n  <task>\n",
                  s->topo_fingerprint, s->mem_limit, s->workspace);
    char *task = mc_task_to_text(s->task);
    mc_sched_xml_escape(&b, task);
    free(task);
    mc_buf_printf(&b, "%s  </task>\n  <pieces>\n", b.len && b.data[b.len - 1] == '\n' ? "" : "\n");
    for (int p = 0; p < s->task->npieces; p++) {
        const mc_piece_t *pc = &s->task->pieces[p];
        mc_buf_num(&b, "    <piece n=\"", p);
        mc_buf_num(&b, "\" tensor=\"", pc->tensor);
        mc_buf_str(&b, "\" box=\"");
        put_box(&b, &pc->box, s->task->tensors[pc->tensor].src.ndims);
        mc_buf_unum(&b, "\" bytes=\"", pc->bytes);
        mc_buf_str(&b, "\"/>\n");
    }
    mc_buf_printf(&b, "  </pieces>\n");
    mc_sched_sym_t sym;
    mc_sched_sym_find(s, topo, &sym);
    for (int p = 0; p < s->nphases; p++) {
        mc_buf_printf(&b, "  <phase n=\"%d\">\n", p);
        for (int t = 0; t < s->ntrees; t++)
            if (s->trees[t].phase == p && !sym.instance_tree[t])
                put_tree(&b, &s->trees[t], topo, sym.template_of[t]);
        mc_buf_printf(&b, "  </phase>\n");
    }
    put_symmetry(&b, s, topo, &sym);
    mc_sched_sym_free(&sym);
    mc_buf_printf(&b, "</schedule>\n");
    return b.data;
}

mc_status_t mc_sched_save(const mc_sched_t *s, const mc_topo_t *topo, const char *path,
                          mc_err_t *err)
{
    char *xml = mc_sched_to_xml(s, topo);
    mc_status_t st = mc_write_file_atomic(path, xml, strlen(xml), err);
    free(xml);
    return st;
}
