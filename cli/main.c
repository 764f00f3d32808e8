/* meshcast: the command-line entry point. Dispatches to one function per subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

struct cli_command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct cli_command commands[] = {
    {"topo", cmd_topo, "inspect a topology file: show, route, dot"},
    {"task", cmd_task, "split a resharding task into pieces and bound its time"},
    {"synth", cmd_synth, "synthesize a schedule for a task on a topology"},
    {"validate", cmd_validate, "check a schedule against a topology and its task"},
    {"sim", cmd_sim, "time a schedule on a topology with the flow-level simulator"},
    {"bench", cmd_bench, "run benchmark suites with every strategy"},
    {"emit", cmd_emit, "generate CUDA code for a schedule"},
    {"run", cmd_run, "execute a schedule (mpi, nccl or loopback) and check every byte"},
    {"pipeline", cmd_pipeline, "simulate a training pipeline (1F1B, eager-1F1B) with its reshardings"},
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: meshcast [--version] [--help] COMMAND [ARGS]\n"
            "\n"
            "Synthesizes topology-aware schedules for moving sharded tensors between GPU meshes.\n"
            "\n"
            "commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'meshcast COMMAND --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return MC_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return MC_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("meshcast %s\n", MC_VERSION);
        return MC_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "meshcast: '%s' is not a command; see 'meshcast --help'\n", argv[1]);
    return MC_EXIT_USAGE;
}
