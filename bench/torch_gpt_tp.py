# PyTorch's peer of mxbench's --strategy layer on the GPT workloads: Megatron-LM's tensor
# parallelism (strategies/layer_plan.c, docs/parallelism.md) written the way PyTorch offers it,
# with DTensor: --procs processes (gloo, one thread each by default), a DeviceMesh over them and
# parallelize_module on every block:
#   qkv    ColwiseParallel, by heads: rank r holds heads [r H/k, (r+1) H/k) and the q, k and v
#          rows of the fused [3C][C] weight that feed them. DTensor shards a dimension into
#          contiguous blocks only (Shard(0) of the fused weight would give rank 0 all of q and
#          part of k), so the weight's rows are reordered once when the model is built, rank by
#          rank [q_r; k_r; v_r], as Megatron-LM stores its fused QKV; each rank then runs one
#          GEMM of 3C/k outputs, as mxbench does, and the arithmetic is the twin's
#   attn   causal SDPA on the rank's H/k heads (the block's head count set per rank)
#   proj   RowwiseParallel (one all-reduce of the activation forward)
#   fc     ColwiseParallel (4C/k units), GELU on the shard
#   fc2    RowwiseParallel (one all-reduce forward)
#   rest   embedding, layer norms, the final norm and the head tied to the embedding are plain
#          tensors replicated on every rank, as in mxbench: their inputs are whole after the
#          all-reduces, and ColwiseParallel's backward all-reduces the layer norms' input
#          gradients (Megatron's f), so every rank computes the same gradients
# Every rank trains on the whole batch; the loss is computed on every rank (the logits are
# replicated). --procs must divide the heads and 4C, as mxbench's --gpus.
# usage: torch_gpt_tp.py [--procs 2] [--measure] [--init FILE --table FILE] [bench/torch_gpt.py's
# model, data and optimizer options]; prints STEP lines (or with --measure a GPTPEER line), a
# CHECK line (the first loss against the single-process twin's) and a PEER line.
import sys
import time

import torch_gpt_dist as dist_common


def tp_block_class(torch):
    import torch.nn as nn
    import torch.nn.functional as F

    class TPBlock(nn.Module):
        """bench/torch_gpt.py's block with its attention on self.heads heads of the width the
        (local) qkv output gives: the whole block on one process, the rank's heads under
        parallelize_module."""

        def __init__(self, C, H):
            super().__init__()
            self.heads = H
            self.ln1, self.ln2 = nn.LayerNorm(C, eps=1e-5), nn.LayerNorm(C, eps=1e-5)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def forward(self, x):
            B, T, _ = x.shape
            h = self.qkv(self.ln1(x))
            cl = h.shape[-1] // 3
            q, k, v = (y.view(B, T, self.heads, cl // self.heads).transpose(1, 2) for y in h.split(cl, dim=2))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, T, cl))
            return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    return TPBlock


def qkv_rows(torch, C, world):
    """The fused weight's rows in the order whose contiguous k-way split gives rank r its heads'
    q, k and v rows: [q_0; k_0; v_0; q_1; k_1; v_1; ...], each a block of C/k rows."""
    part = C // world
    return torch.cat([torch.arange(s * C + r * part, s * C + (r + 1) * part) for r in range(world) for s in range(3)])


def train_tp(torch, rank, world, a):
    import torch.nn.functional as F
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    L, C, H, _ = dist_common.twin.SIZES[a.workload]
    model, V, decay, x_all, y_all = dist_common.whole_model(torch, a)
    TPBlock = tp_block_class(torch)
    rows = qkv_rows(torch, C, world)
    mesh = init_device_mesh("cpu", (world,))
    for i, old in enumerate(model.blocks):
        b = TPBlock(C, H)
        b.load_state_dict(old.state_dict())
        with torch.no_grad():
            b.qkv.weight.copy_(old.qkv.weight[rows])
            b.qkv.bias.copy_(old.qkv.bias[rows])
        # every rank holds the same whole weights: each takes its shard of its own copy
        parallelize_module(b, mesh, {"qkv": ColwiseParallel(), "proj": RowwiseParallel(),
                                     "fc": ColwiseParallel(), "fc2": RowwiseParallel()}, src_data_rank=None)
        b.heads = H // world
        model.blocks[i] = b
    named = list(model.by_name().items())  # the names read the blocks' attributes: the sharded tensors now
    params = [p for _, p in named]
    opt = dist_common.make_optimizer(torch, a, dist_common.param_groups(torch, named, decay, a.wd))
    times, losses, lrs = [], [], []
    for idx, lr in dist_common.batches(a, x_all.shape[0]):
        t0 = time.perf_counter()
        idx = torch.tensor(idx)
        x, y = x_all[idx], y_all[idx]
        for p in params:
            p.grad = None
        loss = F.cross_entropy(model(x).view(-1, V), y.view(-1))
        loss.backward()
        dist_common.optimizer_step(a, opt, lr)
        value = loss.item()
        times.append(time.perf_counter() - t0)
        losses.append(value)
        lrs.append(lr)
    return times, (losses if rank == 0 else None), {"lr": lrs}


def main():
    ap = dist_common.parser("mxbench's --strategy layer on the GPT workloads in PyTorch: DTensor tensor parallelism")
    a = ap.parse_args()
    dist_common.check_args(ap, a)
    _, C, H, _ = dist_common.twin.SIZES[a.workload]
    if H % a.procs or (4 * C) % a.procs:
        ap.error("--procs %d must divide the %d heads and the MLP's %d units of %s (as mxbench's --gpus)" %
                 (a.procs, H, 4 * C, a.workload))
    return dist_common.launch(a, "layer", train_tp, "")


if __name__ == "__main__":
    sys.exit(main())
