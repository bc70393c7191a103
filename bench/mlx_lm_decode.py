#!/usr/bin/env python3
"""Language models on MLX through metal2vk: prompt processing and decoding in tokens/s, against PyTorch on the same
GPU in the same process, with the first tokens' logits checked against PyTorch's float32 forward pass.

    PYTHONPATH=<mlx python package>[:<mlx-lm>] python3 bench/mlx_lm_decode.py [--model NAME]... [--precision P]...
        [--prompt 512] [--decode 128] [--layers N] [--torch-compile] [--profile] [--report PREFIX]

Models (mlx-lm's own model files, ../shared/third_party/mlx-lm, built from a config with seeded random weights; no
weights are downloaded): llama-3.2-1b, llama-3.1-8b (Llama decoders with llama3 RoPE scaling), qwen3-0.6b.
Precisions: bf16; q4 (every Linear and Embedding quantized by MLX's nn.quantize: mx.quantize, affine, 4 bits,
group 64); mxfp4 (MLX's 4-bit floating-point format: nn.quantize(mode="mxfp4"), group 32, with the E2M1 codes and
E8M0 scales computed by this file and loaded into MLX's quantized layers, so both sides use the same bits).

The PyTorch model is this file's own implementation of the same decoder, run with the same weights: bf16, or for q4
the weights dequantized by this file's implementation of MLX's affine quantization (checked against mx.quantize's
output on one matrix), or for mxfp4 the same codes dequantized (checked against mx.dequantize on one matrix). Logits check: the prompt's last position and three greedy decode steps (PyTorch is fed MLX's
tokens); each side's error is max|logits - reference| / max|reference| against PyTorch in float32 with the same
weights; MLX passes when its error is at most twice PyTorch's own bf16 error (or 2%, whichever is larger).

Timing: each side warms up with the same work first (JIT compiles, the H200's idle clock); prompt = one forward
pass over `--prompt` tokens from an empty cache; decode = `--decode` greedy steps after it, MLX pipelined as
mlx-lm's generate does (async_eval of step n+1 before reading token n), PyTorch eager with a preallocated cache (and
torch.compile with --torch-compile). Best of `--reps`. Roofline: bytes read per decode token (weights as stored, KV
cache at the mean context length) over the bandwidth ceiling. --profile: a second process per model and precision
with M2V_METAL_PROFILE=1 times every dispatch (metal2vk's profile, include/metal2vk/metal_statistics.h) over the
decode steps: GPU time per token by kernel, dispatches and command buffers per token, wall time against GPU time.
"""
import argparse
import ctypes
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MLX_LM = os.path.join(HERE, "..", "..", "shared", "third_party", "mlx-lm")

LLAMA3_ROPE_1B = {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192, "rope_type": "llama3"}
LLAMA3_ROPE_8B = dict(LLAMA3_ROPE_1B, factor=8.0)
MODELS = {  # the published configurations' shapes
    "llama-3.2-1b": dict(model_type="llama", hidden_size=2048, num_hidden_layers=16, intermediate_size=8192,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                         rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=LLAMA3_ROPE_1B,
                         max_position_embeddings=131072, tie_word_embeddings=True),
    "llama-3.1-8b": dict(model_type="llama", hidden_size=4096, num_hidden_layers=32, intermediate_size=14336,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256,
                         rms_norm_eps=1e-5, rope_theta=500000.0, rope_scaling=LLAMA3_ROPE_8B,
                         max_position_embeddings=131072, tie_word_embeddings=False),
    "qwen3-0.6b": dict(model_type="qwen3", hidden_size=1024, num_hidden_layers=28, intermediate_size=3072,
                       num_attention_heads=16, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                       rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
                       max_position_embeddings=40960, tie_word_embeddings=True),
}
GROUP, BITS = 64, 4
FP4_GROUP = 32
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------ MLX side
def mlx_modules(mlx_lm_root):
    sys.path.insert(0, os.path.abspath(mlx_lm_root))
    import mlx.core as mx
    import mlx.nn as nn
    from mlx.utils import tree_flatten, tree_unflatten
    from mlx_lm.models import llama, qwen3
    return mx, nn, tree_flatten, tree_unflatten, {"llama": llama, "qwen3": qwen3}


def build_mlx_model(ns, config):
    mx, nn, tree_flatten, tree_unflatten, families = ns
    family = families[config["model_type"]]
    model = family.Model(family.ModelArgs.from_dict(config))  # parameters stay lazy until replaced below
    return model, [(name, tuple(p.shape)) for name, p in tree_flatten(model.parameters())]


def set_mlx_weights(ns, model, weights):
    mx, nn, tree_flatten, tree_unflatten, _ = ns
    model.update(tree_unflatten(list(weights.items())))
    mx.eval(model.parameters())


def torch_to_mlx(mx, tensor):
    """A bf16 CUDA tensor into a new MLX array (through the host: MLX's shared buffers are written by the CPU)."""
    import torch
    host = tensor.detach().contiguous().view(torch.int16).cpu().numpy().view(np.uint16)
    return mx.array(host).view(mx.bfloat16)


def mlx_to_numpy(mx, array):
    return np.array(array.astype(mx.float32))


def metal_statistics():
    """metal2vk's counters (and profile) from the library inside mlx.core, by name."""
    import mlx.core
    lib = ctypes.CDLL(mlx.core.__file__)
    fn = lib.m2v_metal_statistics_json
    fn.restype = ctypes.c_char_p
    return json.loads(fn().decode())


def mlx_prompt(ns, model, tokens):
    mx = ns[0]
    from mlx_lm.models.cache import make_prompt_cache
    cache = make_prompt_cache(model)
    logits = model(mx.array(tokens)[None], cache=cache)[:, -1, :]
    mx.eval(logits)
    return logits, cache


def mlx_prompt_then_decode(ns, model, prompt, steps):
    """A prompt from an empty cache, then `steps` decode steps. Returns the host seconds of each and metal2vk's
    counters just before and after the decode steps."""
    mx = ns[0]
    t = time.perf_counter()
    logits, cache = mlx_prompt(ns, model, prompt)
    prompt_s = time.perf_counter() - t
    first = mx.argmax(logits, axis=-1)
    mx.eval(first)
    before, t = metal_statistics(), time.perf_counter()
    mlx_decode(ns, model, cache, first, steps)
    decode_s = time.perf_counter() - t
    return prompt_s, decode_s, before, metal_statistics()


def mlx_decode(ns, model, cache, first_token, steps, keep_logits=False):
    """Greedy decoding as mlx-lm's generate_step does it: step n+1 is queued before token n is read."""
    mx = ns[0]
    y = first_token
    kept = []

    def step(y):
        logits = model(y.reshape(1, 1), cache=cache)[:, -1, :]
        return logits, mx.argmax(logits, axis=-1)

    logits, next_y = step(y)
    mx.async_eval(next_y)
    tokens = []
    for n in range(steps):
        if keep_logits:
            kept.append(logits)
        y = next_y
        if n + 1 < steps:
            logits, next_y = step(y)
            mx.async_eval(next_y)
        tokens.append(y.item())
    return tokens, kept


# ------------------------------------------------------------------------------------------------ PyTorch side
def torch_weights(names_shapes, seed, device):
    """Seeded random weights in bf16: N(0, 0.02) matrices, norm scales 1 + N(0, 0.1)."""
    import torch
    gen = torch.Generator(device=device)
    out = {}
    for i, (name, shape) in enumerate(names_shapes):
        gen.manual_seed(seed * 100003 + i)
        w = torch.randn(shape, generator=gen, device=device, dtype=torch.float32)
        w = 1.0 + 0.1 * w if len(shape) == 1 else 0.02 * w
        out[name] = w.to(torch.bfloat16)
    return out


def torch_affine_quantize(w):
    """MLX's affine quantization (mlx/ops.cpp affine_quantize, its Metal kernel), written for PyTorch: returns the
    packed uint32 words, scales and biases as MLX lays them out, and the dequantized weight."""
    import torch
    rows, cols = w.shape
    g = w.float().reshape(rows, cols // GROUP, GROUP)
    n_bins = float((1 << BITS) - 1)
    w_max, w_min = g.amax(-1, keepdim=True), g.amin(-1, keepdim=True)
    mask = w_min.abs() > w_max.abs()
    scale = torch.clamp((w_max - w_min) / n_bins, min=1e-7)
    scale = torch.where(mask, scale, -scale)
    edge = torch.where(mask, w_min, w_max)
    q0 = torch.round(edge / scale)
    scale = torch.where(q0 != 0, edge / q0, scale)
    bias = torch.where(q0 == 0, torch.zeros_like(edge), edge)
    # Metal's round() rounds halves away from zero (torch.round: to even).
    x = (g - bias) / scale
    q = torch.clamp(torch.sign(x) * torch.floor(x.abs() + 0.5), 0, n_bins)
    scale_t, bias_t = scale.to(w.dtype), bias.to(w.dtype)
    dequantized = (scale_t.float() * q + bias_t.float()).to(w.dtype).reshape(rows, cols)
    qi = q.to(torch.int64).reshape(rows, cols // 8, 8)
    shifts = torch.arange(8, device=w.device, dtype=torch.int64) * BITS
    packed = (qi << shifts).sum(-1).to(torch.int64)
    return packed, scale_t.reshape(rows, -1), bias_t.reshape(rows, -1), dequantized


def torch_mxfp4_quantize(w):
    """MXFP4 (OCP microscaling): per group of 32, a power-of-two scale 2^E with E = ceil(log2(max|w| / 6)) and each
    value rounded to the nearest E2M1 number. Returns MLX's layout (uint32 words of eight 4-bit codes, low nibble
    first, as int32; uint8 scales E + 127) and the dequantized weight."""
    import torch
    rows, cols = w.shape
    g = w.float().reshape(rows, cols // FP4_GROUP, FP4_GROUP)
    amax = g.abs().amax(-1, keepdim=True).clamp(min=2.0 ** -126)
    e = torch.ceil(torch.log2(amax / 6.0)).clamp(-127, 127)
    x = g / torch.exp2(e)
    table = torch.tensor(E2M1, device=w.device)
    code = (x.abs()[..., None] - table).abs().argmin(-1)  # nearest magnitude (ties to the smaller)
    value = table[code] * torch.sign(x)
    codes = code | ((x < 0) & (code > 0)).to(code.dtype) * 8
    dequantized = (value * torch.exp2(e)).to(w.dtype).reshape(rows, cols)
    qi = codes.to(torch.int64).reshape(rows, cols // 8, 8)
    shifts = torch.arange(8, device=w.device, dtype=torch.int64) * 4
    packed = (qi << shifts).sum(-1)
    packed = torch.where(packed >= 2 ** 31, packed - 2 ** 32, packed).to(torch.int32)
    scales = (e + 127).to(torch.uint8).reshape(rows, -1)
    return packed, scales, dequantized


def load_mxfp4(ns, model, weights, names_shapes):
    """nn.quantize(mode="mxfp4") makes MLX's quantized layers; their (lazy, never evaluated) parameters are replaced by
    this file's codes and scales. Returns the dequantized bf16 weights for PyTorch and a check of one matrix."""
    mx, nn = ns[0], ns[1]
    nn.quantize(model, group_size=FP4_GROUP, bits=4, mode="mxfp4")
    dequantized, updates, check = dict(weights), [], None
    for n, shape in names_shapes:
        if len(shape) != 2 or shape[-1] % FP4_GROUP:
            continue
        packed, scales, dq = torch_mxfp4_quantize(weights[n])
        base = n[: -len(".weight")]
        updates.append((base + ".weight", mx.array(packed.cpu().numpy()).view(mx.uint32)))
        updates.append((base + ".scales", mx.array(scales.cpu().numpy())))
        dequantized[n] = dq
        if check is None:  # MLX's own dequantization of the first rows against this file's
            rows = 64
            try:
                mx_dq = mx.dequantize(updates[-2][1][:rows], updates[-1][1][:rows], group_size=FP4_GROUP, bits=4,
                                      mode="mxfp4")
                ours = dq[:rows].float().cpu().numpy()
                check = {"matrix": n,
                         "dequantized_max_abs_diff": float(np.max(np.abs(mlx_to_numpy(mx, mx_dq) - ours)))}
            except Exception as e:  # the logits check below still compares the whole model
                check = {"matrix": n, "error": f"{type(e).__name__}: {str(e)[:300]}"}
    model.update(ns[3](updates))
    mx.eval(model.parameters())
    return dequantized, check


class TorchDecoder:
    """The decoder of mlx-lm's llama.py / qwen3.py, written for PyTorch: same weights (by MLX's parameter names),
    same RoPE frequencies, RMSNorm as MLX computes it (normalised in float32, rounded, then scaled)."""

    def __init__(self, config, weights, dtype, max_len):
        import torch
        self.torch = torch
        self.c = config
        self.w = weights
        self.dtype = dtype
        self.qwen = config["model_type"] == "qwen3"
        hd = config["head_dim"]
        self.inv_freq = (1.0 / self._rope_periods(config, hd)).to(weights["model.norm.weight"].device)
        L, kv = config["num_hidden_layers"], config["num_key_value_heads"]
        dev = self.inv_freq.device
        self.k = [torch.zeros(1, kv, max_len, hd, device=dev, dtype=dtype) for _ in range(L)]
        self.v = [torch.zeros(1, kv, max_len, hd, device=dev, dtype=dtype) for _ in range(L)]

    def _rope_periods(self, c, dims):
        torch = self.torch
        periods = c["rope_theta"] ** (torch.arange(0, dims, 2, dtype=torch.float64) / dims)
        s = c.get("rope_scaling")
        if s and s.get("rope_type") == "llama3":  # rope_utils.Llama3RoPE
            factor, low, high = s["factor"], s.get("low_freq_factor", 1.0), s.get("high_freq_factor", 4.0)
            old = s.get("original_max_position_embeddings", 8192)
            wavelens = 2 * np.pi * periods
            scaled = torch.where(wavelens > old / low, periods * factor, periods)
            medium = (wavelens > old / high) & (wavelens < old / low)
            smooth = (old / wavelens - low) / (high - low)
            periods = torch.where(medium, scaled / ((1 - smooth) / factor + smooth), scaled)
        return periods.to(torch.float32)

    def W(self, name):
        w = self.w[name]
        return w if w.dtype == self.dtype else w.to(self.dtype)

    def rms(self, x, name):
        torch = self.torch
        x32 = x.float()
        y = (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.c["rms_norm_eps"])).to(self.dtype)
        return y * self.W(name)

    def rope(self, x, offset):
        torch = self.torch
        L = x.shape[2]
        pos = torch.arange(offset, offset + L, device=x.device, dtype=torch.float32)
        angles = pos[:, None] * self.inv_freq[None, :]
        cos, sin = angles.cos(), angles.sin()
        x32 = x.float()
        half = x.shape[-1] // 2
        x1, x2 = x32[..., :half], x32[..., half:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).to(self.dtype)

    def forward(self, tokens, offset):
        """tokens: (1, L) int64 on the GPU; returns the last position's logits (float32)."""
        torch = self.torch
        F = torch.nn.functional
        c = self.c
        H, KV, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        h = self.W("model.embed_tokens.weight")[tokens]
        B, L, _ = h.shape
        for i in range(c["num_hidden_layers"]):
            p = f"model.layers.{i}."
            x = self.rms(h, p + "input_layernorm.weight")
            q = (x @ self.W(p + "self_attn.q_proj.weight").T).view(B, L, H, hd)
            k = (x @ self.W(p + "self_attn.k_proj.weight").T).view(B, L, KV, hd)
            v = (x @ self.W(p + "self_attn.v_proj.weight").T).view(B, L, KV, hd)
            if self.qwen:
                q, k = self.rms(q, p + "self_attn.q_norm.weight"), self.rms(k, p + "self_attn.k_norm.weight")
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            q, k = self.rope(q, offset), self.rope(k, offset)
            self.k[i][:, :, offset:offset + L] = k
            self.v[i][:, :, offset:offset + L] = v
            keys, values = self.k[i][:, :, :offset + L], self.v[i][:, :, :offset + L]
            o = F.scaled_dot_product_attention(q, keys, values, is_causal=(L > 1 and offset == 0), enable_gqa=True)
            h = h + o.transpose(1, 2).reshape(B, L, H * hd) @ self.W(p + "self_attn.o_proj.weight").T
            x = self.rms(h, p + "post_attention_layernorm.weight")
            gate = x @ self.W(p + "mlp.gate_proj.weight").T
            up = x @ self.W(p + "mlp.up_proj.weight").T
            h = h + (F.silu(gate) * up) @ self.W(p + "mlp.down_proj.weight").T
        h = self.rms(h[:, -1:, :], "model.norm.weight")
        head = "model.embed_tokens.weight" if c["tie_word_embeddings"] else "lm_head.weight"
        return (h @ self.W(head).T)[:, -1, :].float()


def torch_generate(model, prompt, steps, after_prompt=None):
    """Prompt then `steps` greedy decode steps, queued on the GPU with no host sync per token; `after_prompt` (a CUDA
    event) is recorded between the two."""
    logits = model.forward(prompt, 0)
    if after_prompt is not None:
        after_prompt.record()
    pos = prompt.shape[1]
    for _ in range(steps):
        logits = model.forward(logits.argmax(-1, keepdim=True), pos)
        pos += 1


# ------------------------------------------------------------------------------------------------ measurement
def bytes_per_decode_token(config, precision, context):
    """Bytes a decode step must read: every matrix once (as stored), norms, one embedding row, the KV cache."""
    c = config
    hidden, inter, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    H, KV, hd, vocab = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["vocab_size"]
    per_layer = hidden * H * hd * 2 + hidden * KV * hd * 2 + 3 * hidden * inter
    matrices = L * per_layer + vocab * hidden  # the output projection (tied or not) reads a vocab x hidden matrix
    per_weight = {"bf16": 2.0, "q4": BITS / 8 + 2 * 2 / GROUP,  # packed values + bf16 scale and bias per group
                  "mxfp4": 0.5 + 1 / FP4_GROUP}[precision]  # codes + a one-byte scale per group
    norms = (2 * L + 1) * hidden * 2 + (2 * L * hd * 2 if c["model_type"] == "qwen3" else 0)
    embedding_row = hidden * per_weight
    kv = 2 * L * KV * hd * context * 2
    return matrices * per_weight + norms + embedding_row + kv


def relative_error(x, reference):
    return float(np.max(np.abs(x - reference)) / max(np.max(np.abs(reference)), 1e-30))


def run_profile_child(args, name, precision):
    """This script again, in a process with metal2vk's profile on, MLX only: per-token GPU time by kernel."""
    cmd = [sys.executable, os.path.abspath(__file__), "--model", name, "--precision", precision, "--no-torch",
           "--profile-child", "--device", args.device, "--prompt", str(args.prompt), "--decode", str(min(args.decode, 32)),
           "--mlx-lm", args.mlx_lm]
    if args.layers:
        cmd += ["--layers", str(args.layers)]
    env = dict(os.environ, M2V_METAL_PROFILE="1")
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.child_timeout)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout)[-2000:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure(args, ns, name, precision, torch_ok):
    mx, nn = ns[0], ns[1]
    config = dict(MODELS[name])
    if args.layers:
        config["num_hidden_layers"] = args.layers
    result = {"model": name, "precision": precision, "layers": config["num_hidden_layers"],
              "prompt_tokens": args.prompt, "decode_tokens": args.decode}
    model, names_shapes = build_mlx_model(ns, config)
    t0 = time.time()
    if torch_ok:
        import torch
        weights = torch_weights(names_shapes, args.seed, "cuda")
        set_mlx_weights(ns, model, {n: torch_to_mlx(mx, w) for n, w in weights.items()})
    else:
        weights = None
        mlx_weights = {}
        for i, (n, shape) in enumerate(names_shapes):
            w = mx.random.normal(shape, key=mx.random.key(args.seed * 100003 + i))
            mlx_weights[n] = (1.0 + 0.1 * w if len(shape) == 1 else 0.02 * w).astype(mx.bfloat16)
        set_mlx_weights(ns, model, mlx_weights)
    reference_weights = weights
    if precision == "q4":
        nn.quantize(model, group_size=GROUP, bits=BITS)
        mx.eval(model.parameters())
    elif precision == "mxfp4":
        if not torch_ok:  # random codes, scales near 2^-6 (the size of the bf16 weights): timing only
            nn.quantize(model, group_size=FP4_GROUP, bits=4, mode="mxfp4")
            updates = []
            for i, (n, shape) in enumerate(names_shapes):
                if len(shape) == 2 and shape[-1] % FP4_GROUP == 0:
                    key = mx.random.key(args.seed * 7919 + i)
                    base = n[: -len(".weight")]
                    updates.append((base + ".weight", mx.random.randint(0, 2 ** 31, (shape[0], shape[1] // 8),
                                                                        key=key).astype(mx.uint32)))
                    updates.append((base + ".scales", mx.full((shape[0], shape[1] // FP4_GROUP), 121, mx.uint8)))
            model.update(ns[3](updates))
            mx.eval(model.parameters())
        else:
            reference_weights, result["quantize_check"] = load_mxfp4(ns, model, weights, names_shapes)
    result["weights_setup_s"] = round(time.time() - t0, 2)
    log(f"{name} {precision}: weights in {result['weights_setup_s']} s")

    rng = np.random.default_rng(args.seed)
    prompt = rng.integers(0, config["vocab_size"], size=args.prompt).astype(np.int32)
    max_len = args.prompt + args.decode + 8  # the PyTorch decoder's preallocated KV cache

    if args.profile_child:
        mlx_prompt_then_decode(ns, model, prompt, 8)  # warm up: every kernel compiled
        _, wall, before, after = mlx_prompt_then_decode(ns, model, prompt, args.decode)
        n = args.decode
        kernels = {k: [d, ns_] for k, d, ns_ in before["kernels"]}
        per_kernel = []
        for k, d, ns_ in after["kernels"]:
            d0, ns0 = kernels.get(k, [0, 0.0])
            if d > d0:
                per_kernel.append({"kernel": k, "dispatches_per_token": (d - d0) / n,
                                   "gpu_us_per_token": (ns_ - ns0) / n / 1e3})
        per_kernel.sort(key=lambda e: -e["gpu_us_per_token"])
        print(json.dumps({"wall_ms_per_token": wall / n * 1e3,
                          "gpu_busy_ms_per_token": (after["gpu_ns"] - before["gpu_ns"]) / n / 1e6,
                          "dispatches_per_token": (after["dispatches"] - before["dispatches"]) / n,
                          "command_buffers_per_token": (after["command_buffers"] - before["command_buffers"]) / n,
                          "kernels": per_kernel}))
        return None

    # --- correctness: prompt's last logits and three greedy steps, against PyTorch float32 (same weights)
    check_steps = 3
    logits, cache = mlx_prompt(ns, model, prompt)
    first = mx.argmax(logits, axis=-1)
    mlx_logits = [mlx_to_numpy(mx, logits)[0]]
    # kept[s]: the logits after feeding token s of [first, tokens[0], tokens[1], ...] at position prompt + s
    tokens, kept = mlx_decode(ns, model, cache, first, check_steps, keep_logits=True)
    mlx_logits += [mlx_to_numpy(mx, l)[0] for l in kept]
    fed_tokens = [first.item()] + tokens[:check_steps - 1]
    if torch_ok:
        if precision == "q4":
            reference_weights = dict(weights)
            # mx.quantize against this file's quantizer on the first rows of one matrix
            probe = "model.layers.0.self_attn.k_proj.weight"
            layer = model.model.layers[0].self_attn.k_proj
            for n, shape in names_shapes:
                if len(shape) == 2 and shape[-1] % GROUP == 0:
                    quantized = torch_affine_quantize(weights[n])
                    reference_weights[n] = quantized[3]
                    if n == probe:
                        packed, _, _, dq = quantized
            rows = 64
            mx_packed = np.array(layer.weight[:rows]).astype(np.int64)
            ours = packed[:rows].cpu().numpy()
            mx_dq = mlx_to_numpy(mx, mx.dequantize(layer.weight[:rows], layer.scales[:rows], layer.biases[:rows],
                                                   group_size=GROUP, bits=BITS))
            result["quantize_check"] = {
                "words_equal": float(np.mean(mx_packed == ours)),
                "dequantized_max_abs_diff": float(np.max(np.abs(mx_dq - dq[:rows].float().cpu().numpy()))),
            }
        import torch
        prompt_t = torch.tensor(prompt, device="cuda", dtype=torch.int64)[None]
        fed = torch.tensor([fed_tokens], device="cuda", dtype=torch.int64)
        errors = {}
        logits_by = {}
        for label, dtype in (("float32", torch.float32), ("bf16", torch.bfloat16)):
            tm = TorchDecoder(config, reference_weights, dtype, max_len)
            with torch.no_grad():
                out = [tm.forward(prompt_t, 0)[0].cpu().numpy()]
                for s in range(check_steps):
                    out.append(tm.forward(fed[:, s:s + 1], args.prompt + s)[0].cpu().numpy())
            logits_by[label] = out
            del tm
            torch.cuda.empty_cache()
        ref = logits_by["float32"]
        errors["mlx"] = max(relative_error(a, r) for a, r in zip(mlx_logits, ref))
        errors["torch_bf16"] = max(relative_error(a, r) for a, r in zip(logits_by["bf16"], ref))
        top1 = [int(np.argmax(a) == np.argmax(r)) for a, r in zip(mlx_logits, ref)]
        tolerance = max(2.0 * errors["torch_bf16"], 0.02)
        result["logits"] = {"mlx_rel_error": errors["mlx"], "torch_bf16_rel_error": errors["torch_bf16"],
                            "tolerance": tolerance, "top1_agree_with_float32": f"{sum(top1)}/{len(top1)}",
                            "match": errors["mlx"] <= tolerance}
        log(f"  logits: {result['logits']}")

    # --- timing, MLX
    mlx_prompt_then_decode(ns, model, prompt, 16)  # warm-up (kernels compiled above; clocks up)
    best_prompt = best_decode = float("inf")
    for _ in range(args.reps):
        prompt_s, elapsed, s0, s1 = mlx_prompt_then_decode(ns, model, prompt, args.decode)
        best_prompt = min(best_prompt, prompt_s)
        if elapsed < best_decode:
            best_decode = elapsed
            result["mlx_dispatches_per_token"] = (s1["dispatches"] - s0["dispatches"]) / args.decode
            result["mlx_command_buffers_per_token"] = (s1["command_buffers"] - s0["command_buffers"]) / args.decode
    result["mlx_prompt_tps"] = args.prompt / best_prompt
    result["mlx_decode_tps"] = args.decode / best_decode
    context = args.prompt + args.decode / 2
    bpt = bytes_per_decode_token(config, precision, context)
    result["bytes_per_decode_token"] = bpt
    result["roofline_decode_tps"] = args.ceiling_gbs * 1e9 / bpt
    result["mlx_roofline_fraction"] = result["mlx_decode_tps"] / result["roofline_decode_tps"]
    log(f"  MLX: prompt {result['mlx_prompt_tps']:.0f} tok/s, decode {result['mlx_decode_tps']:.1f} tok/s "
        f"({100 * result['mlx_roofline_fraction']:.0f}% of the roofline {result['roofline_decode_tps']:.0f})")
    del model, cache, logits
    mx.clear_cache()

    # --- timing, PyTorch (same weights; q4: the dequantized bf16 weights, PyTorch has no 4-bit matmul here)
    if torch_ok:
        import torch
        tm = TorchDecoder(config, reference_weights, torch.bfloat16, max_len)
        prompt_t = torch.tensor(prompt, device="cuda", dtype=torch.int64)[None]
        variants = [("eager", tm.forward)]
        if args.torch_compile:
            variants.append(("compile", torch.compile(tm.forward, dynamic=True)))
        for label, fwd in variants:
            tm.forward = fwd
            try:
                with torch.no_grad():
                    torch_generate(tm, prompt_t, 16)  # warm-up (and compilation)
                    torch.cuda.synchronize()
                    bp = bd = float("inf")
                    for _ in range(args.reps):
                        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
                        e0.record()
                        torch_generate(tm, prompt_t, args.decode, after_prompt=e1)
                        e2.record()
                        torch.cuda.synchronize()
                        bp = min(bp, e0.elapsed_time(e1) / 1e3)
                        bd = min(bd, e1.elapsed_time(e2) / 1e3)
                result[f"torch_{label}_prompt_tps"] = args.prompt / bp
                result[f"torch_{label}_decode_tps"] = args.decode / bd
                log(f"  PyTorch {label}: prompt {args.prompt / bp:.0f} tok/s, decode {args.decode / bd:.1f} tok/s")
            except Exception as e:  # torch.compile may not work on the machine: say so, keep the rest
                result[f"torch_{label}_error"] = f"{type(e).__name__}: {str(e)[:300]}"
                log(f"  PyTorch {label}: {result[f'torch_{label}_error']}")
        del tm, weights, reference_weights
        torch.cuda.empty_cache()
        bpt_torch = bytes_per_decode_token(config, "bf16", context)
        if "torch_eager_decode_tps" in result:
            result["torch_eager_roofline_fraction"] = result["torch_eager_decode_tps"] * bpt_torch / (
                args.ceiling_gbs * 1e9)
    if args.profile:
        result["profile"] = run_profile_child(args, name, precision)
    return result


def write_report(prefix, meta, rows):
    with open(prefix + ".json", "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    lines = [f"# Language-model decoding: MLX on metal2vk against PyTorch ({meta['date']})", "",
             f"Device: {meta['device']} (driver {meta['driver']}); PyTorch {meta['torch']}; "
             f"bandwidth ceiling {meta['ceiling_gbs']} GB/s. Command: `{meta['command']}`.", "",
             "| model | precision | MLX prompt tok/s | PyTorch prompt | MLX decode tok/s | PyTorch eager decode "
             "| PyTorch compiled decode | roofline tok/s | MLX of roofline | logits (MLX err / PyTorch bf16 err) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    f = lambda v, d=1: "—" if v is None else f"{v:.{d}f}"
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['precision']} | failed: {r['error'][:160].replace('|', '/')} "
                         "| | | | | | | |")
            continue
        lg = r.get("logits", {})
        check = (f"{lg['mlx_rel_error']:.4f} / {lg['torch_bf16_rel_error']:.4f} "
                 f"{'match' if lg['match'] else 'MISMATCH'}") if lg else "—"
        lines.append(f"| {r['model']} | {r['precision']} | {f(r.get('mlx_prompt_tps'), 0)} | "
                     f"{f(r.get('torch_eager_prompt_tps'), 0)} | {f(r.get('mlx_decode_tps'))} | "
                     f"{f(r.get('torch_eager_decode_tps'))} | {f(r.get('torch_compile_decode_tps'))} | "
                     f"{f(r.get('roofline_decode_tps'), 0)} | {100 * r['mlx_roofline_fraction']:.0f}% | {check} |")
    for r in rows:
        p = r.get("profile")
        if not p or "error" in p:
            if p:
                lines += ["", f"Profile of {r['model']} {r['precision']} failed: `{p['error'][-300:]}`"]
            continue
        lines += ["", f"## Profile: {r['model']} {r['precision']} (decode, per token)", "",
                  f"wall {p['wall_ms_per_token']:.2f} ms, GPU busy {p['gpu_busy_ms_per_token']:.2f} ms, "
                  f"{p['dispatches_per_token']:.0f} dispatches, {p['command_buffers_per_token']:.1f} command buffers",
                  "", "| kernel | dispatches | GPU µs | share |", "|---|---|---|---|"]
        total = sum(k["gpu_us_per_token"] for k in p["kernels"]) or 1
        for k in p["kernels"][:12]:
            lines.append(f"| `{k['kernel']}` | {k['dispatches_per_token']:.0f} | {k['gpu_us_per_token']:.0f} | "
                         f"{100 * k['gpu_us_per_token'] / total:.0f}% |")
    with open(prefix + ".md", "w") as f_:
        f_.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", choices=sorted(MODELS))
    ap.add_argument("--precision", action="append", choices=["bf16", "q4", "mxfp4"])
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--decode", type=int, default=128)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--layers", type=int, default=0, help="keep only the first N layers (a quick run)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mlx-lm", default=DEFAULT_MLX_LM, help="the folder holding mlx_lm/models")
    ap.add_argument("--ceiling-gbs", type=float, default=4100.0)
    ap.add_argument("--no-torch", action="store_true", help="MLX only (MLX-made weights, no logits check)")
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu",
                    help="MLX's device (cpu: MLX's CPU backend without mx.compile, to check the driver itself)")
    ap.add_argument("--torch-compile", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--profile-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-timeout", type=int, default=300)
    ap.add_argument("--report", default="")
    args = ap.parse_args()
    if not os.path.isdir(os.path.join(args.mlx_lm, "mlx_lm", "models")):
        sys.exit(f"{args.mlx_lm}: no mlx_lm/models (give --mlx-lm)")
    ns = mlx_modules(args.mlx_lm)
    mx = ns[0]
    if args.device == "cpu":
        mx.set_default_device(mx.cpu)
        mx.disable_compile()
    torch_ok = False
    if not args.no_torch:
        import torch
        torch_ok = torch.cuda.is_available()
        if not torch_ok:
            sys.exit("PyTorch has no CUDA device here: --no-torch runs MLX alone")
    rows = []
    for name in args.model or ["qwen3-0.6b", "llama-3.2-1b", "llama-3.1-8b"]:
        for precision in args.precision or ["bf16", "q4", "mxfp4"]:
            try:
                row = measure(args, ns, name, precision, torch_ok)
            except Exception as e:  # one failing configuration is reported; the others still run
                row = {"model": name, "precision": precision, "error": f"{type(e).__name__}: {str(e)[:600]}"}
                log(f"{name} {precision}: {row['error']}")
                mx.clear_cache()
                if torch_ok:
                    __import__("torch").cuda.empty_cache()
            if row is not None:
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.report and rows:
        try:
            info = mx.device_info()
        except Exception:  # older MLX: mx.metal.device_info()
            info = {}
        driver = "?"
        try:
            driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                    capture_output=True, text=True).stdout.strip() or "?"
        except OSError:
            pass
        meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                "device": info.get("device_name", str(mx.default_device())), "driver": driver,
                "torch": __import__("torch").__version__ if torch_ok else "—", "ceiling_gbs": args.ceiling_gbs,
                "command": " ".join(["bench/mlx_lm_decode.py"] + sys.argv[1:])}
        write_report(args.report, meta, rows)


if __name__ == "__main__":
    main()
