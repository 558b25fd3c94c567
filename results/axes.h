/* The configuration of a run as a table: one entry per field that defines an experiment (the
 * sweep's axes, its single-valued settings, and the fields derived from them). One entry gives
 * the sweep option (parsing, --help, default, accepted values), how the value enters the
 * child's `mxbench train` command line, the record field it fills, its place in the
 * configuration and series keys, and the run label. The key order is the table order. */
#ifndef MX_AXES_H
#define MX_AXES_H

#include <stddef.h>

typedef enum { MX_AXIS_STR, MX_AXIS_INT, MX_AXIS_DBL } mx_axis_type;

/* How a value reaches the child's `train` command line. */
typedef enum {
    MX_CHILD_NO,     /* not passed: the sweep derives other fields from it (batch_mode) */
    MX_CHILD_ALWAYS, /* --train_opt VALUE */
    MX_CHILD_IF_SET, /* only when set: a number other than 0, a string other than "", "none", "off" */
    MX_CHILD_IF_DIFFERS, /* only when not the default (def): options of one strategy, which the
                          * planner sets to their defaults on the other strategies' rows */
} mx_child_rule;

typedef struct {
    const char *name;      /* record field, HDF5 attribute and key name */
    mx_axis_type type;
    size_t off, size;      /* the field in mx_run_record */
    /* ---- the sweep option (NULL: a derived field, set by the planner) */
    const char *option;    /* --option */
    int loop;              /* 0: one value; > 0: a comma list, a factor of the product, nested
                            * by rank (the largest varies fastest) */
    const char *choices;   /* strings: "a|b|c" (NULL: any, or vocab's); read through mx_axis_choices */
    double lo, hi;         /* numbers: accepted range */
    int above_lo;          /* numbers: lo itself is refused (a learning rate of 0) */
    const char *def;       /* default, as it would be typed */
    const char *metavar, *help;
    /* ---- the child's command line */
    const char *train_opt; /* `train` option */
    const char *train_opt_other; /* strings outside choices go here instead (a --data directory) */
    mx_child_rule child;
    /* ---- keys and labels */
    int in_key;            /* part of the configuration key (matching runs across files, --resume) */
    int in_series;         /* part of the series key (speedup, efficiency, plot lines) */
    int in_v1;             /* every schema-1 file has it. Fields added later enter the keys
                            * only when they differ from def, so old files still match */
    int label_rank;        /* place in the run label ("lenet data x2 kv=device ..."); 0: absent */
    const char *label_fmt; /* printf format of the label part, e.g. "kv=%s" */
    int label_if_set;      /* 1: label part only when set (MX_CHILD_IF_SET's sense of set);
                            * 2: only when not the default */
    const char *absent;    /* fields added later: what a file without the field means, where
                            * that differs from def (the runs then had no choice); NULL: def */
    /* strings of a vocabulary (base/config.h): its generated list is the choices */
    const char *(*vocab)(void);
} mx_axis;

extern const mx_axis mx_axes[];
extern const int mx_naxes;

/* The entry called name, or NULL. */
const mx_axis *mx_axis_find(const char *name);
/* The accepted strings, "a|b|c" (NULL: any). */
const char *mx_axis_choices(const mx_axis *a);
/* The value of axis a in record r as text: %s, %d, or %.17g (exact round trip). */
void mx_axis_text(const mx_axis *a, const void *record, char *buf, size_t n);
/* 1 when the value is "set" in the MX_CHILD_IF_SET sense (a string: not a vocabulary's
 * "nothing chosen", mx_config_unset). */
int mx_axis_is_set(const mx_axis *a, const void *record);
/* 1 when the value is the entry's default (def). */
int mx_axis_is_default(const mx_axis *a, const void *record);
/* Whether the child's command line carries the value, as the entry's child rule says. */
int mx_axis_to_child(const mx_axis *a, const void *record);
/* Whether the run label shows the value, as label_if_set says. */
int mx_axis_in_label(const mx_axis *a, const void *record);
/* What a result file without the field means (absent, or else def). */
const char *mx_axis_absent(const mx_axis *a);
/* Sets the field of record from text (the default, or one item of a parsed list). */
void mx_axis_set(const mx_axis *a, void *record, const char *text);

#endif
