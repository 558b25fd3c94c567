/* What oneDNN is in this build and on this CPU (engine/cpu/kernels.h): its version and the
 * instruction set its kernels use, for `mxbench info` and the tests; and what the primitives
 * share (dnnl_common.h). */
#include "kernels.h"

#ifdef MXBENCH_HAVE_DNNL
#include "dnnl_common.h"
#include <pthread.h>
#include <stdio.h>

static dnnl_engine_t engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

static void engine_init(void)
{
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = NULL;
}

dnnl_engine_t mx_dnnl_engine(void)
{
    pthread_once(&engine_once, engine_init);
    return engine;
}

dnnl_primitive_attr_t mx_dnnl_user_scratch_attr(int sum)
{
    dnnl_primitive_attr_t a;
    if (dnnl_primitive_attr_create(&a) != dnnl_success) return NULL;
    int ok = dnnl_primitive_attr_set_scratchpad_mode(a, dnnl_scratchpad_mode_user) == dnnl_success;
    if (ok && sum) {
        dnnl_post_ops_t po;
        ok = dnnl_post_ops_create(&po) == dnnl_success;
        if (ok) {
            ok = dnnl_post_ops_append_sum(po, 1.0f) == dnnl_success &&
                 dnnl_primitive_attr_set_post_ops(a, po) == dnnl_success;
            dnnl_post_ops_destroy(po);
        }
    }
    if (!ok) {
        dnnl_primitive_attr_destroy(a);
        return NULL;
    }
    return a;
}

const char *mx_cpu_dnnl_version(void)
{
    static char v[32];
    const dnnl_version_t *dv = dnnl_version();
    snprintf(v, sizeof v, "%d.%d.%d", dv->major, dv->minor, dv->patch);
    return v;
}

/* The instruction set oneDNN's kernels use here: its own choice from cpuid, capped by
 * ONEDNN_MAX_CPU_ISA; its AMX kernels lay operands out otherwise than its AVX-512 ones. */
const char *mx_cpu_dnnl_isa(void)
{
#define ISA(name) {dnnl_cpu_isa_##name, #name}
    static const struct {
        dnnl_cpu_isa_t isa;
        const char *name;
    } names[] = {ISA(avx512_core_amx), ISA(avx512_core_bf16), ISA(avx512_core_vnni), ISA(avx512_core),
                 ISA(avx2_vnni), ISA(avx2), ISA(avx), ISA(sse41)};
#undef ISA
    const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (isa == names[i].isa) return names[i].name;
    return "other";
}

#else /* no oneDNN in this build */

const char *mx_cpu_dnnl_version(void) { return NULL; }
const char *mx_cpu_dnnl_isa(void) { return NULL; }

#endif
