"""The C functions of libmeshcast.so that the package calls, declared for cffi's ABI mode.

Only structures whose layout is fixed by this package's own C side are declared: ``mc_err_t``,
``mc_buf_t`` and the cost model's ``mc_cost_t``; everything else crosses as opaque pointers or
through ``python/capi/mc_py.c``, which exports it as plain numbers, so that a change to a C
structure never silently breaks the binding.

The library is looked up in this order: the ``MESHCAST_LIB`` environment variable, the build
folder of the source tree this package sits in (``build/libmeshcast.so``, when it is used from
the tree), and the copy installed inside the package (``make python``).
"""
from __future__ import annotations

import os
from pathlib import Path

import cffi

ffi = cffi.FFI()
ffi.cdef(
    """
    typedef int mc_status_t;
    typedef struct { mc_status_t status; char msg[1024]; } mc_err_t;
    typedef struct { char *data; size_t len, cap; } mc_buf_t;
    typedef struct mc_topo mc_topo_t;
    typedef struct mc_task mc_task_t;
    typedef struct mc_sched mc_sched_t;
    typedef struct mc_emit_plans mc_emit_plans_t;
    typedef struct mc_cost_topo mc_cost_topo_t;

    const char *mc_status_str(mc_status_t st);

    mc_status_t mc_topo_load(const char *path, mc_topo_t **out, mc_err_t *err);
    typedef struct { int assume_nvlink; unsigned assume_gpu; int assume_nic_mbps; }
        mc_topo_load_opts_t;
    mc_status_t mc_topo_load_with(const char *path, const mc_topo_load_opts_t *opts,
                                  mc_topo_t **out, mc_err_t *err);
    int mc_topo_gpu_model(const char *name, unsigned *device);
    const char *mc_topo_gpu_models(void);
    void mc_topo_free(mc_topo_t *t);
    void mc_py_topo_info(const mc_topo_t *t, int out[3], uint64_t *fingerprint);
    const char *mc_py_topo_warning(const mc_topo_t *t, int i);

    mc_task_t *mc_task_new(void);
    void mc_task_free(mc_task_t *task);
    mc_status_t mc_task_add_mesh(mc_task_t *task, const char *text, mc_err_t *err);
    mc_status_t mc_task_add_move(mc_task_t *task, const char *text, mc_err_t *err);
    mc_status_t mc_task_load(const char *path, mc_task_t **out, mc_err_t *err);
    mc_status_t mc_task_parse_text(const char *text, const char *name, mc_task_t **out,
                                   mc_err_t *err);
    char *mc_task_to_text(const mc_task_t *task);
    mc_status_t mc_task_check_topo(const mc_task_t *task, const mc_topo_t *topo, mc_err_t *err);
    mc_status_t mc_task_split(mc_task_t *task, mc_err_t *err);
    uint64_t mc_task_total_bytes(const mc_task_t *task);
    void mc_py_task_info(const mc_task_t *t, int out[4]);
    mc_status_t mc_py_bound(const mc_task_t *task, const mc_topo_t *topo, double *seconds,
                            const char **binding, int *where, mc_err_t *err);

    typedef struct { int strategy; int fast; } mc_cost_opts_t;
    typedef struct {
        double seconds, bandwidth_s, overhead_s;
        int binding, link, depth, chunks;
        double confidence;
    } mc_cost_t;
    int mc_cost_strategy_parse(const char *name, int *out);
    const char *mc_cost_bind_str(int b);
    mc_cost_topo_t *mc_cost_topo_new(const mc_topo_t *topo);
    void mc_cost_topo_free(mc_cost_topo_t *ct);
    mc_status_t mc_cost_estimate(mc_cost_topo_t *ct, const mc_task_t *task,
                                 const mc_cost_opts_t *opts, mc_cost_t *out, mc_err_t *err);

    mc_status_t mc_py_synth(const char *strategy, mc_task_t *task, const mc_topo_t *topo,
                            const char *const *keys, const char *const *values, int nopts,
                            mc_sched_t **out, mc_err_t *err);
    void mc_sched_free(mc_sched_t *s);
    char *mc_sched_to_xml(const mc_sched_t *s, const mc_topo_t *topo);
    mc_status_t mc_sched_parse_memory(const char *buf, size_t len, const char *name,
                                      const mc_topo_t *topo, int force, mc_sched_t **out,
                                      mc_err_t *err);
    int mc_sched_validate(const mc_sched_t *s, const mc_topo_t *topo, mc_buf_t *out);
    const char *mc_py_sched_strategy(const mc_sched_t *s);
    const char *mc_py_sched_params(const mc_sched_t *s);
    mc_task_t *mc_py_sched_task(const mc_sched_t *s);
    int mc_py_sched_ntrees(const mc_sched_t *s);
    double mc_py_sched_tree(const mc_sched_t *s, int t, int64_t out[9]);
    char *mc_py_sched_edge(const mc_sched_t *s, const mc_topo_t *topo, int t, int e, int out[3]);
    mc_status_t mc_py_sim(const mc_sched_t *s, const mc_topo_t *topo, double *makespan,
                          mc_err_t *err);
    void mc_py_free(void *p);

    mc_status_t mc_emit_lower(const mc_sched_t *s, mc_emit_plans_t **out, mc_err_t *err);
    void mc_emit_plans_free(mc_emit_plans_t *p);
    int mc_py_plans_nranks(const mc_emit_plans_t *P);
    void mc_py_plan_info(const mc_emit_plans_t *P, int r, int64_t out[7]);
    void mc_py_plan_steps(const mc_emit_plans_t *P, int r, int64_t *out);
    void mc_py_plan_ops(const mc_emit_plans_t *P, int r, int64_t *out);
    void mc_py_plan_boxes(const mc_emit_plans_t *P, int r, int64_t *out);
    void mc_py_fill_src(const mc_sched_t *s, int gpu, void *buf);
    void mc_py_poison_dst(const mc_sched_t *s, int gpu, void *buf);
    uint64_t mc_py_check_dst(const mc_sched_t *s, int gpu, const void *buf, mc_buf_t *report);
    void mc_py_buffer_bytes(const mc_sched_t *s, int gpu, uint64_t out[2]);
    """
)

STEP_COLS = 5
OP_COLS = 8
RT_MAX_DIMS = 8
BOX_COLS = 3 + 2 * RT_MAX_DIMS


def _find_library() -> str:
    env = os.environ.get("MESHCAST_LIB")
    if env:
        return env
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent / "build" / "libmeshcast.so",
                      here / "_lib" / "libmeshcast.so"):
        if candidate.exists():
            return str(candidate)
    raise ImportError(
        "meshcast: libmeshcast.so not found: run 'make' in the meshcast source tree (it builds "
        "build/libmeshcast.so), then 'make python', or set MESHCAST_LIB to its path")


lib = ffi.dlopen(_find_library())
