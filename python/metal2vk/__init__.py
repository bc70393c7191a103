"""metal2vk: MLX-style Metal compute kernels (``mx.fast.metal_kernel``) on any Vulkan 1.3 GPU.

    import numpy as np, metal2vk as m2v
    k = m2v.metal_kernel(name="myexp", input_names=["inp"], output_names=["out"],
                         source="uint i = thread_position_in_grid.x; out[i] = metal::exp(inp[i]);")
    (out,) = k(inputs=[np.ones(16, np.float32)], grid=(16, 1, 1), threadgroup=(16, 1, 1),
               output_shapes=[(16,)], output_dtypes=[np.float32])

Dtypes: numpy dtypes/types or MLX names ("float32", "float16", "bfloat16", "int32", "bool", ...).

bfloat16: numpy has no bfloat16, so bfloat16 arrays travel as numpy ``uint16`` arrays holding the bits, with the
dtype ``metal2vk.bfloat16`` (= ``np.dtype(np.uint16, metadata={"m2v_dtype": "bfloat16"})``). A plain uint16 array
is uint16. ``to_bfloat16(x)`` rounds float values to nearest-even bfloat16 and returns such an array;
``from_bfloat16(b)`` gives float32. Outputs declared "bfloat16" come back with the ``metal2vk.bfloat16`` dtype.
``ml_dtypes.bfloat16`` arrays are accepted as inputs too when that package is installed.

Whole .metal files (MLX's kernel library, any multi-file project) and Metal's host-side launch model:

    lib = m2v.compile_library("softmax.metal", entries=["block_softmax_float32"], include_dirs=[mlx_root])
    s = m2v.Stream(timestamps=True)
    x = s.buffer(np.random.rand(8, 1000).astype(np.float32)); y = m2v.Buffer(8 * 1000 * 4)
    s.set_kernel(lib["block_softmax_float32"]); s.set_buffer(x, 0); s.set_buffer(y, 1)
    s.set_bytes(np.int32(1000), 2)                 # setBytes; set_function_constant, set_threadgroup_memory_length
    s.dispatch_threadgroups((8, 1, 1), (1024, 1, 1))   # or dispatch_threads(grid, threadgroup)
    out = s.read(y, np.float32, (8, 1000))       # waits; s.take_timings() gives GPU times

Python scalars as inputs: bool -> bool, int -> int32 (int64 if it does not fit), float -> float32.
"""
import numpy as _np

from ._core import (  # noqa: F401
    Buffer,
    CompileError,
    DeviceError,
    Error,
    Kernel,
    Library,
    MetalKernel,
    Stream,
    TimeoutError,
    UnsupportedError,
    UsageError,
    bfloat16,
    cache_dir,
    cache_stats,
    clear_memory_cache,
    compile_library,
    compiler_version,
    cooperative_matrix_unavailable_reason,
    device_info,
    devices,
    load_kernel,
    metal_kernel,
    pipeline_stats,
    set_device,
    validation_messages,
)

__all__ = [
    "metal_kernel", "MetalKernel", "devices", "set_device", "device_info", "bfloat16", "to_bfloat16",
    "from_bfloat16", "is_bfloat16", "cache_stats", "cache_dir", "clear_memory_cache", "compiler_version",
    "validation_messages", "pipeline_stats", "cooperative_matrix_unavailable_reason", "compile_library", "load_kernel", "Library", "Kernel", "Buffer", "Stream",
    "Error", "CompileError", "UnsupportedError", "UsageError", "DeviceError",
]


def is_bfloat16(x) -> bool:
    """True when ``x`` (an array or dtype) is metal2vk's bfloat16 representation."""
    dt = x if isinstance(x, _np.dtype) else getattr(x, "dtype", None)
    return dt is not None and dt.metadata is not None and dt.metadata.get("m2v_dtype") == "bfloat16"


def to_bfloat16(x) -> _np.ndarray:
    """float values -> bfloat16 (round to nearest even, NaN stays NaN) as a ``metal2vk.bfloat16`` array."""
    f = _np.ascontiguousarray(_np.asarray(x, dtype=_np.float32))
    bits = f.view(_np.uint32).astype(_np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(_np.uint16)
    nan = _np.isnan(f)
    if nan.any():
        rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(_np.uint16)
    return rounded.view(bfloat16)


def from_bfloat16(b) -> _np.ndarray:
    """bfloat16 bits (a ``metal2vk.bfloat16`` or uint16 array) -> float32."""
    u = _np.ascontiguousarray(_np.asarray(b).view(_np.uint16))
    return (u.astype(_np.uint32) << 16).view(_np.float32)
