/* The kernel switches: environment variables that keep a family of kernels on its reference
 * path, to measure what the faster one brings or to compare the two; and MXBENCH_GPU, which
 * lets CUDA devices run what has not yet run on a GPU, for the GPU tests. One table, read by
 * the kernels and the harness, listed by `mxbench info` and checked by the commands that train
 * (a value not in the table is refused there, naming the accepted ones). docs/commands.md
 * describes them. */
#ifndef MX_SWITCHES_H
#define MX_SWITCHES_H

typedef enum { MX_SWITCH_CONV, MX_SWITCH_GEMM, MX_SWITCH_BF16, MX_SWITCH_FUSE, MX_SWITCH_GPU, MX_NSWITCHES } mx_switch;

/* Each switch's values, by index; 0 is the default (the variable unset, empty or set to its name). */
enum { MX_SW_CONV_AUTO, MX_SW_CONV_GEMM, MX_SW_CONV_NODNNL, MX_SW_CONV_NOWINOGRAD };
enum { MX_SW_GEMM_OWN, MX_SW_GEMM_BLAS };
enum { MX_SW_BF16_NATIVE, MX_SW_BF16_EMULATE, MX_SW_BF16_OWN, MX_SW_BF16_DNNL };
enum { MX_SW_FUSE_ON, MX_SW_FUSE_OFF };
enum { MX_SW_GPU_TESTED, MX_SW_GPU_PREVIEW };

#define MX_SWITCH_MAX_VALUES 4
typedef struct {
    const char *var;                            /* the environment variable */
    const char *values[MX_SWITCH_MAX_VALUES];   /* [0]: the default's name, never set */
    const char *meaning[MX_SWITCH_MAX_VALUES];  /* what each value runs */
} mx_switch_info;

extern const mx_switch_info mx_switches[MX_NSWITCHES];

/* The switch's value as set in the environment now (the kernels read it once, when they first
 * run; execution contexts when they are made): an index into its values; a value not in the
 * table reads as the default. */
int mx_switch_value(mx_switch s);
/* MX_OK, or MX_EINVAL naming the first variable set to a value not in the table and the
 * values accepted. */
int mx_switches_check(void);

#endif
