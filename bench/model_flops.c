/* Forward FLOPs per sample of each workload on 1x28x28 input, from the engine's own layers
 * (the figure mxbench's GFLOP/s uses), so scripts/bench.sh can turn any throughput
 * (mxbench's or PyTorch's) into GFLOP/s exactly. Usage: model_flops [workload...] */
#include "engine/backend/backend.h"
#include "engine/core/backends.h"
#include "engine/core/net.h"
#include "workloads/workloads.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    mx_backend *be;
    if (mx_backend_create(&be, "cpu", 0, 1) < 0) {
        fprintf(stderr, "model_flops: cannot create the CPU backend\n");
        return 1;
    }
    const mx_shape in = {1, 28, 28};
    int rc = 0;
    for (int i = 0; i < (argc > 1 ? argc - 1 : mx_workload_count()); i++) {
        const mx_workload *wl = argc > 1 ? mx_workload_find(argv[i + 1]) : mx_workload_at(i);
        if (!wl) {
            fprintf(stderr, "model_flops: unknown workload '%s' (known: %s)\n", argv[i + 1], mx_workload_names());
            rc = 2;
            continue;
        }
        mx_layer_spec specs[MX_MAX_LAYERS];
        mx_net *net;
        if (mx_net_create(&net, be, specs, wl->build(specs, in, 10), in, 1) < 0) {
            fprintf(stderr, "model_flops: cannot build %s\n", wl->name);
            rc = 1;
            continue;
        }
        printf("FLOPS workload=%s forward_flops_per_sample=%.0f\n", wl->name, mx_net_flops(net));
        mx_net_destroy(net);
    }
    mx_backend_destroy(be);
    return rc;
}
