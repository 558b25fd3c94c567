# PyTorch's peer of mxbench's --strategy model on the GPT workloads: a pipeline of transformer
# blocks (strategies/, docs/parallelism.md) written the way PyTorch offers it, with
# torch.distributed.pipelining: --procs processes (gloo, one thread each by default), each a
# PipelineStage of the twin (bench/torch_gpt.py) cut into contiguous stages
#   stage 0      the embedding and its share of the blocks
#   stage k-1    its share of the blocks, the final layer norm and the head
#   the blocks   L/k to a stage, the first L mod k stages one more (mxbench --partition with
#                the embedding counted on the first stage and the norm and head on the last:
#                --print-partition prints it)
# run by ScheduleGPipe or Schedule1F1B (--schedule, default 1f1b as mxbench) over --micro-batches
# micro-batches (default mxbench's: 4 per stage, at most the batch's samples; base/limits.h,
# mx_pipeline_default_micro_batches). A micro-batch's loss is its tokens' cross-entropy summed
# and divided by the whole batch's tokens, and the schedule does not rescale the gradients
# (scale_grads=False), so that they sum to the whole batch's mean gradient, as mxbench scales
# each micro-batch's loss by 1/batch.
# The tied head: pipelining has no tied parameters across stages (a stage holds a module's own
# parameters), so the last stage holds a second copy of the token table, as mxbench's and
# Megatron-LM's last stage do; after each step's schedule the first and last stages all-reduce
# the table's gradient (the embedding's share plus the head's), so both copies take the same
# update and stay equal.
# Limit: a schedule splits every batch into the same count of micro-batches of fixed shape, so
# an epoch's last, smaller batch is left out (mxbench runs it as micro-batches of one); runs
# shorter than an epoch (every timing) see the same batches.
# usage: torch_gpt_pp.py [--procs 2] [--schedule gpipe|1f1b] [--micro-batches M] [--measure]
# [--init FILE --table FILE] [bench/torch_gpt.py's model, data and optimizer options]
import sys
import time

import torch_gpt_dist as dist_common

MICRO_PER_STAGE = 4  # base/limits.h, MX_PIPELINE_MICRO_PER_STAGE


def default_micro_batches(stages, batch):
    """mx_pipeline_default_micro_batches (base/limits.h)."""
    if stages <= 1:
        return 1
    return min(MICRO_PER_STAGE * stages, batch)


def blocks_of(L, stages):
    """Each stage's [first, last) blocks: L/k each, the first L mod k stages one more."""
    out, first = [], 0
    for s in range(stages):
        n = L // stages + (1 if s < L % stages else 0)
        out.append((first, first + n))
        first += n
    return out


def mx_partition(L, stages):
    """mxbench's --partition for the same cut: top-level layers per stage (embedding, blocks,
    final norm, head)."""
    counts = [b - a for a, b in blocks_of(L, stages)]
    counts[0] += 1
    counts[-1] += 2
    return ",".join(str(c) for c in counts)


def stage_module(torch, model, rank, world):
    """The rank's stage of the twin and its tensors by twin name (the replica of the table
    named as the table). The modules and tensors are the twin's own, except the replica."""
    import torch.nn as nn

    first, last = blocks_of(len(model.blocks), world)[rank]
    has_embedding, has_head = rank == 0, rank == world - 1

    class Stage(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(model.blocks[first:last])
            if has_embedding:
                self.wte, self.wpe = model.wte, model.wpe
            if has_head:
                self.ln_f = model.ln_f
                # the head's copy of the table: the embedding's own where it is on this stage
                self.head_w = model.wte if has_embedding else nn.Parameter(model.wte.detach().clone())

        def forward(self, x):
            if has_embedding:
                x = self.wte[x] + self.wpe
            for b in self.blocks:
                x = b(x)
            return self.ln_f(x) @ self.head_w.t() if has_head else x

    stage = Stage()
    mine = {id(p) for p in stage.parameters()}
    named = [(n, p) for n, p in model.by_name().items() if id(p) in mine]
    if has_head and not has_embedding:
        named.append(("0.embedding.wte", stage.head_w))
    return stage, named


def train_pp(torch, rank, world, a):
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    T = dist_common.twin.SIZES[a.workload][3]
    model, V, decay, x_all, y_all = dist_common.whole_model(torch, a)
    module, named = stage_module(torch, model, rank, world)
    params = [p for _, p in named]
    opt = dist_common.make_optimizer(torch, a, dist_common.param_groups(torch, named, decay, a.wd))
    # the micro-batch's shapes given, not inferred: runtime inference exchanges them as pickled
    # objects, which needs numpy in the venv; and they are fixed anyway (see the limit above)
    mb, C = a.batch // a.micro_batches, model.wpe.shape[1]
    meta = dict(device="meta", requires_grad=True)  # a gradient flows back through every activation
    inputs = torch.empty(mb, T, dtype=torch.int64, device="meta") if rank == 0 else torch.empty(mb, T, C, **meta)
    outputs = torch.empty(mb, T, V, **meta) if rank == world - 1 else torch.empty(mb, T, C, **meta)
    stage = PipelineStage(module, rank, world, torch.device("cpu"), input_args=inputs, output_args=outputs)
    tokens = a.batch * T

    def loss_fn(logits, y):  # the micro-batch's share of the batch's mean loss
        return F.cross_entropy(logits.reshape(-1, V), y.reshape(-1), reduction="sum") / tokens

    kind = ScheduleGPipe if a.schedule == "gpipe" else Schedule1F1B
    schedule = kind(stage, n_microbatches=a.micro_batches, loss_fn=loss_fn, scale_grads=False)
    # the two copies of the table: the first stage's (embedding) and the last's (head)
    tied = None if world == 1 else (module.wte if rank == 0 else module.head_w if rank == world - 1 else None)
    tied_group = None if world <= 2 else dist.new_group([0, world - 1])
    times, losses, lrs = [], [], []
    for idx, lr in dist_common.batches(a, x_all.shape[0], whole_only=True):
        t0 = time.perf_counter()
        idx = torch.tensor(idx)
        for p in params:
            p.grad = None
        out = []
        if rank == 0:
            schedule.step(x_all[idx])
        elif rank == world - 1:
            schedule.step(target=y_all[idx], losses=out)
        else:
            schedule.step()
        if tied is not None:
            dist.all_reduce(tied.grad, group=tied_group)
        dist_common.optimizer_step(a, opt, lr)
        if rank == world - 1:
            losses.append(sum(v.item() for v in out))
        times.append(time.perf_counter() - t0)
        lrs.append(lr)
    return times, (losses if rank == world - 1 else None), {"lr": lrs}


def main():
    ap = dist_common.parser("mxbench's --strategy model on the GPT workloads in PyTorch: torch.distributed.pipelining")
    ap.add_argument("--schedule", choices=("gpipe", "1f1b"), default="1f1b")
    ap.add_argument("--micro-batches", type=int, default=0,
                    help="micro-batches a batch is split into (default mxbench's: 4 per stage, at most the batch)")
    ap.add_argument("--print-partition", action="store_true",
                    help="print mxbench's --partition for this cut of --workload on --procs stages and exit")
    a = ap.parse_args()
    L = dist_common.twin.SIZES[a.workload][0]
    if a.procs < 1 or a.procs > L:
        ap.error("--procs %d: a stage needs a block; %s has %d" % (a.procs, a.workload, L))
    if a.print_partition:
        print(mx_partition(L, a.procs))
        return 0
    dist_common.check_args(ap, a)
    if a.micro_batches == 0:
        a.micro_batches = default_micro_batches(a.procs, a.batch)
    if not 1 <= a.micro_batches <= a.batch or a.batch % a.micro_batches:
        ap.error("--micro-batches %d: accepted a divisor of the batch (%d): the schedules' micro-batches have one "
                 "shape" % (a.micro_batches, a.batch))
    return dist_common.launch(a, "model", train_pp,
                              "schedule=%s micro_batches=%d partition=%s " %
                              (a.schedule, a.micro_batches, mx_partition(L, a.procs)))


if __name__ == "__main__":
    sys.exit(main())
