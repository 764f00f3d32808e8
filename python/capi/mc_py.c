/* The C side of the Python binding (python/meshcast/_capi.py), built into libmeshcast.so only.
 * cffi's ABI mode reads structures by the layout declared in Python, so everything whose layout
 * other modules may change (topologies, bounds, synthesis options, simulation results, runtime
 * plans) crosses here as plain numbers and strings; Python declares only these functions and the
 * stable mc_err_t and mc_buf_t. */
#include <stdlib.h>
#include <string.h>

#include "cost/cost.h"
#include "emit/emit.h"
#include "layout/layout.h"
#include "sched/sched.h"
#include "sim/sim.h"
#include "synth/synth.h"

/* A topology's size and fingerprint: out = {ngpus, nhosts, nwarnings}. */
void mc_py_topo_info(const mc_topo_t *t, int out[3], uint64_t *fingerprint)
{
    out[0] = t->ngpus;
    out[1] = t->nhosts;
    out[2] = t->nwarnings;
    *fingerprint = t->fingerprint;
}

const char *mc_py_topo_warning(const mc_topo_t *t, int i)
{
    return i >= 0 && i < t->nwarnings ? t->warnings[i] : NULL;
}

/* A split task's size: out = {npieces, ncopies, nmeshes, ntensors}. */
void mc_py_task_info(const mc_task_t *t, int out[4])
{
    out[0] = t->npieces;
    out[1] = t->ncopies;
    out[2] = t->nmeshes;
    out[3] = t->ntensors;
}

/* The bound: *seconds, the binding term's name and where it binds. */
mc_status_t mc_py_bound(const mc_task_t *task, const mc_topo_t *topo, double *seconds,
                        const char **binding, int *where, mc_err_t *err)
{
    mc_bound_t b;
    mc_status_t st = mc_task_bound(task, topo, &b, err);
    if (st == MC_OK) {
        *seconds = b.seconds;
        *binding = mc_bound_kind_str(b.binding);
        *where = b.where;
    }
    return st;
}

/* Runs a strategy with the options given as command-line key/value texts (mc_synth_opts_set). */
mc_status_t mc_py_synth(const char *strategy, mc_task_t *task, const mc_topo_t *topo,
                        const char *const *keys, const char *const *values, int nopts,
                        mc_sched_t **out, mc_err_t *err)
{
    mc_synth_opts_t o = MC_SYNTH_OPTS_DEFAULT;
    for (int i = 0; i < nopts; i++) {
        mc_status_t st = mc_synth_opts_set(&o, keys[i], values[i], err);
        if (st != MC_OK)
            return st;
    }
    if (!mc_synth_find(strategy))
        return mc_err_set(err, MC_ERR_USAGE, "unknown strategy '%s'", strategy);
    return mc_synth(strategy, task, topo, &o, out, err);
}

const char *mc_py_sched_strategy(const mc_sched_t *s)
{
    return s->strategy;
}

const char *mc_py_sched_params(const mc_sched_t *s)
{
    return s->params;
}

mc_task_t *mc_py_sched_task(const mc_sched_t *s)
{
    return s->task;
}

mc_status_t mc_py_sim(const mc_sched_t *s, const mc_topo_t *topo, double *makespan, mc_err_t *err)
{
    mc_sim_result_t r = {0};
    mc_status_t st = mc_sim_run_totals(s, topo, &r, err);
    if (st == MC_OK)
        *makespan = r.makespan_s;
    mc_sim_result_free(&r);
    return st;
}

/* The schedule's trees as the library holds them: a symmetric file lists only its templates'
 * trees and names the instances (docs/schedule-format.md), which the library has expanded. */
int mc_py_sched_ntrees(const mc_sched_t *s)
{
    return s->ntrees;
}

/* Tree t: out = {piece, offset, bytes, root, phase, chunks, edges, inflight, ramp}; returns its
 * planned rate. */
double mc_py_sched_tree(const mc_sched_t *s, int t, int64_t out[9])
{
    const mc_tree_t *tr = &s->trees[t];
    int64_t v[9] = {tr->piece, (int64_t)tr->offset, (int64_t)tr->bytes, tr->root, tr->phase,
                    tr->nchunks, tr->nedges, tr->inflight, tr->ramp};
    memcpy(out, v, sizeof v);
    return tr->rate;
}

/* Edge e of tree t: out = {parent, child, via}; returns its route as the names of the nodes it
 * passes, space-separated (free with mc_py_free). */
char *mc_py_sched_edge(const mc_sched_t *s, const mc_topo_t *topo, int t, int e, int out[3])
{
    const mc_tree_edge_t *ed = &s->trees[t].edges[e];
    mc_buf_t b = {0};
    out[0] = ed->parent;
    out[1] = ed->child;
    out[2] = ed->via_gpu;
    for (int j = 0; j < ed->nlinks; j++)
        mc_buf_printf(&b, "%s%s", j ? " " : "", topo->nodes[topo->links[ed->links[j]].src].name);
    if (ed->nlinks)
        mc_buf_printf(&b, " %s", topo->nodes[topo->links[ed->links[ed->nlinks - 1]].dst].name);
    return b.data ? b.data : strdup("");
}

/* Frees what the library allocated (mc_task_to_text, mc_sched_to_xml, mc_buf_t data). */
void mc_py_free(void *p)
{
    free(p);
}

/* ---- runtime plans, exported as rows of int64 ---- */

int mc_py_plans_nranks(const mc_emit_plans_t *P)
{
    return P->nranks;
}

/* out = {gpu, src_bytes, dst_bytes, ws_bytes, nboxes, nops, nsteps} of rank r's plan. */
void mc_py_plan_info(const mc_emit_plans_t *P, int r, int64_t out[7])
{
    const mc_rt_plan_t *p = &P->plans[r];
    int64_t v[7] = {P->gpus[r], (int64_t)p->src_bytes, (int64_t)p->dst_bytes,
                    (int64_t)p->ws_bytes, p->nboxes, p->nops, p->nsteps};
    memcpy(out, v, sizeof(v));
}

/* Rows of MC_PY_STEP_COLS: index, first, npre, ncomm, npost. */
#define MC_PY_STEP_COLS 5
void mc_py_plan_steps(const mc_emit_plans_t *P, int r, int64_t *out)
{
    const mc_rt_plan_t *p = &P->plans[r];
    for (uint32_t i = 0; i < p->nsteps; i++) {
        const mc_rt_step_t *s = &p->steps[i];
        int64_t *row = out + (size_t)i * MC_PY_STEP_COLS;
        row[0] = s->index;
        row[1] = s->first;
        row[2] = s->npre;
        row[3] = s->ncomm;
        row[4] = s->npost;
    }
}

/* Rows of MC_PY_OP_COLS: kind, peer, tag, bytes, src box, src off, dst box, dst off. */
#define MC_PY_OP_COLS 8
void mc_py_plan_ops(const mc_emit_plans_t *P, int r, int64_t *out)
{
    const mc_rt_plan_t *p = &P->plans[r];
    for (uint32_t i = 0; i < p->nops; i++) {
        const mc_rt_op_t *o = &p->ops[i];
        int64_t v[MC_PY_OP_COLS] = {o->kind, o->peer, o->tag, (int64_t)o->bytes,
                                    o->src.box, (int64_t)o->src.off, o->dst.box,
                                    (int64_t)o->dst.off};
        memcpy(out + (size_t)i * MC_PY_OP_COLS, v, sizeof(v));
    }
}

/* Rows of 3 + 2 * MC_RT_MAX_DIMS: buf, ndims, base, extent[MC_RT_MAX_DIMS],
 * stride[MC_RT_MAX_DIMS]. */
void mc_py_plan_boxes(const mc_emit_plans_t *P, int r, int64_t *out)
{
    const mc_rt_plan_t *p = &P->plans[r];
    const int cols = 3 + 2 * MC_RT_MAX_DIMS;
    for (uint32_t i = 0; i < p->nboxes; i++) {
        const mc_rt_box_t *b = &p->boxes[i];
        int64_t *row = out + (size_t)i * cols;
        row[0] = b->buf;
        row[1] = b->ndims;
        row[2] = (int64_t)b->base;
        for (int d = 0; d < MC_RT_MAX_DIMS; d++) {
            row[3 + d] = (int64_t)b->extent[d];
            row[3 + MC_RT_MAX_DIMS + d] = (int64_t)b->stride[d];
        }
    }
}

/* The buffer convention's pattern for GPU gpu (emit.h), on host memory. */
void mc_py_fill_src(const mc_sched_t *s, int gpu, void *buf)
{
    mc_emit_fill_src(s->task, gpu, buf);
}

void mc_py_poison_dst(const mc_sched_t *s, int gpu, void *buf)
{
    mc_emit_poison_dst(s->task, gpu, buf);
}

/* Wrong bytes in GPU gpu's DST buffer; report (may be NULL) gets the first few. */
uint64_t mc_py_check_dst(const mc_sched_t *s, int gpu, const void *buf, mc_buf_t *report)
{
    return mc_emit_check_dst(s->task, gpu, buf, report, 8);
}

/* Source and destination buffer sizes of GPU gpu under the convention (0 when it has none). */
void mc_py_buffer_bytes(const mc_sched_t *s, int gpu, uint64_t out[2])
{
    out[0] = mc_task_src_bytes(s->task, gpu);
    out[1] = mc_task_dst_bytes(s->task, gpu);
}
