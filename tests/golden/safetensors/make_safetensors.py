#!/usr/bin/env python3
"""Writes the .safetensors fixtures of MultiheadAttention.loadStateDict, using PyTorch as the reference.

    python3 tests/golden/safetensors/make_safetensors.py    # rewrites tests/golden/safetensors/*.safetensors

Each file is what a user would load: the state dict of a torch module (a whole TransformerEncoderLayer, or a
bare nn.MultiheadAttention) in one dtype, written in the safetensors format by `save_safetensors` below
(Debian's python3-torch has no `safetensors` package; the format is an 8-byte little-endian header size, a
JSON header, then the raw little-endian tensors). Beside the model's entries each file holds, under names
no module has:
    check.query / check.key / check.value   float32 inputs
    check.output / check.weights            float64: torch's MultiheadAttention in float64, loaded with the
                                            parameters as float32 (what xattn computes with)
    expect.<parameter>                      float32: torch's own conversion of each parameter (`.float()`),
                                            what xattn must read out of the file exactly
and in __metadata__ the module's configuration and the prefix its parameters sit under.
"""
import json
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16"}


def raw_bytes(t):
    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: write its bits
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    little = {torch.float32: "<f4", torch.float64: "<f8", torch.float16: "<f2"}[t.dtype]
    return t.numpy().astype(little).tobytes()


def save_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, t in tensors.items():
        blob = raw_bytes(t)
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the format pads the header with spaces to a multiple of 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def write_case(file_name, model, prefix, dtype, config, L, S, N):
    """model: the module whose state dict the file holds; its MultiheadAttention's names start with `prefix`."""
    gen = torch.Generator().manual_seed(sum(map(ord, file_name)))
    for p in model.parameters():  # PyTorch's own initialisation leaves the biases 0: give every value a part
        p.data = torch.randn(p.shape, generator=gen, dtype=torch.float64).to(p.dtype)
    state = {name: t.to(dtype) for name, t in model.state_dict().items()}

    # The reference: the same configuration in float64, loaded with the parameters as float32.
    as_f32 = {name[len(prefix):]: t.float() for name, t in state.items() if name.startswith(prefix)}
    ref = torch.nn.MultiheadAttention(config["embed_dim"], config["num_heads"], bias=config["bias"],
                                      add_bias_kv=config["add_bias_kv"], add_zero_attn=config["add_zero_attn"],
                                      kdim=config["kdim"], vdim=config["vdim"], batch_first=config["batch_first"],
                                      dtype=torch.float64)
    ref.load_state_dict({name: t.double() for name, t in as_f32.items()})
    ref.eval()
    kdim, vdim = config["kdim"] or config["embed_dim"], config["vdim"] or config["embed_dim"]
    dims = (lambda n, d: (N, n, d)) if config["batch_first"] else (lambda n, d: (n, N, d))
    q = torch.randn(dims(L, config["embed_dim"]), generator=gen)
    k = torch.randn(dims(S, kdim), generator=gen)
    v = torch.randn(dims(S, vdim), generator=gen)
    with torch.no_grad():
        out, weights = ref(q.double(), k.double(), v.double(), need_weights=True)

    tensors = dict(state)
    tensors.update({"check.query": q, "check.key": k, "check.value": v, "check.output": out, "check.weights": weights})
    tensors.update({"expect." + name: t for name, t in as_f32.items()})
    metadata = {key: json.dumps(value) for key, value in config.items()}
    metadata["prefix"] = prefix
    save_safetensors(os.path.join(HERE, file_name), tensors, metadata)
    print("wrote", file_name, "with", len(as_f32), "parameters under", repr(prefix))


def config_of(E, H, kdim=None, vdim=None, bias=True, batch_first=False, add_bias_kv=False, add_zero_attn=False):
    return {"embed_dim": E, "num_heads": H, "kdim": kdim, "vdim": vdim, "bias": bias, "batch_first": batch_first,
            "add_bias_kv": add_bias_kv, "add_zero_attn": add_zero_attn}


def main():
    torch.manual_seed(0)
    # A whole encoder layer, as a user's model file would hold it: the attention sits under 'self_attn.'.
    layer = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    write_case("encoder_layer_f32.safetensors", layer, "self_attn.", torch.float32,
               config_of(8, 2), L=5, S=5, N=2)
    # Bare modules, held as `attn` in a ModuleDict so that the check entries stay outside their prefix.
    mha = torch.nn.ModuleDict({"attn": torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=5, add_bias_kv=True)})
    write_case("mha_kdim_vdim_bias_kv_f16.safetensors", mha, "attn.", torch.float16,
               config_of(8, 2, kdim=6, vdim=5, add_bias_kv=True), L=4, S=6, N=3)
    mha = torch.nn.ModuleDict({"attn": torch.nn.MultiheadAttention(8, 4, bias=False, batch_first=True)})
    write_case("mha_no_bias_batch_first_bf16.safetensors", mha, "attn.", torch.bfloat16,
               config_of(8, 4, bias=False, batch_first=True), L=3, S=7, N=2)
    mha = torch.nn.ModuleDict({"attn": torch.nn.MultiheadAttention(12, 3, add_zero_attn=True)})
    write_case("mha_zero_attn_f64.safetensors", mha, "attn.", torch.float64,
               config_of(12, 3, add_zero_attn=True), L=6, S=4, N=1)


if __name__ == "__main__":
    main()
