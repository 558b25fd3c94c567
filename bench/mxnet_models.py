# MXNet (Gluon) twin of mxbench's resnet18 (workloads/workloads.c), trained on synthetic data
# exactly as bench/torch_models.py trains PyTorch's, so that scripts/bench-peers.sh
# --workload resnet18 puts the three frameworks' step throughput side by side: 3x3 stem conv
# 64 (no bias), batch norm, relu, no max-pool; four stages of two basic blocks (64, 128, 256,
# 512 channels; stages 2-4 start with stride 2 and a 1x1 projection + batch norm); global
# average pool; dense 10. Batch norm eps 1e-5, running averages with momentum 0.9; SGD with
# momentum 0.9 and weight decay 1e-4 on weights only. The net is hybridized (static graph,
# static memory), as MXNet users train. Prints one parseable MXNET line with every step time.
# Install: `pip install numpy==1.23.5 mxnet==1.9.1` (scripts/bench-peers.sh --install).
import os
import sys

import synthetic_steps


def build(nn):
    def bn():
        return nn.BatchNorm(momentum=0.9, epsilon=1e-5)

    class Block(nn.HybridBlock):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2D(cout, 3, stride, 1, use_bias=False, in_channels=cin)
            self.b1 = bn()
            self.c2 = nn.Conv2D(cout, 3, 1, 1, use_bias=False, in_channels=cout)
            self.b2 = bn()
            self.proj = None
            if stride != 1 or cin != cout:
                self.proj = nn.HybridSequential()
                self.proj.add(nn.Conv2D(cout, 1, stride, 0, use_bias=False, in_channels=cin), bn())

        def hybrid_forward(self, F, x):
            y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
            return F.relu(y + (self.proj(x) if self.proj is not None else x))

    net = nn.HybridSequential()
    net.add(nn.Conv2D(64, 3, 1, 1, use_bias=False, in_channels=1), bn(), nn.Activation("relu"))
    c = 64
    for stage, cout in enumerate((64, 128, 256, 512)):
        for block in range(2):
            net.add(Block(c, cout, 2 if stage > 0 and block == 0 else 1))
            c = cout
    net.add(nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(10, in_units=512))
    return net


def main():
    a = synthetic_steps.parse(__doc__, ("resnet18",))
    if a.amp != "off":
        sys.exit("mxnet_models: --amp %s: not run here (MXNet's bf16 AMP needs its contrib converter); "
                 "accepted: off" % a.amp)
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    import mxnet as mx
    from mxnet import autograd, gluon
    from mxnet.gluon import nn

    mx.random.seed(a.seed)
    net = build(nn)
    net.initialize(mx.init.Xavier(rnd_type="uniform", factor_type="avg", magnitude=3))
    for p in net.collect_params().values():
        if len(p.shape) <= 1:
            p.wd_mult = 0  # mxbench decays weights only, not biases or batch-norm parameters
    net.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": a.lr, "momentum": 0.9, "wd": 1e-4})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    # Synthetic data as mxbench's: 4096 standardised 1x28x28 samples, 10 classes
    n_train = 4096
    images = mx.nd.random.normal(shape=(n_train, 1, 28, 28))
    labels = mx.nd.random.randint(0, 10, shape=(n_train,)).astype("float32")

    def step(idx):
        x, y = mx.nd.take(images, idx), mx.nd.take(labels, idx)
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(a.batch)
        loss.mean().asscalar()  # the step ends when its loss is known

    times = synthetic_steps.time_steps(a, n_train, lambda: mx.nd.random.shuffle(mx.nd.arange(n_train)).astype("int32"),
                                       step)
    synthetic_steps.report("MXNET", "mxnet", mx.__version__, a, times)
    return 0


if __name__ == "__main__":
    sys.exit(main())
