/* Status codes and the per-thread error message: library code returns a negative MX_E*
 * code and leaves a message saying what was wrong; the CLI maps codes to exit statuses. */
#ifndef MX_STATUS_H
#define MX_STATUS_H

enum {
    MX_OK = 0,
    MX_EINVAL = -1,       /* bad argument or option value */
    MX_ENOMEM = -2,       /* allocation failed */
    MX_EIO = -3,          /* file missing, unreadable or unwritable */
    MX_EFORMAT = -4,      /* file present but malformed (truncated, wrong magic, corrupt) */
    MX_EUNSUPPORTED = -5, /* valid request this build or machine cannot do */
    MX_ERUNTIME = -6,     /* failure while running (diverged, child crashed, library error) */
};

/* Records a printf-style message for the calling thread and returns code, so that
 * `return mx_error(MX_EINVAL, "...", ...)` reads naturally. */
int mx_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *mx_last_error(void);
const char *mx_status_name(int code);

/* Propagates a negative status from an expression. */
#define MX_TRY(expr)              \
    do {                          \
        int mx_rc_ = (expr);      \
        if (mx_rc_ < 0) return mx_rc_; \
    } while (0)

#endif
