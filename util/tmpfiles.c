/* Temporary files that must not outlive the process: the atomic writer registers each one here
 * while it exists, and a SIGINT, SIGTERM or SIGHUP unlinks every registered path before the
 * process dies of the signal as it would have. The handler only calls unlink, sigaction and
 * raise, which are async-signal-safe; the table is fixed-size and a slot is published by a
 * sig_atomic_t flag written after its path, with those signals blocked while it changes. */
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

/* One process writes its outputs one after the other; a few slots leave room for nesting. */
#define TMP_SLOTS 8

static struct {
    volatile sig_atomic_t used;
    char path[PATH_MAX];
} slots[TMP_SLOTS];

static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NSIGNALS ((int)(sizeof(cleanup_signals) / sizeof(cleanup_signals[0])))

static void on_signal(int sig)
{
    for (int i = 0; i < TMP_SLOTS; i++)
        if (slots[i].used)
            unlink(slots[i].path);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered on return: the process ends as the signal asks */
}

/* Installs the handler for each signal whose disposition is still the default, so that a host
 * program's own handler (MPI's, Python's) is left alone. */
static void install_once(void)
{
    static int installed;
    if (installed)
        return;
    installed = 1;
    for (int i = 0; i < NSIGNALS; i++) {
        struct sigaction old, sa;
        if (sigaction(cleanup_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
            (old.sa_flags & SA_SIGINFO))
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (int j = 0; j < NSIGNALS; j++)
            sigaddset(&sa.sa_mask, cleanup_signals[j]);
        sigaction(cleanup_signals[i], &sa, NULL);
    }
}

void mc_tmp_block_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < NSIGNALS; i++)
        sigaddset(&set, cleanup_signals[i]);
    sigprocmask(SIG_BLOCK, &set, old);
}

void mc_tmp_restore_signals(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

int mc_tmp_track(const char *path)
{
    if (strlen(path) >= PATH_MAX)
        return -1;
    sigset_t old;
    mc_tmp_block_signals(&old);
    install_once();
    int slot = -1;
    for (int i = 0; i < TMP_SLOTS && slot < 0; i++)
        if (!slots[i].used)
            slot = i;
    if (slot >= 0) {
        strcpy(slots[slot].path, path);
        slots[slot].used = 1;
    }
    mc_tmp_restore_signals(&old);
    return slot;
}

void mc_tmp_untrack(int slot)
{
    if (slot < 0 || slot >= TMP_SLOTS)
        return;
    sigset_t old;
    mc_tmp_block_signals(&old);
    slots[slot].used = 0;
    mc_tmp_restore_signals(&old);
}
