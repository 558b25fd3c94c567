/* The `-- TRAIN OPTIONS` tail of the commands that run `train` as a child (ab, count): split
 * off argv, defaulted when empty, checked against the options the command sets itself. */
#ifndef MX_TRAIN_ARGS_H
#define MX_TRAIN_ARGS_H

#define MX_TRAIN_ARGS_MAX 200

typedef struct {
    char *v[MX_TRAIN_ARGS_MAX + 8]; /* room for the options the command adds */
    int n;
} mx_train_args;

/* Moves what follows "--" in argv into t (the defaults, NULL-terminated, when nothing does)
 * and cuts *argc before it. An option named in refused ("--record", NULL-terminated) is bad
 * usage: "CMD: train option 'X' is not accepted after '--': WHY". MX_OPTS_OK or MX_OPTS_BAD. */
int mx_train_args_split(const char *cmd, int *argc, char **argv, const char *const *defaults,
                        const char *const *refused, const char *why, mx_train_args *t);
/* 1 when t holds option name ("--steps"), as "--steps N" or "--steps=N". */
int mx_train_args_has(const mx_train_args *t, const char *name);
/* Appends "NAME VALUE" (strings that outlive t). */
void mx_train_args_add(mx_train_args *t, const char *name, const char *value);
/* 0 when `train` accepts t plus "extra..." (NULL-terminated) as this mxbench parses them;
 * 2 after printing why. */
int mx_train_args_validate(const mx_train_args *t, const char *const *extra);

#endif
