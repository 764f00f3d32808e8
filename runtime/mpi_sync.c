/* Bounded synchronization over MPI for the run driver: a gate (a barrier that carries a few values
 * from every rank and gives each their sums and maxima) and a broadcast, both over point-to-point
 * messages polled against a deadline, never a blocking MPI call. Rank 0 sees who arrived, so a
 * stalled or dead rank is named; the others wait a little longer than rank 0 so that its message,
 * the precise one, comes first. Messages go from and to buffers of their own, never the caller's:
 * after a timeout, what MPI still holds is kept rather than freed or left on a stack. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"

/* The others wait this much longer than rank 0, which names the missing ranks. */
#define MC_RT_GATE_LAG_S 1.0

int mc_rt_mpi_sync_tag(MPI_Comm comm)
{
    int *ub, flag = 0;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &flag);
    return flag ? *ub : 32767;
}

/* Polls reqs until all complete or nothing completes for `patience` seconds after `start`;
 * returns the number still pending. */
static int wait_all(int n, MPI_Request *reqs, double start, double patience)
{
    int *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx), out = 0, left = n;
    double last = start;
    while (left > 0 && idx) {
        MPI_Testsome(n, reqs, &out, idx, MPI_STATUSES_IGNORE);
        if (out == MPI_UNDEFINED)
            break;
        if (out > 0) {
            left -= out;
            last = mc_rt_now();
            continue;
        }
        if (mc_rt_now() > last + patience)
            break;
        struct timespec nap = {0, 50000};
        nanosleep(&nap, NULL);
    }
    free(idx);
    return idx ? (left > 0 ? left : 0) : n;
}

/* The grace MPI gets after a failure to complete what was cancelled. */
#define MC_RT_CANCEL_GRACE_S 0.5

int mc_rt_mpi_release(int n, MPI_Request *reqs)
{
    int done = 0;
    for (int k = 0; k < n; k++)
        if (reqs[k] != MPI_REQUEST_NULL)
            MPI_Cancel(&reqs[k]);
    double start = mc_rt_now();
    while (n > 0 && !done && mc_rt_now() - start < MC_RT_CANCEL_GRACE_S) {
        MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        struct timespec nap = {0, 50000};
        nanosleep(&nap, NULL);
    }
    return n > 0 && !done;
}

/* The ranks whose request is still pending, as "3, 5" (request i belongs to rank i + 1). */
static void missing(int n, MPI_Request *reqs, char *out, size_t cap)
{
    size_t at = 0;
    out[0] = '\0';
    for (int i = 0; i < n && at + 16 < cap; i++) {
        int done = reqs[i] == MPI_REQUEST_NULL;
        if (!done)
            MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE);
        if (!done)
            at += (size_t)snprintf(out + at, cap - at, "%s%d", at ? ", " : "", i + 1);
    }
}

/* Rank 0's timeout: names the ranks whose request is pending. */
static int not_there(int size, MPI_Request *reqs, const char *stage, const char *doing,
                     const char *what, double timeout_s, mc_rt_err_t *err)
{
    char who[256];
    missing(size - 1, reqs, who, sizeof who);
    return mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                      "rank 0, %s: timed out after %.1f s %s: rank %s %s (stalled or dead)", stage,
                      timeout_s, doing, who, what);
}

int mc_rt_mpi_gate(MPI_Comm comm, const char *stage, int n, const double *in, double *sum,
                   double *max, double timeout_s, mc_rt_err_t *err)
{
    int rank, size, tag = mc_rt_mpi_sync_tag(comm), st = MC_RT_OK, held = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (n < 1 || n > MC_RT_GATE_MAX)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: a gate carries 1 to %d values", rank,
                          MC_RT_GATE_MAX);
    /* rank 0: every rank's values, then the sums and maxima it sends back; the others: their
     * values, then rank 0's answer */
    MPI_Request *reqs = malloc(2 * (size_t)size * sizeof *reqs);
    double *vals = malloc(((size_t)size + 2) * n * sizeof *vals);
    if (!reqs || !vals) {
        st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: out of memory", rank);
        goto out;
    }
    double start = mc_rt_now();
    if (rank == 0) {
        memcpy(vals, in, n * sizeof *vals);
        for (int r = 1; r < size; r++)
            MPI_Irecv(vals + r * n, n, MPI_DOUBLE, r, tag, comm, &reqs[r - 1]);
        if (wait_all(size - 1, reqs, start, timeout_s)) {
            st = not_there(size, reqs, stage, "without a rank arriving", "did not reach it",
                           timeout_s, err);
            held = mc_rt_mpi_release(size - 1, reqs);
            goto out;
        }
        double *res = vals + (size_t)size * n;
        for (int k = 0; k < n; k++) {
            sum[k] = max[k] = vals[k];
            for (int r = 1; r < size; r++) {
                sum[k] += vals[r * n + k];
                max[k] = vals[r * n + k] > max[k] ? vals[r * n + k] : max[k];
            }
            res[k] = sum[k];
            res[n + k] = max[k];
        }
        for (int r = 1; r < size; r++)
            MPI_Isend(res, 2 * n, MPI_DOUBLE, r, tag, comm, &reqs[r - 1]);
        if (wait_all(size - 1, reqs, mc_rt_now(), timeout_s)) {
            st = mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                            "rank 0, %s: timed out after %.1f s releasing the other ranks", stage,
                            timeout_s);
            held = mc_rt_mpi_release(size - 1, reqs);
        }
        goto out;
    }
    memcpy(vals, in, n * sizeof *vals);
    MPI_Isend(vals, n, MPI_DOUBLE, 0, tag, comm, &reqs[0]);
    MPI_Irecv(vals + n, 2 * n, MPI_DOUBLE, 0, tag, comm, &reqs[1]);
    if (wait_all(2, reqs, start, timeout_s + MC_RT_GATE_LAG_S)) {
        st = mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                        "rank %d, %s: timed out after %.1f s waiting for rank 0 (it, or a rank it "
                        "waits for, is stalled or dead)",
                        rank, stage, timeout_s + MC_RT_GATE_LAG_S);
        held = mc_rt_mpi_release(2, reqs);
        goto out;
    }
    memcpy(sum, vals + n, n * sizeof *vals);
    memcpy(max, vals + 2 * n, n * sizeof *vals);
out:
    free(reqs);
    if (!held) /* else MPI may still write it; the job is about to be aborted */
        free(vals);
    return st;
}

int mc_rt_mpi_bcast(MPI_Comm comm, const char *stage, void *buf, int bytes, double timeout_s,
                    mc_rt_err_t *err)
{
    int rank, size, tag = mc_rt_mpi_sync_tag(comm), st = MC_RT_OK, held = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request *reqs = malloc((size_t)size * sizeof *reqs);
    unsigned char *own = malloc(bytes > 0 ? (size_t)bytes : 1); /* what MPI reads or writes */
    if (!reqs || !own) {
        st = mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: out of memory", rank);
        goto out;
    }
    double start = mc_rt_now();
    if (rank == 0) {
        memcpy(own, buf, (size_t)bytes);
        for (int r = 1; r < size; r++)
            MPI_Isend(own, bytes, MPI_BYTE, r, tag, comm, &reqs[r - 1]);
        if (wait_all(size - 1, reqs, start, timeout_s)) {
            st = not_there(size, reqs, stage, "sending its broadcast", "did not take it",
                           timeout_s, err);
            held = mc_rt_mpi_release(size - 1, reqs);
        }
    } else {
        MPI_Irecv(own, bytes, MPI_BYTE, 0, tag, comm, &reqs[0]);
        if (wait_all(1, reqs, start, timeout_s + MC_RT_GATE_LAG_S)) {
            st = mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                            "rank %d, %s: timed out after %.1f s waiting for rank 0's broadcast",
                            rank, stage, timeout_s + MC_RT_GATE_LAG_S);
            held = mc_rt_mpi_release(1, reqs);
        } else {
            memcpy(buf, own, (size_t)bytes);
        }
    }
out:
    free(reqs);
    if (!held) /* else MPI may still use it; the job is about to be aborted */
        free(own);
    return st;
}
