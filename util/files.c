/* Reading whole files and writing them atomically (temporary file in the same folder, then
 * rename), so that no command ever leaves a half-written output behind. */
#include "util/util.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the target is, in words, for a refusal. */
static const char *kind_of(mode_t m)
{
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISFIFO(m))
        return "a named pipe";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a regular file";
}

/* Whether the mode bits let this process write the file: the owner's bits when it owns the file,
 * else the group's when the file's group is one of its groups, else everyone's. Root gets no
 * exception (access() would say yes to anything), so a file that its mode marks read-only for
 * the caller is never replaced, whoever runs meshcast. */
static int mode_allows_write(const struct stat *st)
{
    if (st->st_uid == geteuid())
        return (st->st_mode & S_IWUSR) != 0;
    int in_group = st->st_gid == getegid();
    gid_t groups[256];
    int n = in_group ? 0 : getgroups(256, groups);
    for (int i = 0; i < n && !in_group; i++)
        in_group = groups[i] == st->st_gid;
    return (st->st_mode & (in_group ? S_IWGRP : S_IWOTH)) != 0;
}

/* What the new file gets from the one it replaces. */
typedef struct target {
    mode_t mode;
    int chown; /* root replacing another user's file gives it back to that user */
    uid_t uid;
    gid_t gid;
} target_t;

/* Decides whether path may be replaced and what the new file gets: an existing regular file
 * keeps its permission bits (set-id bits dropped) and, when root replaces it, its owner and
 * group; a new one gets what open(0666) would give. */
static mc_status_t check_target(const char *path, target_t *tg, mc_err_t *err)
{
    struct stat st;
    if (!*path)
        return mc_err_set(err, MC_ERR_USAGE, "the output file name is empty: expected a path");
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return mc_err_set(err, MC_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        mode_t um = umask(0);
        umask(um);
        tg->mode = 0666 & ~um;
        return MC_OK;
    }
    if (S_ISLNK(st.st_mode))
        return mc_err_set(err, MC_ERR_IO, "%s: is a symbolic link; meshcast does not write "
                          "through links (name the file it points to instead)", path);
    if (!S_ISREG(st.st_mode))
        return mc_err_set(err, MC_ERR_IO, "%s: is %s; expected a regular file to write",
                          path, kind_of(st.st_mode));
    if (!mode_allows_write(&st))
        return mc_err_set(err, MC_ERR_IO, "%s: exists and its mode (%04o) does not let you write "
                          "it; meshcast does not replace it", path,
                          (unsigned)(st.st_mode & 07777));
    tg->mode = st.st_mode & 0777;
    tg->chown = geteuid() == 0 && (st.st_uid != 0 || st.st_gid != getegid());
    tg->uid = st.st_uid;
    tg->gid = st.st_gid;
    return MC_OK;
}

static int write_all(int fd, const char *p, size_t left)
{
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        left -= (size_t)w;
    }
    return 0;
}

mc_status_t mc_atomic_open(const char *path, mc_atomic_file_t *f, mc_err_t *err)
{
    target_t tg = {.mode = 0600};
    memset(f, 0, sizeof *f);
    f->fd = -1;
    mc_status_t st = check_target(path, &tg, err);
    if (st != MC_OK)
        return st;
    char *tmp = mc_xasprintf("%s.tmp.XXXXXX", path);
    /* A signal between mkstemp and the registration would leave the file behind. */
    sigset_t old;
    mc_tmp_block_signals(&old);
    int fd = mkstemp(tmp), slot = fd >= 0 ? mc_tmp_track(tmp) : -1;
    mc_tmp_restore_signals(&old);
    if (fd < 0) {
        st = mc_err_set(err, MC_ERR_IO, "%s: cannot create a temporary file: %s", path,
                        strerror(errno));
        free(tmp);
        return st;
    }
    /* Past a file-size limit write() should fail with EFBIG rather than kill the process with
     * the temporary file in place. */
    struct sigaction xfsz_ign = {.sa_handler = SIG_IGN};
    sigaction(SIGXFSZ, &xfsz_ign, &f->xfsz_old);
    f->path = mc_xstrdup(path);
    f->tmp = tmp;
    f->fd = fd;
    f->slot = slot;
    f->mode = tg.mode;
    f->chown = tg.chown;
    f->uid = tg.uid;
    f->gid = tg.gid;
    return MC_OK;
}

/* Ends f: the temporary file removed unless it was renamed. */
static void atomic_end(mc_atomic_file_t *f, int renamed)
{
    if (f->fd >= 0)
        close(f->fd);
    if (!renamed)
        unlink(f->tmp);
    sigaction(SIGXFSZ, &f->xfsz_old, NULL);
    mc_tmp_untrack(f->slot);
    free(f->tmp);
    free(f->path);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

static mc_status_t atomic_fail(mc_atomic_file_t *f, mc_err_t *err)
{
    mc_status_t st = mc_err_set(err, MC_ERR_IO, "%s: cannot write: %s", f->path, strerror(errno));
    atomic_end(f, 0);
    return st;
}

mc_status_t mc_atomic_write(mc_atomic_file_t *f, const void *data, size_t len, mc_err_t *err)
{
    return write_all(f->fd, data, len) != 0 ? atomic_fail(f, err) : MC_OK;
}

mc_status_t mc_atomic_commit(mc_atomic_file_t *f, mc_err_t *err)
{
    if (fsync(f->fd) != 0 || (f->chown && fchown(f->fd, f->uid, f->gid) != 0) ||
        fchmod(f->fd, f->mode) != 0)
        return atomic_fail(f, err);
    int rc = close(f->fd);
    f->fd = -1;
    if (rc != 0 || rename(f->tmp, f->path) != 0)
        return atomic_fail(f, err);
    atomic_end(f, 1);
    return MC_OK;
}

void mc_atomic_abort(mc_atomic_file_t *f)
{
    if (f->tmp)
        atomic_end(f, 0);
}

mc_status_t mc_write_file_atomic(const char *path, const void *data, size_t len, mc_err_t *err)
{
    mc_atomic_file_t f;
    mc_status_t st = mc_atomic_open(path, &f, err);
    if (st == MC_OK)
        st = mc_atomic_write(&f, data, len, err);
    if (st == MC_OK)
        st = mc_atomic_commit(&f, err);
    return st;
}

mc_status_t mc_read_file(const char *path, char **data, size_t *len, mc_err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return mc_err_set(err, MC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* Pipes and devices are fine to read from (process substitution); a folder is not a file. */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return mc_err_set(err, MC_ERR_IO, "%s: is a directory; expected a file", path);
    }
    mc_buf_t b = {0};
    char chunk[65536];
    size_t n;
    int too_big = 0;
    while (!too_big && (n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        mc_buf_append(&b, chunk, n);
        too_big = b.len > MC_READ_MAX_BYTES;
    }
    int bad = ferror(f), e = errno;
    fclose(f);
    mc_status_t rc = MC_OK;
    if (too_big)
        rc = mc_err_set(err, MC_ERR_INVALID, "%s: larger than %d MiB; no meshcast input is that "
                        "large", path, MC_READ_MAX_BYTES >> 20);
    else if (bad)
        rc = mc_err_set(err, MC_ERR_IO, "%s: cannot read: %s", path, strerror(e));
    if (rc != MC_OK) {
        mc_buf_free(&b);
        return rc;
    }
    if (!b.data)
        mc_buf_append(&b, "", 0);
    *data = b.data;
    if (len)
        *len = b.len;
    return MC_OK;
}

mc_status_t mc_read_text_file(const char *path, char **data, mc_err_t *err)
{
    size_t len = 0;
    mc_status_t st = mc_read_file(path, data, &len, err);
    if (st == MC_OK && strlen(*data) != len) {
        free(*data);
        *data = NULL;
        st = mc_err_set(err, MC_ERR_PARSE, "%s: expected a text file (found a NUL byte)", path);
    }
    /* Some editors start UTF-8 files with a byte-order mark; it is not part of the first line. */
    if (st == MC_OK && !strncmp(*data, "\xEF\xBB\xBF", 3))
        memmove(*data, *data + 3, len - 2);
    return st;
}
