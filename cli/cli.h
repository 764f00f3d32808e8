/* cli: the meshcast command. Each subcommand lives in its own file cli/cmd_<name>.c as
 * int cmd_<name>(int argc, char **argv) (argv[0] is the subcommand's name) and returns the exit
 * code: 0 ok, 1 invalid input, 2 usage error. Commands only parse arguments, call the library and
 * print; the logic lives in the modules. */
#ifndef MC_CLI_H
#define MC_CLI_H

#include <getopt.h>
#include <jansson.h>

#include "layout/layout.h"
#include "sched/sched.h"
#include "synth/synth.h"
#include "topo/topo.h"
#include "util/util.h"

int cmd_topo(int argc, char **argv);
int cmd_task(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_emit(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_pipeline(int argc, char **argv);

/* Prints "meshcast: <message>" and returns the exit code for err's status. */
int cli_fail(const mc_err_t *err);
/* Prints "meshcast <cmd>: <message>" and a pointer to --help; returns 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* True when argv holds -h or --help before any "--". */
int cli_wants_help(int argc, char **argv);

/* Prints a JSON document as the commands do (2-space indent, keys in insertion order, reals with
 * 9 significant digits) and releases it. */
void cli_print_json(json_t *o);

/* Loads a topology with the topology options given; prints its warnings to stderr unless
 * quiet. */
mc_status_t cli_load_topo(const char *path, int quiet, mc_topo_t **out, mc_err_t *err);

/* The topology options of every command that loads one, for what a file may leave out:
 * --assume-nvlink N (the NVLinks to the NVSwitch of each GPU whose <gpu> lists none),
 * --assume-gpu MODEL (the model of a skeleton file's GPUs) and --assume-nic-gbps N (the speed of
 * a port the file gives none for). Put CLI_TOPO_LONG_OPTIONS in the long-option table and hand
 * those options and their argument to cli_topo_option() (CLI_TOPO_CASES is their case labels);
 * cli_load_topo() applies them. */
#define CLI_OPT_ASSUME_NVLINK 0x1010
#define CLI_OPT_ASSUME_GPU 0x1011
#define CLI_OPT_ASSUME_NIC 0x1012
#define CLI_TOPO_LONG_OPTIONS                                                                 \
    {"assume-nvlink", required_argument, NULL, CLI_OPT_ASSUME_NVLINK},                       \
    {"assume-gpu", required_argument, NULL, CLI_OPT_ASSUME_GPU},                             \
    {"assume-nic-gbps", required_argument, NULL, CLI_OPT_ASSUME_NIC}
#define CLI_TOPO_CASES                                                                        \
    case CLI_OPT_ASSUME_NVLINK:                                                               \
    case CLI_OPT_ASSUME_GPU:                                                                  \
    case CLI_OPT_ASSUME_NIC
#define CLI_TOPO_USAGE \
    "  --assume-nvlink N   GPUs whose <gpu> lists no NVLinks have N to the NVSwitch (0: none;\n" \
    "                      default: inferred from the PCI device id, with a warning)\n" \
    "  --assume-gpu MODEL  a skeleton file's GPUs with no known device id are MODEL (a name\n" \
    "                      such as A100-SXM4-80GB or H100-SXM5-80GB, or a PCI device id)\n" \
    "  --assume-nic-gbps N NIC ports whose speed the file does not give run at N Gb/s\n" \
    "                      (default: NCCL's 10 Gb/s, with a warning)\n"
/* Records the value of topology option opt (CLI_OPT_ASSUME_*); prints a usage error naming cmd
 * and returns 2 when it is not one the option takes, else 0. */
int cli_topo_option(const char *cmd, int opt, const char *arg);

/* Warns (stderr) when s's trees keep more than one chunk in flight per edge: it models NCCL's
 * collective kernels, and meshcast's runtime, sending one chunk at a time, runs it slower than
 * the simulator times it. */
void cli_warn_inflight(const mc_sched_t *s, const char *path);

/* The check emit and run make first (and cli_warn_inflight): the schedule's violations (as
 * meshcast validate finds them) go to stderr, and it is refused (MC_ERR_INVALID) unless force,
 * which only warns (and says so when the schedule was made for another topology, which only
 * force loads). */
mc_status_t cli_check_sched(const mc_sched_t *s, const mc_topo_t *topo, const char *path,
                            int force, mc_err_t *err);

/* The task options shared by task, synth and bench: --mesh SPEC (repeatable) and
 * --task-file FILE, plus the positional moves. Put CLI_TASK_LONG_OPTIONS in the long-option
 * table, hand every option to cli_task_option(), then call cli_task_build(). */
#define CLI_OPT_MESH 0x1001
#define CLI_OPT_TASK_FILE 0x1002
#define CLI_TASK_LONG_OPTIONS                                   \
    {"mesh", required_argument, NULL, CLI_OPT_MESH},            \
    {"task-file", required_argument, NULL, CLI_OPT_TASK_FILE}
#define CLI_TASK_USAGE \
    "  --mesh 'A={x:2,y:4}@0..7'   a mesh (repeatable)\n" \
    "  --task-file FILE            meshes and moves from a task file (docs/task-format.md)\n" \
    "  MOVE...                     moves, e.g. 'f32[1024,512] A[x,_] -> B[_,y]'\n"

/* The synthesis options of every command that synthesizes (synth, bench, pipeline), all with the
 * option id given: hand each to mc_synth_opts_set under its long name. */
#define CLI_SYNTH_LONG_OPTIONS(id)                       \
    {"budget", required_argument, NULL, (id)},           \
    {"rlimit", required_argument, NULL, (id)},           \
    {"memory-limit", required_argument, NULL, (id)},     \
    {"chunk", required_argument, NULL, (id)},            \
    {"in-flight", required_argument, NULL, (id)},        \
    {"sim-work", required_argument, NULL, (id)}
/* Sets the synthesis option of long name `name` (one of CLI_SYNTH_LONG_OPTIONS) to arg; prints a
 * usage error naming cmd and returns 2 when the value is bad, else 0. */
int cli_synth_option(const char *cmd, mc_synth_opts_t *opts, const char *name, const char *arg);

typedef struct cli_task_args {
    const char *task_file;
    int nmeshes;
    const char *meshes[64];
} cli_task_args_t;

/* Returns 1 when opt was a task option (and records it), 0 otherwise, -1 on too many meshes. */
int cli_task_option(cli_task_args_t *a, int opt, const char *arg);
/* Builds, splits and checks the task against topo. Errors are MC_ERR_USAGE for bad notation on
 * the command line, MC_ERR_PARSE/MC_ERR_INVALID for a bad task file. */
mc_status_t cli_task_build(const cli_task_args_t *a, int nmoves, char **moves,
                           const mc_topo_t *topo, mc_task_t **out, mc_err_t *err);

#endif
