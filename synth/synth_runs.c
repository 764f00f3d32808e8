/* The byte ranges a sub-box occupies in its piece: a tree carries one contiguous range of a
 * piece's row-major bytes, so a strategy that moves part of a piece's box (a collective's cell,
 * Alpa's rewritten destination tile) sends one tree per range. */
#include "synth/synth_internal.h"

void synth_box_runs(const mc_box_t *box, const mc_box_t *sub, int nd, uint64_t esize,
                    synth_run_fn fn, void *arg)
{
    uint64_t stride[MC_MAX_DIMS];
    stride[nd - 1] = esize;
    for (int d = nd - 2; d >= 0; d--)
        stride[d] = stride[d + 1] * (uint64_t)(box->hi[d + 1] - box->lo[d + 1]);
    /* Dimensions after j are whole in the sub-box, so a range spans dimension j's part of it. */
    int j = nd - 1;
    while (j > 0 && sub->lo[j] == box->lo[j] && sub->hi[j] == box->hi[j])
        j--;
    int64_t idx[MC_MAX_DIMS];
    for (int d = 0; d < j; d++)
        idx[d] = sub->lo[d];
    for (;;) {
        uint64_t off = (uint64_t)(sub->lo[j] - box->lo[j]) * stride[j];
        for (int d = 0; d < j; d++)
            off += (uint64_t)(idx[d] - box->lo[d]) * stride[d];
        fn(arg, off, (uint64_t)(sub->hi[j] - sub->lo[j]) * stride[j]);
        int d = j - 1;
        for (; d >= 0 && ++idx[d] == sub->hi[d]; d--)
            idx[d] = sub->lo[d];
        if (d < 0)
            return;
    }
}
