/* The `-- TRAIN OPTIONS` tail (train_args.h). */
#include "harness/train_args.h"
#include "harness/commands.h"
#include "harness/opts.h"

#include <stdio.h>
#include <string.h>

int mx_train_args_has(const mx_train_args *t, const char *name)
{
    const size_t n = strlen(name);
    for (int i = 0; i < t->n; i++)
        if (strncmp(t->v[i], name, n) == 0 && (t->v[i][n] == 0 || t->v[i][n] == '=')) return 1;
    return 0;
}

int mx_train_args_split(const char *cmd, int *argc, char **argv, const char *const *defaults,
                        const char *const *refused, const char *why, mx_train_args *t)
{
    t->n = 0;
    int dd = -1;
    for (int i = 1; i < *argc && dd < 0; i++)
        if (strcmp(argv[i], "--") == 0) dd = i;
    if (dd < 0 || dd == *argc - 1) {
        for (const char *const *p = defaults; *p; p++) t->v[t->n++] = (char *)*p;
        if (dd >= 0) *argc = dd;
        return MX_OPTS_OK;
    }
    if (*argc - dd - 1 > MX_TRAIN_ARGS_MAX) {
        fprintf(stderr, "%s: %d train options after '--': at most %d\n", cmd, *argc - dd - 1, MX_TRAIN_ARGS_MAX);
        return MX_OPTS_BAD;
    }
    for (int i = dd + 1; i < *argc; i++) t->v[t->n++] = argv[i];
    *argc = dd;
    for (const char *const *o = refused; *o; o++)
        if (mx_train_args_has(t, *o)) {
            fprintf(stderr, "%s: train option '%s' is not accepted after '--': %s\n", cmd, *o, why);
            return MX_OPTS_BAD;
        }
    return MX_OPTS_OK;
}

void mx_train_args_add(mx_train_args *t, const char *name, const char *value)
{
    t->v[t->n++] = (char *)name;
    t->v[t->n++] = (char *)value;
}

int mx_train_args_validate(const mx_train_args *t, const char *const *extra)
{
    char *argv[MX_TRAIN_ARGS_MAX + 16] = {"train"};
    int n = 1;
    for (int i = 0; i < t->n; i++) argv[n++] = t->v[i];
    for (const char *const *e = extra; e && *e; e++) argv[n++] = (char *)*e;
    argv[n] = NULL;
    return mx_train_validate_argv(n, argv);
}
