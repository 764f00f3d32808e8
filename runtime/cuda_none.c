/* The runtime's CUDA entry points when it is built without nvcc: they say so. runtime.mk leaves
 * this file out when nvcc exists. */
#include <mpi.h>

#include "rt_internal.h"

int mc_rt_cuda_devices(void)
{
    return -1;
}

static int no_cuda(mc_rt_err_t *err)
{
    return mc_rt_fail(err, MC_RT_ERR_UNSUPPORTED,
                      "this meshcast runtime was built without CUDA (no nvcc at build time)");
}

int mc_rt_run_loopback_gpu(int nranks, const mc_rt_plan_t *plans, const mc_rt_buffers_t *bufs,
                           double *seconds, mc_rt_err_t *err)
{
    return no_cuda(err);
}

int mc_rt_cuda_bench_copy(const mc_rt_plan_t *plan, uint32_t op, int iters, double *runtime_s,
                          double *kernel_s, double *memcpy_s, mc_rt_err_t *err)
{
    return no_cuda(err);
}

int mc_rt_run_nccl_mpi(const mc_rt_plan_t *plan, MPI_Comm comm, const mc_rt_buffers_t *bufs,
                       double timeout_s, double *seconds, mc_rt_err_t *err)
{
    return no_cuda(err);
}
