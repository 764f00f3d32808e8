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
    memset(f, 0, sizeof *f);
    f->name = mc_xstrdup(name);
    return f;
}

static mc_status_t make_dir(const char *dir, mc_err_t *err)
{
    if (!*dir)
        return mc_err_set(err, MC_ERR_USAGE, "the output folder name is empty: expected a path");
    if (mkdir(dir, 0777) && errno != EEXIST)
        return mc_err_set(err, MC_ERR_IO, "%s: cannot create the folder: %s", dir, strerror(errno));
    return MC_OK;
}

/* The generated source on its way into its file (mc_emit_gen_flushed): held whole, every rank's
 * tables of the 8192-GPU schedule took 4.3 GB of buffer. */
typedef struct stream {
    mc_atomic_file_t f;
    mc_status_t st;
    mc_err_t *err;
    size_t bytes;
} stream_t;

static void stream_flush(void *ctx, mc_buf_t *b)
{
    stream_t *sm = ctx;
    if (sm->st == MC_OK && b->len)
        sm->st = mc_atomic_write(&sm->f, b->data, b->len, sm->err);
    sm->bytes += b->len;
    b->len = 0;
}

mc_status_t mc_emit_files(const mc_sched_t *s, const mc_topo_t *topo, const char *name,
                          const char *version, int standalone, int rank, const char *dir,
                          mc_emit_file_t **files, int *nfiles, mc_err_t *err)
{
    mc_emit_plans_t *P = NULL;
    mc_status_t st = MC_OK;
    char *task_text = NULL, *fname = NULL;
    stream_t sm = {.st = MC_OK, .err = err};
    *files = NULL;
    *nfiles = 0;
    if (!mc_emit_name_ok(name))
        return mc_err_set(err, MC_ERR_USAGE,
                          "--name '%s': expected a C identifier (letters, digits, _; at most 64)",
                          name);
    if (rank >= 0)
        MC_CHECK_GOTO(mc_emit_lower_rank(s, topo, rank, &P, err), out, st);
    task_text = mc_task_to_text(s->task);
    mc_emit_meta_t m = {name, version, task_text, s->strategy, s->topo_fingerprint};
    fname = mc_xasprintf("%s.h", name);
    add_file(files, nfiles, fname);
    free(fname);
    fname = mc_xasprintf("%s.cu", name);
    add_file(files, nfiles, fname);
    if (dir) {
        MC_CHECK_GOTO(make_dir(dir, err), out, st);
        char *path = mc_xasprintf("%s/%s", dir, fname);
        st = mc_atomic_open(path, &sm.f, err);
        free(path);
        if (st != MC_OK)
            goto out;
    }
    /* Only now: adding a file may move the array. Every rank's plans are made and generated
     * MC_EMIT_BATCH_RANKS at a time. */
    mc_buf_t *h = &(*files)[0].data, *cu = &(*files)[1].data;
    mc_emit_flush_fn flush = dir ? stream_flush : NULL;
    if (P)
        mc_emit_gen_flushed(&m, P, h, cu, MC_EMIT_FLUSH_BYTES, flush, &sm);
    else
        MC_CHECK_GOTO(mc_emit_gen_batched(&m, s, topo, MC_EMIT_BATCH_RANKS, h, cu,
                                          MC_EMIT_FLUSH_BYTES, flush, &sm, err),
                      out, st);
    if (dir) {
        stream_flush(&sm, cu);
        mc_buf_free(cu);
        MC_CHECK_GOTO(sm.st, out, st);
        MC_CHECK_GOTO(mc_atomic_commit(&sm.f, err), out, st);
        (*files)[1].written = 1;
        (*files)[1].size = sm.bytes;
    }
    for (const struct mc_emit_rt_file *f = mc_emit_rt_files; standalone && f->name; f++)
        mc_buf_append(&add_file(files, nfiles, f->name)->data, f->data, f->size);
    for (int i = 0; i < *nfiles; i++)
        if (!(*files)[i].written)
            (*files)[i].size = (*files)[i].data.len;
out:
    mc_atomic_abort(&sm.f);
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
    mc_status_t st = make_dir(dir, err);
    for (int i = 0; i < nfiles && st == MC_OK; i++) {
        if (files[i].written)
            continue;
        char *path = mc_xasprintf("%s/%s", dir, files[i].name);
        st = mc_write_file_atomic(path, files[i].data.data ? files[i].data.data : "",
                                  files[i].data.len, err);
        free(path);
    }
    return st;
}

/* 1 when the file at path holds exactly data[0..len), 0 when it differs, -1 when it cannot be
 * read. Compared as it is read: every rank's source of the 8192-GPU schedule is 2.9 GB, past
 * what mc_read_file takes. */
static int same_as_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[65536];
    size_t at = 0, n;
    int same = 1;
    while (same && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        same = n <= len - at && !memcmp(chunk, data + at, n);
        at += n;
    }
    int bad = ferror(f);
    fclose(f);
    return bad ? -1 : same && at == len;
}

int mc_emit_stale(const char *dir, const mc_emit_file_t *files, int nfiles, mc_buf_t *report)
{
    int stale = 0;
    for (int i = 0; i < nfiles; i++) {
        char *path = mc_xasprintf("%s/%s", dir, files[i].name);
        int same = same_as_file(path, files[i].data.data ? files[i].data.data : "",
                                files[i].data.len);
        if (same < 0)
            mc_buf_printf(report, "%s: missing\n", path);
        else if (!same)
            mc_buf_printf(report, "%s: differs from what the schedule generates\n", path);
        stale += same != 1;
        free(path);
    }
    return stale;
}
