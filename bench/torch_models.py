# PyTorch twins of mxbench's lenet and resnet18 (workloads/workloads.c), trained on synthetic
# data with the same batch, optimizer and thread count, so scripts/bench.sh can put mxbench's
# training throughput next to PyTorch's; --amp bf16 runs forward and loss under CPU autocast
# (bf16 matrix products and convolutions, f32 weights), as mxbench's --amp bf16. Prints one
# parseable TORCH line with every step time.
import sys

import synthetic_steps

import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet(nn.Module):
    """conv 20 5x5 (bias), relu, maxpool 2, conv 50 5x5 (bias), relu, maxpool 2, flatten,
    dense 128, relu, dense 10."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 20, 5, bias=True)
        self.conv2 = nn.Conv2d(20, 50, 5, bias=True)
        self.fc1 = nn.Linear(50 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2, 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2, 2)
        x = torch.flatten(x, 1)
        return self.fc2(F.relu(self.fc1(x)))


def bn(c):
    # mxbench: eps 1e-5, running averages kept with momentum 0.9 (MXNet) = 0.1 in PyTorch's terms
    return nn.BatchNorm2d(c, eps=1e-5, momentum=0.1)


class BasicBlock(nn.Module):
    """relu(bn(conv3x3(relu(bn(conv3x3 x)))) + shortcut); the shortcut is a 1x1 conv with the
    stride + bn when the stride or the channel count changes (engine/layers/residual.c)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = bn(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = bn(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), bn(cout))

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(y + (self.proj(x) if self.proj is not None else x))


class ResNet18Small(nn.Module):
    """3x3 stem conv 64 (stride 1, pad 1, no bias), bn, relu, no max-pool; four stages of two
    basic blocks (64, 128, 256, 512 channels; stages 2-4 start with stride 2 and a 1x1
    projection); global average pool; dense 10."""

    def __init__(self, cin=1, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(cin, 64, 3, 1, 1, bias=False), bn(64), nn.ReLU())
        blocks, c = [], 64
        for stage, cout in enumerate((64, 128, 256, 512)):
            for block in range(2):
                blocks.append(BasicBlock(c, cout, 2 if stage > 0 and block == 0 else 1))
                c = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    a = synthetic_steps.parse(__doc__, ("lenet", "resnet18"))

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = LeNet() if a.model == "lenet" else ResNet18Small()
    model.train()
    # mxbench decays weights only, not biases or batch-norm parameters
    decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    no_decay = [p for n, p in model.named_parameters() if p.dim() <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 1e-4}, {"params": no_decay, "weight_decay": 0.0}],
                          lr=a.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    # Synthetic data as mxbench's: 4096 standardised 1x28x28 samples, 10 classes
    n_train = 4096
    images = torch.randn(n_train, 1, 28, 28)
    labels = torch.randint(0, 10, (n_train,))

    def step(idx):
        x, y = images[idx], labels[idx]
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.amp == "bf16"):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        loss.item()  # the step ends when its loss is known

    times = synthetic_steps.time_steps(a, n_train, lambda: torch.randperm(n_train), step)
    synthetic_steps.report("TORCH", "torch", torch.__version__, a, times)
    return 0


if __name__ == "__main__":
    sys.exit(main())
