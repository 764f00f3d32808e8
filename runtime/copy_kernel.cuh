/* The pack kernel: copies a byte range between two strided boxes in words of W bytes, with 64-bit
 * indexing. SD and DD are the boxes' dimension counts when known at compile time (generated code
 * knows them), 0 to read them from the box. Shared by the runtime and generated code. */
#ifndef MC_RT_COPY_KERNEL_CUH
#define MC_RT_COPY_KERNEL_CUH

#include <stdint.h>

#include "runtime.h"

/* a / b and its remainder; 32-bit division when both fit, several times cheaper on a GPU than
 * the 64-bit one that large tensors need. */
__host__ __device__ __forceinline__ uint64_t mc_rt_divmod(uint64_t a, uint64_t b, uint64_t *r)
{
    if (((a | b) >> 32) == 0) {
        uint32_t q = (uint32_t)a / (uint32_t)b;
        *r = a - (uint64_t)q * b;
        return q;
    }
    uint64_t q = a / b;
    *r = a - q * b;
    return q;
}

/* The kernel's mc_rt_box_addr (host too, so tests can hold one against the other). */
template <int ND>
__host__ __device__ __forceinline__ uint64_t mc_rt_dev_addr(const mc_rt_box_t &b, uint64_t lin)
{
    const int nd = ND > 0 ? ND : b.ndims;
    if (nd == 1)
        return b.base + lin;
    uint64_t r, q = mc_rt_divmod(lin, b.extent[nd - 1], &r);
    uint64_t a = b.base + r;
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (int d = (ND > 0 ? ND : MC_RT_MAX_DIMS) - 2; d >= 0; d--) {
        if (d > nd - 2)
            continue;
        uint64_t i;
        q = mc_rt_divmod(q, b.extent[d], &i);
        a += i * b.stride[d];
    }
    return a;
}

template <typename W, int SD, int DD>
__global__ void mc_rt_copy_kernel(const unsigned char *__restrict__ src, mc_rt_box_t sb,
                                  uint64_t soff, unsigned char *__restrict__ dst, mc_rt_box_t db,
                                  uint64_t doff, uint64_t nwords)
{
    uint64_t step = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < nwords; i += step) {
        uint64_t b = i * sizeof(W);
        W v = *(const W *)(src + mc_rt_dev_addr<SD>(sb, soff + b));
        *(W *)(dst + mc_rt_dev_addr<DD>(db, doff + b)) = v;
    }
}

/* Launches the kernel for one COPY op in words of W bytes (W from mc_rt_copy_word). */
template <typename W, int SD, int DD>
static inline void mc_rt_launch_copy(const mc_rt_plan_t *plan, const mc_rt_op_t *o,
                                     const mc_rt_buffers_t *bufs, cudaStream_t stream)
{
    const unsigned threads = 512;
    const mc_rt_box_t &sb = plan->boxes[o->src.box], &db = plan->boxes[o->dst.box];
    uint64_t n = o->bytes / sizeof(W);
    /* Enough blocks to fill the GPU; the kernel's grid-stride loop covers the rest. */
    uint64_t blocks = (n + threads - 1) / threads;
    blocks = blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks;
    mc_rt_copy_kernel<W, SD, DD><<<(unsigned)blocks, threads, 0, stream>>>(
        (const unsigned char *)bufs->buf[sb.buf], sb, o->src.off, (unsigned char *)bufs->buf[db.buf],
        db, o->dst.off, n);
}

#endif
