/* Each group's transfer time: its task synthesized with the chosen strategy (mc_synth validates
 * the schedule), timed by the flow-level simulator, and the links the schedule loads, which the
 * event simulation holds while the transfer runs. Pipelines repeat one boundary many times on
 * GPUs that see the same links, so a schedule is moved onto the next boundary's GPUs when the
 * two are alike edge by edge, and synthesized only when they are not. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"
#include "sim/sim.h"

/* Every stage's GPUs exist on the topology; an error names the stage's line. */
static mc_status_t check_stages(const mc_pipe_t *p, const mc_topo_t *topo, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    for (int s = 0; s < p->nstages && st == MC_OK; s++) {
        mc_task_t *t = mc_task_new();
        st = mc_task_add_mesh(t, p->stages[s].mesh_text, err);
        if (st == MC_OK && (st = mc_task_check_topo(t, topo, err)) != MC_OK) {
            char msg[sizeof(err->msg)];
            snprintf(msg, sizeof(msg), "%s", err->msg);
            st = mc_err_set(err, MC_ERR_INVALID, "%s:%d: %s", p->name, p->stages[s].line, msg);
        }
        mc_task_free(t);
    }
    return st;
}

static int same_layout(const mc_task_t *ta, const mc_layout_t *a, const mc_layout_t *b)
{
    if (a->dtype != b->dtype || a->ndims != b->ndims || a->mesh != b->mesh ||
        memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndims))
        return 0;
    for (int k = 0; k < a->ndims; k++) {
        const mc_dim_spec_t *x = &a->dims[k], *y = &b->dims[k];
        if (x->naxes != y->naxes || memcmp(x->axes, y->axes, sizeof(int) * (size_t)x->naxes) ||
            !x->sizes != !y->sizes)
            return 0;
        int64_t n = 1;
        for (int i = 0; i < x->naxes; i++)
            n *= ta->meshes[a->mesh].axis_sizes[x->axes[i]];
        if (x->sizes && memcmp(x->sizes, y->sizes, sizeof(int64_t) * (size_t)n))
            return 0;
    }
    return 1;
}

/* The same tensors in the same layouts over meshes of the same shapes; only the GPUs differ. */
static int same_but_gpus(const mc_task_t *a, const mc_task_t *b)
{
    if (a->nmeshes != b->nmeshes || a->ntensors != b->ntensors)
        return 0;
    for (int m = 0; m < a->nmeshes; m++)
        if (a->meshes[m].naxes != b->meshes[m].naxes ||
            memcmp(a->meshes[m].axis_sizes, b->meshes[m].axis_sizes,
                   sizeof(int) * (size_t)a->meshes[m].naxes))
            return 0;
    for (int i = 0; i < a->ntensors; i++) {
        if (a->tensors[i].nmore != b->tensors[i].nmore ||
            !same_layout(a, &a->tensors[i].src, &b->tensors[i].src))
            return 0;
        for (int c = 0; c <= a->tensors[i].nmore; c++)
            if (!same_layout(a, mc_tensor_consumer(&a->tensors[i], c),
                             mc_tensor_consumer(&b->tensors[i], c)))
                return 0;
    }
    return 1;
}

/* The GPU of task b at the mesh position gpu has in task a, -1 if gpu is in no mesh of a. */
static int moved_gpu(const mc_task_t *a, const mc_task_t *b, int gpu)
{
    for (int m = 0; m < a->nmeshes; m++)
        for (int k = 0; k < a->meshes[m].ndevices; k++)
            if (a->meshes[m].devices[k] == gpu)
                return b->meshes[m].devices[k];
    return -1;
}

/* Edge e follows the topology's route, and the route between the moved GPUs has links of the
 * same kinds and bandwidths in the same order; *now gets that route. */
static int edge_moves(const mc_topo_t *topo, const mc_tree_edge_t *e, int parent, int child,
                      mc_route_t *now)
{
    mc_route_t was;
    if (parent < 0 || child < 0 || mc_topo_route(topo, e->parent, e->child, &was, NULL) != MC_OK ||
        mc_topo_route(topo, parent, child, now, NULL) != MC_OK || was.nlinks != e->nlinks ||
        memcmp(was.links, e->links, sizeof(int) * (size_t)e->nlinks) || now->nlinks != e->nlinks)
        return 0;
    for (int i = 0; i < e->nlinks; i++) {
        const mc_link_t *x = &topo->links[was.links[i]], *y = &topo->links[now->links[i]];
        if (x->kind != y->kind || x->bw != y->bw || x->latency != y->latency)
            return 0;
    }
    return 1;
}

/* from's trees on task's GPUs, if every edge moves and the result validates; else NULL. */
static mc_sched_t *moved_schedule(const mc_sched_t *from, mc_task_t *task, const mc_topo_t *topo)
{
    if (!same_but_gpus(from->task, task))
        return NULL;
    mc_sched_t *s = mc_sched_new(task, topo, from->strategy);
    int ok = 1;
    for (int i = 0; i < from->ntrees && ok; i++) {
        const mc_tree_t *t = &from->trees[i];
        int root = moved_gpu(from->task, task, t->root);
        int ti = mc_sched_add_tree_like(s, t, t->piece, root);
        ok = root >= 0;
        for (int k = 0; k < t->nedges && ok; k++) {
            mc_route_t now;
            ok = edge_moves(topo, &t->edges[k], moved_gpu(from->task, task, t->edges[k].parent),
                            moved_gpu(from->task, task, t->edges[k].child), &now) &&
                 mc_sched_add_edge_route(s, ti, &now, NULL) == MC_OK;
        }
    }
    memcpy(s->params, from->params, sizeof(s->params));
    s->mem_limit = from->mem_limit;
    s->workspace = from->workspace;
    if (!ok || mc_sched_validate(s, topo, NULL) != 0) {
        mc_sched_free(s);
        s = NULL;
    }
    return s;
}

static mc_status_t time_group(mc_pipe_t *p, int g, mc_sched_t **scheds, const mc_topo_t *topo,
                              const char *strategy, const mc_synth_opts_t *opts, mc_err_t *err)
{
    mc_pipe_group_t *gr = &p->groups[g];
    mc_sim_result_t res = {0};
    mc_bound_t bound;
    mc_status_t st;
    MC_CHECK_GOTO(mc_task_split(gr->task, err), out, st);
    MC_CHECK_GOTO(mc_task_bound(gr->task, topo, &bound, err), out, st);
    gr->same_as = -1;
    for (int h = 0; h < g && !scheds[g]; h++)
        if (p->groups[h].same_as < 0 && (scheds[g] = moved_schedule(scheds[h], gr->task, topo)))
            gr->same_as = h;
    if (!scheds[g])
        MC_CHECK_GOTO(mc_synth(strategy, gr->task, topo, opts, &scheds[g], err), out, st);
    /* Several receiving stages: the timeline tells when each one's GPUs stop receiving. */
    MC_CHECK_GOTO((gr->nmore ? mc_sim_run : mc_sim_run_totals)(scheds[g], topo, &res, err), out,
                  st);
    gr->seconds = res.makespan_s;
    for (int k = 0; k <= gr->nmore; k++) {
        const mc_mesh_t *m = &gr->task->meshes[1 + k]; /* the source's mesh, then the stages' */
        gr->arrive_s[k] = 0;
        for (int i = 0; i < res.nintervals; i++) {
            int gpu = topo->nodes[topo->links[res.intervals[i].link].dst].gpu;
            if (gpu >= 0 && mc_ints_contain(m->devices, m->ndevices, gpu) &&
                res.intervals[i].t1 > gr->arrive_s[k])
                gr->arrive_s[k] = fmin(res.intervals[i].t1, res.makespan_s);
        }
    }
    gr->bound_s = bound.seconds;
    gr->bytes = mc_task_total_bytes(gr->task);
    free(gr->links);
    gr->links = mc_xmalloc(sizeof(int) * (size_t)(res.nlinks + 1));
    gr->nlinks = 0;
    for (int l = 0; l < res.nlinks; l++)
        if (res.link_bytes[l] > 0)
            gr->links[gr->nlinks++] = l;
out:
    mc_sim_result_free(&res);
    return st;
}

mc_status_t mc_pipe_time_comm(mc_pipe_t *p, const mc_topo_t *topo, const char *strategy,
                              const mc_synth_opts_t *opts, mc_err_t *err)
{
    mc_sched_t **scheds = mc_xcalloc((size_t)p->ngroups + 1, sizeof(mc_sched_t *));
    mc_status_t st = check_stages(p, topo, err);
    for (int g = 0; g < p->ngroups && st == MC_OK; g++)
        st = time_group(p, g, scheds, topo, strategy, opts, err);
    for (int g = 0; g < p->ngroups; g++)
        mc_sched_free(scheds[g]);
    free(scheds);
    p->timed = st == MC_OK;
    return st;
}
