/* A residual block's first half (conv3x3 -> batch norm -> relu -> conv3x3) under bf16 math,
 * kept in oneDNN's nChw16c layout between its two convolutions (backend.h's
 * residual_inner_*). Run layer by layer, each convolution reorders its operands from and to
 * NCHW f32 (cpu_conv_dnnl.c): ten passes over an activation per block and step, about 7 ms
 * of resnet18's bf16 step. Here the block's input is rounded into bf16 nChw16c once
 * (keep[0]: the first convolution's input forward and for its weight gradient), the first
 * convolution's output stays f32 nChw16c (keep[1]), the batch norm and relu read it there
 * and write the relu's output as bf16 nChw16c (keep[2]: what the second convolution reads,
 * forward and for its weight gradient); backward, the second convolution's input gradient
 * stays f32 nChw16c and the batch norm writes its input gradient as bf16 nChw16c for the
 * first convolution. Six of the ten passes are gone; the four left (the block's input, the
 * second convolution's output and output gradient, the first's input gradient) are where
 * the layers around read and write NCHW.
 *
 * The values are those of the layers run one by one: the convolutions round their inputs to
 * bf16 as they are, the batch norm's sums are cpu_batchnorm.c's bit for bit (cpu_bn16.c),
 * except for the relu's mask read from the bf16 copy (cpu_bn16.c says when it differs).
 * Taken where both convolutions run on oneDNN forward and backward and take these layouts;
 * elsewhere (no bf16 units, resnet18's 4x4 stage) the layers run one by one. */
#include "cpu_kernels.h"
#include "status.h"

#include <stdint.h>

/* The layouts each convolution is asked to take (MX_DNNL_C16_*). */
#define C1_FWD (MX_DNNL_C16_IN | MX_DNNL_C16_OUT)
#define C1_BWD (MX_DNNL_C16_IN | MX_DNNL_C16_DOUT)
#define C2_FWD MX_DNNL_C16_IN
#define C2_BWD (MX_DNNL_C16_IN | MX_DNNL_C16_DIN)

static int applies(mx_backend *be, const mx_res_inner *r, int n)
{
    const mx_conv_desc *d1 = &r->c1, *d2 = &r->c2;
    return mx_cpu_bf16_native() && d1->c % 16 == 0 && d1->oc % 16 == 0 && mx_cpu_conv_path_dnnl(be, d1, 0) &&
           mx_cpu_conv_path_dnnl(be, d1, 1) && mx_cpu_conv_path_dnnl(be, d2, 0) && mx_cpu_conv_path_dnnl(be, d2, 1) &&
           mx_cpu_conv_dnnl_takes_c16(be, d1, n, C1_FWD, C1_BWD) && mx_cpu_conv_dnnl_takes_c16(be, d2, n, C2_FWD, C2_BWD);
}

int mx_cpu_residual_inner_forward(mx_backend *be, const mx_res_inner *r, int n, float *out, const float *in,
                                  float *const keep[3], float *mean, float *invstd)
{
    if (!applies(be, r, n)) return 0;
    const mx_conv_desc *d1 = &r->c1;
    uint16_t *in16 = (uint16_t *)keep[0], *relu = (uint16_t *)keep[2];
    mx_cpu_nchw_to_c16_bf16(be, n, d1->c, d1->h * d1->w, in16, in);
    if (!mx_cpu_conv_dnnl_forward_c16(be, d1, n, keep[1], in16, r->w1, C1_FWD)) return 0; /* only keeps written */
    mx_cpu_bn_relu_c16_forward(be, n, d1->oc, d1->oh * d1->ow, relu, mean, invstd, r->run_mean, r->run_var, keep[1],
                               r->gamma, r->beta, r->eps, r->momentum);
    if (!mx_cpu_conv_dnnl_forward_c16(be, &r->c2, n, out, relu, r->w2, C2_FWD))
        mx_backend_fail(be, MX_ERUNTIME, "residual block: oneDNN refused a layout it had taken");
    return 1;
}

/* The forward's checks again: they depend on the device, the shapes and n alone, so the
 * backward of a call takes the path its forward took. */
int mx_cpu_residual_inner_backward(mx_backend *be, const mx_res_inner *r, int n, float *din, const float *dout,
                                   const float *in, const float *const keep[3], const float *mean, const float *invstd,
                                   float *ws1, float *ws2)
{
    if (!applies(be, r, n)) return 0;
    const mx_conv_desc *d1 = &r->c1;
    const uint16_t *in16 = (const uint16_t *)keep[0], *relu = (const uint16_t *)keep[2];
    uint16_t *dbn = (uint16_t *)ws2; /* the batch norm's input gradient, bf16 nChw16c */
    if (!mx_cpu_conv_dnnl_backward_c16(be, &r->c2, n, ws1, r->dw2, dout, relu, r->w2, C2_BWD)) goto refused;
    mx_cpu_bn_relu_c16_backward(be, n, d1->oc, d1->oh * d1->ow, dbn, r->dgamma, r->dbeta, ws1, keep[1], relu, mean,
                                invstd, r->gamma);
    if (!mx_cpu_conv_dnnl_backward_c16(be, d1, n, din, r->dw1, dbn, in16, r->w1, C1_BWD)) goto refused;
    return 1;
refused:
    mx_backend_fail(be, MX_ERUNTIME, "residual block: oneDNN refused a layout it had taken");
    return 1;
}
