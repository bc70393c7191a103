#!/usr/bin/env python3
"""What MLX's rms_norm (`rms_looped<T>`, 8192 x 8192) loses to its output loop's narrow accesses: the kernel as MLX
writes it, through metal2vk, beside the same kernel whose output loop reads x and w and writes out as 4-element
vectors (what combining a thread's adjacent accesses would give, with w's stride 1 and out's row apart from w), the
same-shape CUDA kernel (bench/cuda_same_shape.py) and PyTorch's rms_norm, in one process.

    PYTHONPATH=<metal2vk python> M2V_MLX_ROOT=<MLX checkout> python3 bench/rms_output_widening.py

The vector variant is made at run time from the MLX checkout's rms_norm.metal: its `rms_looped` template, renamed,
with the output loop's full-tile branch replaced by vector accesses (nothing of MLX's is stored here). Dispatch as
normalization.cpp does past 4096 columns: one 1024-thread threadgroup per row, w_stride 1. Each timing is 20
dispatches after a 0.3 s warm-up, three rounds in alternating order; the variant's output is compared with MLX's.
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

ROWS = AXIS = 8192
VECTOR_OUTPUT = '''  out += gid * size_t(axis_size) + lid * N_READS;
  for (uint r = 0; r < axis_size; r += lsize * N_READS) {
    if (r + lid * N_READS + N_READS <= axis_size) {
      vec<T, 4> xv = *(const device vec<T, 4>*)(x + r);
      vec<T, 4> wv = *(const device vec<T, 4>*)(w + r);
      vec<T, 4> o;
      for (int i = 0; i < N_READS; i++) o[i] = wv[i] * static_cast<T>(xv[i] * local_inv_mean[0]);
      *(device vec<T, 4>*)(out + r) = o;
    }
  }
}
'''


def vector_variant(mlx):
    src = open(os.path.join(mlx, "mlx/backend/metal/kernels/rms_norm.metal")).read()
    start = src.index("[[kernel]] void rms_looped(")
    start = src.rindex("template", 0, start)
    end = src.index("template", src.index("[[kernel]] void rms_looped(") + 1)
    looped = src[start:end].replace("void rms_looped(", "void rms_looped_vector(")
    out_loop = looped.index("  out += gid * size_t(axis_size)")
    head = src[:src.index("template")]  # the file's includes and declarations
    names = "".join(f'instantiate_kernel("rms_looped_vector{t}", rms_looped_vector, {ty})\n'
                    for t, ty in (("float32", "float"), ("float16", "half")))
    return head + looped[:out_loop] + VECTOR_OUTPUT + names


def main():
    mlx = os.environ["M2V_MLX_ROOT"]
    path = "/tmp/m2v_rms_output_widening.metal"
    with open(path, "w") as f:
        f.write(vector_variant(mlx))
    variant = m2v.compile_library(path, include_dirs=[mlx])
    mlxlib = m2v.compile_library(os.path.join(mlx, "mlx/backend/metal/kernels/rms_norm.metal"), include_dirs=[mlx],
                                 entries=["rms_loopedfloat16", "rms_loopedfloat32"])
    s = m2v.Stream(timestamps=True)
    rng = np.random.default_rng(0)
    x32 = rng.uniform(-2, 2, (ROWS, AXIS)).astype(np.float32)
    w32 = rng.uniform(0.5, 1.5, AXIS).astype(np.float32)

    print(f"{m2v.device_info()['name']}, rms_norm {ROWS} x {AXIS}, µs per dispatch (three rounds, min)")
    for dt, tname, npdt, tdt in (("f32", "float32", np.float32, torch.float32),
                                 ("f16", "float16", np.float16, torch.float16)):
        xb, wb, ob = m2v.Buffer(x32.size * 4), m2v.Buffer(w32.size * 4), m2v.Buffer(x32.size * 4)
        s.upload(xb, x32.astype(npdt))
        s.upload(wb, w32.astype(npdt))

        def ours(kernel):
            def launch():
                s.set_kernel(kernel)
                s.set_buffer(xb, 0)
                s.set_buffer(wb, 1)
                s.set_buffer(ob, 2)
                s.set_bytes(np.array([1e-5], np.float32), 3)
                s.set_bytes(np.array([AXIS], np.uint32), 4)
                s.set_bytes(np.array([1], np.uint32), 5)
                s.dispatch_threadgroups((ROWS, 1, 1), (1024, 1, 1))
            return launch

        tx, tw = torch.from_numpy(x32).cuda().to(tdt), torch.from_numpy(w32).cuda().to(tdt)
        reference = css.rms_norm(dt, 1e-5)
        items = {f"MLX rms_looped {dt}": ours(mlxlib["rms_looped" + tname]),
                 f"vector output loop {dt}": ours(variant["rms_looped_vector" + tname]),
                 f"CUDA same-shape {dt}": lambda: reference(tx, tw),
                 f"PyTorch rms_norm {dt}": lambda: torch.nn.functional.rms_norm(tx, (AXIS,), tw, 1e-5)}
        timers = {k: functools.partial(time_cuda, launch, 20) if k.startswith(("CUDA", "PyTorch"))
                  else functools.partial(time_stream, s, launch, 20) for k, launch in items.items()}
        print_times(race(timers), 28)
        outs = []
        for k in (f"MLX rms_looped {dt}", f"vector output loop {dt}"):
            items[k]()
            s.synchronize()
            outs.append(s.read(ob, npdt, (x32.size,)).copy())
        print(f"{dt}: the vector variant's output differs from MLX's in {int(np.sum(outs[0] != outs[1]))} elements")


if __name__ == "__main__":
    main()
