/* libFuzzer target for the topology loaders (NCCL and RCCL XML, cluster XML): any bytes either
 * load or are refused with a message, and a loaded topology routes between its first GPUs and
 * summarizes them (NVLink/xGMI figures, the kind of each GPU pair) without a crash or a leak.
 * Build: clang -fsanitize=fuzzer,address,undefined with topo/ and util/; seed it with
 * ../shared/topo-xml/ (RCCL files included), topologies/ and tests/data/topo/. */
#include <stdint.h>
#include <stdlib.h>

#include "topo/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mc_topo_t *t = NULL;
    mc_err_t err = {0};
    if (mc_topo_load_memory((const char *)data, size, "fuzz.xml", &t, &err) != MC_OK) {
        if (!err.msg[0])
            abort(); /* every refusal must say why */
        return 0;
    }
    int n = t->ngpus < 8 ? t->ngpus : 8;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            mc_route_t r;
            mc_link_kind_t k;
            mc_topo_route(t, a, b, &r, &err);
            if (mc_topo_pair_kind(t, a, b, &k, &err) == MC_OK && (unsigned)k >= MC_LINK__COUNT)
                abort();
        }
    mc_gpu_summary_t *g = calloc((size_t)t->ngpus, sizeof *g);
    int domains = mc_topo_summarize(t, g);
    if (domains < 0 || domains > t->ngpus)
        abort();
    free(g);
    mc_topo_free(t);
    return 0;
}
