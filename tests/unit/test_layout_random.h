/* Random resharding tasks for the layout property tests (and task_of, which parses and splits): meshes of up to 4 axes on random GPU
 * subsets (disjoint, overlapping or the same mesh), random ranks and shapes, random axis
 * placement with some explicit (possibly empty) shard sizes, and sometimes a second tensor. */
#ifndef TEST_LAYOUT_RANDOM_H
#define TEST_LAYOUT_RANDOM_H

#include <stdio.h>
#include <stdlib.h>

#include "layout/layout.h"

/* Uniform-ish in [0, n); a fixed seed so that every run tests the same tasks. */
static inline int rnd(int n)
{
    static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (int)(rng_state % (uint64_t)n);
}

/* Parses and splits text, failing the test with the message on error. */
static inline mc_task_t *task_of(const char *text)
{
    mc_task_t *t = NULL;
    mc_err_t err = {0};
    if (mc_task_parse_text(text, "test", &t, &err) != MC_OK || mc_task_split(t, &err) != MC_OK)
        fail_msg("%s\n%s", text, err.msg);
    return t;
}

/* The lower bound of text's task on topo, failing the test with the message on error. */
static inline mc_bound_t task_bound(const mc_topo_t *topo, const char *text)
{
    mc_task_t *t = task_of(text);
    mc_bound_t b;
    mc_err_t err = {0};
    if (mc_task_bound(t, topo, &b, &err) != MC_OK)
        fail_msg("%s\n%s", text, err.msg);
    mc_task_free(t);
    return b;
}

/* "mesh NAME={a:2,...}@..." with at most maxdev devices drawn without repeats from
 * lo..lo+universe-1, written as a range or a list. */
static inline void random_mesh(char *out, size_t len, const char *name, int lo, int maxdev,
                               int universe, int *naxes, int sizes[4])
{
    static const char *axes[] = {"a", "b", "c", "d"};
    int n;
    do {
        *naxes = 1 + rnd(4);
        n = 1;
        for (int i = 0; i < *naxes; i++)
            n *= sizes[i] = 1 + rnd(3);
    } while (n > maxdev);
    int off = snprintf(out, len, "mesh %s={", name);
    for (int i = 0; i < *naxes; i++)
        off += snprintf(out + off, len - (size_t)off, "%s%s:%d", i ? "," : "", axes[i], sizes[i]);
    if (rnd(3) == 0) {
        int first = lo + rnd(universe - n + 1);
        snprintf(out + off, len - (size_t)off, "}@%d..%d\n", first, first + n - 1);
        return;
    }
    int ids[256];
    for (int i = 0; i < universe; i++)
        ids[i] = lo + i;
    off += snprintf(out + off, len - (size_t)off, "}@[");
    for (int i = 0; i < n; i++) {
        int j = i + rnd(universe - i), tmp = ids[i];
        ids[i] = ids[j];
        ids[j] = tmp;
        off += snprintf(out + off, len - (size_t)off, "%s%d", i ? "," : "", ids[i]);
    }
    snprintf(out + off, len - (size_t)off, "]\n");
}

/* A shape of nd dimensions of 1..6 (the first times scale), also as text "a,b,c". */
static inline void random_shape(int nd, int64_t scale, int64_t *shape, char *txt, size_t len)
{
    int off = 0;
    txt[0] = '\0';
    for (int k = 0; k < nd; k++) {
        shape[k] = (1 + rnd(6)) * (k == 0 ? scale : 1);
        off += snprintf(txt + off, len - (size_t)off, "%s%lld", k ? "," : "", (long long)shape[k]);
    }
}

/* Dim specs for a tensor of the given shape: each axis goes to a random dim or nowhere, in a
 * random order; some dims get explicit sizes (zeros allowed). */
static inline void random_specs(char *out, size_t len, const char *mesh, int naxes, const int sizes[4],
                         int nd, const int64_t *shape)
{
    static const char *axes[] = {"a", "b", "c", "d"};
    int dim_axes[MC_MAX_DIMS][4], dn[MC_MAX_DIMS] = {0};
    int order[4] = {0, 1, 2, 3};
    for (int i = naxes - 1; i > 0; i--) {
        int j = rnd(i + 1), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
    for (int i = 0; i < naxes; i++) {
        int k = rnd(nd + 1);
        if (k < nd)
            dim_axes[k][dn[k]++] = order[i];
    }
    int off = snprintf(out, len, "%s[", mesh);
    for (int k = 0; k < nd; k++) {
        off += snprintf(out + off, len - (size_t)off, "%s", k ? "," : "");
        if (dn[k] == 0)
            off += snprintf(out + off, len - (size_t)off, "_");
        for (int i = 0; i < dn[k]; i++)
            off += snprintf(out + off, len - (size_t)off, "%s%s", i ? "," : dn[k] > 1 ? "(" : "",
                            axes[dim_axes[k][i]]);
        if (dn[k] > 1)
            off += snprintf(out + off, len - (size_t)off, ")");
        if (dn[k] && rnd(4) == 0) {
            int shards = 1;
            for (int i = 0; i < dn[k]; i++)
                shards *= sizes[dim_axes[k][i]];
            int64_t left = shape[k];
            for (int s = 0; s < shards; s++) {
                int64_t v = s == shards - 1 ? left : (int64_t)rnd((int)(left > 1000 ? 1000 : left) + 1);
                left -= v;
                off += snprintf(out + off, len - (size_t)off, "%s%lld", s ? "," : "{",
                                (long long)v);
            }
            off += snprintf(out + off, len - (size_t)off, "}");
        }
    }
    snprintf(out + off, len - (size_t)off, "]");
}

/* A task text: meshes A and B (at most maxdev GPUs each, ids below universe), a move A -> B or
 * A -> A, sometimes a second move B -> A; dimension sizes 1..6 times scale. */
static inline void random_task(char *text, size_t len, int maxdev, int universe, int64_t scale)
{
    static const char *dtypes[] = {"f32", "bf16", "u8", "f64"};
    char mesh_a[1024], mesh_b[1024], src[512], dst[512], shape_txt[96];
    int na, nb, sa[4], sb[4], nd = 1 + rnd(3);
    random_mesh(mesh_a, sizeof(mesh_a), "A", 0, maxdev, universe, &na, sa);
    random_mesh(mesh_b, sizeof(mesh_b), "B", 0, maxdev, universe, &nb, sb);
    int64_t shape[MC_MAX_DIMS];
    random_shape(nd, scale, shape, shape_txt, sizeof(shape_txt));
    random_specs(src, sizeof(src), "A", na, sa, nd, shape);
    if (rnd(3) == 0)
        random_specs(dst, sizeof(dst), "A", na, sa, nd, shape);
    else
        random_specs(dst, sizeof(dst), "B", nb, sb, nd, shape);
    char second[1200] = "";
    if (rnd(3) == 0) {
        char s2[512], d2[512];
        random_specs(s2, sizeof(s2), "B", nb, sb, nd, shape);
        random_specs(d2, sizeof(d2), "A", na, sa, nd, shape);
        snprintf(second, sizeof(second), "move back: u8[%s] %s -> %s\n", shape_txt, s2, d2);
    }
    int n = snprintf(text, len, "%s%smove %s[%s] %s -> %s\n%s", mesh_a, mesh_b, dtypes[rnd(4)],
                     shape_txt, src, dst, second);
    assert_true(n > 0 && (size_t)n < len);
}

#endif
