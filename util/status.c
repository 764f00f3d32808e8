/* Status codes to text and to exit codes, and the error-report setter. */
#include "util/util.h"

#include <string.h>

const char *mc_status_str(mc_status_t st)
{
    switch (st) {
#define MC_STATUS_CASE(name, value, text) case name: return text;
        MC_STATUS_MAP(MC_STATUS_CASE)
#undef MC_STATUS_CASE
    }
    return "unknown status";
}

int mc_status_exit_code(mc_status_t st)
{
    if (st == MC_OK)
        return MC_EXIT_OK;
    return st == MC_ERR_USAGE ? MC_EXIT_USAGE : MC_EXIT_INVALID;
}

mc_status_t mc_err_setv(mc_err_t *err, mc_status_t st, const char *fmt, va_list ap)
{
    if (err) {
        err->status = st;
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    }
    return st;
}

mc_status_t mc_err_set(mc_err_t *err, mc_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mc_err_setv(err, st, fmt, ap);
    va_end(ap);
    return st;
}
