/* Per-thread last-error message for the MX_E* status convention (see base/status.h). */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

int mx_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return code;
}

const char *mx_last_error(void) { return last_error[0] ? last_error : "no error recorded"; }

const char *mx_status_name(int code)
{
    switch (code) {
    case MX_OK: return "ok";
    case MX_EINVAL: return "invalid argument";
    case MX_ENOMEM: return "out of memory";
    case MX_EIO: return "I/O error";
    case MX_EFORMAT: return "malformed input";
    case MX_EUNSUPPORTED: return "unsupported";
    case MX_ERUNTIME: return "runtime failure";
    default: return "unknown status";
    }
}
