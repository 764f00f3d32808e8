/* libFuzzer target for task files (docs/task-format.md): any bytes either parse or are refused
 * with a message naming the file and line; a parsed task writes back to canonical text that
 * parses to the same text again, and splits into pieces without a crash or a leak. Seeded with
 * tests/data/tasks/ and tests/data/hostile/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"

/* Splitting is linear in the pieces, which grow with the devices; a few thousand devices keep
 * each input fast without leaving the splitter out. */
#define SPLIT_MAX_DEVICES 4096

static int total_devices(const mc_task_t *t)
{
    int n = 0;
    for (int i = 0; i < t->nmeshes; i++)
        n += t->meshes[i].ndevices;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    mc_task_t *t = NULL, *again = NULL;
    mc_err_t err = {0};
    if (mc_task_parse_text(text, "fuzz.task", &t, &err) != MC_OK) {
        if (strncmp(err.msg, "fuzz.task:", 10))
            abort(); /* every refusal names the file and line */
        free(text);
        return 0;
    }
    char *canon = mc_task_to_text(t);
    if (mc_task_parse_text(canon, "canon.task", &again, &err) != MC_OK)
        abort(); /* the writer wrote what the reader refuses */
    char *canon2 = mc_task_to_text(again);
    if (strcmp(canon, canon2))
        abort(); /* canonical text is a fixed point */
    if (total_devices(t) <= SPLIT_MAX_DEVICES && mc_task_split(t, &err) == MC_OK)
        mc_task_total_bytes(t);
    free(canon);
    free(canon2);
    mc_task_free(again);
    mc_task_free(t);
    free(text);
    return 0;
}
