/* The layout notation (DESIGN.md section 3): meshes, layouts and moves, parsed by hand with a
 * cursor so that every error can quote the text and put a caret under the column where
 * something else was expected. Errors are MC_ERR_USAGE: the text comes from the user. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout_internal.h"

/* Meshes larger than this are surely a typo; it also keeps every product below int overflow. */
#define MESH_MAX_DEVICES (1 << 24)
#define IOTA_MAX_DIMS 32

typedef struct cursor {
    const char *text;
    const char *p;
    mc_err_t *err;
} cursor_t;

/* Characters (UTF-8 code points) in the first n bytes of s: columns and carets count what the
 * user sees, not bytes. */
static size_t chars_in(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

/* Backs up to the start of the UTF-8 character holding byte i. */
static size_t char_start(const char *s, size_t i)
{
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

mc_status_t mc_layout_quote(mc_err_t *err, mc_status_t st, const char *prefix, const char *text,
                            size_t pos, const char *what)
{
    size_t len = strlen(text), col = pos;
    size_t from = char_start(text, col > 48 ? col - 48 : 0);
    size_t to = from + 72 < len ? char_start(text, from + 72) : len;
    const char *pre = from ? "..." : "", *post = to < len ? "..." : "";
    return mc_err_set(err, st, "%s%s at column %zu\n  %s%.*s%s\n  %*s^", prefix, what,
                      chars_in(text, col) + 1, pre, (int)(to - from), text + from, post,
                      (int)(chars_in(text + from, col - from) + strlen(pre)), "");
}

/* Sets a usage error quoting up to ~72 characters of the text around pos, caret under pos. */
static mc_status_t fail_at(cursor_t *c, const char *pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static mc_status_t fail_at(cursor_t *c, const char *pos, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return mc_layout_quote(c->err, MC_ERR_USAGE, "", c->text, (size_t)(pos - c->text), what);
}

static void skip_ws(cursor_t *c)
{
    while (*c->p == ' ' || *c->p == '\t')
        c->p++;
}

/* Consumes ch (after blanks) or fails saying what was expected. */
static mc_status_t expect(cursor_t *c, char ch, const char *what)
{
    skip_ws(c);
    if (*c->p != ch)
        return fail_at(c, c->p, "expected %s", what);
    c->p++;
    return MC_OK;
}

static mc_status_t expect_end(cursor_t *c, const char *what)
{
    skip_ws(c);
    return *c->p ? fail_at(c, c->p, "expected the end of the %s", what) : MC_OK;
}

static int accept(cursor_t *c, char ch)
{
    skip_ws(c);
    if (*c->p != ch)
        return 0;
    c->p++;
    return 1;
}

/* A byte that continues a word: ASCII letters, digits, '_', and any byte of a UTF-8 sequence. */
static int word_byte(unsigned char ch)
{
    return isalnum(ch) || ch == '_' || ch >= 0x80;
}

/* An identifier [A-Za-z_][A-Za-z0-9_]*; *start and *len describe it. */
static mc_status_t ident(cursor_t *c, const char *what, const char **start, size_t *len)
{
    skip_ws(c);
    const char *s = c->p;
    /* A word with non-ASCII letters ("hóst") is quoted whole, not cut at its first such byte. */
    const char *e = s;
    while (word_byte((unsigned char)*e))
        e++;
    for (const char *q = s; q < e; q++)
        if ((unsigned char)*q >= 0x80)
            return fail_at(c, s, "expected %s in ASCII letters, digits and '_', got '%.*s'", what,
                           (int)(e - s), s);
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return fail_at(c, s, "expected %s", what);
    c->p = e;
    *start = s;
    *len = (size_t)(c->p - s);
    if (*len >= MC_NAME_MAX)
        return fail_at(c, s, "%s is longer than %d characters", what, MC_NAME_MAX - 1);
    return MC_OK;
}

/* A non-negative decimal integer no larger than max. */
static mc_status_t integer(cursor_t *c, const char *what, int64_t max, int64_t *out)
{
    skip_ws(c);
    const char *s = c->p;
    if (!isdigit((unsigned char)*s))
        return fail_at(c, s, "expected %s", what);
    int64_t v = 0;
    for (; isdigit((unsigned char)*c->p); c->p++) {
        int d = *c->p - '0';
        if (v > (max - d) / 10)
            return fail_at(c, s, "%s is larger than %lld", what, (long long)max);
        v = v * 10 + d;
    }
    *out = v;
    return MC_OK;
}

/* INT (',' INT)* up to close; returns a malloc'ed array in *out. */
static mc_status_t int_list(cursor_t *c, const char *what, int64_t max, char close,
                            const char *close_what, int64_t **out, int *n)
{
    mc_status_t st;
    int cap = 0;
    *out = NULL;
    *n = 0;
    do {
        MC_GROW(*out, cap, *n + 1);
        MC_CHECK_GOTO(integer(c, what, max, &(*out)[*n]), fail, st);
        (*n)++;
    } while (accept(c, ','));
    MC_CHECK_GOTO(expect(c, close, close_what), fail, st);
    return MC_OK;
fail:
    free(*out);
    *out = NULL;
    return st;
}

/* XLA's iota form "<=[d0,d1,...]T(p0,p1,...)": iota reshaped to dims, transposed by perm. */
static mc_status_t iota_devices(cursor_t *c, mc_mesh_t *m)
{
    mc_status_t st;
    int64_t *dims = NULL, *perm = NULL;
    int nd = 0, np = 0;
    const char *at = c->p;
    MC_CHECK_GOTO(expect(c, '[', "'[' after '<='"), out, st);
    MC_CHECK_GOTO(int_list(c, "an iota dimension", MESH_MAX_DEVICES, ']', "',' or ']'", &dims, &nd),
                  out, st);
    if (nd > IOTA_MAX_DIMS) {
        st = fail_at(c, at, "expected at most %d iota dimensions", IOTA_MAX_DIMS);
        goto out;
    }
    int64_t total = 1;
    for (int i = 0; i < nd; i++)
        total = total * dims[i] > MESH_MAX_DEVICES ? MESH_MAX_DEVICES + 1 : total * dims[i];
    if (total != m->ndevices) {
        st = fail_at(c, at, "the iota shape holds %lld devices, expected the mesh size %d",
                     (long long)total, m->ndevices);
        goto out;
    }
    skip_ws(c);
    if (*c->p == 'T') {
        c->p++;
        const char *pat = c->p;
        MC_CHECK_GOTO(expect(c, '(', "'(' after 'T'"), out, st);
        MC_CHECK_GOTO(int_list(c, "a dimension index", nd, ')', "',' or ')'", &perm, &np), out, st);
        int seen[IOTA_MAX_DIMS] = {0};
        for (int i = 0; i < np && np == nd; i++) {
            if (perm[i] >= nd || seen[perm[i]])
                np = -1;
            else
                seen[perm[i]] = 1;
        }
        if (np != nd) {
            st = fail_at(c, pat, "expected a permutation of 0..%d", nd - 1);
            goto out;
        }
    }
    int64_t pdims[IOTA_MAX_DIMS], stride[IOTA_MAX_DIMS];
    for (int i = nd - 1, s = 1; i >= 0; s *= (int)dims[i], i--)
        stride[i] = s;
    for (int i = 0; i < nd; i++)
        pdims[i] = dims[perm ? perm[i] : i];
    m->devices = mc_xmalloc(sizeof(int) * (size_t)m->ndevices);
    for (int j = 0; j < m->ndevices; j++) {
        /* j is a row-major index over the transposed shape; map it back to the iota value. */
        int64_t rest = j, v = 0;
        for (int i = nd - 1; i >= 0; i--) {
            int64_t ji = rest % pdims[i];
            rest /= pdims[i];
            v += ji * stride[perm ? perm[i] : i];
        }
        m->devices[j] = (int)v;
    }
    st = MC_OK;
out:
    free(dims);
    free(perm);
    return st;
}

static mc_status_t mesh_devices(cursor_t *c, mc_mesh_t *m)
{
    mc_status_t st;
    skip_ws(c);
    const char *at = c->p;
    if (c->p[0] == '<' && c->p[1] == '=') {
        c->p += 2;
        return iota_devices(c, m);
    }
    if (accept(c, '[')) {
        int64_t *ids = NULL;
        int n = 0;
        MC_CHECK_GOTO(int_list(c, "a device id", 0x7fffffff, ']', "',' or ']'", &ids, &n), out,
                      st);
        if (n != m->ndevices) {
            free(ids);
            return fail_at(c, at, "the mesh has %d devices but the list gives %d", m->ndevices, n);
        }
        m->devices = mc_xmalloc(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            m->devices[i] = (int)ids[i];
        free(ids);
        return MC_OK;
    }
    int64_t lo, hi, n = m->ndevices;
    if (!isdigit((unsigned char)*c->p)) {
        /* Examples sized to this mesh say more than the grammar's placeholders. */
        char list[64];
        if (n <= 4)
            snprintf(list, sizeof list, "[0%s%s%s]", n > 1 ? ",1" : "", n > 2 ? ",2" : "",
                     n > 3 ? ",3" : "");
        else
            snprintf(list, sizeof list, "[0,1,...,%lld]", (long long)n - 1);
        return fail_at(c, at, "expected the mesh's %lld device%s after '@': a range such as "
                       "0..%lld, a first id such as 0, a list such as %s or an iota such as <=[%lld]",
                       (long long)n, n == 1 ? "" : "s", (long long)n - 1, list, (long long)n);
    }
    MC_CHECK_GOTO(integer(c, "the first device id", 0x7fffffff, &lo), out, st);
    skip_ws(c);
    const char *hat = c->p;
    /* A lone FIRST means the mesh's devices run from FIRST on. */
    hi = lo + m->ndevices - 1;
    if ((*c->p == '-' || *c->p == ':' || *c->p == '.') && !(c->p[0] == '.' && c->p[1] == '.'))
        return fail_at(c, hat, "expected '..' between the first and last device id, as in "
                       "%lld..%lld",
                       (long long)lo, (long long)hi);
    if (c->p[0] == '.' && c->p[1] == '.') {
        c->p += 2;
        hat = c->p;
        MC_CHECK_GOTO(integer(c, "the last device id", 0x7fffffff, &hi), out, st);
    }
    if (hi > 0x7fffffff)
        return fail_at(c, hat, "the devices run past id %d", 0x7fffffff);
    if (hi < lo || hi - lo + 1 != m->ndevices)
        return fail_at(c, hat, "the mesh has %d devices but %lld..%lld gives %lld", m->ndevices,
                       (long long)lo, (long long)hi, (long long)(hi >= lo ? hi - lo + 1 : 0));
    m->devices = mc_xmalloc(sizeof(int) * (size_t)m->ndevices);
    for (int i = 0; i < m->ndevices; i++)
        m->devices[i] = (int)lo + i;
out:
    return st;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* Fails when a device id occurs twice; at is the start of the device list. */
static mc_status_t check_unique_devices(cursor_t *c, const char *at, const mc_mesh_t *m)
{
    int *sorted = mc_xmalloc(sizeof(int) * (size_t)m->ndevices);
    memcpy(sorted, m->devices, sizeof(int) * (size_t)m->ndevices);
    mc_sort(sorted, (size_t)m->ndevices, sizeof(int), cmp_int);
    int dup = -1;
    for (int i = 1; i < m->ndevices && dup < 0; i++)
        if (sorted[i] == sorted[i - 1])
            dup = sorted[i];
    free(sorted);
    if (dup >= 0)
        return fail_at(c, at, "device %d appears twice in mesh %s", dup, m->name);
    return MC_OK;
}

mc_status_t mc_task_add_mesh(mc_task_t *task, const char *text, mc_err_t *err)
{
    cursor_t c = {text, text, err};
    mc_mesh_t m = {0};
    mc_status_t st;
    const char *name;
    size_t len;
    MC_CHECK_GOTO(ident(&c, "a mesh name", &name, &len), fail, st);
    mc_dtype_t dt;
    memcpy(m.name, name, len);
    if (mc_dtype_parse(m.name, &dt) == 0 || !strcmp(m.name, "_")) {
        st = fail_at(&c, name, "'%s' cannot name a mesh (it is a dtype or '_')", m.name);
        goto fail;
    }
    if (mc_task_find_mesh(task, name, len) >= 0) {
        st = fail_at(&c, name, "mesh %s is already defined", m.name);
        goto fail;
    }
    MC_CHECK_GOTO(expect(&c, '=', "'=' after the mesh name"), fail, st);
    MC_CHECK_GOTO(expect(&c, '{', "'{' opening the mesh axes"), fail, st);
    int64_t total = 1;
    do {
        const char *an;
        size_t alen;
        int64_t size;
        MC_CHECK_GOTO(ident(&c, "an axis name", &an, &alen), fail, st);
        if (alen == 1 && an[0] == '_') {
            st = fail_at(&c, an, "'_' cannot name an axis");
            goto fail;
        }
        for (int a = 0; a < m.naxes; a++)
            if (strlen(m.axis_names[a]) == alen && !memcmp(m.axis_names[a], an, alen)) {
                st = fail_at(&c, an, "axis %.*s is used twice in mesh %s", (int)alen, an, m.name);
                goto fail;
            }
        if (m.naxes == MC_MAX_AXES) {
            st = fail_at(&c, an, "expected at most %d axes", MC_MAX_AXES);
            goto fail;
        }
        MC_CHECK_GOTO(expect(&c, ':', "':' and the axis size"), fail, st);
        const char *sat = c.p;
        MC_CHECK_GOTO(integer(&c, "an axis size", MESH_MAX_DEVICES, &size), fail, st);
        if (size < 1 || total * size > MESH_MAX_DEVICES) {
            st = fail_at(&c, sat, "expected an axis size of at least 1 and at most %d devices "
                         "in the mesh", MESH_MAX_DEVICES);
            goto fail;
        }
        total *= size;
        memcpy(m.axis_names[m.naxes], an, alen);
        m.axis_sizes[m.naxes++] = (int)size;
    } while (accept(&c, ','));
    MC_CHECK_GOTO(expect(&c, '}', "',' or '}' after an axis"), fail, st);
    m.ndevices = (int)total;
    if (accept(&c, '@')) {
        skip_ws(&c);
        const char *dat = c.p;
        MC_CHECK_GOTO(mesh_devices(&c, &m), fail, st);
        MC_CHECK_GOTO(check_unique_devices(&c, dat, &m), fail, st);
    } else {
        m.devices = mc_xmalloc(sizeof(int) * (size_t)m.ndevices);
        for (int i = 0; i < m.ndevices; i++)
            m.devices[i] = i;
    }
    MC_CHECK_GOTO(expect_end(&c, "mesh"), fail, st);
    MC_GROW(task->meshes, task->mesh_cap, task->nmeshes + 1);
    m.text = mc_xstrdup(text);
    task->meshes[task->nmeshes] = m;
    mc_names_add(&task->mesh_names, task->meshes, sizeof(mc_mesh_t), task->nmeshes++);
    return MC_OK;
fail:
    free(m.devices);
    return st;
}

/* The part of a layout after the mesh name: '[' dimspec (',' dimspec)* ']'. dtype and shape are
 * already in l. */
static mc_status_t dim_specs(cursor_t *c, const mc_task_t *task, mc_layout_t *l)
{
    mc_status_t st;
    const mc_mesh_t *m = &task->meshes[l->mesh];
    int used[MC_MAX_AXES] = {0};
    MC_CHECK_GOTO(expect(c, '[', "'[' opening the dimension specs"), out, st);
    for (int k = 0; k < l->ndims; k++) {
        if (k > 0)
            MC_CHECK_GOTO(expect(c, ',', "',' and the next dimension spec"), out, st);
        mc_dim_spec_t *d = &l->dims[k];
        skip_ws(c);
        const char *dat = c->p;
        int paren = accept(c, '(');
        do {
            const char *an;
            size_t alen;
            MC_CHECK_GOTO(ident(c, paren ? "an axis name" : "'_', an axis name or '(' axes ')'",
                                &an, &alen),
                          out, st);
            if (!paren && alen == 1 && an[0] == '_')
                break;
            int a = 0;
            while (a < m->naxes &&
                   !(strlen(m->axis_names[a]) == alen && !memcmp(m->axis_names[a], an, alen)))
                a++;
            if (a == m->naxes) {
                char axes[MC_MAX_AXES * (MC_NAME_MAX + 2)] = "";
                for (int i = 0; i < m->naxes; i++)
                    strcat(strcat(axes, i ? ", " : ""), m->axis_names[i]);
                return fail_at(c, an, "unknown axis '%.*s' (mesh %s has %s)", (int)alen, an,
                               m->name, axes);
            }
            if (used[a])
                return fail_at(c, an, "axis %s is used twice in the layout", m->axis_names[a]);
            used[a] = 1;
            d->axes[d->naxes++] = a;
        } while (paren && accept(c, ','));
        if (paren)
            MC_CHECK_GOTO(expect(c, ')', "',' or ')' closing the axis group"), out, st);
        skip_ws(c);
        const char *sat = c->p;
        if (accept(c, '{')) {
            if (d->naxes == 0)
                return fail_at(c, sat, "explicit shard sizes need an axis to split over");
            int64_t k_shards = mc_layout_nshards(task, l, k), *sizes = NULL, sum = 0;
            int n = 0;
            MC_CHECK_GOTO(int_list(c, "a shard size", l->shape[k], '}', "',' or '}'", &sizes, &n),
                          out, st);
            d->sizes = sizes;
            int over = 0; /* the sum passed the dim; stop before it can overflow */
            for (int i = 0; i < n && !over; i++) {
                over = sizes[i] > l->shape[k] - sum;
                sum += over ? 0 : sizes[i];
            }
            if (n != k_shards)
                return fail_at(c, sat, "expected %lld shard sizes (one per shard of %.*s), got %d",
                               (long long)k_shards, (int)(sat - dat), dat, n);
            if (over || sum != l->shape[k])
                return fail_at(c, sat, "the shard sizes sum to %s%lld, expected the dimension's "
                               "size %lld", over ? "more than " : "",
                               (long long)(over ? l->shape[k] : sum), (long long)l->shape[k]);
        }
    }
    skip_ws(c);
    if (*c->p == ',')
        return fail_at(c, c->p, "expected %d dimension specs (one per tensor dimension)",
                       l->ndims);
    MC_CHECK_GOTO(expect(c, ']', "']' closing the dimension specs"), out, st);
out:
    return st;
}

/* Fails unless the identifier names a defined mesh; sets l->mesh. */
static mc_status_t mesh_ref(cursor_t *c, const mc_task_t *task, mc_layout_t *l)
{
    const char *name;
    size_t len;
    mc_status_t st = ident(c, "a mesh name", &name, &len);
    if (st != MC_OK)
        return st;
    l->mesh = mc_task_find_mesh(task, name, len);
    if (l->mesh < 0)
        return fail_at(c, name, "unknown mesh '%.*s' (define it first, e.g. --mesh '%.*s={x:2}@0..1')",
                       (int)len, name, (int)len, name);
    return MC_OK;
}

/* '[' INT (',' INT)* ']' after the dtype; the byte count must fit in 63 bits. */
static mc_status_t shape(cursor_t *c, mc_layout_t *l)
{
    mc_status_t st;
    uint64_t bytes = (uint64_t)mc_dtype_size(l->dtype);
    MC_CHECK_GOTO(expect(c, '[', "'[' and the tensor shape after the dtype"), out, st);
    do {
        if (l->ndims == MC_MAX_DIMS)
            return fail_at(c, c->p, "expected at most %d dimensions", MC_MAX_DIMS);
        skip_ws(c);
        const char *at = c->p;
        int64_t n;
        MC_CHECK_GOTO(integer(c, "a dimension size", INT64_MAX, &n), out, st);
        if (n < 1)
            return fail_at(c, at, "expected a dimension size of at least 1");
        if (__builtin_mul_overflow(bytes, (uint64_t)n, &bytes) || bytes > INT64_MAX)
            return fail_at(c, at, "the tensor's size in bytes overflows 64-bit byte counts");
        l->shape[l->ndims++] = n;
    } while (accept(c, ','));
    MC_CHECK_GOTO(expect(c, ']', "',' or ']' in the tensor shape"), out, st);
out:
    return st;
}

static mc_status_t dtype(cursor_t *c, mc_layout_t *l, const char **dat)
{
    const char *name;
    size_t len;
    mc_status_t st = ident(c, "a dtype (f64 f32 f16 bf16 f8e4m3 f8e5m2 i64 i32 i16 i8 u8 bool)",
                           &name, &len);
    if (st != MC_OK)
        return st;
    char buf[MC_NAME_MAX] = {0};
    memcpy(buf, name, len);
    *dat = name;
    if (mc_dtype_parse(buf, &l->dtype))
        return fail_at(c, name, "unknown dtype '%s' (expected one of f64 f32 f16 bf16 f8e4m3 "
                       "f8e5m2 i64 i32 i16 i8 u8 bool)", buf);
    return MC_OK;
}

/* The destination: a full layout, or only 'MESH[...]' taking the source's dtype and shape. */
static mc_status_t dst_layout(cursor_t *c, const mc_task_t *task, const mc_layout_t *src,
                              mc_layout_t *dst)
{
    mc_status_t st;
    skip_ws(c);
    const char *at = c->p, *name;
    size_t len;
    MC_CHECK_GOTO(ident(c, "the destination layout", &name, &len), out, st);
    c->p = at;
    char buf[MC_NAME_MAX] = {0};
    mc_dtype_t dt;
    memcpy(buf, name, len);
    if (mc_dtype_parse(buf, &dt) == 0) {
        const char *dat;
        MC_CHECK_GOTO(dtype(c, dst, &dat), out, st);
        if (dst->dtype != src->dtype)
            return fail_at(c, dat, "dtype %s does not match the source's %s",
                           mc_dtype_name(dst->dtype), mc_dtype_name(src->dtype));
        skip_ws(c);
        const char *sat = c->p;
        MC_CHECK_GOTO(shape(c, dst), out, st);
        if (dst->ndims != src->ndims ||
            memcmp(dst->shape, src->shape, sizeof(int64_t) * (size_t)src->ndims))
            return fail_at(c, sat, "the shape does not match the source's shape");
    } else {
        dst->dtype = src->dtype;
        dst->ndims = src->ndims;
        memcpy(dst->shape, src->shape, sizeof(dst->shape));
    }
    MC_CHECK_GOTO(mesh_ref(c, task, dst), out, st);
    MC_CHECK_GOTO(dim_specs(c, task, dst), out, st);
out:
    return st;
}

/* A further consumer after ',': a destination layout over a mesh that shares no GPU with an
 * earlier consumer's, since a GPU holds one destination tile of a tensor. */
static mc_status_t more_consumer(cursor_t *c, const mc_task_t *task, mc_tensor_move_t *mv)
{
    if (mv->nmore + 1 == MC_MAX_CONSUMERS)
        return fail_at(c, c->p, "expected at most %d consumers of one tensor", MC_MAX_CONSUMERS);
    skip_ws(c);
    const char *at = c->p;
    mv->more = mc_xrealloc(mv->more, sizeof(mc_layout_t) * (size_t)(mv->nmore + 1));
    mc_layout_t *l = &mv->more[mv->nmore++];
    memset(l, 0, sizeof(*l));
    mc_status_t st = dst_layout(c, task, &mv->src, l);
    if (st != MC_OK)
        return st;
    const mc_mesh_t *m = &task->meshes[l->mesh];
    for (int k = 0; k < mv->nmore; k++) {
        const mc_mesh_t *o = &task->meshes[mc_tensor_consumer(mv, k)->mesh];
        for (int i = 0; i < m->ndevices; i++)
            if (mc_mesh_position(o, m->devices[i]) >= 0)
                return fail_at(c, at, "consumer mesh %s shares GPU %d with consumer mesh %s; "
                               "expected consumers on disjoint meshes (a GPU holds one "
                               "destination tile of a tensor)", m->name, m->devices[i], o->name);
    }
    return MC_OK;
}

mc_status_t mc_task_add_move(mc_task_t *task, const char *text, mc_err_t *err)
{
    cursor_t c = {text, text, err};
    mc_tensor_move_t mv;
    memset(&mv, 0, sizeof(mv));
    mc_status_t st;
    const char *first, *dat;
    size_t len;
    MC_CHECK_GOTO(ident(&c, "a tensor name or a dtype", &first, &len), fail, st);
    if (accept(&c, ':')) {
        memcpy(mv.name, first, len);
        if (mc_names_find(&task->tensor_names, task->tensors, sizeof(mc_tensor_move_t), first,
                          len) >= 0) {
            st = fail_at(&c, first, "tensor %s is already defined", mv.name);
            goto fail;
        }
    } else {
        c.p = first;
        snprintf(mv.name, sizeof(mv.name), "t%d", task->ntensors);
    }
    MC_CHECK_GOTO(dtype(&c, &mv.src, &dat), fail, st);
    MC_CHECK_GOTO(shape(&c, &mv.src), fail, st);
    MC_CHECK_GOTO(mesh_ref(&c, task, &mv.src), fail, st);
    MC_CHECK_GOTO(dim_specs(&c, task, &mv.src), fail, st);
    skip_ws(&c);
    if (c.p[0] != '-' || c.p[1] != '>') {
        st = fail_at(&c, c.p, "expected '->' and the destination layout");
        goto fail;
    }
    c.p += 2;
    MC_CHECK_GOTO(dst_layout(&c, task, &mv.src, &mv.dst), fail, st);
    while (accept(&c, ','))
        MC_CHECK_GOTO(more_consumer(&c, task, &mv), fail, st);
    MC_CHECK_GOTO(expect_end(&c, "move"), fail, st);
    MC_GROW(task->tensors, task->tensor_cap, task->ntensors + 1);
    task->tensors[task->ntensors] = mv;
    mc_names_add(&task->tensor_names, task->tensors, sizeof(mc_tensor_move_t), task->ntensors++);
    return MC_OK;
fail:
    mc_layout_clear(&mv.src);
    mc_layout_clear(&mv.dst);
    for (int i = 0; i < mv.nmore; i++)
        mc_layout_clear(&mv.more[i]);
    free(mv.more);
    return st;
}
