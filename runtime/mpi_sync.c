/* Bounded synchronization over MPI for the run driver: a gate (a barrier that carries a few values
 * from every rank and gives each their sums and maxima) and a broadcast, both over point-to-point
 * messages polled against a deadline, never a blocking MPI call. Rank 0 sees who arrived, so a
 * stalled or dead rank is named; the others wait a little longer than rank 0 so that its message,
 * the precise one, comes first. */
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
    int rank, size, tag = mc_rt_mpi_sync_tag(comm), st = MC_RT_OK;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (n < 1 || n > MC_RT_GATE_MAX)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: a gate carries 1 to %d values", rank,
                          MC_RT_GATE_MAX);
    MPI_Request *reqs = malloc(2 * (size_t)size * sizeof *reqs);
    double *vals = malloc((size_t)size * 2 * n * sizeof *vals);
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
            goto out;
        }
        for (int k = 0; k < n; k++) {
            sum[k] = max[k] = vals[k];
            for (int r = 1; r < size; r++) {
                sum[k] += vals[r * n + k];
                max[k] = vals[r * n + k] > max[k] ? vals[r * n + k] : max[k];
            }
            vals[k] = sum[k];
            vals[n + k] = max[k];
        }
        for (int r = 1; r < size; r++)
            MPI_Isend(vals, 2 * n, MPI_DOUBLE, r, tag, comm, &reqs[r - 1]);
        if (wait_all(size - 1, reqs, mc_rt_now(), timeout_s))
            st = mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                            "rank 0, %s: timed out after %.1f s releasing the other ranks", stage,
                            timeout_s);
        goto out;
    }
    MPI_Isend(in, n, MPI_DOUBLE, 0, tag, comm, &reqs[0]);
    MPI_Irecv(vals, 2 * n, MPI_DOUBLE, 0, tag, comm, &reqs[1]);
    if (wait_all(2, reqs, start, timeout_s + MC_RT_GATE_LAG_S)) {
        st = mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                        "rank %d, %s: timed out after %.1f s waiting for rank 0 (it, or a rank it "
                        "waits for, is stalled or dead)",
                        rank, stage, timeout_s + MC_RT_GATE_LAG_S);
        goto out;
    }
    memcpy(sum, vals, n * sizeof *vals);
    memcpy(max, vals + n, n * sizeof *vals);
out:
    free(reqs);
    free(vals);
    return st;
}

int mc_rt_mpi_bcast(MPI_Comm comm, const char *stage, void *buf, int bytes, double timeout_s,
                    mc_rt_err_t *err)
{
    int rank, size, tag = mc_rt_mpi_sync_tag(comm), st = MC_RT_OK;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request *reqs = malloc((size_t)size * sizeof *reqs);
    if (!reqs)
        return mc_rt_fail(err, MC_RT_ERR_RUNTIME, "rank %d: out of memory", rank);
    double start = mc_rt_now();
    if (rank == 0) {
        for (int r = 1; r < size; r++)
            MPI_Isend(buf, bytes, MPI_BYTE, r, tag, comm, &reqs[r - 1]);
        if (wait_all(size - 1, reqs, start, timeout_s))
            st = not_there(size, reqs, stage, "sending its broadcast", "did not take it",
                           timeout_s, err);
    } else {
        MPI_Irecv(buf, bytes, MPI_BYTE, 0, tag, comm, &reqs[0]);
        if (wait_all(1, reqs, start, timeout_s + MC_RT_GATE_LAG_S))
            st = mc_rt_fail(err, MC_RT_ERR_TIMEOUT,
                            "rank %d, %s: timed out after %.1f s waiting for rank 0's broadcast",
                            rank, stage, timeout_s + MC_RT_GATE_LAG_S);
    }
    free(reqs);
    return st;
}
