/* Reading whole files and writing them atomically (temporary file in the same folder, then
 * rename), so that no command ever leaves a half-written output behind. */
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* mkstemp creates 0600; give the result the mode an ordinary create would have. */
static int chmod_as_created(int fd)
{
    mode_t um = umask(0);
    umask(um);
    return fchmod(fd, 0666 & ~um);
}

mc_status_t mc_write_file_atomic(const char *path, const void *data, size_t len, mc_err_t *err)
{
    char *tmp = mc_xasprintf("%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        mc_status_t st = mc_err_set(err, MC_ERR_IO, "%s: cannot create a temporary file: %s",
                                    path, strerror(errno));
        free(tmp);
        return st;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            goto fail;
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || chmod_as_created(fd) != 0)
        goto fail;
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0)
        goto fail;
    free(tmp);
    return MC_OK;
fail:;
    mc_status_t st = mc_err_set(err, MC_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    free(tmp);
    return st;
}

mc_status_t mc_read_file(const char *path, char **data, size_t *len, mc_err_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return mc_err_set(err, MC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    mc_buf_t b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        mc_buf_append(&b, chunk, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        mc_buf_free(&b);
        return mc_err_set(err, MC_ERR_IO, "%s: read error", path);
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
    return st;
}
