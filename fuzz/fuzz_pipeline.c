/* libFuzzer target for the pipeline file: any bytes either parse or are refused with a message,
 * and a parsed pipeline (with made-up transfer times, since timing them needs a topology and a
 * strategy) simulates under both orders without a crash or a leak. Seed it with examples/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    mc_pipe_t *p = NULL;
    mc_err_t err = {0};
    mc_status_t st = mc_pipe_parse_text(text, "fuzz.pipeline", &p, &err);
    free(text);
    if (st != MC_OK) {
        if (!err.msg[0])
            abort(); /* every refusal must say why */
        return 0;
    }
    /* Small enough to simulate quickly: the simulation is linear in stages x micro-batches. */
    if ((int64_t)p->nstages * p->microbatches <= 100000) {
        for (int g = 0; g < p->ngroups; g++)
            p->groups[g].seconds = 1e-3 * (g + 1);
        p->timed = 1;
        for (int o = 0; o < 2; o++) {
            mc_pipe_result_t r;
            if (mc_pipe_simulate(p, o ? MC_PIPE_EAGER_1F1B : MC_PIPE_1F1B, 0, &r, &err) != MC_OK)
                abort(); /* a parsed pipeline always runs to its end */
            mc_pipe_result_free(&r);
        }
    }
    mc_pipe_free(p);
    return 0;
}
