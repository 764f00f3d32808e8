/* Plans: box addressing, the well-formedness check every backend runs first, buffer size checks
 * and the host copy between two strided boxes. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime, when built alone with -std=c11 */
#endif
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"

double mc_rt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int mc_rt_fail(mc_rt_err_t *err, int status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
    }
    return status;
}

const char *mc_rt_buf_name(int buf)
{
    static const char *names[MC_RT_NBUFS] = {"source", "destination", "workspace"};
    return buf >= 0 && buf < MC_RT_NBUFS ? names[buf] : "?";
}

uint64_t mc_rt_box_bytes(const mc_rt_box_t *box)
{
    uint64_t n = 1;
    for (int d = 0; d < box->ndims; d++)
        n *= box->extent[d];
    return n;
}

uint64_t mc_rt_box_addr(const mc_rt_box_t *box, uint64_t lin, uint64_t *run)
{
    int in = box->ndims - 1;
    uint64_t q = lin / box->extent[in], r = lin % box->extent[in];
    uint64_t a = box->base + r;
    for (int d = in - 1; d >= 0; d--) {
        a += (q % box->extent[d]) * box->stride[d];
        q /= box->extent[d];
    }
    if (run)
        *run = box->extent[in] - r;
    return a;
}

unsigned char *mc_rt_ref_ptr(const mc_rt_plan_t *plan, const mc_rt_ref_t *ref,
                             const mc_rt_buffers_t *bufs)
{
    const mc_rt_box_t *b = &plan->boxes[ref->box];
    return (unsigned char *)bufs->buf[b->buf] + mc_rt_box_addr(b, ref->off, NULL);
}

uint32_t mc_rt_op_step(const mc_rt_plan_t *plan, uint32_t i)
{
    uint32_t lo = 0, hi = plan->nsteps;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (plan->steps[mid].first <= i)
            lo = mid;
        else
            hi = mid;
    }
    return plan->nsteps ? plan->steps[lo].index : 0;
}

static uint64_t plan_buf_bytes(const mc_rt_plan_t *p, int buf)
{
    return buf == MC_RT_BUF_SRC ? p->src_bytes : buf == MC_RT_BUF_DST ? p->dst_bytes : p->ws_bytes;
}

static int check_box(const mc_rt_plan_t *p, uint32_t i, mc_rt_err_t *err)
{
    const mc_rt_box_t *b = &p->boxes[i];
    if (b->buf < 0 || b->buf >= MC_RT_NBUFS || b->ndims < 1 || b->ndims > MC_RT_MAX_DIMS)
        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                          "rank %d: box %u: buffer %d or %d dimensions out of range", p->rank, i,
                          b->buf, b->ndims);
    uint64_t last = b->base + b->extent[b->ndims - 1];
    for (int d = 0; d < b->ndims; d++) {
        if (b->extent[d] == 0)
            return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: box %u: dimension %d is empty",
                              p->rank, i, d);
        if (d < b->ndims - 1)
            last += (b->extent[d] - 1) * b->stride[d];
    }
    if (last > plan_buf_bytes(p, b->buf))
        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                          "rank %d: box %u ends at byte %llu of the %s buffer, which has %llu",
                          p->rank, i, (unsigned long long)last, mc_rt_buf_name(b->buf),
                          (unsigned long long)plan_buf_bytes(p, b->buf));
    return MC_RT_OK;
}

static int check_ref(const mc_rt_plan_t *p, uint32_t i, const mc_rt_ref_t *ref, uint64_t bytes,
                     int contiguous, mc_rt_err_t *err)
{
    if (ref->box < 0 || (uint32_t)ref->box >= p->nboxes)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: op %u: box %d out of range", p->rank,
                          i, ref->box);
    const mc_rt_box_t *b = &p->boxes[ref->box];
    if (ref->off > mc_rt_box_bytes(b) || bytes > mc_rt_box_bytes(b) - ref->off)
        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                          "rank %d: op %u: bytes %llu..%llu lie outside box %d", p->rank, i,
                          (unsigned long long)ref->off,
                          (unsigned long long)(ref->off + bytes), ref->box);
    uint64_t run;
    mc_rt_box_addr(b, ref->off, &run);
    if (contiguous && bytes > run)
        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                          "rank %d: op %u: a send or receive must be contiguous, box %d is not",
                          p->rank, i, ref->box);
    return MC_RT_OK;
}

static int check_op(const mc_rt_plan_t *p, uint32_t i, int comm, mc_rt_err_t *err)
{
    const mc_rt_op_t *op = &p->ops[i];
    int st;
    if (!comm) {
        if (op->kind != MC_RT_OP_COPY)
            return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: op %u: expected a copy",
                              p->rank, i);
        if ((st = check_ref(p, i, &op->src, op->bytes, 0, err)) != MC_RT_OK)
            return st;
        return check_ref(p, i, &op->dst, op->bytes, 0, err);
    }
    if (op->kind != MC_RT_OP_SEND && op->kind != MC_RT_OP_RECV)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: op %u: expected a send or receive",
                          p->rank, i);
    if (op->peer < 0 || op->peer >= p->nranks)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: op %u: peer %d is not a rank of %d",
                          p->rank, i, op->peer, p->nranks);
    return check_ref(p, i, op->kind == MC_RT_OP_SEND ? &op->src : &op->dst, op->bytes, 1, err);
}

/* Every dependency lies in an earlier step or an earlier part of the same step: then the steps are
 * an order of the graph, which makes it free of cycles and deadlocks (runtime.h). */
static int check_deps(const mc_rt_plan_t *p, mc_rt_err_t *err)
{
    if (!p->dep_first)
        return p->deps ? mc_rt_fail(err, MC_RT_ERR_INVALID,
                                    "rank %d: deps without dep_first", p->rank)
                       : MC_RT_OK;
    if (p->dep_first[0] != 0 || (p->dep_first[p->nops] && !p->deps))
        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                          "rank %d: dep_first must start at 0, and deps hold its %u entries",
                          p->rank, p->dep_first[p->nops]);
    for (uint32_t s = 0; s < p->nsteps; s++) {
        const mc_rt_step_t *st = &p->steps[s];
        uint32_t bounds[4] = {st->first, st->first + st->npre, st->first + st->npre + st->ncomm,
                              st->first + st->npre + st->ncomm + st->npost};
        for (int part = 0; part < 3; part++)
            for (uint32_t i = bounds[part]; i < bounds[part + 1]; i++) {
                if (p->dep_first[i + 1] < p->dep_first[i])
                    return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: op %u: dep_first decreases",
                                      p->rank, i);
                for (uint32_t k = p->dep_first[i]; k < p->dep_first[i + 1]; k++)
                    if (p->deps[k] >= bounds[part])
                        return mc_rt_fail(err, MC_RT_ERR_INVALID,
                                          "rank %d: op %u of step %u waits for op %u; an op may "
                                          "only wait for ops of earlier steps or earlier parts of "
                                          "its step",
                                          p->rank, i, st->index, p->deps[k]);
            }
    }
    return MC_RT_OK;
}

int mc_rt_plan_check(const mc_rt_plan_t *p, mc_rt_err_t *err)
{
    int st;
    if (p->rank < 0 || p->rank >= p->nranks)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "plan: rank %d is not a rank of %d", p->rank,
                          p->nranks);
    for (uint32_t i = 0; i < p->nboxes; i++)
        if ((st = check_box(p, i, err)) != MC_RT_OK)
            return st;
    uint32_t next = 0;
    for (uint32_t s = 0; s < p->nsteps; s++) {
        const mc_rt_step_t *step = &p->steps[s];
        if ((s > 0 && step->index <= p->steps[s - 1].index) || step->first != next)
            return mc_rt_fail(err, MC_RT_ERR_INVALID,
                              "rank %d: step %u: steps must ascend and their ops follow in order",
                              p->rank, step->index);
        uint32_t n = step->npre + step->ncomm + step->npost;
        if (n > p->nops - next)
            return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: step %u: ops beyond the plan's %u",
                              p->rank, step->index, p->nops);
        for (uint32_t k = 0; k < n; k++) {
            int comm = k >= step->npre && k < step->npre + step->ncomm;
            if ((st = check_op(p, next + k, comm, err)) != MC_RT_OK)
                return st;
        }
        next += n;
    }
    if (next != p->nops)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: %u ops belong to no step", p->rank,
                          p->nops - next);
    if (p->nlanes > MC_RT_MAX_LANES)
        return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: %u lanes, at most %d", p->rank,
                          p->nlanes, MC_RT_MAX_LANES);
    for (uint32_t i = 0; p->lane && p->nlanes && i < p->nops; i++)
        if (p->lane[i] >= p->nlanes)
            return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: op %u is in lane %u of %u",
                              p->rank, i, p->lane[i], p->nlanes);
    return check_deps(p, err);
}

uint32_t mc_rt_plan_lanes(const mc_rt_plan_t *p)
{
    return !p->dep_first ? 1 : p->nlanes ? p->nlanes : MC_RT_NCCL_LANES;
}

int mc_rt_buffers_check(const mc_rt_plan_t *p, const mc_rt_buffers_t *bufs, mc_rt_err_t *err)
{
    for (int b = 0; b < MC_RT_NBUFS; b++) {
        uint64_t need = plan_buf_bytes(p, b);
        int ok = b == MC_RT_BUF_WS ? bufs->bytes[b] >= need : bufs->bytes[b] == need;
        if (!ok)
            return mc_rt_fail(err, MC_RT_ERR_INVALID,
                              "rank %d: the %s buffer has %llu bytes, the plan needs %s%llu",
                              p->rank, mc_rt_buf_name(b), (unsigned long long)bufs->bytes[b],
                              b == MC_RT_BUF_WS ? "at least " : "", (unsigned long long)need);
        if (need && !bufs->buf[b])
            return mc_rt_fail(err, MC_RT_ERR_INVALID, "rank %d: the %s buffer is NULL", p->rank,
                              mc_rt_buf_name(b));
    }
    return MC_RT_OK;
}

void mc_rt_copy_host(const mc_rt_plan_t *plan, const mc_rt_op_t *op, const mc_rt_buffers_t *bufs)
{
    const mc_rt_box_t *sb = &plan->boxes[op->src.box], *db = &plan->boxes[op->dst.box];
    const unsigned char *s = bufs->buf[sb->buf];
    unsigned char *d = bufs->buf[db->buf];
    uint64_t so = op->src.off, dof = op->dst.off, left = op->bytes;
    while (left) {
        uint64_t srun, drun;
        uint64_t sa = mc_rt_box_addr(sb, so, &srun), da = mc_rt_box_addr(db, dof, &drun);
        uint64_t n = left < srun ? left : srun;
        n = n < drun ? n : drun;
        memmove(d + da, s + sa, n);
        so += n;
        dof += n;
        left -= n;
    }
}

int mc_rt_copy_word(const mc_rt_plan_t *plan, const mc_rt_op_t *op, const mc_rt_buffers_t *bufs)
{
    const mc_rt_box_t *sb = &plan->boxes[op->src.box], *db = &plan->boxes[op->dst.box];
    uint64_t bits = op->bytes | op->src.off | op->dst.off | sb->base | db->base |
                    sb->extent[sb->ndims - 1] | db->extent[db->ndims - 1];
    if (bufs)
        bits |= (uint64_t)(uintptr_t)bufs->buf[sb->buf] | (uint64_t)(uintptr_t)bufs->buf[db->buf];
    for (int d = 0; d + 1 < sb->ndims; d++)
        bits |= sb->stride[d];
    for (int d = 0; d + 1 < db->ndims; d++)
        bits |= db->stride[d];
    int w = 16;
    while (w > 1 && (bits & (uint64_t)(w - 1)))
        w /= 2;
    return w;
}

int mc_rt_copy_contiguous(const mc_rt_plan_t *plan, const mc_rt_op_t *op)
{
    uint64_t srun, drun;
    mc_rt_box_addr(&plan->boxes[op->src.box], op->src.off, &srun);
    mc_rt_box_addr(&plan->boxes[op->dst.box], op->dst.off, &drun);
    return op->bytes <= srun && op->bytes <= drun;
}

static void add_rows(mc_rt_rows_t *rows, const mc_rt_box_t *sb, uint64_t so, const mc_rt_box_t *db,
                     uint64_t dof, uint64_t width, uint64_t height, uint64_t run)
{
    if (!width || !height)
        return;
    rows->part[rows->n].src = mc_rt_box_addr(sb, so, NULL);
    rows->part[rows->n].dst = mc_rt_box_addr(db, dof, NULL);
    rows->part[rows->n].width = width;
    rows->part[rows->n].height = height;
    /* A 1-d side advances by the run; a 2-d side's next run is one outer stride on. */
    rows->part[rows->n].spitch = sb->ndims == 2 ? sb->stride[0] : run;
    rows->part[rows->n].dpitch = db->ndims == 2 ? db->stride[0] : run;
    rows->n++;
}

int mc_rt_copy_rows(const mc_rt_plan_t *plan, const mc_rt_op_t *op, uint64_t min_run,
                    mc_rt_rows_t *rows)
{
    const mc_rt_box_t *sb = &plan->boxes[op->src.box], *db = &plan->boxes[op->dst.box];
    uint64_t so = op->src.off, dof = op->dst.off, run, phase;
    rows->n = 0;
    if (sb->ndims > 2 || db->ndims > 2 || (sb->ndims == 1 && db->ndims == 1))
        return 0;
    if (sb->ndims == 2 && db->ndims == 2) {
        run = sb->extent[1];
        if (db->extent[1] != run || so % run != dof % run)
            return 0;
    } else {
        run = sb->ndims == 2 ? sb->extent[1] : db->extent[1];
    }
    if (run < min_run)
        return 0;
    phase = (sb->ndims == 2 ? so : dof) % run;
    uint64_t head = phase ? run - phase : 0;
    head = head < op->bytes ? head : op->bytes;
    uint64_t nrows = (op->bytes - head) / run, tail = (op->bytes - head) % run;
    add_rows(rows, sb, so, db, dof, head, 1, run);
    add_rows(rows, sb, so + head, db, dof + head, run, nrows, run);
    add_rows(rows, sb, so + head + nrows * run, db, dof + head + nrows * run, tail, 1, run);
    return 1;
}
