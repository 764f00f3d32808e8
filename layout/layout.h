/* layout: what moves. Meshes (named axes over global GPU ids), layouts (a tensor's dtype and
 * shape, and per tensor dimension the mesh axes it is split over), tasks (one or more tensors
 * moving together from a source layout to a destination layout), the pieces a task splits into,
 * and the lower bounds on time and memory that every reported time is judged against.
 *
 * Notation (DESIGN.md section 3):
 *   mesh    A={host:2,gpu:4}@0..7        B={x:4,y:2}@[8,9,10,11,12,13,14,15]   C={x:4,y:2}@<=[2,4]T(1,0)
 *   layout  i32[1024,1024,512] A[host,_,_]     f32[10,64] A[gpu{4,2,2,2},_]    bf16[8,8] A[(host,gpu),_]
 *   move    'i32[1024,1024,512] A[host,_,_] -> B[_,host,_]'   (the destination may omit dtype/shape)
 *   several consumers  'f32[64,64] A[host,_] -> B[_,x], C[y,_]'
 *           (one tensor whose pieces' destinations span B and C)
 *
 * A piece is a maximal box of one tensor with one set of holders and one set of destinations;
 * its bytes are the box's elements in row-major order, so a byte range of a piece is a range of
 * that linearization. Pieces cover every destination tile exactly once. */
#ifndef MC_LAYOUT_H
#define MC_LAYOUT_H

#include <stdint.h>

#include "topo/topo.h"
#include "util/index.h"
#include "util/util.h"

#define MC_MAX_DIMS 8
#define MC_MAX_AXES 8
#define MC_NAME_MAX 32

typedef enum {
    MC_DT_F64, MC_DT_F32, MC_DT_F16, MC_DT_BF16, MC_DT_F8E4M3, MC_DT_F8E5M2,
    MC_DT_I64, MC_DT_I32, MC_DT_I16, MC_DT_I8, MC_DT_U8, MC_DT_BOOL,
    MC_DT__COUNT
} mc_dtype_t;

int mc_dtype_size(mc_dtype_t dt);
const char *mc_dtype_name(mc_dtype_t dt);
/* Returns 0 and sets *dt when name is a dtype. */
int mc_dtype_parse(const char *name, mc_dtype_t *dt);

typedef struct mc_mesh {
    char name[MC_NAME_MAX];
    int naxes;
    char axis_names[MC_MAX_AXES][MC_NAME_MAX];
    int axis_sizes[MC_MAX_AXES];
    int ndevices;       /* product of axis sizes */
    int *devices;       /* global GPU ids, row-major over the axes */
    char *text;         /* the definition as written, quoted by errors found later */
    int line;           /* its line in the task file, 0 when not from a file */
} mc_mesh_t;

typedef struct mc_dim_spec {
    int naxes;
    int axes[MC_MAX_AXES];  /* mesh axis indices, major to minor */
    int64_t *sizes;         /* explicit shard sizes (one per shard) or NULL for the ceil rule */
} mc_dim_spec_t;

typedef struct mc_layout {
    mc_dtype_t dtype;
    int ndims;
    int64_t shape[MC_MAX_DIMS];
    int mesh;                       /* index into the task's meshes */
    mc_dim_spec_t dims[MC_MAX_DIMS];
} mc_layout_t;

typedef struct mc_box {
    int64_t lo[MC_MAX_DIMS], hi[MC_MAX_DIMS]; /* half-open per dimension */
} mc_box_t;

#define MC_MAX_CONSUMERS 8

/* A tensor goes from its source layout to one or more consumers, each a layout over its own
 * mesh (no GPU in two consumers' meshes, so a GPU has at most one destination tile). */
typedef struct mc_tensor_move {
    char name[MC_NAME_MAX]; /* "t0", "t1", ... unless the task file names it */
    mc_layout_t src, dst;   /* dst: the first consumer */
    int nmore;              /* further consumers, in more[0..nmore-1] */
    mc_layout_t *more;
} mc_tensor_move_t;

typedef struct mc_piece {
    int tensor;
    mc_box_t box;
    uint64_t bytes;
    int nholders;
    int *holders;   /* global GPU ids holding the box in the source layout, ascending */
    int ndests;
    int *dests;     /* global GPU ids needing it and not holding it, ascending */
} mc_piece_t;

typedef struct mc_local_copy {
    int tensor;
    int gpu;        /* copies box from its source shard into its destination shard */
    mc_box_t box;
    uint64_t bytes;
} mc_local_copy_t;

typedef struct mc_task {
    int nmeshes;
    mc_mesh_t *meshes;
    int ntensors;
    mc_tensor_move_t *tensors;
    int npieces;            /* filled by mc_task_split, largest first, ties in a stable order */
    mc_piece_t *pieces;
    int ncopies;
    mc_local_copy_t *copies;
    int mesh_cap, tensor_cap;
    mc_index_t mesh_names, tensor_names; /* by the hash of their names (layout/names.c) */
    char *source;           /* the task file's name, NULL when built from the command line */
    /* mc_task_bound's last result and the topology it was for (its address and fingerprint):
     * synthesizers ask for the bound of one task many times. Dropped with the split. */
    struct mc_bound *bound;
    const mc_topo_t *bound_topo;
    uint64_t bound_fp;
} mc_task_t;

mc_task_t *mc_task_new(void);
void mc_task_free(mc_task_t *task);

/* Parse one mesh ("A={x:2,y:4}@0..7") or one move ("LAYOUT -> LAYOUT") into the task. Errors are
 * MC_ERR_USAGE with a message that quotes the text and points at the column with a caret. */
mc_status_t mc_task_add_mesh(mc_task_t *task, const char *text, mc_err_t *err);
mc_status_t mc_task_add_move(mc_task_t *task, const char *text, mc_err_t *err);

/* A task file (docs/task-format.md): meshes and moves, one per line, '#' comments. Errors name
 * the file and line. mc_task_parse_text reads the same format from memory (name is used in
 * messages); schedules embed their task in it. */
mc_status_t mc_task_load(const char *path, mc_task_t **out, mc_err_t *err);
mc_status_t mc_task_parse_text(const char *text, const char *name, mc_task_t **out, mc_err_t *err);
/* The task in task-file form, canonical (same task, same text). Caller frees. */
char *mc_task_to_text(const mc_task_t *task);

/* Checks every device id against the topology's GPU count. */
mc_status_t mc_task_check_topo(const mc_task_t *task, const mc_topo_t *topo, mc_err_t *err);

/* Splits the task into pieces and local copies (idempotent). */
mc_status_t mc_task_split(mc_task_t *task, mc_err_t *err);

/* The tile a GPU holds in a layout; returns 0 (and an empty box) if the GPU is not in the mesh. */
int mc_layout_tile(const mc_task_t *task, const mc_layout_t *layout, int gpu, mc_box_t *tile);
/* Consumer c (0..nmore) of a tensor move: dst, then the further ones. */
const mc_layout_t *mc_tensor_consumer(const mc_tensor_move_t *mv, int c);
/* The layout of the destination tile GPU gpu holds of tensor `tensor`: the consumer whose mesh
 * has it; NULL when none has. */
const mc_layout_t *mc_task_dst_layout(const mc_task_t *task, int tensor, int gpu);
uint64_t mc_box_elems(const mc_box_t *box, int ndims);
/* Intersection; returns 0 when empty. */
int mc_box_intersect(const mc_box_t *a, const mc_box_t *b, int ndims, mc_box_t *out);

uint64_t mc_task_total_bytes(const mc_task_t *task);      /* sum of piece bytes x dests */
uint64_t mc_task_need_bytes(const mc_task_t *task, int gpu);
uint64_t mc_task_src_bytes(const mc_task_t *task, int gpu); /* source tiles it holds */
uint64_t mc_task_dst_bytes(const mc_task_t *task, int gpu); /* destination tiles it must hold */
/* Peak memory lower bound per GPU: max(source bytes, destination bytes). */
uint64_t mc_task_peak_mem_bound(const mc_task_t *task, int gpu);
/* need and peak-memory bound of every GPU 0..ngpus-1 in one pass (ids beyond are skipped). */
void mc_task_need_bytes_all(const mc_task_t *task, int ngpus, uint64_t *need);
void mc_task_peak_mem_bound_all(const mc_task_t *task, int ngpus, uint64_t *peak);

/* Distinct bytes each host must receive (needed by a GPU inside it, held by none inside it) and
 * send (held only inside it, needed outside it); in and out hold topo->nhosts entries. Needs
 * mc_task_split and a task that passed mc_task_check_topo. */
void mc_task_host_bytes(const mc_task_t *task, const mc_topo_t *topo, uint64_t *in, uint64_t *out);

typedef enum {
    MC_BOUND_INGRESS,   /* a GPU's incoming links */
    MC_BOUND_EGRESS,    /* a holder group's outgoing links (relaying allowed) */
    MC_BOUND_HOST_CUT,  /* a host's NICs */
    MC_BOUND_MESH_CUT,  /* the network links into the destination mesh's hosts */
    MC_BOUND_FLOW,      /* the maximum flow from a holder group to one of its destinations */
    MC_BOUND_CUT,       /* the maximum flow into or out of a set of GPUs (inside a host) or hosts */
    MC_BOUND_LP,        /* the multicommodity-flow relaxation of multicast (small tasks) */
    MC_BOUND_HOST_RELAY, /* bytes held on one host: out of it to each other host, or relayed by a
                          * third host after two network waits */
    MC_BOUND_REACH,     /* a GPU's incoming links, each from when the holders' bytes can first
                         * reach it (up to 64 GPUs) */
    MC_BOUND_LATENCY,   /* nothing but the per-message overhead */
    MC_BOUND_NONE       /* nothing moves */
} mc_bound_kind_t;

#define MC_BOUND_NTERMS MC_BOUND_LATENCY /* the terms with bytes over a capacity */

const char *mc_bound_kind_str(mc_bound_kind_t k);

/* The set of GPUs of the cut term: the GPUs of host `host` whose bits are set in mask (bit i is
 * the host's i-th GPU), or when host is -1 every GPU of the hosts whose bits are set. */
typedef struct mc_bound_set {
    int host;
    uint64_t mask;
    int into; /* 1: bytes needed inside it and held only outside; 0: held only inside, needed
               * outside */
} mc_bound_set_t;

/* Each term is bytes over the capacity of a resource (a GPU's incoming links, a holder group's
 * outgoing links, the maximum flow into or out of a host, a mesh's hosts or a set of GPUs, or
 * from a holder group to one destination) plus the least message overhead (alpha) the traffic
 * through that resource pays; the bound is the largest term. */
typedef struct mc_bound {
    double seconds;          /* the bound: the binding term's bandwidth time plus latency_s */
    mc_bound_kind_t binding; /* which term binds (latency when its alpha exceeds its bytes' time) */
    int where;               /* where the binding term binds (term_where); -1 if none */
    double ingress_s, egress_s, host_cut_s, mesh_cut_s; /* bandwidth time of each kind's largest
                                                         * term */
    double flow_s, cut_s, lp_s, host_relay_s, reach_s;
    double latency_s;        /* the binding term's alpha */
    /* Per term kind, where its largest term binds: the GPU (ingress), the holder group's first
     * GPU (egress), the host, the mesh index, the destination GPU (flow), the host of cut_set or
     * its first host (cut), 0 (lp: every piece); -1 when the kind has no term (lp: not solved,
     * the task is too large). */
    int term_where[MC_BOUND_NTERMS];
    mc_bound_set_t cut_set;
    int flow_holder;         /* the first holder of the group whose flow term is largest */
} mc_bound_t;

/* The GPUs of a cut set into gpus[] (room for topo->ngpus); returns their count. */
int mc_bound_set_gpus(const mc_topo_t *topo, const mc_bound_set_t *set, int *gpus);

/* Lower bound on the time of any schedule for the task on the topology (needs mc_task_split).
 * The result is kept in the task for the next call with the same topology. To stay fast, the
 * flow and cut terms skip the pairs and sets that cannot exceed the largest term found before
 * them, so flow_s and cut_s are exact when they bind and otherwise may show less than their own
 * largest value (which is then at most the bound). */
mc_status_t mc_task_bound(const mc_task_t *task, const mc_topo_t *topo, mc_bound_t *bound,
                          mc_err_t *err);
/* The same bound with every term's own largest value exact (meshcast task prints them all). */
mc_status_t mc_task_bound_terms(const mc_task_t *task, const mc_topo_t *topo, mc_bound_t *bound,
                                mc_err_t *err);

/* The capacity between groups of hosts: the maximum flow (bytes/s) from every GPU of hosts
 * from[0..nfrom) into every GPU of hosts to[0..nto) (disjoint lists) over the links as the lower
 * bounds count them. mc_host_flow_new returns NULL on a topology of more than 2048 links, where
 * the bounds' networks contract the switches. */
typedef struct mc_host_flow mc_host_flow_t;
mc_host_flow_t *mc_host_flow_new(const mc_topo_t *topo);
void mc_host_flow_free(mc_host_flow_t *hf);
double mc_host_flow(mc_host_flow_t *hf, const int *from, int nfrom, const int *to, int nto);

#endif
