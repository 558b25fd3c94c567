/* A residual block's main branch (conv3x3 -> batch norm -> relu -> conv3x3 -> batch norm)
 * under bf16 math, kept in oneDNN's nChw16c layout between its convolutions (engine/backend/backend.h's
 * residual_branch_*). Run layer by layer, each convolution reorders its operands from and to
 * NCHW f32 (engine/cpu/conv_dnnl.c): ten passes over an activation per block and step, a
 * notable share of resnet18's bf16 step (docs/performance.md, "Choices in the code"). Here:
 *  - the block's input is rounded into bf16 nChw16c once (keep[0]: the first convolution's
 *    input forward and for its weight gradient);
 *  - the first convolution's output stays f32 nChw16c (keep[1]); the first batch norm and the
 *    relu read it there and write the relu's output as bf16 nChw16c (keep[2]: the second
 *    convolution's input, forward and for its weight gradient);
 *  - the second convolution's output stays f32 nChw16c (keep[3]); the second batch norm reads
 *    it there and writes the branch's output NCHW through transposes, where the block adds
 *    the shortcut;
 *  - backward, the second batch norm reads the branch's NCHW gradient through transposes and
 *    writes its input gradient as bf16 nChw16c for the second convolution, whose input
 *    gradient stays f32 nChw16c for the first batch norm, which writes its input gradient as
 *    bf16 nChw16c for the first convolution.
 * Eight of the ten passes are gone; the two left are the block's input and the first
 * convolution's input gradient, which the layers around read and write NCHW.
 *
 * The values are those of the layers run one by one: the convolutions round their inputs to
 * bf16 as they are, the batch norms' sums are engine/cpu/batchnorm.c's bit for bit (engine/cpu/bn16.c),
 * except for the relu's mask read from the bf16 copy (engine/cpu/bn16.c says when it differs).
 * Taken where both convolutions run on oneDNN forward and backward and take these layouts;
 * elsewhere (no bf16 units, resnet18's 4x4 stage) the layers run one by one. */
#include "kernels.h"
#include "base/status.h"

#include <stdint.h>

/* The layouts each convolution is asked to take (MX_DNNL_C16_*). */
#define C1_FWD (MX_DNNL_C16_IN | MX_DNNL_C16_OUT)
#define C1_BWD (MX_DNNL_C16_IN | MX_DNNL_C16_DOUT)
#define C2_FWD (MX_DNNL_C16_IN | MX_DNNL_C16_OUT)
#define C2_BWD (MX_DNNL_C16_IN | MX_DNNL_C16_DOUT | MX_DNNL_C16_DIN)

/* mx_cpu_conv_path_dnnl's backward takes in its forward, and both the bf16 units and the
 * channels in blocks of 16 that nChw16c needs. */
static int applies(mx_backend *be, const mx_res_branch *r, int n)
{
    return mx_cpu_conv_path_dnnl(be, &r->c1, 1) && mx_cpu_conv_path_dnnl(be, &r->c2, 1) &&
           mx_cpu_conv_dnnl_takes_c16(be, &r->c1, n, C1_FWD, C1_BWD) &&
           mx_cpu_conv_dnnl_takes_c16(be, &r->c2, n, C2_FWD, C2_BWD);
}

static void refused(mx_backend *be)
{
    mx_backend_fail(be, MX_ERUNTIME, "residual block: oneDNN refused a layout it had taken");
}

int mx_cpu_residual_branch_forward(mx_backend *be, const mx_res_branch *r, int n, float *out, const float *in,
                                   float *const keep[4])
{
    if (!applies(be, r, n)) return 0;
    const mx_conv_desc *d1 = &r->c1, *d2 = &r->c2;
    uint16_t *in16 = (uint16_t *)keep[0], *relu = (uint16_t *)keep[2];
    const mx_res_bn *b1 = &r->bn1, *b2 = &r->bn2;
    mx_cpu_nchw_to_c16_bf16(be, n, d1->c, d1->h * d1->w, in16, in);
    if (!mx_cpu_conv_dnnl_forward_c16(be, d1, n, keep[1], in16, r->w1, C1_FWD)) return 0; /* only keeps written */
    mx_cpu_bn_c16_forward(be, n, d1->oc, d1->oh * d1->ow, MX_BN16_INNER, relu, b1->mean, b1->invstd, b1->run_mean,
                          b1->run_var, keep[1], b1->gamma, b1->beta, r->eps, r->momentum);
    if (!mx_cpu_conv_dnnl_forward_c16(be, d2, n, keep[3], relu, r->w2, C2_FWD)) refused(be);
    mx_cpu_bn_c16_forward(be, n, d2->oc, d2->oh * d2->ow, MX_BN16_END, out, b2->mean, b2->invstd, b2->run_mean,
                          b2->run_var, keep[3], b2->gamma, b2->beta, r->eps, r->momentum);
    return 1;
}

/* The forward's checks again: they depend on the device, the shapes and n alone, so the
 * backward of a call takes the path its forward took. */
int mx_cpu_residual_branch_backward(mx_backend *be, const mx_res_branch *r, int n, float *din, const float *dout,
                                    const float *in, const float *const keep[4], float *ws1, float *ws2)
{
    if (!applies(be, r, n)) return 0;
    const mx_conv_desc *d1 = &r->c1, *d2 = &r->c2;
    const uint16_t *in16 = (const uint16_t *)keep[0], *relu = (const uint16_t *)keep[2];
    const mx_res_bn *b1 = &r->bn1, *b2 = &r->bn2;
    uint16_t *dbn = (uint16_t *)ws2; /* a batch norm's input gradient, bf16 nChw16c */
    mx_cpu_bn_c16_backward(be, n, d2->oc, d2->oh * d2->ow, MX_BN16_END, dbn, b2->dgamma, b2->dbeta, dout, keep[3], NULL,
                           b2->mean, b2->invstd, b2->gamma);
    if (!mx_cpu_conv_dnnl_backward_c16(be, d2, n, ws1, r->dw2, dbn, relu, r->w2, C2_BWD)) refused(be);
    mx_cpu_bn_c16_backward(be, n, d1->oc, d1->oh * d1->ow, MX_BN16_INNER, dbn, b1->dgamma, b1->dbeta, ws1, keep[1],
                           relu, b1->mean, b1->invstd, b1->gamma);
    if (!mx_cpu_conv_dnnl_backward_c16(be, d1, n, din, r->dw1, dbn, in16, r->w1, C1_BWD)) refused(be);
    return 1;
}

/* Whether resnet18's first-stage block (64 channels, 28x28, batch 2) runs its main branch in
 * nChw16c under bf16 on this machine: the layouts oneDNN's primitives take depend on the
 * kernels it picks for the CPU (its AMX kernels may keep their own), so `mxbench info` asks
 * rather than assumes. 1: in nChw16c; 0: layer by layer; -1: no device to ask. */
int mx_cpu_residual_branch_c16_probe(void)
{
    mx_backend_ops ops;
    mx_backend *be = NULL;
    if (mx_backend_table_prepare(&ops, &mx_cpu_backend_ops) < 0 ||
        mx_backend_open(&be, &ops, &mx_cpu_backend_ops, 0, 1) < 0)
        return -1;
    be->math = MX_BF16;
    const mx_conv_desc c = {.c = 64, .h = 28, .w = 28, .oc = 64, .k = 3, .stride = 1, .pad = 1, .oh = 28, .ow = 28};
    const mx_res_branch r = {.c1 = c, .c2 = c};
    const int on = applies(be, &r, 2);
    mx_backend_destroy(be);
    return on;
}
