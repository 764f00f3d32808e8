/* The task options shared by 'task', 'synth' and 'bench': meshes, a task file, positional moves.
 * Notation on the command line is a usage error (exit 2); anything wrong in a task file, device
 * ids outside the topology included, is an invalid input file (exit 1) named in the message
 * with its line (the task remembers its file: layout/measure.c). */
#include <string.h>

#include "cli/cli.h"

int cli_task_option(cli_task_args_t *a, int opt, const char *arg)
{
    if (opt == CLI_OPT_TASK_FILE) {
        a->task_file = arg;
        return 1;
    }
    if (opt != CLI_OPT_MESH)
        return 0;
    if (a->nmeshes == (int)(sizeof(a->meshes) / sizeof(a->meshes[0])))
        return -1;
    a->meshes[a->nmeshes++] = arg;
    return 1;
}

mc_status_t cli_task_build(const cli_task_args_t *a, int nmoves, char **moves,
                           const mc_topo_t *topo, mc_task_t **out, mc_err_t *err)
{
    mc_task_t *task = NULL;
    mc_status_t st;
    if (a->task_file)
        MC_CHECK_GOTO(mc_task_load(a->task_file, &task, err), fail, st);
    else
        task = mc_task_new();
    for (int i = 0; i < a->nmeshes; i++)
        MC_CHECK_GOTO(mc_task_add_mesh(task, a->meshes[i], err), fail, st);
    for (int i = 0; i < nmoves; i++)
        MC_CHECK_GOTO(mc_task_add_move(task, moves[i], err), fail, st);
    if (task->ntensors == 0 && a->task_file) {
        st = mc_err_set(err, MC_ERR_INVALID, "%s: holds no move (expected a line 'move LAYOUT -> "
                        "LAYOUT', docs/task-format.md) and none is given on the command line",
                        a->task_file);
        goto fail;
    }
    if (task->ntensors == 0) {
        st = mc_err_set(err, MC_ERR_USAGE, "no move given: pass MOVE arguments or --task-file");
        goto fail;
    }
    if (topo)
        MC_CHECK_GOTO(mc_task_check_topo(task, topo, err), fail, st);
    MC_CHECK_GOTO(mc_task_split(task, err), fail, st);
    *out = task;
    return MC_OK;
fail:
    mc_task_free(task);
    return st;
}
