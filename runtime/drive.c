/* The run driver behind `meshcast run` and any program that has plans: the table of backends, the
 * buffers of the ranks this process runs, and the run itself, bounded at every stage (set-up,
 * transfer, result gathering) so that a stalled or dead rank ends the job. */
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_internal.h"

static int loopback_host(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                         double *seconds, mc_rt_err_t *err)
{
    double t0 = mc_rt_now();
    int st = mc_rt_run_loopback(nranks, plans, bufs, err);
    *seconds = mc_rt_now() - t0;
    return st;
}

static int mpi_rank(const mc_rt_plan_t *plan, const void *comm, const mc_rt_buffers_t *bufs,
                    double timeout_s, double *seconds, mc_rt_err_t *err)
{
    double t0 = MPI_Wtime();
    int st = mc_rt_run_mpi(plan, *(const MPI_Comm *)comm, bufs, timeout_s, err);
    *seconds = MPI_Wtime() - t0;
    return st;
}

static int nccl_rank(const mc_rt_plan_t *plan, const void *comm, const mc_rt_buffers_t *bufs,
                     double timeout_s, double *seconds, mc_rt_err_t *err)
{
    return mc_rt_run_nccl_mpi(plan, *(const MPI_Comm *)comm, bufs, timeout_s, seconds, err);
}

const mc_rt_backend_t mc_rt_backends[] = {
    {"loopback", "every rank in this process, host memory", loopback_host, NULL},
    {"loopback-gpu", "every rank in this process on GPU 0, one buffer set per rank",
     mc_rt_run_loopback_gpu, NULL},
    {"mpi", "one process per rank under mpirun, host memory, MPI point-to-point", NULL, mpi_rank},
    {"nccl", "one process and GPU per rank under mpirun, NCCL", NULL, nccl_rank},
    {NULL, NULL, NULL, NULL},
};

const mc_rt_backend_t *mc_rt_backend_find(const char *name)
{
    for (const mc_rt_backend_t *b = mc_rt_backends; b->name; b++)
        if (!strcmp(b->name, name))
            return b;
    return NULL;
}

static const char *const stage_names[MC_RT_NSTAGES] = {"set-up", "transfer", "check"};

const char *mc_rt_stage_name(int stage)
{
    return stage >= 0 && stage < MC_RT_NSTAGES ? stage_names[stage] : "?";
}

int mc_rt_stage_parse(const char *name)
{
    for (int s = 0; s < MC_RT_NSTAGES; s++)
        if (!strcmp(stage_names[s], name))
            return s;
    return -1;
}

/* Fault tests: the rank stops itself, as a debugger or the OOM killer's neighbour would. */
static void maybe_stop(const mc_rt_drive_opts_t *o, int rank, int stage)
{
    if (rank == o->stop_rank && stage == o->stop_stage)
        raise(SIGSTOP);
}

static int src_of(const mc_rt_drive_hooks_t *h, int r)
{
    return h->same_source ? h->same_source(h->ctx, r) : -1;
}

/* Rank r's buffers: the source filled (or shared with rank `shared`'s), the destination
 * poisoned. */
static int alloc_rank(const mc_rt_plan_t *p, const mc_rt_drive_opts_t *o,
                      const mc_rt_drive_hooks_t *h, const mc_rt_buffers_t *shared,
                      mc_rt_buffers_t *b, mc_rt_err_t *err)
{
    memset(b, 0, sizeof *b);
    b->bytes[MC_RT_BUF_SRC] = p->src_bytes;
    b->bytes[MC_RT_BUF_DST] = p->dst_bytes;
    b->bytes[MC_RT_BUF_WS] = o->workspace >= 0 ? (uint64_t)o->workspace : p->ws_bytes;
    if (shared)
        b->buf[MC_RT_BUF_SRC] = shared->buf[MC_RT_BUF_SRC];
    for (int i = 0; i < MC_RT_NBUFS; i++)
        if (!b->buf[i] && !(b->buf[i] = malloc(b->bytes[i] ? b->bytes[i] : 1)))
            return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: cannot allocate %llu bytes of %s",
                              p->rank, (unsigned long long)b->bytes[i], mc_rt_buf_name(i));
    if (!shared)
        h->fill_src(h->ctx, p->rank, b->buf[MC_RT_BUF_SRC]);
    h->poison_dst(h->ctx, p->rank, b->buf[MC_RT_BUF_DST]);
    return MC_RT_OK;
}

static void free_rank(mc_rt_buffers_t *b, int shared_src)
{
    for (int i = 0; i < MC_RT_NBUFS; i++)
        if (i != MC_RT_BUF_SRC || !shared_src)
            free(b->buf[i]);
}

static int drive_all(int nranks, const mc_rt_plan_t *plans, const mc_rt_drive_opts_t *o,
                     const mc_rt_drive_hooks_t *h, mc_rt_drive_result_t *res, mc_rt_err_t *err)
{
    int st = MC_RT_OK;
    mc_rt_buffers_t *b = calloc(nranks > 0 ? nranks : 1, sizeof *b);
    int *shared = calloc(nranks > 0 ? nranks : 1, sizeof *shared);
    if (!b || !shared) {
        st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "out of memory");
        goto out;
    }
    for (int r = 0; r < nranks; r++) {
        int q = src_of(h, r);
        shared[r] = q >= 0;
        if ((st = alloc_rank(&plans[r], o, h, q >= 0 ? &b[q] : NULL, &b[r], err)) != MC_RT_OK)
            goto out;
    }
    if ((st = o->backend->run_all(nranks, plans, b, &res->seconds, err)) != MC_RT_OK)
        goto out;
    for (int r = 0; r < nranks; r++)
        res->wrong += h->check_dst(h->ctx, r, b[r].buf[MC_RT_BUF_DST]);
out:
    for (int r = 0; b && r < nranks; r++)
        free_rank(&b[r], shared[r]);
    free(b);
    free(shared);
    return st;
}

static int drive_rank(int nranks, const mc_rt_plan_t *plans, const mc_rt_drive_opts_t *o,
                      const mc_rt_drive_hooks_t *h, mc_rt_drive_result_t *res, mc_rt_err_t *err)
{
    MPI_Comm comm = *(const MPI_Comm *)o->comm;
    int rank, size, st;
    double secs = 0, in[2], sum[2], max[2];
    mc_rt_buffers_t b;
    memset(&b, 0, sizeof b);
    err->in_use = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    res->rank = rank;
    if (size != nranks)
        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                          "the schedule needs %d ranks (one per GPU it involves), mpirun "
                          "started %d",
                          nranks, size);
    res->started = 1;
    maybe_stop(o, rank, MC_RT_STAGE_SETUP);
    if ((st = alloc_rank(&plans[rank], o, h, NULL, &b, err)) != MC_RT_OK)
        goto out;
    in[0] = in[1] = 0;
    if ((st = mc_rt_mpi_gate(comm, mc_rt_stage_name(MC_RT_STAGE_SETUP), 1, in, sum, max,
                             o->timeout_s, err)) != MC_RT_OK)
        goto out;
    maybe_stop(o, rank, MC_RT_STAGE_TRANSFER);
    if (rank == o->absent_rank) {
        /* gone, as if dead: it stops until the job is killed. When mpirun ends the job it
         * continues it (SIGCONT) before SIGTERM; going on from there would take it into
         * MPI_Finalize against a job being torn down, so it waits for the signal that ends it. */
        raise(SIGSTOP);
        for (;;)
            pause();
    }
    if ((st = o->backend->run_rank(&plans[rank], &comm, &b, o->timeout_s, &secs, err)) != MC_RT_OK)
        goto out;
    maybe_stop(o, rank, MC_RT_STAGE_CHECK);
    in[0] = (double)h->check_dst(h->ctx, rank, b.buf[MC_RT_BUF_DST]);
    in[1] = secs;
    if ((st = mc_rt_mpi_gate(comm, mc_rt_stage_name(MC_RT_STAGE_CHECK), 2, in, sum, max,
                             o->timeout_s, err)) != MC_RT_OK)
        goto out;
    res->wrong = (uint64_t)sum[0];
    res->seconds = max[1];
out:
    if (!err->in_use)
        free_rank(&b, 0);
    return st;
}

int mc_rt_drive(int nranks, const mc_rt_plan_t *plans, const mc_rt_drive_opts_t *o,
                const mc_rt_drive_hooks_t *h, mc_rt_drive_result_t *res, mc_rt_err_t *err)
{
    memset(res, 0, sizeof *res);
    if (o->backend->run_all)
        return drive_all(nranks, plans, o, h, res, err);
    if (!o->comm)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "backend %s needs an MPI communicator",
                          o->backend->name);
    return drive_rank(nranks, plans, o, h, res, err);
}

uint64_t mc_rt_drive_host_bytes(int nranks, const mc_rt_plan_t *plans,
                                const mc_rt_drive_hooks_t *h, int64_t workspace)
{
    uint64_t bytes = 0;
    for (int r = 0; r < nranks; r++)
        bytes += plans[r].dst_bytes + (workspace >= 0 ? (uint64_t)workspace : plans[r].ws_bytes) +
                 (src_of(h, r) < 0 ? plans[r].src_bytes : 0);
    return bytes;
}
