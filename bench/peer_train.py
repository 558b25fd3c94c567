# mxbench's lenet recipe on Fashion-MNIST, written for PyTorch and for MXNet (Gluon), so that
# scripts/bench-peers.sh can put mxbench's training throughput and accuracy next to theirs:
#   model      conv 20 5x5 (bias), relu, max-pool 2, conv 50 5x5, relu, max-pool 2, dense 128,
#              relu, dense 10 (workloads/workloads.c)
#   init       Xavier uniform, bound sqrt(6 / (fan_in + fan_out)) (fans of a convolution count
#              its kernel area, as MXNet's), biases 0
#   data       pixels / 255, standardised with the training split's mean and deviation;
#              shuffled every epoch; the last partial batch trained
#   optimizer  SGD, momentum 0.9, weight decay 1e-4 on weights (not biases), mean loss
#   lr         0.05 along half a cosine to 0 at the end of the run, set before every step from
#              the position in the run (epoch + samples done / samples per epoch), as
#              `mxbench train --lr-schedule cosine` does
#   timing     every step from its batch assembly until its loss is known; the throughput is
#              the samples trained over the summed step times (mxbench's aggregate figure),
#              evaluation left out; test accuracy after every epoch.
#   --amp bf16 (PyTorch): forward, loss and evaluation under CPU autocast (bf16 convolutions
#              and matrix products, f32 weights), the peer of mxbench's --amp bf16.
# Optimizers differ in one detail: MXNet's SGD (as mxbench) folds the lr into the momentum
# (m = 0.9 m - lr g; w += m), PyTorch's applies it after (b = 0.9 b + g; w -= lr b), which
# differ only while the lr changes.
# Install: PyTorch `pip install torch`; MXNet 1.9.1 needs an older NumPy:
# `pip install numpy==1.23.5 mxnet==1.9.1` (scripts/bench-peers.sh --install makes both venvs).
# Prints one parseable PEER line.
import argparse
import gzip
import math
import os
import struct
import sys
import time


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        raw = f.read()
    magic, = struct.unpack(">I", raw[:4])
    dims = [struct.unpack(">I", raw[4 + 4 * i:8 + 4 * i])[0] for i in range(magic & 0xFF)]
    return raw[4 + 4 * len(dims):], dims


def load(data_dir):
    def find(stem):
        for name in (stem, stem + ".gz"):
            if os.path.exists(os.path.join(data_dir, name)):
                return os.path.join(data_dir, name)
        sys.exit("peer_train: %s not found in %s" % (stem, data_dir))
    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        pix, dims = read_idx(find(prefix + "-images-idx3-ubyte"))
        lab, _ = read_idx(find(prefix + "-labels-idx1-ubyte"))
        out[split] = (pix, lab, dims[0])
    return out


def lr_at(base, pos, epochs):
    return base * 0.5 * (1 + math.cos(math.pi * pos / epochs))


def torch_data(torch, data):
    """The recipe's tensors: pixels / 255 standardised with the training split's mean and
    deviation (both splits), labels as int64: (x_train, y_train, x_test, y_test)."""
    def tensors(split):
        pix, lab, n = data[split]
        x = torch.frombuffer(bytearray(pix), dtype=torch.uint8).float().div_(255).view(n, 1, 28, 28)
        return x, torch.frombuffer(bytearray(lab), dtype=torch.uint8).long()

    xtr, ytr = tensors("train")
    xte, yte = tensors("test")
    mean, sd = xtr.mean().item(), xtr.std(unbiased=False).item()
    return (xtr - mean) / sd, ytr, (xte - mean) / sd, yte


def run_torch(a, data):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    xtr, ytr, xte, yte = torch_data(torch, data)

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 20, 5), nn.Conv2d(20, 50, 5)
            self.fc1, self.fc2 = nn.Linear(800, 128), nn.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
            return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))

    model = LeNet()
    for p in model.parameters():
        nn.init.xavier_uniform_(p) if p.dim() > 1 else nn.init.zeros_(p)
    decay = [p for p in model.parameters() if p.dim() > 1]
    rest = [p for p in model.parameters() if p.dim() <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 1e-4}, {"params": rest, "weight_decay": 0.0}],
                          lr=a.lr, momentum=0.9)
    n = xtr.shape[0]
    accs, train_s, samples = [], 0.0, 0
    for epoch in range(a.epochs):
        model.train()
        order = torch.randperm(n)
        for at in range(0, n, a.batch):
            t0 = time.perf_counter()
            idx = order[at:at + a.batch]
            x, y = xtr[idx], ytr[idx]
            for g in opt.param_groups:
                g["lr"] = lr_at(a.lr, epoch + at / n, a.epochs)
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.amp == "bf16"):
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            loss.item()
            train_s += time.perf_counter() - t0
            samples += len(idx)
        model.eval()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.amp == "bf16"):
            correct = sum((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
                          for i in range(0, xte.shape[0], 1000))
        accs.append(correct / xte.shape[0])
    return torch.__version__, accs, train_s, samples


def run_mxnet(a, data):
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    os.environ.setdefault("MXNET_CPU_WORKER_NTHREADS", "1")
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon

    mx.random.seed(a.seed)
    np.random.seed(a.seed)

    def arrays(split):
        pix, lab, n = data[split]
        x = np.frombuffer(pix, dtype=np.uint8).astype(np.float32).reshape(n, 1, 28, 28) / 255
        return x, np.frombuffer(lab, dtype=np.uint8).astype(np.float32)

    xtr, ytr = arrays("train")
    xte, yte = arrays("test")
    mean, sd = float(xtr.mean(dtype=np.float64)), float(xtr.std(dtype=np.float64))
    xtr, xte = (xtr - mean) / sd, (xte - mean) / sd

    nn = gluon.nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(20, 5, activation="relu"), nn.MaxPool2D(2, 2), nn.Conv2D(50, 5, activation="relu"),
            nn.MaxPool2D(2, 2), nn.Flatten(), nn.Dense(128, activation="relu"), nn.Dense(10))
    net.initialize(mx.init.Xavier(rnd_type="uniform", factor_type="avg", magnitude=3))
    net.hybridize(static_alloc=True, static_shape=True)
    for p in net.collect_params(".*bias").values():
        p.wd_mult = 0
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": a.lr, "momentum": 0.9, "wd": 1e-4})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    n = xtr.shape[0]
    accs, train_s, samples = [], 0.0, 0
    for epoch in range(a.epochs):
        order = np.random.permutation(n)
        for at in range(0, n, a.batch):
            t0 = time.perf_counter()
            idx = order[at:at + a.batch]
            x, y = mx.nd.array(xtr[idx]), mx.nd.array(ytr[idx])
            trainer.set_learning_rate(lr_at(a.lr, epoch + at / n, a.epochs))
            with autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(len(idx))
            loss.mean().asscalar()
            train_s += time.perf_counter() - t0
            samples += len(idx)
        correct = 0
        for i in range(0, xte.shape[0], 1000):
            correct += int((net(mx.nd.array(xte[i:i + 1000])).argmax(axis=1).asnumpy() == yte[i:i + 1000]).sum())
        accs.append(correct / xte.shape[0])
    return mx.__version__, accs, train_s, samples


def main():
    ap = argparse.ArgumentParser(description="mxbench's lenet recipe on Fashion-MNIST in PyTorch or MXNet")
    ap.add_argument("--framework", choices=("torch", "mxnet"), required=True)
    ap.add_argument("--data", default=os.environ.get("MXBENCH_DATA", "/usr/share/datasets/fashion-mnist"))
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--amp", choices=("off", "bf16"), default="off",
                    help="bf16: forward, loss and evaluation under PyTorch's CPU autocast (torch only)")
    a = ap.parse_args()
    if a.amp != "off" and a.framework != "torch":
        sys.exit("peer_train: --amp %s: PyTorch only (--framework torch)" % a.amp)
    data = load(a.data)
    run = run_torch if a.framework == "torch" else run_mxnet
    version, accs, train_s, samples = run(a, data)
    print("PEER framework=%s version=%s epochs=%d batch=%d threads=%d train_s=%.3f samples_per_s=%.1f "
          "test_acc=%.4f epoch_acc=%s" % (a.framework, version, a.epochs, a.batch, a.threads, train_s,
                                         samples / train_s, accs[-1], ",".join("%.4f" % x for x in accs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
