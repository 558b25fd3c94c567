# What bench/torch_models.py and bench/mxnet_models.py share: their options and the one
# parseable line each prints (TAG model=... samples_per_s=... step_times=...), so that
# scripts/bench.sh and scripts/bench-peers.sh read both frameworks alike.
import argparse
import statistics


def parse(description, models):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", choices=models, required=len(models) > 1, default=models[0])
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed leading steps")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    return ap.parse_args()


def report(tag, framework, version, a, times):
    med = statistics.median(times)
    print("%s model=%s batch=%d threads=%d %s=%s steps=%d median_step_s=%.6f samples_per_s=%.2f step_times=%s"
          % (tag, a.model, a.batch, a.threads, framework, version, len(times), med, a.batch / med,
             ",".join("%.6f" % t for t in times)))
