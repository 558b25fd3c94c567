# What mxbench's PyTorch peers for its model-parallel strategies on the GPT workloads share
# (bench/torch_gpt_tp.py for --strategy layer, bench/torch_gpt_pp.py for --strategy model):
#   options    bench/torch_gpt.py's model, data and optimizer options, plus --procs (the device
#              count, mxbench's --gpus) and --threads (per process, mxbench's
#              --threads-per-device; default 1)
#   processes  torch.multiprocessing's spawn, one process per device, joined by gloo over a file
#              store in a temporary folder (no port to pick); each writes its step times and
#              losses there for the launching process
#   weights    every process builds the whole single-process twin (bench/torch_gpt.py) from
#              mxbench's files (--init, --table) or GPT-2's initialisation drawn from --seed
#              (the same draws in every process), then takes its part of it
#   batches    mxbench's order (its shuffle replayed) and learning rate, every process the
#              same batches
#   timing     a step runs from zeroing the gradients to the optimizer's update; per step the
#              slowest process's time (the step ends when the last device is done), the
#              median after --warmup steps; one GPTPEER line as bench/torch_gpt.py prints
#   check      the launching process computes the twin's loss on the same first batch and
#              weights (one forward on one process) and compares the peer's first loss; a
#              difference above --tol (1e-4) fails the run (exit 1), so that a timing compares
#              the same arithmetic
import argparse
import json
import math
import os
import shutil
import statistics
import sys
import tempfile

import torch_gpt as twin


def parser(description):
    ap = argparse.ArgumentParser(description=description)
    twin.add_run_args(ap)
    ap.add_argument("--procs", type=int, default=2, help="processes, one per device (mxbench's --gpus)")
    ap.add_argument("--threads", type=int, default=1, help="threads per process (mxbench's --threads-per-device)")
    ap.add_argument("--measure", action="store_true", help="time the steps; print one GPTPEER line")
    ap.add_argument("--warmup", type=int, default=3, help="--measure: leading steps left out of the timing")
    ap.add_argument("--tol", type=float, default=1e-4, help="the first loss's largest difference from the twin's")
    return ap


def check_args(ap, a):
    if bool(a.init) != bool(a.table):
        ap.error("--init and --table go together")
    if a.steps < 1 or a.batch < 1 or a.threads < 1 or a.procs < 1 or (a.measure and a.steps <= a.warmup):
        ap.error("--steps, --batch, --threads and --procs must be at least 1, and --steps above --warmup with "
                 "--measure")
    if not os.path.isfile(a.data):
        sys.exit("%s: %s is not a file (the default text comes from the Debian package fortunes)" %
                 (os.path.basename(sys.argv[0]), a.data))


def whole_model(torch, a):
    """The single-process twin with the run's initial weights, the decayed tensors' names and the
    data: (model, V, decay, x_all, y_all)."""
    size = twin.SIZES[a.workload]
    x_all, y_all, vocab = twin.windows(torch, a.data, size[3])
    torch.manual_seed(a.seed)
    model, V = twin.build_model(torch, size, vocab)
    if a.init:
        decay = twin.load_weights(torch, model, twin.read_table(a.table), a.init)
    else:
        decay = twin.gpt2_init(torch, model)
    return model, V, decay, x_all, y_all


def batches(a, n_train, whole_only=False):
    """mxbench's batches (harness/trainer.c, as bench/torch_gpt.py replays them): (indices, lr)
    for each of --steps steps. whole_only leaves out an epoch's last, smaller batch."""
    B = a.batch
    per_epoch = -(-n_train // B)
    total_epochs = a.steps // per_epoch + (a.steps % per_epoch) * B / n_train
    rng = twin.MxRng(a.seed * 7919 + 17)
    step = epoch = 0
    while step < a.steps:
        order = list(range(n_train))
        rng.shuffle(order)
        for start in range(0, per_epoch * B, B):
            if step >= a.steps:
                break
            idx = order[start:start + B]
            if whole_only and len(idx) < B:
                continue
            yield idx, twin.lr_at(a, epoch + start / n_train, total_epochs)
            step += 1
        epoch += 1


def param_groups(torch, named, decay, wd):
    """Optimizer groups: decayed and not, each split into DTensors and plain tensors (PyTorch's
    foreach kernels refuse a list that mixes the two)."""
    from torch.distributed.tensor import DTensor

    groups = {}
    for name, p in named:
        key = (name in decay, isinstance(p, DTensor))
        groups.setdefault(key, []).append(p)
    return [(ps, wd if dec else 0.0) for (dec, _), ps in sorted(groups.items())]


def make_optimizer(torch, a, groups):
    if a.optimizer == "sgd":
        return twin.MxSgd(torch, groups, a.momentum)
    return torch.optim.AdamW([{"params": ps, "weight_decay": wd} for ps, wd in groups], lr=a.lr,
                             betas=(a.beta1, a.beta2), eps=a.eps)


def optimizer_step(a, opt, lr):
    if a.optimizer == "sgd":
        opt.step(lr)
    else:
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()


def _worker(rank, world, folder, a, train):
    import torch
    import torch.distributed as dist

    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "store"), rank=rank,
                            world_size=world)
    try:
        times, losses, info = train(torch, rank, world, a)
        dist.barrier()
    finally:
        dist.destroy_process_group()
    with open(os.path.join(folder, "rank%d.json" % rank), "w") as f:
        json.dump({"times": times, "losses": losses, "info": info}, f)


def reference_loss(torch, a):
    """The single-process twin's loss on the run's first batch and weights."""
    import torch.nn.functional as F

    torch.set_num_threads(a.threads)
    model, V, _, x_all, y_all = whole_model(torch, a)
    idx, _ = next(batches(a, x_all.shape[0]))
    idx = torch.tensor(idx)
    with torch.no_grad():
        logits = model(x_all[idx])
    return F.cross_entropy(logits.view(-1, V), y_all[idx].view(-1)).item()


def launch(a, strategy, train, describe):
    """Runs train(torch, rank, world, a) -> (step seconds, losses or None, info) in --procs
    processes, then prints the losses (or the GPTPEER line) and checks the first loss against
    the twin's. describe: the strategy's settings for the lines printed. Returns the exit
    status."""
    import torch
    import torch.multiprocessing as mp

    folder = tempfile.mkdtemp(prefix="torch_gpt_%s." % strategy)
    try:
        mp.spawn(_worker, args=(a.procs, folder, a, train), nprocs=a.procs, join=True)
        ranks = []
        for r in range(a.procs):
            with open(os.path.join(folder, "rank%d.json" % r)) as f:
                ranks.append(json.load(f))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    losses = next(r["losses"] for r in ranks if r["losses"] is not None)
    info = ranks[0]["info"]
    steps = len(losses)
    times = [max(r["times"][k] for r in ranks) for k in range(steps)]
    T = twin.SIZES[a.workload][3]
    if not a.measure:
        for k, value in enumerate(losses):
            print("STEP %d %.9g %.9g" % (k + 1, value, info["lr"][k]), flush=True)
    else:
        med = statistics.median(times[a.warmup:])
        print("GPTPEER framework=torch version=%s workload=%s strategy=%s procs=%d %samp=off batch=%d threads=%d "
              "steps=%d step_s=%.6f samples_per_s=%.2f tokens_per_s=%.1f" %
              (torch.__version__, a.workload, strategy, a.procs, describe, a.batch, a.threads, steps - a.warmup, med,
               a.batch / med, a.batch * T / med))
    ref = reference_loss(torch, a)
    diff = abs(losses[0] - ref)
    ok = math.isfinite(diff) and diff <= a.tol
    print("CHECK %s first_loss=%.9g twin_first_loss=%.9g diff=%.3g tol=%g weights=%s" %
          ("ok" if ok else "bad", losses[0], ref, diff, a.tol, "mxbench" if a.init else "gpt2-init"))
    print("PEER torch=%s workload=%s strategy=%s procs=%d %ssteps=%d first_loss=%.6f last_loss=%.6f" %
          (torch.__version__, a.workload, strategy, a.procs, describe, steps, losses[0], losses[-1]))
    return 0 if ok else 1
