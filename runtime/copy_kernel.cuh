/* The pack kernel: copies a byte range between two strided boxes in words of W bytes, with 64-bit
 * indexing. SD and DD are the boxes' dimension counts when known at compile time (generated code
 * knows them), 0 to read them from the box. Shared by the runtime and generated code. */
#ifndef MC_RT_COPY_KERNEL_CUH
#define MC_RT_COPY_KERNEL_CUH

#include <stdint.h>

#include "runtime.h"

template <int ND>
__device__ __forceinline__ uint64_t mc_rt_dev_addr(const mc_rt_box_t &b, uint64_t lin)
{
    const int nd = ND > 0 ? ND : b.ndims;
    if (nd == 1)
        return b.base + lin;
    uint64_t q = lin / b.extent[nd - 1];
    uint64_t a = b.base + (lin - q * b.extent[nd - 1]);
#pragma unroll
    for (int d = (ND > 0 ? ND : MC_RT_MAX_DIMS) - 2; d >= 0; d--) {
        if (d > nd - 2)
            continue;
        uint64_t n = q / b.extent[d];
        a += (q - n * b.extent[d]) * b.stride[d];
        q = n;
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

/* The widest word (16, 8, 4, 2 or 1 bytes) that divides every address and run the copy touches,
 * so that no word straddles two runs and every access is aligned. */
static inline int mc_rt_copy_word(const mc_rt_box_t *sb, const void *sbuf, uint64_t soff,
                                  const mc_rt_box_t *db, const void *dbuf, uint64_t doff,
                                  uint64_t bytes)
{
    uint64_t bits = bytes | soff | doff | (uint64_t)(uintptr_t)sbuf | (uint64_t)(uintptr_t)dbuf |
                    sb->base | db->base | sb->extent[sb->ndims - 1] | db->extent[db->ndims - 1];
    for (int d = 0; d + 1 < sb->ndims; d++)
        bits |= sb->stride[d];
    for (int d = 0; d + 1 < db->ndims; d++)
        bits |= db->stride[d];
    int w = 16;
    while (w > 1 && (bits & (uint64_t)(w - 1)))
        w /= 2;
    return w;
}

/* Grid size for n words: enough blocks to fill the GPU, grid-stride beyond that. */
static inline unsigned mc_rt_copy_blocks(uint64_t nwords, unsigned threads)
{
    uint64_t b = (nwords + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

#endif
