/* What oneDNN is in this build and on this CPU (engine/cpu/kernels.h): its version and the
 * instruction set its kernels use, for `mxbench info` and the tests. */
#include "kernels.h"

#ifdef MXBENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>

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
