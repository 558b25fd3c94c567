# mxbench's GPT-2-style workloads (workloads/gpt.c) in PyTorch: the same model, data, order of
# batches and optimizer, so that a run can start from mxbench's initial weights and train step
# for step beside `mxbench train` (tests/test_gpt_parity.sh), or time PyTorch's eager training
# of the same model (scripts/bench-peers.sh --workload gpt-bench).
#   model      token and position embedding (wte [V][C], wpe [T][C]); per block, pre-norm:
#              x += proj(attention(qkv(ln1(x)))), x += fc2(gelu_tanh(fc(ln2(x)))), every linear
#              with a bias (qkv [3C][C]: q, k, v side by side, head h at columns h*hs of each);
#              final layer norm; the head tied to wte; layer norm eps 1e-5, no dropout;
#              attention by F.scaled_dot_product_attention(is_causal=True) (scale 1/sqrt(hs))
#   weights    --init FILE (train --save-init: raw little-endian f32) laid out by --table FILE
#              (train --param-table: "index name offset count decay"), every tensor by name;
#              without them GPT-2's initialisation (normal 0.02, biases 0, norms 1), for timing
#   data       the bytes of a file (llm.c token files and headerless uint16 .bin files too, as
#              workloads/tokens.h reads them), the last floor(0.1 N) tokens held out; window i of
#              the training split is tokens [iT, iT+T), its labels the next ones; the vocabulary
#              padded to a multiple of 64 as mx_lm_padded_vocab
#   order      every epoch the windows 0..n-1 shuffled by mxbench's generator (engine/core/rng.c:
#              xoshiro256** seeded through splitmix64 with seed * 7919 + 17, Fisher-Yates from the
#              last index, j = ((next >> 32) * (i + 1)) >> 32), as harness/trainer.c; batches in
#              that order, the last smaller one trained (one device)
#   loss       cross-entropy over every position, a batch's mean (a sample's is the mean over its
#              tokens; the samples are equal in length)
#   optimizer  sgd: MXNet's form as mxbench (m = momentum m - lr (g + wd w); w += m), wd only on
#              the tensors the table marks; adamw: torch.optim.AdamW, the same tensors decayed;
#              --clip-norm as torch.nn.utils.clip_grad_norm_
#   lr         constant, or half a cosine over the run (mx_lr_at: the position in epochs at each
#              step's first sample over the run's length in epochs); no warmup
# Train mode prints "STEP k loss lr" per step (k from 1; the loss before the step's update) and
# a TWIN line; --measure times the steps instead and prints one GPTPEER line (the batch over the
# median step, as mxbench's median figure) in f32 or under bf16 autocast (--amp bf16).
# --device cuda runs it on the GPU (scripts/bench-gpu.sh, part 8): bf16 autocast there, and
# --sdpa flash holds attention to the flash kernel (an error where it cannot run, rather than a
# silent fallback to the math one); --data synthetic trains on uniform random tokens of GPT-2's
# vocabulary, as mxbench's --dataset synthetic, for timing where no token file is at hand.
import argparse
import contextlib
import math
import os
import statistics
import sys
import time

SIZES = {  # layers, width, heads, context: workloads/gpt.c
    "gpt-mini": (4, 128, 4, 64),
    "gpt-bench": (6, 384, 6, 256),
    "gpt2-124m": (12, 768, 12, 1024),
}
DEFAULT_TEXT = "/usr/share/games/fortunes/cookie"  # harness/train_data.h, MX_TEXT_DEFAULT
LLMC_MAGIC, GPT2_VOCAB, VAL_SHARE = 20240520, 50257, 0.1
M64 = (1 << 64) - 1


# ---- mxbench's generator (engine/core/rng.c)
class MxRng:
    def __init__(self, seed):
        x = seed & M64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            self.s.append(z ^ (z >> 31))

    def next(self):
        s = self.s
        rotl = lambda x, k: ((x << k) | (x >> (64 - k))) & M64
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def shuffle(self, idx):
        for i in range(len(idx) - 1, 0, -1):
            j = ((self.next() >> 32) * (i + 1)) >> 32
            idx[i], idx[j] = idx[j], idx[i]


# ---- data (workloads/tokens.h)
def read_tokens(path):
    """The file's tokens and its vocabulary, told apart as mxbench does: llm.c's header, a
    headerless uint16 .bin, else bytes."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) >= 4 and int.from_bytes(raw[:4], "little") == LLMC_MAGIC:
        count = int.from_bytes(raw[8:12], "little")
        if len(raw) != 1024 + 2 * count:
            sys.exit("torch_gpt: %s: an llm.c file of %d tokens must hold %d bytes, not %d" %
                     (path, count, 1024 + 2 * count, len(raw)))
        raw, wide = raw[1024:], True
    else:
        wide = path.endswith(".bin")
    if wide:
        if len(raw) % 2:
            sys.exit("torch_gpt: %s: odd byte count %d for uint16 tokens" % (path, len(raw)))
        toks = [int.from_bytes(raw[i:i + 2], "little") for i in range(0, len(raw), 2)]
        top = max(toks)
        return toks, GPT2_VOCAB if top < GPT2_VOCAB else top + 1
    return list(raw), 256


def windows(torch, path, T, want=0):
    """The training split's inputs and labels as [n][T] int64 tensors, and the vocabulary;
    path "synthetic": want windows of uniform random tokens of GPT-2's vocabulary."""
    if path == "synthetic":
        g = torch.Generator().manual_seed(want)
        t = torch.randint(0, GPT2_VOCAB, (max(want, 1), T + 1), generator=g)
        return t[:, :T].contiguous(), t[:, 1:].contiguous(), GPT2_VOCAB
    toks, vocab = read_tokens(path)
    n_tok = len(toks)
    train = n_tok - int(VAL_SHARE * n_tok)
    n = (train - 1) // T
    if n < 1 or int(VAL_SHARE * n_tok) < T + 1:
        sys.exit("torch_gpt: %s: %d tokens hold no window of context %d in each split" % (path, n_tok, T))
    t = torch.tensor(toks[:n * T + 1], dtype=torch.int64)
    return t[:n * T].view(n, T), t[1:n * T + 1].view(n, T), vocab


# ---- the model
def build_model(torch, size, vocab):
    import torch.nn as nn
    import torch.nn.functional as F

    L, C, H, T = size
    V = (vocab + 63) // 64 * 64

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C, eps=1e-5), nn.LayerNorm(C, eps=1e-5)
            self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.fc, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

        def forward(self, x):
            B = x.shape[0]
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (y.view(B, T, H, C // H).transpose(1, 2) for y in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
            return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Parameter(torch.empty(V, C)), nn.Parameter(torch.empty(T, C))
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.ln_f = nn.LayerNorm(C, eps=1e-5)

        def forward(self, idx):
            x = self.wte[idx] + self.wpe
            for b in self.blocks:
                x = b(x)
            return self.ln_f(x) @ self.wte.t()  # the head tied to the token table

        def by_name(self):
            """mxbench's tensor names (engine/core/params.h: top-level layer, child, kind) of
            every parameter: embedding 0, blocks 1..L (children 0 ln1, 1 qkv, 3 proj, 4 ln2,
            5 fc, 7 fc2; 2 attention and 6 gelu hold none), final norm L+1, head L+2 (tied)."""
            out = {"0.embedding.wte": self.wte, "0.embedding.wpe": self.wpe}
            for i, b in enumerate(self.blocks):
                for child, kind, m in ((0, "layernorm", b.ln1), (1, "linear", b.qkv), (3, "linear", b.proj),
                                       (4, "layernorm", b.ln2), (5, "linear", b.fc), (7, "linear", b.fc2)):
                    first, second = ("g", "b") if kind == "layernorm" else ("w", "b")
                    out["%d.%d.%s.%s" % (i + 1, child, kind, first)] = m.weight
                    out["%d.%d.%s.%s" % (i + 1, child, kind, second)] = m.bias
            out["%d.layernorm.g" % (L + 1)], out["%d.layernorm.b" % (L + 1)] = self.ln_f.weight, self.ln_f.bias
            return out

    return GPT(), V


def read_table(path):
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            _, name, offset, count, decay = line.split()
            rows.append((name, int(offset), int(count), decay == "1"))
    return rows


def load_weights(torch, model, table, init):
    """Copies every tensor of the table from the weights file into the module it names; the
    table and the model must name the same tensors with the same sizes. Returns the names of
    the decayed tensors."""
    params = model.by_name()
    with open(init, "rb") as f:
        raw = bytearray(f.read())
    w = torch.frombuffer(raw, dtype=torch.float32)
    if sys.byteorder != "little":
        w = w.byteswap()
    seen, decay = set(), set()
    for name, offset, count, dec in table:
        if name not in params:
            sys.exit("torch_gpt: tensor %s of the table is not in the twin (it has: %s)" % (name, ", ".join(params)))
        p = params[name]
        if p.numel() != count or offset + count > w.numel():
            sys.exit("torch_gpt: tensor %s: %d floats at %d in the table; the twin's has %d, the file %d floats" %
                     (name, count, offset, p.numel(), w.numel()))
        with torch.no_grad():
            p.copy_(w[offset:offset + count].view_as(p))
        seen.add(name)
        if dec:
            decay.add(name)
    missing = set(params) - seen
    if missing:
        sys.exit("torch_gpt: the table lacks the twin's tensors %s" % ", ".join(sorted(missing)))
    return decay


def gpt2_init(torch, model):
    """Without mxbench's weights (timing): GPT-2's initialisation; 2-D tensors decayed."""
    decay = set()
    with torch.no_grad():
        for name, p in model.by_name().items():
            if name.endswith((".w", ".wte", ".wpe")):
                p.normal_(0.0, 0.02)
                decay.add(name)
            elif name.endswith(".g"):
                p.fill_(1.0)
            else:
                p.zero_()
    return decay


# ---- the optimizer and the learning rate
class MxSgd:
    """mxbench's SGD (engine/cpu/kernels.h, mx_cpu_sgd_range): m = momentum m - lr (g + wd w),
    w += m, from m = 0."""

    def __init__(self, torch, groups, momentum):
        self.torch, self.groups, self.momentum = torch, groups, momentum
        self.mom = [[torch.zeros_like(p) for p in ps] for ps, _ in groups]

    def step(self, lr):
        t = self.torch
        with t.no_grad():
            for (ps, wd), ms in zip(self.groups, self.mom):
                gs = [p.grad for p in ps]
                d = t._foreach_add(gs, ps, alpha=wd) if wd else gs
                t._foreach_mul_(ms, self.momentum)
                t._foreach_add_(ms, d, alpha=-lr)
                t._foreach_add_(ps, ms)


def make_optimizer(torch, a, model, decay):
    named = model.by_name()
    dec = [p for n, p in named.items() if n in decay]
    rest = [p for n, p in named.items() if n not in decay]
    if a.optimizer == "sgd":
        return MxSgd(torch, [(dec, a.wd), (rest, 0.0)], a.momentum)
    return torch.optim.AdamW([{"params": dec, "weight_decay": a.wd}, {"params": rest, "weight_decay": 0.0}],
                             lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps)


def lr_at(a, epoch_pos, total_epochs):
    """mx_lr_at without warmup: constant, or half a cosine from lr to 0 over the run."""
    if a.lr_schedule == "constant" or not total_epochs > 0:
        return a.lr
    progress = min(max(epoch_pos / total_epochs, 0.0), 1.0)
    return float(a.lr * 0.5 * (1 + math.cos(math.pi * progress)))


# ---- the run
def run(a):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    size = SIZES[a.workload]
    T = size[3]
    x_all, y_all, vocab = windows(torch, a.data, T, a.batch * a.steps)
    model, V = build_model(torch, size, vocab)
    decay = load_weights(torch, model, read_table(a.table), a.init) if a.init else gpt2_init(torch, model)
    dev = torch.device(a.device)
    model.to(dev)  # before the optimizer, which keeps references to the parameters
    opt = make_optimizer(torch, a, model, decay)
    params = list(model.parameters())
    n_train, B = x_all.shape[0], a.batch
    if B > n_train:
        sys.exit("torch_gpt: batch %d is larger than the %d training windows" % (B, n_train))
    per_epoch = -(-n_train // B)  # the last smaller batch trained, as mxbench on one device
    total = a.steps
    # the run's length in epochs as harness/trainer.c counts it (total / per_epoch is an int division)
    total_epochs = total // per_epoch + (total % per_epoch) * B / n_train
    rng = MxRng(a.seed * 7919 + 17)
    amp = (lambda: torch.autocast(a.device, dtype=torch.bfloat16)) if a.amp == "bf16" else None
    sdpa = None
    if a.sdpa == "flash":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        sdpa = lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    times, losses, step = [], [], 0
    for epoch in range(total):
        if step >= total:
            break
        order = list(range(n_train))
        rng.shuffle(order)
        for start in range(0, per_epoch * B, B):
            if step >= total:
                break
            t0 = time.perf_counter()
            idx = torch.tensor(order[start:start + B])
            x, y = x_all[idx].to(dev, non_blocking=True), y_all[idx].to(dev, non_blocking=True)
            lr = lr_at(a, epoch + start / n_train, total_epochs)
            for p in params:
                p.grad = None
            with amp() if amp else contextlib.nullcontext(), sdpa() if sdpa else contextlib.nullcontext():
                logits = model(x)
            loss = F.cross_entropy(logits.float().view(-1, V), y.view(-1))
            loss.backward()
            if a.clip_norm > 0:
                torch.nn.utils.clip_grad_norm_(params, a.clip_norm)
            if a.optimizer == "sgd":
                opt.step(lr)
            else:
                for g in opt.param_groups:
                    g["lr"] = lr
                opt.step()
            value = loss.item()  # waits for the step's work: on a GPU too the time is the step's
            times.append(time.perf_counter() - t0)
            losses.append(value)
            step += 1
            if not a.measure:
                print("STEP %d %.9g %.9g" % (step, value, lr), flush=True)
    return torch.__version__, n_train, vocab, times, losses


def add_run_args(ap):
    """The options of a training run that this twin and its distributed peers
    (torch_gpt_dist.py) share: the workload, data, initial weights, length and optimizer."""
    ap.add_argument("--workload", choices=sorted(SIZES), default="gpt-mini")
    ap.add_argument("--data", default=DEFAULT_TEXT, help="token or text file (default %(default)s)")
    ap.add_argument("--init", help="initial weights (mxbench train --save-init); default GPT-2's initialisation")
    ap.add_argument("--table", help="the tensor table (mxbench train --param-table); needed with --init")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--wd", type=float, default=1e-4)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--lr-schedule", choices=("constant", "cosine"), default="cosine")
    ap.add_argument("--seed", type=int, default=1, help="mxbench's --seed: the order of the batches")


def main():
    ap = argparse.ArgumentParser(description="mxbench's GPT workloads in PyTorch: parity runs and timing")
    add_run_args(ap)
    ap.add_argument("--clip-norm", type=float, default=0.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--amp", choices=("off", "bf16"), default="off", help="bf16: forward under autocast")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the model trains")
    ap.add_argument("--sdpa", choices=("auto", "flash"), default="auto",
                    help="attention's kernel: PyTorch's choice, or the flash kernel only (cuda, bf16)")
    ap.add_argument("--measure", action="store_true", help="time the steps; print one GPTPEER line")
    ap.add_argument("--warmup", type=int, default=3, help="--measure: leading steps left out of the timing")
    a = ap.parse_args()
    if bool(a.init) != bool(a.table):
        ap.error("--init and --table go together")
    if a.steps < 1 or a.batch < 1 or a.threads < 1 or (a.measure and a.steps <= a.warmup):
        ap.error("--steps, --batch and --threads must be at least 1, and --steps above --warmup with --measure")
    if a.sdpa == "flash" and (a.device != "cuda" or a.amp != "bf16"):
        ap.error("--sdpa flash needs --device cuda and --amp bf16 (the flash kernel takes 16-bit operands)")
    if a.data != "synthetic" and not os.path.isfile(a.data):
        sys.exit("torch_gpt: %s is not a file (the default text comes from the Debian package fortunes)" % a.data)
    version, n_train, vocab, times, losses = run(a)
    T = SIZES[a.workload][3]
    if a.measure:
        med = statistics.median(times[a.warmup:])
        print("GPTPEER framework=torch version=%s workload=%s amp=%s batch=%d threads=%d steps=%d step_s=%.6f "
              "samples_per_s=%.2f tokens_per_s=%.1f device=%s sdpa=%s" %
              (version, a.workload, a.amp, a.batch, a.threads, len(times) - a.warmup, med, a.batch / med,
               a.batch * T / med, a.device, a.sdpa))
    print("TWIN torch=%s workload=%s windows=%d vocab=%d steps=%d first_loss=%.6f last_loss=%.6f" %
          (version, a.workload, n_train, vocab, len(losses), losses[0], losses[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
