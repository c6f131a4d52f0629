"""nanoGPT's "cheap computer" character model of Tiny Shakespeare, in PyTorch, as the lab's "Build a GPT" chapter
trains it: the data, the model, the schedule and the validation estimate both sides share.

The model: token and position embeddings (n_embd each), n_layer torch.nn.TransformerEncoderLayer blocks
(pre-norm, exact GELU, dim_feedforward 4·n_embd, batch_first) under a causal mask, as nanoGPT's Block
(x + attn(ln_1(x)), then x + mlp(ln_2(x))), a final LayerNorm and a linear head without bias. Initialised as
nanoGPT initialises: weights and embeddings N(0, 0.02), the residual projections (out_proj, linear2)
N(0, 0.02 / sqrt(2 · n_layer)), biases 0, LayerNorms 1 and 0. Its state_dict names are the ones the lab exports.
"""
import math
import os

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "web", "public", "data", "tinyshakespeare.txt")

# nanoGPT's cheap configuration (its README: 4 layers, 4 heads, 128 channels, context 64, batch 12, dropout 0,
# 2000 iterations, learning rate 1e-3 with config/train_shakespeare_char.py's schedule).
CONFIG = dict(n_layer=4, n_head=4, n_embd=128, block_size=64, batch_size=12, dropout=0.0, max_iters=2000,
              learning_rate=1e-3, min_lr=1e-4, warmup_iters=100, lr_decay_iters=2000, beta1=0.9, beta2=0.99,
              weight_decay=0.1, grad_clip=1.0, eval_batches=20, seed=1337)


def load_corpus(path=CORPUS):
    """The text, its vocabulary (sorted characters) and the 90/10 train/validation split in order, as token ids."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    index = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([index[c] for c in text], dtype=torch.long)
    n = int(0.9 * len(data))
    return chars, data[:n], data[n:]


def random_batch(data, batch_size, block_size, generator):
    """nanoGPT's get_batch: batch_size windows at random offsets; targets are the inputs shifted by one."""
    offsets = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i:i + block_size] for i in offsets])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in offsets])
    return x, y


def validation_offsets(n_tokens, batches, batch_size, block_size):
    """The windows the validation loss is estimated over: batches · batch_size of them, evenly spaced over the
    validation text, the same at every evaluation and in every implementation (no random state to share)."""
    count = batches * batch_size
    span = n_tokens - block_size - 1
    return [int((k + 0.5) * span / count) for k in range(count)]


def lr_at(it, c=CONFIG):
    """nanoGPT's schedule: linear warmup, cosine decay to min_lr at lr_decay_iters."""
    if it < c["warmup_iters"]:
        return c["learning_rate"] * (it + 1) / (c["warmup_iters"] + 1)
    if it > c["lr_decay_iters"]:
        return c["min_lr"]
    ratio = (it - c["warmup_iters"]) / (c["lr_decay_iters"] - c["warmup_iters"])
    return c["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (c["learning_rate"] - c["min_lr"])


class GPT(nn.Module):
    def __init__(self, vocab_size, n_layer, n_head, n_embd, block_size, dropout=0.0):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, n_embd)
        self.position_embedding = nn.Embedding(block_size, n_embd)
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(n_embd, n_head, dim_feedforward=4 * n_embd, dropout=dropout,
                                       activation="gelu", batch_first=True, norm_first=True)
            for _ in range(n_layer)])
        self.norm = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.register_buffer("causal", torch.ones(block_size, block_size, dtype=torch.bool).triu(1), persistent=False)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith("bias"):
                    p.zero_()
                elif name.startswith("norm") or ".norm" in name:
                    p.fill_(1.0)
                elif name.endswith("out_proj.weight") or name.endswith("linear2.weight"):
                    p.normal_(0.0, 0.02 / math.sqrt(2 * n_layer))
                else:
                    p.normal_(0.0, 0.02)

    def forward(self, idx):
        T = idx.shape[1]                                                    # idx (B, T)
        x = self.token_embedding(idx) + self.position_embedding(torch.arange(T))  # (B, T, C)
        for layer in self.layers:
            x = layer(x, src_mask=self.causal[:T, :T])
        return self.head(self.norm(x))                                      # (B, T, vocab)


def make_model(vocab_size, c=CONFIG):
    return GPT(vocab_size, c["n_layer"], c["n_head"], c["n_embd"], c["block_size"], c["dropout"])


def make_optimizer(model, c=CONFIG):
    """AdamW as nanoGPT configures it: weight decay on every parameter of 2 dims or more, none on the others."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": c["weight_decay"]}, {"params": other, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=c["learning_rate"], betas=(c["beta1"], c["beta2"]))


@torch.no_grad()
def validation_loss(model, val, c=CONFIG):
    model.eval()
    offsets = validation_offsets(len(val), c["eval_batches"], c["batch_size"], c["block_size"])
    T = c["block_size"]
    total = 0.0
    for b in range(c["eval_batches"]):
        chunk = offsets[b * c["batch_size"]:(b + 1) * c["batch_size"]]
        x = torch.stack([val[i:i + T] for i in chunk])
        y = torch.stack([val[i + 1:i + 1 + T] for i in chunk])
        logits = model(x)
        total += nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1)).item()
    model.train()
    return total / c["eval_batches"]
