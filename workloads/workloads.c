/* The model builders. Each returns a plain list of layer specs, so a model reads as the
 * architecture it is. */
#include "workloads.h"
#include "gpt.h"

#include <string.h>

/* Multi-layer perceptron: 784-256-128-10 on MNIST-shaped input. */
static int build_mlp(mx_layer_spec *s, mx_shape in, int nclasses)
{
    int n = 0;
    s[n++] = (mx_layer_spec){.kind = "flatten"};
    s[n++] = (mx_layer_spec){.kind = "dense", .units = 256};
    s[n++] = (mx_layer_spec){.kind = "relu"};
    s[n++] = (mx_layer_spec){.kind = "dense", .units = 128};
    s[n++] = (mx_layer_spec){.kind = "relu"};
    s[n++] = (mx_layer_spec){.kind = "dense", .units = nclasses};
    return n;
}

/* LeNet as in MXNet's examples: conv 20 5x5, relu, max-pool 2, conv 50 5x5, relu,
 * max-pool 2, flatten, dense 128, relu, dense 10. */
static int build_lenet(mx_layer_spec *s, mx_shape in, int nclasses)
{
    int n = 0;
    s[n++] = (mx_layer_spec){.kind = "conv2d", .units = 20, .k = 5, .stride = 1, .bias = 1};
    s[n++] = (mx_layer_spec){.kind = "relu"};
    s[n++] = (mx_layer_spec){.kind = "maxpool", .k = 2, .stride = 2};
    s[n++] = (mx_layer_spec){.kind = "conv2d", .units = 50, .k = 5, .stride = 1, .bias = 1};
    s[n++] = (mx_layer_spec){.kind = "relu"};
    s[n++] = (mx_layer_spec){.kind = "maxpool", .k = 2, .stride = 2};
    s[n++] = (mx_layer_spec){.kind = "flatten"};
    s[n++] = (mx_layer_spec){.kind = "dense", .units = 128};
    s[n++] = (mx_layer_spec){.kind = "relu"};
    s[n++] = (mx_layer_spec){.kind = "dense", .units = nclasses};
    return n;
}

/* ResNet-18, small-image variant: 3x3 stem with 64 channels (stride 1, no max-pool),
 * four stages of two basic blocks (64, 128, 256, 512 channels; stages 2-4 start with
 * stride 2 and a 1x1 projection), global average pool, dense. */
static int build_resnet18(mx_layer_spec *s, mx_shape in, int nclasses)
{
    int n = 0;
    s[n++] = (mx_layer_spec){.kind = "conv2d", .units = 64, .k = 3, .stride = 1, .pad = 1};
    s[n++] = (mx_layer_spec){.kind = "batchnorm"};
    s[n++] = (mx_layer_spec){.kind = "relu"};
    static const int channels[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; stage++)
        for (int block = 0; block < 2; block++)
            s[n++] = (mx_layer_spec){.kind = "residual", .units = channels[stage],
                                     .stride = (stage > 0 && block == 0) ? 2 : 1};
    s[n++] = (mx_layer_spec){.kind = "avgpool_global"};
    s[n++] = (mx_layer_spec){.kind = "flatten"};
    s[n++] = (mx_layer_spec){.kind = "dense", .units = nclasses};
    return n;
}

static const mx_workload workloads[] = {
    {"mlp", "multi-layer perceptron 784-256-128-10", build_mlp},
    {"lenet", "LeNet: 2 conv (20, 50 5x5) + max-pool, dense 128, dense 10", build_lenet},
    {"resnet18", "ResNet-18 small-image variant (3x3 stem, no max-pool), 11.2M parameters", build_resnet18},
    {"gpt-mini", "GPT-2 architecture, 4 layers, 128 wide, 4 heads, context 64 (0.83M parameters on bytes): tests "
                 "and the demo", mx_gpt_build_mini, &mx_gpt_mini},
    {"gpt-bench", "GPT-2 architecture, 6 layers, 384 wide, 6 heads, context 256 (10.8M parameters on bytes): CPU "
                  "benchmarks", mx_gpt_build_bench, &mx_gpt_bench},
    {"gpt2-124m", "GPT-2 small, 12 layers, 768 wide, 12 heads, context 1024, vocabulary 50304 (124M parameters): "
                  "GPUs", mx_gpt_build_124m, &mx_gpt_124m},
};

const mx_workload *mx_workload_find(const char *name)
{
    for (size_t i = 0; i < sizeof workloads / sizeof *workloads; i++)
        if (strcmp(workloads[i].name, name) == 0) return &workloads[i];
    return NULL;
}

const char *mx_workload_names(void) { return "mlp|lenet|resnet18|gpt-mini|gpt-bench|gpt2-124m"; }
int mx_workload_count(void) { return (int)(sizeof workloads / sizeof *workloads); }
const mx_workload *mx_workload_at(int i) { return &workloads[i]; }
