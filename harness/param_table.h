/* The tensor table of a model as a text file: which tensor each float of a --save-init or
 * --save-params file belongs to, so that another framework (bench/torch_gpt.py) can load
 * mxbench's weights by name, or a user inspect them. */
#ifndef MX_PARAM_TABLE_H
#define MX_PARAM_TABLE_H

#include "engine/layers/layer.h"

/* Writes the table of the model specs[0..nspecs) on per-sample inputs of shape in to path,
 * crash-safe (results/store.h, mx_image_commit). Two comment lines starting with '#' (the
 * workload, the tensor count and the floats a weights file holds; the columns), then one
 * line per tensor of the whole model in parameter order:
 *   index name offset count decay
 * name as engine/core/params.h forms it ("1.3.linear.w": top-level layer 1, its child 3),
 * offset and count in floats into the weights file (every tensor starts 16-float aligned;
 * the floats between tensors are padding), decay 1 where weight decay applies. A tied
 * tensor is listed once, by the layer that registered it. The table is the same on every
 * backend and strategy (their weights files share the one-device layout). Errors: MX_EIO
 * naming path and the reason, MX_ENOMEM, or the model's own setup error. */
int mx_param_table_write(const char *path, const char *workload, const mx_layer_spec *specs, int nspecs,
                         mx_shape in);

#endif
