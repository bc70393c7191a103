"""How long the first use of a Metal-4 (NAX) kernel takes, and where: metal2vk's compile of the entry (both builds),
then the first dispatch (the driver builds the pipeline for the kernel's function constants), a dispatch with other
function constants (another pipeline), and a warm dispatch; the same for MLX's steel GEMM as the comparison.

    PYTHONPATH=<metal2vk python> python3 bench/nax_first_use.py [--mlx ROOT] [--report PREFIX]

Each kernel runs MLX's GEMM launch for a 256 x 256 x 256 f16 product (cases/nax.py, cases/steel_gemm.py)."""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LIB = os.path.join(os.path.dirname(HERE), "corpus", "mlx-library")
sys.path.insert(0, LIB)
sys.path.insert(0, os.path.join(LIB, "cases"))

import metal2vk as m2v  # noqa: E402
import steel_gemm as sg  # noqa: E402

KERNELS = [
    ("steel/gemm/kernels/steel_gemm_fused_nax.metal", "steel_gemm_fused_nax_nn_float16_float16_bm64_bn128_bk256_wm2_wn4",
     (64, 128, 256, 2, 4)),
    ("steel/gemm/kernels/steel_gemm_fused.metal", "steel_gemm_fused_nn_float16_float16_bm64_bn64_bk16_wm1_wn2",
     (64, 64, 16, 1, 2)),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlx", default=os.environ.get("M2V_MLX_ROOT", os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                                                                   "shared", "third_party", "mlx")))
    ap.add_argument("--report")
    args = ap.parse_args()
    n = 256
    rows = []
    for file, entry, (bm, bn, bk, wm, wn) in KERNELS:
        t0 = time.perf_counter()
        kernel = m2v.compile_library(os.path.join(args.mlx, "mlx/backend/metal/kernels", file), entries=[entry],
                                     include_dirs=[args.mlx])[entry]
        compile_s = time.perf_counter() - t0
        s = m2v.Stream()
        a, b, out = (m2v.Buffer(n * n * 2) for _ in range(3))
        for buf in (a, b):
            s.upload(buf, np.zeros((n, n), np.float16))
        params = sg.gemm_params(n, n, n, n, n, n, n // bn, n // bm, n * n, n * n, n * n, 0, n // bk, 1)

        def dispatch(aligned):
            s.set_kernel(kernel)
            for index, value in {10: False, 100: False, 110: False, 200: aligned, 201: aligned, 202: aligned}.items():
                s.set_function_constant(index, value)
            for i, buf in ((0, a), (1, b), (3, out)):
                s.set_buffer(buf, i)
            s.set_bytes(params, 4)
            s.dispatch_threadgroups((n // bn, n // bm, 1), (32, wn, wm))
            t = time.perf_counter()
            s.synchronize()
            return time.perf_counter() - t

        times = []
        for aligned in (True, False, True):
            t = time.perf_counter()
            dispatch(aligned)
            times.append(time.perf_counter() - t)
        rows.append({"entry": entry, "compile_s": compile_s, "first_dispatch_s": times[0],
                     "other_constants_s": times[1], "warm_dispatch_s": times[2],
                     "path": kernel.simdgroup_matrix_path,
                     "spirv_words": len(kernel.cooperative_spirv or kernel.spirv) // 4})
        print(json.dumps(rows[-1]), flush=True)
    if args.report:
        with open(args.report + ".json", "w") as f:
            json.dump({"device": m2v.device_info()["description"], "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
