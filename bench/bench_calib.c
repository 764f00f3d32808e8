/* The calibration comparison (docs/simulator.md, "Calibration"): a calibration case holds an
 * operation nccl-tests measures, written as a schedule, and the bus bandwidth someone published
 * for it. Here the simulated time becomes a bus bandwidth the way nccl-tests computes one
 * (algbw = S / t; busbw = algbw for sendrecv and broadcast, algbw (n - 1) / n for all_gather), and
 * the table says how far the simulator is from the published figure. */
#include <math.h>
#include <string.h>

#include "bench/bench.h"

/* Messages from this size up are bandwidth-bound: the goal is within 10% there. */
#define CALIB_BW_BOUND_BYTES (64ull << 20)
#define CALIB_TOLERANCE 0.10

void mc_bench_calib_fill(mc_bench_row_t *row, const mc_task_t *task)
{
    const mc_layout_t *l = &task->tensors[0].src;
    const mc_mesh_t *ranks = &task->meshes[task->tensors[0].dst.mesh];
    uint64_t s = (uint64_t)mc_dtype_size(l->dtype);
    for (int d = 0; d < l->ndims; d++)
        s *= (uint64_t)l->shape[d];
    row->op_bytes = s;
    double algbw = row->sim_s > 0 ? (double)s / row->sim_s / 1e9 : 0, n = ranks->ndevices;
    row->busbw_gbps = strcmp(row->calib->op, "all_gather") ? algbw : algbw * (n - 1) / n;
}

int mc_bench_print_calib(FILE *out, const mc_bench_row_t *rows, int n)
{
    int nrows = 0, bound = 0, off = 0;
    char b1[32];
    for (int i = 0; i < n; i++) {
        const mc_bench_row_t *r = &rows[i];
        if (!r->calib || r->failed)
            continue;
        double err = r->busbw_gbps / r->calib->measured_gbps - 1;
        int bw = r->op_bytes >= CALIB_BW_BOUND_BYTES;
        bound += bw;
        off += bw && fabs(err) > CALIB_TOLERANCE;
        if (!out)
            continue;
        if (!nrows++)
            fprintf(out, "\ncalibration: simulated against published nccl-tests bus bandwidth "
                         "(GB/s), docs/simulator.md\n%-24s %-10s %10s %9s %9s %8s %4s  %s\n",
                    "case", "op", "size", "published", "simulated", "error", "bw", "source");
        fprintf(out, "%-24s %-10s %10s %9.4g %9.4g %+7.1f%% %4s  %s\n", r->cas, r->calib->op,
                mc_fmt_bytes(r->op_bytes, b1, sizeof(b1)), r->calib->measured_gbps, r->busbw_gbps,
                100 * err, bw ? "yes" : "no", r->calib->source);
    }
    if (nrows)
        fprintf(out, "bw = bandwidth-bound (message of 64 MiB or more): %d of %d within 10%%\n",
                bound - off, bound);
    return off;
}
