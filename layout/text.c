/* The task file (docs/task-format.md): meshes and moves, one per line, '#' comments, and its
 * canonical writer. Schedules embed their task in this form, so the writer is deterministic
 * and mc_task_parse_text(mc_task_to_text(t)) gives back the same task. */
#include <stdlib.h>
#include <string.h>

#include "layout/layout_internal.h"

static void mesh_text(mc_buf_t *b, const mc_mesh_t *m)
{
    mc_buf_printf(b, "mesh %s={", m->name);
    for (int a = 0; a < m->naxes; a++)
        mc_buf_printf(b, "%s%s:%d", a ? "," : "", m->axis_names[a], m->axis_sizes[a]);
    int contiguous = 1;
    for (int i = 1; i < m->ndevices; i++)
        contiguous = contiguous && m->devices[i] == m->devices[0] + i;
    if (contiguous) {
        mc_buf_printf(b, "}@%d..%d\n", m->devices[0], m->devices[0] + m->ndevices - 1);
        return;
    }
    mc_buf_printf(b, "}@[");
    for (int i = 0; i < m->ndevices; i++)
        mc_buf_printf(b, "%s%d", i ? "," : "", m->devices[i]);
    mc_buf_printf(b, "]\n");
}

/* "MESH[spec,...]"; specs are '_', an axis, or '(a,b)', then '{sizes}' when explicit. */
static void specs_text(mc_buf_t *b, const mc_task_t *task, const mc_layout_t *l)
{
    const mc_mesh_t *m = &task->meshes[l->mesh];
    mc_buf_printf(b, "%s[", m->name);
    for (int k = 0; k < l->ndims; k++) {
        const mc_dim_spec_t *d = &l->dims[k];
        if (k)
            mc_buf_printf(b, ",");
        if (d->naxes == 0)
            mc_buf_printf(b, "_");
        for (int i = 0; i < d->naxes; i++)
            mc_buf_printf(b, "%s%s", i ? "," : d->naxes > 1 ? "(" : "", m->axis_names[d->axes[i]]);
        if (d->naxes > 1)
            mc_buf_printf(b, ")");
        if (d->sizes) {
            int64_t n = mc_layout_nshards(task, l, k);
            for (int64_t i = 0; i < n; i++)
                mc_buf_printf(b, "%s%lld", i ? "," : "{", (long long)d->sizes[i]);
            mc_buf_printf(b, "}");
        }
    }
    mc_buf_printf(b, "]");
}

char *mc_task_to_text(const mc_task_t *task)
{
    mc_buf_t b = {0};
    mc_buf_append(&b, "", 0);
    for (int i = 0; i < task->nmeshes; i++)
        mesh_text(&b, &task->meshes[i]);
    for (int i = 0; i < task->ntensors; i++) {
        const mc_tensor_move_t *mv = &task->tensors[i];
        mc_buf_printf(&b, "move %s: %s[", mv->name, mc_dtype_name(mv->src.dtype));
        for (int k = 0; k < mv->src.ndims; k++)
            mc_buf_printf(&b, "%s%lld", k ? "," : "", (long long)mv->src.shape[k]);
        mc_buf_printf(&b, "] ");
        specs_text(&b, task, &mv->src);
        mc_buf_printf(&b, " -> ");
        for (int c = 0; c <= mv->nmore; c++) {
            if (c)
                mc_buf_printf(&b, ", ");
            specs_text(&b, task, mc_tensor_consumer(mv, c));
        }
        mc_buf_printf(&b, "\n");
    }
    return b.data;
}

static mc_status_t parse_line(mc_task_t *task, char *line, const char *name, int lineno,
                              mc_err_t *err)
{
    line = mc_strip_comment(line);
    if (!*line)
        return MC_OK;
    const char *rest;
    mc_status_t st;
    if ((rest = mc_line_keyword(line, "mesh"))) {
        st = mc_task_add_mesh(task, rest, err);
        if (st == MC_OK)
            task->meshes[task->nmeshes - 1].line = lineno;
    } else if ((rest = mc_line_keyword(line, "move")))
        st = mc_task_add_move(task, rest, err);
    else
        return mc_err_set(err, MC_ERR_PARSE, "%s:%d: expected 'mesh NAME={...}@...' or 'move "
                          "LAYOUT -> LAYOUT', got '%.40s'", name, lineno, line);
    if (st != MC_OK && err) {
        char msg[sizeof(err->msg)];
        snprintf(msg, sizeof(msg), "%s", err->msg);
        mc_err_set(err, MC_ERR_PARSE, "%s:%d: %s", name, lineno, msg);
    }
    return st == MC_OK ? MC_OK : MC_ERR_PARSE;
}

mc_status_t mc_task_parse_text(const char *text, const char *name, mc_task_t **out, mc_err_t *err)
{
    mc_task_t *task = mc_task_new();
    task->source = mc_xstrdup(name);
    char *copy = mc_xstrdup(text);
    mc_status_t st = MC_OK;
    int lineno = 1;
    for (char *line = copy; line && st == MC_OK; lineno++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        st = parse_line(task, line, name, lineno, err);
        line = nl ? nl + 1 : NULL;
    }
    free(copy);
    if (st != MC_OK) {
        mc_task_free(task);
        task = NULL;
    }
    *out = task;
    return st;
}

mc_status_t mc_task_load(const char *path, mc_task_t **out, mc_err_t *err)
{
    char *data = NULL;
    *out = NULL;
    mc_status_t st = mc_read_text_file(path, &data, err);
    if (st == MC_OK)
        st = mc_task_parse_text(data, path, out, err);
    free(data);
    return st;
}
