/* Internals shared by the files of sched/: the built-in schema, memory accounting. */
#ifndef MC_SCHED_INTERNAL_H
#define MC_SCHED_INTERNAL_H

#include "sched/sched.h"

/* The text of sched/schedule.rng, compiled in. */
const char *mc_sched_schema_text(size_t *len);

/* Bytes tree tr leaves on its child GPU that the GPU does not need (receives only to relay). */
uint64_t mc_sched_relayed(const mc_sched_t *s, const mc_tree_t *tr, int child);
/* A GPU's memory without relayed bytes: source + destination shards - local copies + workspace. */
uint64_t mc_sched_shard_mem(const mc_sched_t *s, int gpu);

/* One group of trees written as an instance of a template (sched_symmetry.c). */
typedef struct mc_sched_instance {
    int template;
    int nnodes, *nodes;     /* node ids, in the template's order of first appearance */
    int ntrees, *trees;     /* its trees, in the template's order */
} mc_sched_instance_t;

typedef struct mc_sched_sym {
    int ntemplates;
    int *template_of;       /* per tree: the template it belongs to, or -1 */
    char *instance_tree;    /* per tree: 1 when written as part of an instance */
    mc_sched_instance_t *inst;
    int ninst, inst_cap;
} mc_sched_sym_t;

/* The templates and instances of a schedule; groups with a route off the topology stay out. */
void mc_sched_sym_find(const mc_sched_t *s, const mc_topo_t *topo, mc_sched_sym_t *sym);
void mc_sched_sym_free(mc_sched_sym_t *sym);

/* The nodes trees[0..n) pass in order of first appearance (each tree's root, then per edge its
 * parent, child, via GPU and route), into *nodes (caller frees); with key, also the canonical
 * key of the trees (caller frees). local: per node -1, left so. Returns the number of nodes, or
 * -1 when a tree names a GPU or link this topology lacks. */
int mc_sched_sym_walk(const mc_sched_t *s, const mc_topo_t *topo, const int *trees, int n,
                      int *local, int **nodes, int64_t **key, int *nkey);

/* Appends an instance of the template made of trees tmpl[0..n): each tree copied onto nodes[]
 * (the template's nodes in mc_sched_sym_walk's order, mapped in that order), the i-th with piece
 * pieces[i]. where: "file:line" for messages. */
mc_status_t mc_sched_sym_expand(mc_sched_t *s, const mc_topo_t *topo, const int *tmpl, int n,
                                const int *nodes, int nnodes, const int *pieces,
                                const char *where, mc_err_t *err);

/* Keeps an instance compact (mc_sched_load_compact) after checking that it expands: the
 * template's links exist on its nodes and its GPUs are GPUs. When not, expands it for the exact
 * message mc_sched_sym_expand gives. k: the template's number in the file. */
mc_status_t mc_sched_sym_keep(mc_sched_t *s, const mc_topo_t *topo, int k, const int *tmpl, int n,
                              const int *nodes, int nnodes, const int *pieces, const char *where,
                              mc_err_t *err);
/* Instance i's tree j with its GPUs renamed and no route (nedges edges into edges), for the
 * checks that need only GPUs. */
void mc_sched_inst_tree(const mc_sched_t *s, const mc_topo_t *topo, int i, int j, mc_tree_t *out,
                        mc_tree_edge_t *edges);
void mc_sched_sym_compact_free(mc_sched_t *s);

#endif
