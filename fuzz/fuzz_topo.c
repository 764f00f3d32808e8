/* libFuzzer target for the topology loaders: any bytes either load or are refused with a
 * message, and a loaded topology routes between its first GPUs without a crash or a leak.
 * Build: clang -fsanitize=fuzzer,address,undefined with topo/ and util/; seed it with
 * ../shared/topo-xml/ and topologies/. */
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
            mc_topo_route(t, a, b, &r, &err);
        }
    mc_topo_free(t);
    return 0;
}
