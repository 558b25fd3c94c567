/* The words of a run's configuration, each vocabulary one table: the kvstore modes
 * (base/kv_modes.def, with their properties), mixed precision, the gradient compressors, the
 * parallel strategies and the optimizers. The CLI parses a user's words into these enums
 * once; the code below it passes the enums and asks the tables. Records keep their fields as
 * strings (the results file's format), so results/ and plots/ classify a stored record through
 * the same tables (mx_kv_mode_of(r->kvstore)): a name is compared nowhere but here. */
#ifndef MX_CONFIG_H
#define MX_CONFIG_H

/* ---- kvstore modes: what the strings compared used to say, as properties */
enum {
    MX_KV_DIST = 1 << 0,       /* an MPI job of worker ranks (and servers): started under mpirun */
    MX_KV_SERVERS = 1 << 1,    /* parameter servers: ranks of their own that sum and update */
    MX_KV_COLLECTIVE = 1 << 2, /* the workers all-reduce among themselves, no servers */
    MX_KV_BUCKETS = 1 << 3,    /* keys are exchanged in buckets of --bucket-mb */
    MX_KV_COMPRESSES = 1 << 4, /* compresses its pushes when asked (local: nothing on a wire) */
    /* mixed precision runs with it: the step's summed gradient reaches every replica before
     * any update, so that a step with inf/NaN is skipped everywhere (not dist_async's servers) */
    MX_KV_AMP_OK = 1 << 5,
    MX_KV_ASYNC = 1 << 6,      /* workers do not wait for each other: updates arrive stale */
    /* a process's devices reduce among themselves over the communicator, device memory to
     * device memory (no host round trip): over NCCL where they are GPUs of their own */
    MX_KV_DEVICE_REDUCE = 1 << 7,
};

typedef enum {
    MX_KV_UNKNOWN = -1, /* a name outside the table (mx_kv_mode_of) */
#define MX_KV_MODE(id, name, flags) MX_KV_##id,
#include "kv_modes.def"
#undef MX_KV_MODE
    MX_KV_NMODES
} mx_kv_mode;

/* Any name of the table, "none" included (a record's), into *out; anything else fails with
 * MX_EINVAL naming the value and the modes a user may name. */
int mx_kv_mode_parse(const char *name, mx_kv_mode *out);
/* The mode called name, or MX_KV_UNKNOWN (a stored record's field, NULL included). */
mx_kv_mode mx_kv_mode_of(const char *name);
const char *mx_kv_mode_name(mx_kv_mode m); /* "?" outside the table */
/* 1 when mode m has every property of flags (MX_KV_*); 0 for MX_KV_UNKNOWN. */
int mx_kv_mode_has(mx_kv_mode m, unsigned flags);
/* The same for the mode called name (a stored record's field): 0 for a name outside the table. */
int mx_kv_name_has(const char *name, unsigned flags);
/* The modes a user names (--kvstore), built or not: "local|device|dist_sync|...", none left out. */
const char *mx_kv_mode_names(void);

/* ---- mixed precision (engine/core/amp.h runs it): X(ID, "name") in list order */
#define MX_AMP_LIST(X) X(OFF, "off") X(FP16, "fp16") X(BF16, "bf16")
typedef enum {
    MX_AMP_UNKNOWN = -1,
#define MX_AMP_ENUM_(id, name) MX_AMP_##id,
    MX_AMP_LIST(MX_AMP_ENUM_)
#undef MX_AMP_ENUM_
    MX_NAMPS
} mx_amp;

/* "off", "fp16" or "bf16" into *out; anything else fails with MX_EINVAL naming the value
 * and the accepted ones. */
int mx_amp_parse(const char *name, mx_amp *out);
mx_amp mx_amp_of(const char *name);  /* MX_AMP_UNKNOWN for another name */
const char *mx_amp_name(mx_amp a);   /* "off", "fp16", "bf16"; "?" outside the table */
const char *mx_amp_names(void);      /* "off|fp16|bf16" */

/* ---- gradient compressors (kvstore/compressor.h runs them) */
#define MX_GC_LIST(X) X(NONE, "none") X(FP16, "fp16") X(2BIT, "2bit") X(TOPK, "topk")
typedef enum {
    MX_GC_UNKNOWN = -1,
#define MX_GC_ENUM_(id, name) MX_GC_##id,
    MX_GC_LIST(MX_GC_ENUM_)
#undef MX_GC_ENUM_
    MX_NGC
} mx_gc_kind;
/* The order `train --compression` and `sweep --compression` show (their documented lists):
 * the same names as MX_GC_LIST, checked by test_config. */
#define MX_GC_CHOICES "none|2bit|topk|fp16"

int mx_gc_parse(const char *name, mx_gc_kind *out); /* as mx_amp_parse */
mx_gc_kind mx_gc_of(const char *name);
const char *mx_gc_name(mx_gc_kind k);
const char *mx_gc_names(void); /* "none|fp16|2bit|topk" */

/* ---- parallel strategies (strategies/registry.c runs them) */
#define MX_STRATEGY_LIST(X) X(DATA, "data") X(MODEL, "model") X(LAYER, "layer")
typedef enum {
    MX_STRATEGY_UNKNOWN = -1,
#define MX_STRATEGY_ENUM_(id, name) MX_STRATEGY_##id,
    MX_STRATEGY_LIST(MX_STRATEGY_ENUM_)
#undef MX_STRATEGY_ENUM_
    MX_NSTRATEGIES
} mx_strategy_kind;

int mx_strategy_parse(const char *name, mx_strategy_kind *out); /* as mx_amp_parse */
mx_strategy_kind mx_strategy_of(const char *name);
const char *mx_strategy_name(mx_strategy_kind s);
const char *mx_strategy_kind_names(void); /* every strategy the CLI knows: "data|model|layer" */

/* ---- optimizers (engine/core/optim.h runs them): SGD with momentum, or AdamW (decoupled
 * weight decay, PyTorch's torch.optim.AdamW) */
#define MX_OPTIM_LIST(X) X(SGD, "sgd") X(ADAMW, "adamw")
typedef enum {
    MX_OPTIM_UNKNOWN = -1,
#define MX_OPTIM_ENUM_(id, name) MX_OPTIM_##id,
    MX_OPTIM_LIST(MX_OPTIM_ENUM_)
#undef MX_OPTIM_ENUM_
    MX_NOPTIMS
} mx_optim_kind;

int mx_optim_parse(const char *name, mx_optim_kind *out); /* as mx_amp_parse */
mx_optim_kind mx_optim_of(const char *name);
const char *mx_optim_name(mx_optim_kind k);
const char *mx_optim_names(void); /* "sgd|adamw" */

/* 1 when word is what a vocabulary calls "nothing chosen": kvstore or compression "none",
 * amp "off" (a sweep passes such a value on only when set, and labels leave it out). */
int mx_config_unset(const char *word);

#endif
