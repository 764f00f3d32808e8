/* The files `meshcast emit` writes: generation from a schedule, atomic writing into a folder, and
 * the staleness check behind `emit --check` (regenerate and compare byte for byte). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emit/emit_internal.h"

static mc_emit_file_t *add_file(mc_emit_file_t **files, int *n, const char *name)
{
    *files = mc_xrealloc(*files, (*n + 1) * sizeof **files);
    mc_emit_file_t *f = &(*files)[(*n)++];
    f->name = mc_xstrdup(name);
    memset(&f->data, 0, sizeof f->data);
    return f;
}

mc_status_t mc_emit_files(const mc_sched_t *s, const mc_topo_t *topo, const char *name,
                          const char *version, int standalone, int rank, mc_emit_file_t **files,
                          int *nfiles, mc_err_t *err)
{
    mc_emit_plans_t *P = NULL;
    mc_status_t st;
    char *task_text = NULL, *fname = NULL;
    *files = NULL;
    *nfiles = 0;
    if (!mc_emit_name_ok(name))
        return mc_err_set(err, MC_ERR_USAGE,
                          "--name '%s': expected a C identifier (letters, digits, _; at most 64)",
                          name);
    MC_CHECK_GOTO(rank < 0 ? mc_emit_lower_on(s, topo, &P, err)
                           : mc_emit_lower_rank(s, topo, rank, &P, err),
                  out, st);
    task_text = mc_task_to_text(s->task);
    mc_emit_meta_t m = {name, version, task_text, s->strategy, s->topo_fingerprint};
    fname = mc_xasprintf("%s.h", name);
    add_file(files, nfiles, fname);
    free(fname);
    fname = mc_xasprintf("%s.cu", name);
    add_file(files, nfiles, fname);
    /* Only now: adding a file may move the array. */
    mc_emit_gen(&m, P, &(*files)[0].data, &(*files)[1].data);
    for (const struct mc_emit_rt_file *f = mc_emit_rt_files; standalone && f->name; f++)
        mc_buf_append(&add_file(files, nfiles, f->name)->data, f->data, f->size);
out:
    free(fname);
    free(task_text);
    mc_emit_plans_free(P);
    return st;
}

void mc_emit_files_free(mc_emit_file_t *files, int nfiles)
{
    for (int i = 0; i < nfiles; i++) {
        free(files[i].name);
        mc_buf_free(&files[i].data);
    }
    free(files);
}

mc_status_t mc_emit_write(const char *dir, const mc_emit_file_t *files, int nfiles, mc_err_t *err)
{
    mc_status_t st = MC_OK;
    if (!*dir)
        return mc_err_set(err, MC_ERR_USAGE, "the output folder name is empty: expected a path");
    if (mkdir(dir, 0777) && errno != EEXIST)
        return mc_err_set(err, MC_ERR_IO, "%s: cannot create the folder: %s", dir, strerror(errno));
    for (int i = 0; i < nfiles && st == MC_OK; i++) {
        char *path = mc_xasprintf("%s/%s", dir, files[i].name);
        st = mc_write_file_atomic(path, files[i].data.data ? files[i].data.data : "",
                                  files[i].data.len, err);
        free(path);
    }
    return st;
}

int mc_emit_stale(const char *dir, const mc_emit_file_t *files, int nfiles, mc_buf_t *report)
{
    int stale = 0;
    for (int i = 0; i < nfiles; i++) {
        char *path = mc_xasprintf("%s/%s", dir, files[i].name), *data = NULL;
        size_t len = 0;
        mc_err_t e = {0};
        if (mc_read_file(path, &data, &len, &e) != MC_OK) {
            mc_buf_printf(report, "%s: missing\n", path);
            stale++;
        } else if (len != files[i].data.len || memcmp(data, files[i].data.data, len)) {
            mc_buf_printf(report, "%s: differs from what the schedule generates\n", path);
            stale++;
        }
        free(data);
        free(path);
    }
    return stale;
}
