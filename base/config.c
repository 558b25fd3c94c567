/* The configuration's vocabularies (config.h): names, lists and properties, all generated
 * from the X-macro tables, so that a name is written once. */
#include "config.h"
#include "status.h"

#include <string.h>

#define NAME_(id, name) name,
#define BAR_(id, name) "|" name

/* A vocabulary: its names in enum order, and "|a|b|c" (a list is that past its first bar). */
typedef struct {
    const char *noun; /* for messages: "kvstore '%s': accepted ..." */
    const char *const *names;
    int n;
    const char *bars;
} vocab;

/* ---- kvstore modes */

#define KV_NAME_(id, name, flags) name,
#define KV_FLAGS_(id, name, flags) flags,
#define KV_BAR_(id, name, flags) "|" name
static const char *const kv_names[] = {
#define MX_KV_MODE KV_NAME_
#include "kv_modes.def"
#undef MX_KV_MODE
};
static const unsigned kv_flags[] = {
#define MX_KV_MODE KV_FLAGS_
#include "kv_modes.def"
#undef MX_KV_MODE
};
static const char kv_bars[] =
#define MX_KV_MODE KV_BAR_
#include "kv_modes.def"
#undef MX_KV_MODE
    ;
_Static_assert(MX_KV_NONE == 0, "none leads the table: the list a user sees starts after it");
static const vocab kv = {"kvstore", kv_names, MX_KV_NMODES, kv_bars};

/* ---- the small vocabularies */

static const char *const amp_names[] = {MX_AMP_LIST(NAME_)};
static const vocab amp = {"mixed precision", amp_names, MX_NAMPS, MX_AMP_LIST(BAR_)};
static const char *const gc_names[] = {MX_GC_LIST(NAME_)};
static const vocab gc = {"compression", gc_names, MX_NGC, MX_GC_LIST(BAR_)};
static const char *const strategy_names[] = {MX_STRATEGY_LIST(NAME_)};
static const vocab strategy = {"strategy", strategy_names, MX_NSTRATEGIES, MX_STRATEGY_LIST(BAR_)};
static const char *const optim_names[] = {MX_OPTIM_LIST(NAME_)};
static const vocab optim = {"optimizer", optim_names, MX_NOPTIMS, MX_OPTIM_LIST(BAR_)};

/* The one place where names are compared. */
static int lookup(const vocab *v, const char *name)
{
    for (int i = 0; name && i < v->n; i++)
        if (strcmp(v->names[i], name) == 0) return i;
    return -1;
}

/* name's index, or MX_EINVAL naming it and the list a user may choose from */
static int parse(const vocab *v, const char *list, const char *name)
{
    const int i = lookup(v, name);
    return i >= 0 ? i : mx_error(MX_EINVAL, "%s '%s': accepted %s", v->noun, name ? name : "(null)", list);
}

static const char *name_of(const vocab *v, int i) { return i >= 0 && i < v->n ? v->names[i] : "?"; }

const char *mx_kv_mode_names(void) { return kv.bars + 1 + strlen(kv_names[MX_KV_NONE]) + 1; }

int mx_kv_mode_parse(const char *name, mx_kv_mode *out)
{
    const int i = parse(&kv, mx_kv_mode_names(), name);
    if (i >= 0) *out = (mx_kv_mode)i;
    return i < 0 ? i : MX_OK;
}

mx_kv_mode mx_kv_mode_of(const char *name) { return (mx_kv_mode)lookup(&kv, name); }
const char *mx_kv_mode_name(mx_kv_mode m) { return name_of(&kv, m); }

int mx_kv_mode_has(mx_kv_mode m, unsigned flags)
{
    return m >= 0 && m < MX_KV_NMODES && (kv_flags[m] & flags) == flags;
}

int mx_kv_name_has(const char *name, unsigned flags) { return mx_kv_mode_has(mx_kv_mode_of(name), flags); }

const char *mx_amp_names(void) { return amp.bars + 1; }

int mx_amp_parse(const char *name, mx_amp *out)
{
    const int i = parse(&amp, mx_amp_names(), name);
    if (i >= 0) *out = (mx_amp)i;
    return i < 0 ? i : MX_OK;
}

mx_amp mx_amp_of(const char *name) { return (mx_amp)lookup(&amp, name); }
const char *mx_amp_name(mx_amp a) { return name_of(&amp, a); }

const char *mx_gc_names(void) { return gc.bars + 1; }

int mx_gc_parse(const char *name, mx_gc_kind *out)
{
    const int i = parse(&gc, mx_gc_names(), name);
    if (i >= 0) *out = (mx_gc_kind)i;
    return i < 0 ? i : MX_OK;
}

mx_gc_kind mx_gc_of(const char *name) { return (mx_gc_kind)lookup(&gc, name); }
const char *mx_gc_name(mx_gc_kind k) { return name_of(&gc, k); }

const char *mx_strategy_kind_names(void) { return strategy.bars + 1; }

int mx_strategy_parse(const char *name, mx_strategy_kind *out)
{
    const int i = parse(&strategy, mx_strategy_kind_names(), name);
    if (i >= 0) *out = (mx_strategy_kind)i;
    return i < 0 ? i : MX_OK;
}

mx_strategy_kind mx_strategy_of(const char *name) { return (mx_strategy_kind)lookup(&strategy, name); }
const char *mx_strategy_name(mx_strategy_kind s) { return name_of(&strategy, s); }

const char *mx_optim_names(void) { return optim.bars + 1; }

int mx_optim_parse(const char *name, mx_optim_kind *out)
{
    const int i = parse(&optim, mx_optim_names(), name);
    if (i >= 0) *out = (mx_optim_kind)i;
    return i < 0 ? i : MX_OK;
}

mx_optim_kind mx_optim_of(const char *name) { return (mx_optim_kind)lookup(&optim, name); }
const char *mx_optim_name(mx_optim_kind k) { return name_of(&optim, k); }

int mx_config_unset(const char *word)
{
    return mx_kv_mode_of(word) == MX_KV_NONE || mx_gc_of(word) == MX_GC_NONE || mx_amp_of(word) == MX_AMP_OFF;
}
