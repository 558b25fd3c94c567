/* The layer registry: the list in engine/layers/layers.def becomes a name -> ops table. */
#include "layer.h"

#include <string.h>

#define MX_LAYER(name) extern const mx_layer_ops mx_layer_##name;
#include "layers.def"
#undef MX_LAYER

static const mx_layer_ops *const all_layers[] = {
#define MX_LAYER(name) &mx_layer_##name,
#include "layers.def"
#undef MX_LAYER
};

const mx_layer_ops *mx_layer_find(const char *kind)
{
    for (size_t i = 0; i < sizeof all_layers / sizeof *all_layers; i++)
        if (strcmp(all_layers[i]->kind, kind) == 0) return all_layers[i];
    return NULL;
}

const char *mx_layer_kinds(void)
{
    /* every name after a "|": the string from its second byte is "a|b|c" */
    static const char all[] =
#define MX_LAYER(name) "|" #name
#include "layers.def"
#undef MX_LAYER
        ;
    return all + 1;
}
