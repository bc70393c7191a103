"""mlx-lm end to end on the GPU (MLX's Metal backend on metal2vk): checkpoints in the mlx-community layout made and
loaded by mlx-lm's own code, generated greedily by mlx-lm's generate_step, token for token against MLX's CPU backend.

    PYTHONPATH=<mlx package>:<mlx-lm> python3 -m unittest test_mlx_lm_greedy
    (mlx-lm: ../shared/third_party/mlx-lm, or M2V_MLX_LM)

Models: mlx-lm's Llama (Llama-3.2-1B's features: grouped-query attention, llama3 RoPE scaling, tied embeddings) and
Qwen3 (Qwen3-0.6B's: per-head q/k norms, head_dim 128) at reduced sizes (M2V_MLX_LM_FULL=1: the published sizes),
random weights from a fixed seed. Formats: bf16, affine 4-bit group 64 (mlx-community's default), affine 8-bit,
mxfp4 — quantized by mlx_lm.utils.quantize_model, written by save_model/save_config (config.json with its
`quantization` section, model*.safetensors), read back by mlx_lm.utils.load_model. Caches: mlx-lm's default KV cache,
its quantized KV cache (kv_bits=8) and its rotating cache (max_kv_size). `transformers` is not installed: this file
puts a stand-in module in its place (mlx-lm imports it for tokenizers, which these checks do not use).

The check: 64 greedy tokens from the same prompt on the GPU and on the CPU (the CPU run with mx.disable_compile():
MLX's CPU compiler cannot build here) are equal. Where they first differ, the CPU's logits must show a near-tie between
the two tokens: |l[a] - l[b]| <= 2^-4 of the logits' range (bf16 activations are rounded at each of the model's ~20 roundings
per layer, relative 2^-9 each; two layers and the final norm and projection put the two backends' logits up to a few
times 2^-7 of their range apart): then the sequences may legitimately part and the rest is not compared.
A GPU that cannot run MLX's kernels (they need 32-wide simdgroups; lavapipe has 8 lanes) makes the test skip.
"""
import json
import os
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
MLX_LM = os.environ.get("M2V_MLX_LM") or os.path.join(HERE, "..", "..", "..", "..", "..", "shared", "third_party",
                                                     "mlx-lm")


def install_tokenizer_stand_in():
    """`transformers` and `huggingface_hub` as far as importing mlx-lm needs them."""
    if "transformers" in sys.modules:
        return
    transformers = types.ModuleType("transformers")

    class PreTrainedTokenizer:
        pass

    class AutoTokenizer:
        @staticmethod
        def from_pretrained(*args, **kwargs):
            raise RuntimeError("no tokenizer here: the checks feed token ids")

        @staticmethod
        def register(*args, **kwargs):
            pass

    transformers.PreTrainedTokenizer = PreTrainedTokenizer
    transformers.PreTrainedTokenizerFast = PreTrainedTokenizer
    transformers.AutoTokenizer = AutoTokenizer
    sys.modules["transformers"] = transformers
    hub = types.ModuleType("huggingface_hub")
    hub.snapshot_download = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("offline"))
    sys.modules.setdefault("huggingface_hub", hub)


install_tokenizer_stand_in()
sys.path.insert(0, os.path.abspath(MLX_LM))

import mlx.core as mx  # noqa: E402
import mlx.nn as nn  # noqa: E402
import numpy as np  # noqa: E402
from mlx.utils import tree_flatten, tree_unflatten  # noqa: E402

FULL = os.environ.get("M2V_MLX_LM_FULL") == "1"
LLAMA = dict(model_type="llama", hidden_size=2048 if FULL else 256, num_hidden_layers=16 if FULL else 2,
             intermediate_size=8192 if FULL else 512, num_attention_heads=32 if FULL else 8,
             num_key_value_heads=8 if FULL else 2, head_dim=64, vocab_size=128256 if FULL else 1024,
             rms_norm_eps=1e-5, rope_theta=500000.0, max_position_embeddings=131072, tie_word_embeddings=True,
             rope_scaling={"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                           "original_max_position_embeddings": 8192, "rope_type": "llama3"})
QWEN3 = dict(model_type="qwen3", hidden_size=1024 if FULL else 256, num_hidden_layers=28 if FULL else 2,
             intermediate_size=3072 if FULL else 512, num_attention_heads=16 if FULL else 4,
             num_key_value_heads=8 if FULL else 2, head_dim=128, vocab_size=151936 if FULL else 1024,
             rms_norm_eps=1e-6, rope_theta=1000000.0, max_position_embeddings=40960, tie_word_embeddings=True)
FORMATS = {"bf16": None, "affine-q4": ("affine", 64, 4), "affine-q8": ("affine", 64, 8), "mxfp4": ("mxfp4", 32, 4)}
TOKENS = 64
NEAR_TIE = 2.0 ** -4


def gpu_unavailable_reason():
    try:
        mx.eval(mx.fast.rms_norm(mx.ones((1, 64)), mx.ones((64,)), 1e-5))
    except RuntimeError as error:
        return " ".join(str(error).split())
    return None


def make_checkpoint(path, config, fmt):
    """A checkpoint as mlx-lm's convert writes one, from seeded random weights."""
    from mlx_lm.models import llama, qwen3
    from mlx_lm.utils import quantize_model, save_config, save_model
    family = {"llama": llama, "qwen3": qwen3}[config["model_type"]]
    mx.random.seed(7)
    model = family.Model(family.ModelArgs.from_dict(config))
    # Weights of a trained model's scale: nn.Linear's default init, embeddings N(0, 0.02); bf16 as published.
    params = dict(tree_flatten(model.parameters()))
    params = {k: (mx.random.normal(v.shape) * 0.02 if "embed" in k else v) for k, v in params.items()}
    model.update(tree_unflatten(list(params.items())))
    model.set_dtype(mx.bfloat16)
    saved = dict(config)
    if FORMATS[fmt]:
        mode, group, bits = FORMATS[fmt]
        model, saved = quantize_model(model, saved, group, bits, mode=mode)
    mx.eval(model.parameters())
    save_model(path, model)
    save_config(saved, config_path=os.path.join(path, "config.json"))


def greedy(path, device, prompt, **cache_options):
    """64 greedy tokens and the logits of each step, from mlx-lm's load_model and generate_step on `device`."""
    from pathlib import Path

    from mlx_lm.generate import generate_step
    from mlx_lm.utils import load_model
    mx.set_default_device(device)
    model, _ = load_model(Path(path))
    tokens, logits = [], []
    for token, logprobs in generate_step(mx.array(prompt), model, max_tokens=TOKENS,
                                         sampler=lambda lp: mx.argmax(lp, axis=-1), **cache_options):
        tokens.append(int(token))
        logits.append(np.array(logprobs.astype(mx.float32)))
    return tokens, logits


class MlxLmGreedy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        reason = gpu_unavailable_reason()
        if reason:
            raise unittest.SkipTest("the GPU cannot run MLX's kernels here: " + reason)
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()
        mx.set_default_device(mx.gpu)
        mx.enable_compile()

    def compare(self, name, config, fmt, **cache_options):
        path = os.path.join(self.dir.name, "%s-%s" % (name, fmt))
        if not os.path.exists(os.path.join(path, "config.json")):
            mx.set_default_device(mx.gpu)
            mx.enable_compile()
            make_checkpoint(path, config, fmt)
        with open(os.path.join(path, "config.json")) as f:
            saved = json.load(f)
        if FORMATS[fmt]:
            self.assertEqual(saved["quantization"]["bits"], FORMATS[fmt][2])
        prompt = [int(t) for t in np.random.default_rng(5).integers(0, config["vocab_size"], 16)]
        mx.enable_compile()
        gpu_tokens, _ = greedy(path, mx.gpu, prompt, **cache_options)
        mx.disable_compile()  # MLX's CPU compiler needs a C++ toolchain setup this build does not have
        cpu_tokens, cpu_logits = greedy(path, mx.cpu, prompt, **cache_options)
        mx.enable_compile()
        mx.set_default_device(mx.gpu)
        self.assertEqual(len(gpu_tokens), TOKENS)
        for step, (g, c) in enumerate(zip(gpu_tokens, cpu_tokens)):
            if g == c:
                continue
            logits = cpu_logits[step].reshape(-1)
            gap = abs(float(logits[g]) - float(logits[c]))
            self.assertLessEqual(gap, NEAR_TIE * float(np.max(logits) - np.min(logits)),
                                 "step %d: GPU token %d, CPU token %d, CPU logits %.4f apart (not a near-tie); "
                                 "GPU %s, CPU %s" % (step, g, c, gap, gpu_tokens, cpu_tokens))
            print("%s %s: near-tie at step %d (%d vs %d, %.4g apart); %d tokens equal before it" %
                  (name, fmt, step, g, c, gap, step), file=sys.stderr)
            return
        self.assertEqual(gpu_tokens, cpu_tokens)


def add_cases():
    for name, config in (("llama", LLAMA), ("qwen3", QWEN3)):
        for fmt in FORMATS:
            setattr(MlxLmGreedy, "test_%s_%s" % (name, fmt.replace("-", "_")),
                    lambda self, n=name, c=config, f=fmt: self.compare(n, c, f))
    MlxLmGreedy.test_llama_affine_q4_quantized_kv_cache = \
        lambda self: self.compare("llama", LLAMA, "affine-q4", kv_bits=8, kv_group_size=64)
    MlxLmGreedy.test_qwen3_affine_q4_rotating_cache = \
        lambda self: self.compare("qwen3", QWEN3, "affine-q4", max_kv_size=48)


add_cases()

if __name__ == "__main__":
    unittest.main()
