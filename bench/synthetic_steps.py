# What bench/torch_models.py and bench/mxnet_models.py share: their options and the one
# parseable line each prints (TAG model=... samples_per_s=... step_times=...), so that
# scripts/bench.sh and scripts/bench-peers.sh read both frameworks alike.
import argparse
import statistics
import time


def parse(description, models):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", choices=models, required=len(models) > 1, default=models[0])
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed leading steps")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--amp", choices=("off", "bf16"), default="off",
                    help="bf16: forward and loss under the framework's CPU autocast (PyTorch only)")
    return ap.parse_args()


def report(tag, framework, version, a, times):
    med = statistics.median(times)
    print("%s model=%s batch=%d threads=%d %s=%s steps=%d median_step_s=%.6f samples_per_s=%.2f step_times=%s"
          % (tag, a.model, a.batch, a.threads, framework, version, len(times), med, a.batch / med,
             ",".join("%.6f" % t for t in times)))


def time_steps(a, n_train, shuffled, step):
    """Runs a.warmup + a.steps steps over batches of a shuffled order of n_train samples (a
    new order, shuffled(), when the next batch would not fit) and returns the timed steps'
    seconds. step(idx) trains on the samples idx and returns once its loss is known; the
    batch assembly is inside it, and so inside the timing, as in mxbench."""
    times, order, at = [], shuffled(), 0
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        if at + a.batch > n_train:
            order, at = shuffled(), 0
        step(order[at:at + a.batch])
        at += a.batch
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    return times
