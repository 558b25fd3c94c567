# PyTorch on a GPU, as a peer for `mxbench train --device cuda`: mxbench's resnet18 (or
# lenet) twin from torch_models.py trained on Fashion-MNIST with mxbench's recipe (pixels / 255
# standardised with the training split's mean and deviation, Xavier-uniform weights, SGD
# momentum 0.9, weight decay 1e-4 on weights only, lr along half a cosine, shuffled every
# epoch, the last partial batch trained), the whole data set on the GPU, eager mode.
#   --amp fp16|bf16: torch.autocast (fp16 with a GradScaler); --tf32: TF32 matmuls and
#   convolutions (PyTorch's own default lets cuDNN use TF32; here it is off unless asked, as
#   in mxbench).
# Times each epoch's training (synchronised at its end, evaluation left out) and prints one
# line per epoch and a parseable GPUPEER summary: the mean epoch, and the mean of the epochs
# after the first (which pays for cuDNN's algorithm search and the first loads). Runs where PyTorch sees a GPU.
import argparse
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_train  # noqa: E402  (IDX reading, the recipe's tensors, the lr schedule)
import torch_models  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--data", required=True, help="directory of the Fashion-MNIST IDX files (.gz or not)")
    p.add_argument("--model", choices=("resnet18", "lenet"), default="resnet18")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--amp", choices=("off", "fp16", "bf16"), default="off")
    p.add_argument("--tf32", action="store_true")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("torch_gpu_epoch: PyTorch sees no GPU; skipped")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    torch.backends.cudnn.benchmark = True  # algorithms measured per shape, as mxbench's plans
    torch.manual_seed(a.seed)
    dev = torch.device("cuda")
    xtr, ytr, xte, yte = (t.to(dev) for t in peer_train.torch_data(torch, peer_train.load(a.data)))
    model = (torch_models.ResNet18Small() if a.model == "resnet18" else torch_models.LeNet()).to(dev)
    for q in model.parameters():
        if q.dim() > 1:
            nn.init.xavier_uniform_(q)
    decay = [q for q in model.parameters() if q.dim() > 1]
    rest = [q for q in model.parameters() if q.dim() <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 1e-4}, {"params": rest, "weight_decay": 0.0}],
                          lr=a.lr, momentum=0.9)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.amp)
    scaler = torch.amp.GradScaler("cuda", enabled=a.amp == "fp16")
    n = xtr.shape[0]
    secs_each, accs = [], []
    for epoch in range(a.epochs):
        model.train()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        order = torch.randperm(n, device=dev)
        for at in range(0, n, a.batch):
            idx = order[at:at + a.batch]
            for g in opt.param_groups:
                g["lr"] = peer_train.lr_at(a.lr, epoch + at / n, a.epochs)
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        secs_each.append(secs)
        model.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            correct = sum((model(xte[i:i + 1000]).argmax(1) == yte[i:i + 1000]).sum().item()
                          for i in range(0, xte.shape[0], 1000))
        accs.append(correct / xte.shape[0])
        print("epoch %d: %.2f s, %.0f samples/s, test acc %.4f" % (epoch + 1, secs, n / secs, accs[-1]), flush=True)
    warm = secs_each[1:]
    print("GPUPEER torch %s %s model=%s batch=%d amp=%s tf32=%d epochs=%d s_per_epoch=%.3f warm_s_per_epoch=%s acc=%.4f"
          % (torch.__version__, torch.cuda.get_device_name(), a.model, a.batch, a.amp, int(a.tf32), a.epochs,
             sum(secs_each) / a.epochs, "%.3f" % (sum(warm) / len(warm)) if warm else "nan", accs[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
