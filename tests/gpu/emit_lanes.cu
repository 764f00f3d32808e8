/* GPU check of generated code's lanes entry points on one rank: the code `meshcast emit --name one`
 * writes for a one-GPU schedule (tests/gpu/run.sh makes it) splits its lanes from a one-rank
 * communicator (one_lanes_init, non-blocking and bounded), runs the rank's graph on them after
 * the work already on the caller's stream (one_run_lanes) and joins back; the destination must
 * then hold the source's bytes (the schedule copies a tile to the same layout on the same GPU). */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "one.h"
#include "runtime.h"

int main(void)
{
    int dev = 0;
    ncclComm_t comm;
    struct mc_rt_nccl_lanes *lanes = NULL;
    cudaStream_t stream;
    mc_rt_err_t err;
    size_t n = one_src_bytes(0), ws = one_workspace_bytes(0);
    void *src, *dst, *w;
    if (n != one_dst_bytes(0) || ncclCommInitAll(&comm, 1, &dev) != ncclSuccess) {
        printf("generated lanes: FAIL: %zu source and %zu destination bytes, or no communicator\n",
               n, one_dst_bytes(0));
        return 1;
    }
    unsigned char *h = (unsigned char *)malloc(n), *back = (unsigned char *)malloc(n);
    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned char)(i * 7 + 3);
    cudaStreamCreate(&stream);
    cudaMalloc(&src, n);
    cudaMalloc(&dst, n);
    cudaMalloc(&w, ws ? ws : 1);
    cudaMemcpy(src, h, n, cudaMemcpyHostToDevice);
    cudaMemsetAsync(dst, 0xff, n, stream); /* before the lanes: they must start after it */
    if (one_lanes_init(comm, 30, &lanes) != 0 ||
        one_run_lanes(0, lanes, src, dst, w, stream) != 0 ||
        mc_rt_cuda_wait(stream, NULL, 0, 30, &err) != MC_RT_OK) {
        printf("generated lanes: FAIL: %s\n", one_error());
        return 1;
    }
    cudaMemcpy(back, dst, n, cudaMemcpyDeviceToHost);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += back[i] != h[i];
    printf("generated lanes (%d lane%s): one_lanes_init, one_run_lanes on the caller's stream: "
           "%s\n", one_LANES, one_LANES == 1 ? "" : "s", wrong ? "WRONG BYTES" : "every byte correct");
    one_lanes_free(lanes);
    ncclCommDestroy(comm);
    return wrong ? 1 : 0;
}
