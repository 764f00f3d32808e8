/* Allocation helpers, growable arrays, sorting, membership and the text buffer. */
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

static void *oom(size_t n)
{
    fprintf(stderr, "meshcast: out of memory allocating %zu bytes\n", n);
    abort();
}

void *mc_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *mc_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *mc_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

char *mc_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(mc_xmalloc(n), s, n);
}

char *mc_xvasprintf(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, again);
    va_end(again);
    char *s = mc_xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *mc_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = mc_xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

void mc_grow(void **arr, size_t elem, int *cap, int need)
{
    if (need <= *cap)
        return;
    int c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    *arr = mc_xrealloc(*arr, (size_t)c * elem);
    *cap = c;
}

void mc_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

int mc_ints_contain(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* Room for n more bytes and a terminating NUL. */
static void reserve(mc_buf_t *b, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->len + n + 1)
            c *= 2;
        b->data = mc_xrealloc(b->data, c);
        b->cap = c;
    }
}

void mc_buf_append(mc_buf_t *b, const char *s, size_t n)
{
    reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

/* prefix, then '-' when neg, then u in decimal. */
static void put_digits(mc_buf_t *b, const char *prefix, unsigned long long u, int neg)
{
    char digits[24];
    int n = 0;
    do
        digits[sizeof digits - 1 - n++] = (char)('0' + u % 10);
    while ((u /= 10) > 0);
    if (neg)
        digits[sizeof digits - 1 - n++] = '-';
    size_t np = strlen(prefix);
    reserve(b, np + (size_t)n);
    memcpy(b->data + b->len, prefix, np);
    memcpy(b->data + b->len + np, digits + sizeof digits - n, (size_t)n);
    b->len += np + (size_t)n;
    b->data[b->len] = '\0';
}

void mc_buf_num(mc_buf_t *b, const char *prefix, long long v)
{
    put_digits(b, prefix, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, v < 0);
}

void mc_buf_unum(mc_buf_t *b, const char *prefix, unsigned long long v)
{
    put_digits(b, prefix, v, 0);
}

void mc_buf_str(mc_buf_t *b, const char *s)
{
    mc_buf_append(b, s, strlen(s));
}

/* Formats straight into the buffer's free room, and again once it has grown when the text did
 * not fit: most calls format once, with no temporary string (the components' keys and the
 * schedule files are written a few characters at a time). */
void mc_buf_printf(mc_buf_t *b, const char *fmt, ...)
{
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    reserve(b, 0);
    size_t room = b->cap - b->len;
    int n = vsnprintf(b->data + b->len, room, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n >= room) {
        reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
    }
    va_end(again);
    if (n > 0)
        b->len += (size_t)n;
    else
        b->data[b->len] = '\0';
}

void mc_buf_free(mc_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
