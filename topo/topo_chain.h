/* NCCL's pipelined chain (a ring broadcast's, one channel of a ring all-gather): its time under
 * the simulator's model (docs/simulator.md) and the chunk count best for it. One model for the
 * strategies that write such chains as schedules (synth/) and for the cost model's mirror of
 * them (cost/), so that the two pick the same counts. */
#ifndef MC_TOPO_CHAIN_H
#define MC_TOPO_CHAIN_H

/* Steps one NCCL connection keeps in flight (NCCL_STEPS): a collective's kernel sends a step
 * while the steps before it are still on their way, so their message overheads overlap. */
#define MC_NCCL_STEPS 8
/* NCCL's Simple-protocol step (NCCL_BUFFSIZE 4 MiB / NCCL_STEPS): a ring cannot pipeline in
 * pieces finer than this. */
#define MC_NCCL_STEP_BYTES (512u * 1024u)

/* The modelled time of a chain of n routes (message delays delay[], bandwidths bw[]) moving
 * bytes in c chunks with `inflight` chunks in flight per connection: the first chunk crosses
 * every route, the other c - 1 follow at the pace of the slowest route, which is its chunk's
 * bytes, or (delay + the chunk's bytes) / inflight where the window of chunks in flight binds. */
double mc_chain_time(const double *delay, const double *bw, int n, double bytes, int c,
                     int inflight);

/* The chunk count in [1, most] with the least mc_chain_time (the fewest on a tie). */
int mc_chain_chunks(const double *delay, const double *bw, int n, double bytes, int most,
                    int inflight);

#endif
