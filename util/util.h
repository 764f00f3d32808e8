/* util: the status codes, error reports, atomic file writing and small helpers every module
 * shares. Errors travel as an mc_err_t filled at the failure site with "file:line: what was
 * expected", so the CLI can print it as is and map the status to an exit code. */
#ifndef MC_UTIL_H
#define MC_UTIL_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* One status enum for the whole project: 0 is success, errors are negative. */
#define MC_STATUS_MAP(X)                                              \
    X(MC_OK, 0, "ok")                                                 \
    X(MC_ERR_NOMEM, -1, "out of memory")                              \
    X(MC_ERR_IO, -2, "input/output error")                            \
    X(MC_ERR_PARSE, -3, "malformed input")                            \
    X(MC_ERR_INVALID, -4, "invalid input")                            \
    X(MC_ERR_USAGE, -5, "usage error")                                \
    X(MC_ERR_UNSUPPORTED, -6, "not supported")                        \
    X(MC_ERR_SOLVER, -7, "solver failure")                            \
    X(MC_ERR_TIMEOUT, -8, "timed out")                                \
    X(MC_ERR_RUNTIME, -9, "runtime failure")                          \
    X(MC_ERR_INTERNAL, -10, "internal error")

typedef enum {
#define MC_STATUS_ENUM(name, value, text) name = value,
    MC_STATUS_MAP(MC_STATUS_ENUM)
#undef MC_STATUS_ENUM
} mc_status_t;

const char *mc_status_str(mc_status_t st);

/* Exit codes of the meshcast command. */
enum { MC_EXIT_OK = 0, MC_EXIT_INVALID = 1, MC_EXIT_USAGE = 2 };

/* MC_ERR_USAGE maps to exit 2, every other error to 1. */
int mc_status_exit_code(mc_status_t st);

typedef struct mc_err {
    mc_status_t status;
    char msg[1024];
} mc_err_t;

/* Records status and message (printf-style) in err, which may be NULL; returns st. */
mc_status_t mc_err_set(mc_err_t *err, mc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
mc_status_t mc_err_setv(mc_err_t *err, mc_status_t st, const char *fmt, va_list ap);

/* Runs call; on error stores the status in st and jumps to label. */
#define MC_CHECK_GOTO(call, label, st)      \
    do {                                    \
        (st) = (call);                      \
        if ((st) != MC_OK)                  \
            goto label;                     \
    } while (0)

/* Allocation that never returns NULL: out of memory is not an input error, so it aborts with a
 * message rather than threading a status through every helper. */
void *mc_xmalloc(size_t n);
void *mc_xcalloc(size_t n, size_t size);
void *mc_xrealloc(void *p, size_t n);
char *mc_xstrdup(const char *s);
char *mc_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *mc_xvasprintf(const char *fmt, va_list ap);

/* Grows *arr (element size elem) so that index need-1 fits, doubling *cap. */
void mc_grow(void **arr, size_t elem, int *cap, int need);
#define MC_GROW(arr, cap, need) mc_grow((void **)&(arr), sizeof(*(arr)), &(cap), (need))

/* qsort that accepts an empty array given as NULL (qsort's pointer must be valid even for n == 0). */
void mc_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* A hash of n 64-bit words (util/hash.c). */
uint64_t mc_hash_words(const int64_t *v, size_t n);
/* The same hash built word by word: h = MC_HASH_SEED, h = mc_hash_step(h, word) for each word,
 * then mc_hash_fold(h) (what mc_hash_words returns for those words). Inline: the memos hash
 * every edge of every tree they look up, four words an edge (FNV-1a, folded). */
#define MC_HASH_SEED 1469598103934665603ull
static inline uint64_t mc_hash_step(uint64_t h, uint64_t word)
{
    return (h ^ word) * 1099511628211ull;
}
static inline uint64_t mc_hash_fold(uint64_t h)
{
    return h ^ (h >> 29);
}
/* Whether x is one of v[0..n). */
int mc_ints_contain(const int *v, int n, int x);
/* Sorts v[0..n) ascending (util/ints.c). */
void mc_sort_ints(int *v, size_t n);
/* The place of x in v[0..n) sorted ascending, or -1 (util/ints.c). */
int mc_find_int(const int *v, int n, int x);

/* Runs first(first_arg) and second(second_arg) at once, the second on a thread of its own, and
 * returns when both are done; they must not write what the other reads (util/both.c). */
void mc_run_both(void (*first)(void *arg), void *first_arg, void (*second)(void *arg),
                 void *second_arg);
/* run(arg) begun on a thread of its own while the caller goes on (run at once, before returning,
 * where no thread can be made); mc_apart_join waits for it to end (util/both.c). */
typedef struct mc_apart mc_apart_t;
mc_apart_t *mc_apart_start(void (*run)(void *arg), void *arg);
/* mc_apart_start for work that may not be needed: its thread runs at the lowest priority (nice
 * 19), on a core the caller's other threads leave idle. */
mc_apart_t *mc_apart_start_idle(void (*run)(void *arg), void *arg);
void mc_apart_join(mc_apart_t *a);
/* How many threads mc_apart_start started are still at work (those at the lowest priority left
 * out): where none is, a second core is free. */
int mc_apart_running(void);

/* A growable text buffer. */
typedef struct mc_buf {
    char *data;
    size_t len, cap;
} mc_buf_t;
void mc_buf_printf(mc_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mc_buf_append(mc_buf_t *b, const char *s, size_t n);
/* Appends prefix and v in decimal, the text printf's "%s%lld" gives (the components' keys are
 * written a number at a time; printf was 5% of some syntheses). */
void mc_buf_num(mc_buf_t *b, const char *prefix, long long v);
/* The same for "%s%llu" (the schedule files: printf was a third of their writing). */
void mc_buf_unum(mc_buf_t *b, const char *prefix, unsigned long long v);
/* Appends the string s. */
void mc_buf_str(mc_buf_t *b, const char *s);
void mc_buf_free(mc_buf_t *b);

/* Writes data to path through a temporary file in the same folder and rename(), so a reader
 * never sees a half-written file. path must name nothing, or a regular file the caller's mode
 * bits let it write (root included): a directory, device, pipe or symbolic link is refused, as
 * is a read-only file; a replaced file keeps its permission bits (and, written by root, its
 * owner and group). An empty path is MC_ERR_USAGE. The temporary file is removed on every error
 * and on SIGINT, SIGTERM, SIGHUP. */
mc_status_t mc_write_file_atomic(const char *path, const void *data, size_t len, mc_err_t *err);

/* The same written in parts, for output too large to hold whole (the 8192-GPU schedule's
 * generated code): mc_atomic_open checks path as above and creates the temporary file; each
 * mc_atomic_write appends; mc_atomic_commit renames it into place. On an error the temporary file
 * is removed and f ended; mc_atomic_abort removes it otherwise (harmless on an ended f). */
typedef struct mc_atomic_file {
    char *path, *tmp;
    int fd, slot;
    mode_t mode;
    int chown;
    uid_t uid;
    gid_t gid;
    struct sigaction xfsz_old;
} mc_atomic_file_t;
mc_status_t mc_atomic_open(const char *path, mc_atomic_file_t *f, mc_err_t *err);
mc_status_t mc_atomic_write(mc_atomic_file_t *f, const void *data, size_t len, mc_err_t *err);
mc_status_t mc_atomic_commit(mc_atomic_file_t *f, mc_err_t *err);
void mc_atomic_abort(mc_atomic_file_t *f);

/* Temporary paths unlinked when SIGINT, SIGTERM or SIGHUP ends the process (util/tmpfiles.c).
 * mc_tmp_track returns a slot for mc_tmp_untrack, or -1 when the table is full. Creating a file
 * and tracking it between mc_tmp_block_signals and mc_tmp_restore_signals leaves no window. */
int mc_tmp_track(const char *path);
void mc_tmp_untrack(int slot);
void mc_tmp_block_signals(sigset_t *old);
void mc_tmp_restore_signals(const sigset_t *old);

/* Reads a whole file (NUL-terminated); a directory or more than MC_READ_MAX_BYTES is refused. */
#define MC_READ_MAX_BYTES (256 << 20)
mc_status_t mc_read_file(const char *path, char **data, size_t *len, mc_err_t *err);
/* The same for a text file: one holding a NUL byte is MC_ERR_PARSE ("PATH: expected a text
 * file"); a leading UTF-8 byte-order mark is dropped. */
mc_status_t mc_read_text_file(const char *path, char **data, mc_err_t *err);

/* Strict number parsing: the whole string must be the number. Return 0 on success. */
int mc_parse_i64(const char *s, int64_t *out);
int mc_parse_u64(const char *s, uint64_t *out);
int mc_parse_double(const char *s, double *out);

/* Cuts a '#' comment off a line and strips the blanks around what is left, in place. */
char *mc_strip_comment(char *line);
/* Calls fn on each line of text (cut in place at the newlines, numbered from 1) until one fails;
 * returns that status, or MC_OK. */
typedef mc_status_t (*mc_line_fn)(void *ctx, char *line, int lineno);
mc_status_t mc_parse_lines(char *text, mc_line_fn fn, void *ctx);
/* When line starts with the keyword kw followed by a blank, what follows the blanks; else NULL.
 * The line-oriented files (tasks, pipelines) read their statements with it. */
const char *mc_line_keyword(const char *line, const char *kw);

/* Human-readable bytes ("1.00 GiB") into buf. */
const char *mc_fmt_bytes(uint64_t bytes, char *buf, size_t len);
/* Seconds as "12.3 ms" / "4.56 s" into buf. */
const char *mc_fmt_seconds(double s, char *buf, size_t len);

/* Embeds a file into the binary at build time: declares NAME_start[] and NAME_stop[] around its
 * bytes, followed by a NUL. The path is relative to the repository root, where make runs the
 * compiler; a Makefile rule makes the object depend on the file. */
#define MC_EMBED_FILE(name, path)                                               \
    __asm__(".pushsection .rodata\n.balign 16\n" #name "_start:\n.incbin \"" path \
            "\"\n" #name "_stop:\n.byte 0\n.popsection\n");                   \
    extern const char name##_start[], name##_stop[]

/* Monotonic wall-clock seconds, for reporting synthesis times. */
double mc_now(void);

#endif
