/* Tests for util/tmpfiles.c: a temporary file registered by the atomic writer is gone when
 * SIGINT, SIGTERM or SIGHUP ends the process, the process still dies of that signal, an
 * unregistered file is left alone, and a handler the host program chose is not replaced. Each
 * case runs in a child process that signals itself. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Forks a child that creates path, tracks it unless untrack_first says to untrack it again, and
 * raises sig; returns the child's wait status. */
static int child_raises(const char *path, int sig, int untrack_first, int ignore_first)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* The disposition the case is about, whatever the test inherited: a shell that starts
         * it in the background or under nohup hands it SIGINT or SIGHUP ignored. */
        signal(sig, ignore_first ? SIG_IGN : SIG_DFL);
        FILE *f = fopen(path, "w");
        if (!f)
            _exit(90);
        fclose(f);
        int slot = mc_tmp_track(path);
        if (slot < 0)
            _exit(91);
        if (untrack_first)
            mc_tmp_untrack(slot);
        raise(sig);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void test_signal_removes_tracked(void **state)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    char dir[] = "/tmp/mc_tmpfiles_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = mc_xasprintf("%s/out.xml.tmp.123456", dir);
    for (int i = 0; i < 3; i++) {
        int status = child_raises(path, sigs[i], 0, 0);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), sigs[i]);
        assert_false(exists(path));
    }
    free(path);
    rmdir(dir);
}

static void test_untracked_and_foreign_handlers(void **state)
{
    char dir[] = "/tmp/mc_tmpfiles_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = mc_xasprintf("%s/kept", dir);
    /* Untracked: the signal still kills, the file stays. */
    int status = child_raises(path, SIGTERM, 1, 0);
    assert_true(WIFSIGNALED(status));
    assert_true(exists(path));
    unlink(path);
    /* The program ignores SIGHUP: tracking does not take that over. */
    status = child_raises(path, SIGHUP, 0, 1);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_true(exists(path));
    unlink(path);
    free(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signal_removes_tracked),
        cmocka_unit_test(test_untracked_and_foreign_handlers),
    };
    return cmocka_run_group_tests_name("util_tmpfiles", tests, NULL, NULL);
}
