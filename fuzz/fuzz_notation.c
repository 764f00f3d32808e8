/* libFuzzer target for the layout notation as the command line gives it: every line but the
 * last is a mesh (--mesh), the last a move. Each either parses or is refused with a usage error
 * that quotes the text with a caret under a column inside it; nothing crashes or leaks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layout/layout.h"

/* A refusal must be "WHAT at column N", the quoted text and a caret line. */
static void check_refusal(const mc_err_t *err)
{
    if (err->status != MC_ERR_USAGE || !strstr(err->msg, " at column ") ||
        !strstr(err->msg, "\n  ") || err->msg[strlen(err->msg) - 1] != '^')
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    mc_task_t *t = mc_task_new();
    mc_err_t err = {0};
    char *line = text;
    for (char *nl; (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        if (mc_task_add_mesh(t, line, &err) != MC_OK)
            check_refusal(&err);
    }
    if (mc_task_add_move(t, line, &err) != MC_OK)
        check_refusal(&err);
    else
        free(mc_task_to_text(t));
    mc_task_free(t);
    free(text);
    return 0;
}
