#!/usr/bin/env python3
"""Where MLX's exp f16 / bf16 kernels lose time against a hand-written kernel of the same shape: MLX's own
`vn_Exp<T><T>` through metal2vk beside variants that differ only in Metal's range handling of a 16-bit exp, and
CUDA kernels of MLX's shape (bench/cuda_same_shape.py) with expf, __expf and no operation, in one process.

    PYTHONPATH=<metal2vk python> M2V_MLX_ROOT=<MLX checkout> python3 bench/exp_range_probe.py

The variants instantiate MLX's `unary_v` template (included from the MLX checkout) with an operation of this file:
`ExpV<MODE>` evaluates Exp in float and applies the selects MODE names (1: inf at or above 12, 2: 0 at or below -18,
4: a NaN kept; 7 is the previous form of metal_math's p16_exp, three selects in turn), `ExpSelectHalf` selects among
16-bit values after the narrowing, `ExpBfloatInTurn` is the previous bfloat form (three selects in turn, bfloat's limits; MLX's
`vn_Exp` bf16 now clamps the argument instead), `Identity` moves the data only. 2^26 elements; each timing is 50
back-to-back dispatches after a 0.3 s warm-up, three rounds in alternating order; the outputs of the exp variants are
compared with the previous form's bit for bit, on the timing's input and on every 16-bit pattern (NaNs, infinities,
subnormals and the range limits included).
"""
import functools
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_same_shape as css  # noqa: E402
from probe_timing import print_times, race, time_cuda, time_stream  # noqa: E402
import metal2vk as m2v  # noqa: E402

VARIANTS = r'''
#include "mlx/backend/metal/kernels/utils.h"
#include "mlx/backend/metal/kernels/unary_ops.h"
#include "mlx/backend/metal/kernels/unary.h"
template <int MODE> struct ExpV {
  template <typename T> T operator()(T x) {
    float f = float(x);
    float r = metal::fast::exp(f);
    if (MODE & 1) r = (f >= 12.0f) ? metal::numeric_limits<float>::infinity() : r;
    if (MODE & 2) r = (f <= -18.0f) ? 0.0f : r;
    if (MODE & 4) r = (f != f) ? f : r;
    return T(r);
  }
};
struct ExpSelectHalf {
  template <typename T> T operator()(T x) {
    T r = T(metal::fast::exp(float(x)));
    T outside = (x >= T(12.0f)) ? T(metal::numeric_limits<float>::infinity()) : ((x <= T(-18.0f)) ? T(0.0f) : x);
    return ((x > T(-18.0f)) && (x < T(12.0f))) ? r : outside;
  }
};
struct ExpBfloatInTurn {
  template <typename T> T operator()(T x) {
    float f = float(x);
    float r = metal::fast::exp(f);
    r = (f >= 88.721f) ? metal::numeric_limits<float>::infinity() : r;
    r = (f <= -104.0f) ? 0.0f : r;
    r = (f != f) ? f : r;
    return T(r);
  }
};
struct Identity { template <typename T> T operator()(T x) { return x; } };
#define V(M) instantiate_kernel("exp_v" #M, unary_v, half, half, ExpV<M>)
V(0) V(1) V(2) V(3) V(4) V(7)
instantiate_kernel("exp_select_half", unary_v, half, half, ExpSelectHalf)
instantiate_kernel("identity", unary_v, half, half, Identity)
instantiate_kernel("exp_v0_bf", unary_v, bfloat16_t, bfloat16_t, ExpV<0>)
instantiate_kernel("exp_in_turn_bf", unary_v, bfloat16_t, bfloat16_t, ExpBfloatInTurn)
'''
N = 1 << 26


def main():
    import cupy

    mlx = os.environ["M2V_MLX_ROOT"]
    path = "/tmp/m2v_exp_range_probe.metal"
    with open(path, "w") as f:
        f.write(VARIANTS)
    lib = m2v.compile_library(path, include_dirs=[mlx])
    mlxlib = m2v.compile_library(os.path.join(mlx, "mlx/backend/metal/kernels/unary.metal"), include_dirs=[mlx],
                                 entries=["vn_Expfloat16float16", "vn_Expbfloat16bfloat16"])
    s = m2v.Stream(timestamps=True)
    x32 = np.random.default_rng(0).uniform(-4, 4, N).astype(np.float32)
    th = torch.from_numpy(x32).cuda().half()
    tb = torch.from_numpy(x32).cuda().bfloat16()
    src = {"f16": m2v.Buffer(2 * N), "bf16": m2v.Buffer(2 * N)}
    s.upload(src["f16"], th.cpu().numpy())
    s.upload(src["bf16"], tb.cpu().view(torch.int16).numpy())
    out = m2v.Buffer(2 * N)

    def ours(kernel, dt):  # as unary.cpp dispatches vn_: N / 4 threads in threadgroups of 1024
        def launch():
            s.set_kernel(kernel)
            s.set_buffer(src[dt], 0)
            s.set_buffer(out, 1)
            s.set_bytes(np.array([N], np.int32), 2)
            s.dispatch_threads((N // 4, 1, 1), (1024, 1, 1))
        return launch

    def cuda(op, dt, t):
        k = css._kernel(css._ELEMWISE, "unary_v", [f"ELEM={css._ELEM[dt]}", "N=4", f"UNARY_OP={op}"])
        y = torch.empty_like(t)
        args = (css._raw(t), css._raw(y), cupy.uint32(N))
        return lambda: k((N // 4 // 1024,), (1024,), args)

    items = {"MLX vn_Exp f16": ours(mlxlib["vn_Expfloat16float16"], "f16")}
    for name in ("exp_v7", "exp_v0", "exp_v1", "exp_v2", "exp_v3", "exp_v4", "exp_select_half", "identity"):
        items[name + " f16"] = ours(lib[name], "f16")
    items["MLX vn_Exp bf16"] = ours(mlxlib["vn_Expbfloat16bfloat16"], "bf16")
    items["exp_in_turn_bf bf16"] = ours(lib["exp_in_turn_bf"], "bf16")
    items["exp_v0_bf bf16"] = ours(lib["exp_v0_bf"], "bf16")
    references = {"CUDA expf f16": cuda("expf", "f16", th), "CUDA __expf f16": cuda("__expf", "f16", th),
                  "CUDA identity f16": cuda("", "f16", th),
                  "CUDA expf bf16, integer rounding": cuda("expf", "bf16-int", tb)}
    timers = {k: functools.partial(time_stream, s, launch, 50) for k, launch in items.items()}
    timers.update({k: functools.partial(time_cuda, launch, 50) for k, launch in references.items()})
    times = race(timers)
    print(f"{m2v.device_info()['name']}, {N} elements, µs per dispatch (three rounds, min)")
    print_times(times, 36)
    patterns = np.tile(np.arange(1 << 16, dtype=np.uint16), N >> 16).view(np.int16)
    for label, data in (("the timing's input", None), ("every 16-bit pattern", patterns)):
        for dt, names in (("f16", ["exp_v7 f16", "MLX vn_Exp f16", "exp_v0 f16", "exp_select_half f16"]),
                          ("bf16", ["exp_in_turn_bf bf16", "MLX vn_Exp bf16"])):
            if data is not None:
                s.upload(src[dt], data)
            first = None
            for name in names:
                items[name]()
                s.synchronize()
                got = s.read(out, np.int16, (N,)).copy()
                first = got if first is None else first
                print(f"{label}: {name}: {int(np.sum(got != first))} elements differ from {names[0]}'s")


if __name__ == "__main__":
    main()
