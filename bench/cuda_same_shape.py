"""Hand-written CUDA kernels with the shape of MLX's memory-bound kernels: the same work per thread, threadgroup
size, grid and memory access order as MLX's kernel and MLX's host dispatch, as the reference for what MLX's shape can
reach on an NVIDIA GPU (bench/mlx_vs_torch.py runs them beside MLX's kernels through metal2vk and PyTorch).

- `unary(op, dt)`: `vn_<Op><T><T>` (unary.h `unary_v`, N = WorkPerThread<T>::n = 8 / sizeof(T) elements per thread
  from 2^16 elements on, else 1), dispatched as unary.cpp does: ceil(size / N) threads in threadgroups of
  min(1024, threads). Thread t handles elements N*t .. N*t + N - 1 with one 8-byte load and one 8-byte store (what
  MLX's N-element loop becomes once vectorised), the tail thread element by element. Exp computes in float with
  `expf` (full precision, as MLX's `metal::precise::exp`; `__expf` would mirror `metal::fast::exp`) and rounds to T.
  Sigmoid rounds where MLX's `Sigmoid<T>` computes in T (`op_sigmoid`); SigmoidFloat computes in float and rounds
  once, the work a fused float kernel does.
- `binary(op, dt)`: `vvn_<Op><T>` (binary.h `binary_vv`), the same shape with two 8-byte loads and one 8-byte store
  per thread; Add computes in float and rounds to T (for f16 this equals half addition: 24 >= 2 * 11 + 2 bits).
- `rms_norm(dt, eps)`: `rms_looped<T>` (rms_norm.metal, N_READS = RMS_N_READS = 4), dispatched as
  normalization.cpp does above RMS_LOOPED_LIMIT (4096): one threadgroup of 1024 threads per row. Pass 1: thread l
  reads elements r + 4l .. r + 4l + 3 (one 4-element load) for r = 0, 4096, ... and sums their squares in float;
  warp sum (simd_sum), the 32 warp sums through shared memory, warp 0 sums them and thread 0 computes
  1 / sqrt(sum / axis + eps) (precise, as metal::precise::rsqrt). Pass 2 reads x (and w) again in the same order
  and writes w * T(x * inv), the product rounded to T before the multiply by w, as MLX does.

Bytes moved: the same as MLX's kernel, access for access (the bench's GB/s counts the minimum, inputs read once and
outputs written once; rms_looped's second read of its row and its per-row read of w come from cache on both sides).
Differences, in the reference's favour or neutral: the loads are explicit vector loads (MLX's loops are element by
element in the source; a compiler may or may not merge them), and argument views are prepared once per input.
"""
import os

_ELEMENT_TYPES = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// S: the stored element (float, or the 16 bits of a half / bfloat16); all arithmetic in float.
#if ELEM == 0
typedef float S;
__device__ inline float to_f(S v) { return v; }
__device__ inline S from_f(float f) { return f; }
#elif ELEM == 1
typedef unsigned short S;
__device__ inline float to_f(S v) { return __half2float(__ushort_as_half(v)); }
__device__ inline S from_f(float f) { return __half_as_ushort(__float2half_rn(f)); }
#elif ELEM == 2
typedef unsigned short S;
__device__ inline float to_f(S v) { return __bfloat162float(__ushort_as_bfloat16(v)); }
__device__ inline S from_f(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
#else
// bfloat16 rounded to nearest even in integer arithmetic, as metal2vk's portable build narrows (docs/BFLOAT16.md)
// where a Vulkan device has no correctly rounding conversion: what the GPU's own conversion saves.
typedef unsigned short S;
__device__ inline float to_f(S v) { return __uint_as_float(unsigned(v) << 16); }
__device__ inline S from_f(float f) {
  unsigned u = __float_as_uint(f);
  unsigned rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return S((f != f ? (u | 0x400000u) : rounded) >> 16);  // a NaN stays a NaN, made quiet
}
#endif
"""

_COMMON = _ELEMENT_TYPES + r"""
__device__ inline float op_exp(float x) { return expf(x); }
// x rounded to the element type and back: where MLX's source computes in T, not in float.
__device__ inline float rounded(float x) { return to_f(from_f(x)); }
// MLX's Sigmoid<T> (unary_ops.h: y = 1 / (1 + exp(|x|)); x < 0 ? y : 1 - y) with T's roundings: exp(T) returns T;
// half arithmetic rounds each operation (1 + e, then 1 / s); bfloat arithmetic computes an expression in float and
// rounds it once (1 / (1 + e)); the caller rounds 1 - y. Float: no rounding.
__device__ inline float op_sigmoid(float x) {
  float e = rounded(expf(fabsf(x)));
#if ELEM == 1
  float y = rounded(1.0f / rounded(1.0f + e));
#else
  float y = rounded(1.0f / (1.0f + e));
#endif
  return x < 0.0f ? y : 1.0f - y;
}
// The same function computed in float and rounded once (what a fused float kernel does): the lower bound.
__device__ inline float op_sigmoid_float(float x) {
  float y = 1.0f / (1.0f + expf(fabsf(x)));
  return x < 0.0f ? y : 1.0f - y;
}
__device__ inline float op_add(float a, float b) { return a + b; }
__device__ inline float op_mul(float a, float b) { return a * b; }
"""

_ELEMWISE = _COMMON + r"""
// N elements per thread (WorkPerThread<T>::n = 8 / sizeof(T)); one 8-byte vector when N > 1.
union Vec { uint2 u; S s[N > 1 ? N : 1]; };

#ifdef UNARY_OP  // one of the two kernels per compilation: OP is its operation
#define OP UNARY_OP
extern "C" __global__ void __launch_bounds__(1024)
unary_v(const S* __restrict__ in, S* __restrict__ out, unsigned size) {
  unsigned index = (blockIdx.x * blockDim.x + threadIdx.x) * N;  // thread_position_in_grid * N (32-bit, as MLX)
  if (index >= size) return;  // threads past ceil(size / N): the partial last threadgroup dispatchThreads leaves out
  if (N > 1 && index + N > size) {
    for (int i = 0; index + i < size; ++i) out[index + i] = from_f(OP(to_f(in[index + i])));
  } else if (N == 1) {
    out[index] = from_f(OP(to_f(in[index])));
  } else {
    Vec v;
    v.u = *reinterpret_cast<const uint2*>(in + index);
#pragma unroll
    for (int i = 0; i < N; ++i) v.s[i] = from_f(OP(to_f(v.s[i])));
    *reinterpret_cast<uint2*>(out + index) = v.u;
  }
}
#endif

#ifdef BINARY_OP
#define OP BINARY_OP
extern "C" __global__ void __launch_bounds__(1024)
binary_vv(const S* __restrict__ a, const S* __restrict__ b, S* __restrict__ c, unsigned size) {
  unsigned index = (blockIdx.x * blockDim.x + threadIdx.x) * N;
  if (index >= size) return;
  if (N > 1 && index + N > size) {
    for (int i = 0; index + i < size; ++i) c[index + i] = from_f(OP(to_f(a[index + i]), to_f(b[index + i])));
  } else if (N == 1) {
    c[index] = from_f(OP(to_f(a[index]), to_f(b[index])));
  } else {
    Vec va, vb;
    va.u = *reinterpret_cast<const uint2*>(a + index);
    vb.u = *reinterpret_cast<const uint2*>(b + index);
#pragma unroll
    for (int i = 0; i < N; ++i) va.s[i] = from_f(OP(to_f(va.s[i]), to_f(vb.s[i])));
    *reinterpret_cast<uint2*>(c + index) = va.u;
  }
}
#endif
"""

_RMS = _COMMON + r"""
#define N_READS 4
// N_READS adjacent elements: 16 bytes of float, 8 bytes of 16-bit values.
#if ELEM == 0
typedef uint4 Raw;
#else
typedef uint2 Raw;
#endif
union Vec { Raw u; S s[N_READS]; };

__device__ inline float warp_sum(float v) {  // simd_sum
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

extern "C" __global__ void __launch_bounds__(1024)
rms_looped(const S* __restrict__ x, const S* __restrict__ w, S* __restrict__ out, float eps, unsigned axis_size,
           unsigned w_stride) {
  __shared__ float local_inv_mean[1];
  __shared__ float local_sums[32];
  const unsigned gid = blockIdx.x, lid = threadIdx.x, lsize = blockDim.x;
  const unsigned simd_lane_id = lid % 32, simd_group_id = lid / 32;

  float acc = 0;
  x += gid * size_t(axis_size) + lid * N_READS;
  w += w_stride * lid * N_READS;
  for (unsigned r = 0; r < axis_size; r += lsize * N_READS) {
    if (r + lid * N_READS + N_READS <= axis_size) {
      Vec v;
      v.u = *reinterpret_cast<const Raw*>(x + r);
#pragma unroll
      for (int i = 0; i < N_READS; i++) {
        float xi = to_f(v.s[i]);
        acc += xi * xi;
      }
    } else {
      for (int i = 0; i < N_READS; i++) {
        if ((r + lid * N_READS + i) < axis_size) {
          float xi = to_f(x[i + r]);
          acc += xi * xi;
        }
      }
    }
  }
  acc = warp_sum(acc);
  if (simd_group_id == 0) local_sums[simd_lane_id] = 0;
  __syncthreads();
  if (simd_lane_id == 0) local_sums[simd_group_id] = acc;
  __syncthreads();
  if (simd_group_id == 0) {
    acc = warp_sum(local_sums[simd_lane_id]);
    if (simd_lane_id == 0) local_inv_mean[0] = 1.0f / sqrtf(acc / axis_size + eps);
  }
  __syncthreads();

  const float inv = local_inv_mean[0];
  out += gid * size_t(axis_size) + lid * N_READS;
  for (unsigned r = 0; r < axis_size; r += lsize * N_READS) {
    if (r + lid * N_READS + N_READS <= axis_size) {
      Vec vx, vw, vo;
      vx.u = *reinterpret_cast<const Raw*>(x + r);
      if (w_stride == 1) {
        vw.u = *reinterpret_cast<const Raw*>(w + r);
      } else {
#pragma unroll
        for (int i = 0; i < N_READS; i++) vw.s[i] = w[w_stride * (i + r)];
      }
#pragma unroll
      for (int i = 0; i < N_READS; i++) vo.s[i] = from_f(to_f(vw.s[i]) * to_f(from_f(to_f(vx.s[i]) * inv)));
      *reinterpret_cast<Raw*>(out + r) = vo.u;
    } else {
      for (int i = 0; i < N_READS; i++) {
        if ((r + lid * N_READS + i) < axis_size)
          out[r + i] = from_f(to_f(w[w_stride * (i + r)]) * to_f(from_f(to_f(x[r + i]) * inv)));
      }
    }
  }
}
"""

# "bf16-int": bfloat16 narrowed by the integer rounding of metal2vk's portable build instead of the GPU's conversion.
_ELEM = {"f32": 0, "f16": 1, "bf16": 2, "bf16-int": 3}
_ITEMSIZE = {"f32": 4, "f16": 2, "bf16": 2, "bf16-int": 2}
# The ops with a reference: the device function computing each. SigmoidFloat is no MLX op: Sigmoid rounded once.
UNARY_OPS = {"Exp": "op_exp", "Sigmoid": "op_sigmoid", "SigmoidFloat": "op_sigmoid_float"}
BINARY_OPS = {"Add": "op_add", "Multiply": "op_mul"}
MAX_THREADS = 1024  # the threadgroup limit MLX's host code reads from the pipeline


def _kernel(source, name, defines):
    import cupy

    include = [f"-I{p}" for p in (os.path.join(cupy.cuda.get_cuda_path() or "", "include"), "/usr/local/cuda/include")
               if os.path.isdir(p)]
    kernel = cupy.RawKernel(source, name, options=("--std=c++17", *include, *[f"-D{d}" for d in defines]))
    kernel.attributes  # compiled and loaded now, not inside the caller's warm-up
    return kernel


def _raw(t):
    """A CuPy view of a torch CUDA tensor's memory (CuPy has no bfloat16: 16-bit tensors pass as int16 bits)."""
    import cupy
    import torch

    t = t.contiguous()
    return cupy.asarray(t.view(torch.int16) if t.element_size() == 2 else t)


def _prepared(fn):
    """fn(*tensors) -> (launch, output), memoised on the inputs' addresses: the bench calls the reference with the
    same tensors every repetition, so the CuPy views and the output are made once and each call only launches."""
    cache = {}

    def run(*tensors):
        key = tuple((t.data_ptr(), tuple(t.shape), t.dtype) for t in tensors)
        if key not in cache:
            cache.clear()
            cache[key] = fn(*tensors)
        launch, out = cache[key]
        launch()
        return out

    return run


def _elementwise_dispatch(size, dt):
    """(N, blocks, threads per block) as unary.cpp / binary.cpp dispatch the contiguous kernels."""
    n = 8 // _ITEMSIZE[dt] if size >= (1 << 16) else 1  # work_per_thread
    nthreads = -(-size // n)
    tg = min(MAX_THREADS, nthreads)
    return n, -(-nthreads // tg), tg


def unary(op, dt):
    """A function x -> op(x) (torch CUDA tensor, same dtype) with the shape of MLX's `vn_<Op><T><T>` / `v_...`."""
    import cupy
    import torch

    n_vn = 8 // _ITEMSIZE[dt]  # the kernel of every size from 2^16 elements on
    kernels = {n_vn: _kernel(_ELEMWISE, "unary_v", [f"ELEM={_ELEM[dt]}", f"N={n_vn}", f"UNARY_OP={UNARY_OPS[op]}"])}

    def prepare(x):
        size = x.numel()
        n, blocks, tg = _elementwise_dispatch(size, dt)
        if n not in kernels:
            kernels[n] = _kernel(_ELEMWISE, "unary_v", [f"ELEM={_ELEM[dt]}", f"N={n}", f"UNARY_OP={UNARY_OPS[op]}"])
        k = kernels[n]
        y = torch.empty_like(x)
        args = (_raw(x), _raw(y), cupy.uint32(size))
        return (lambda: k((blocks,), (tg,), args)), y

    return _prepared(prepare)


def binary(op, dt):
    """A function (a, b) -> op(a, b) (torch CUDA tensors of one shape) with the shape of MLX's `vvn_<Op><T>`."""
    import cupy
    import torch

    n_vn = 8 // _ITEMSIZE[dt]
    kernels = {n_vn: _kernel(_ELEMWISE, "binary_vv", [f"ELEM={_ELEM[dt]}", f"N={n_vn}",
                                                      f"BINARY_OP={BINARY_OPS[op]}"])}

    def prepare(a, b):
        size = a.numel()
        if b.numel() != size:
            raise ValueError("the vv kernel takes two arrays of one size")
        n, blocks, tg = _elementwise_dispatch(size, dt)
        if n not in kernels:
            kernels[n] = _kernel(_ELEMWISE, "binary_vv", [f"ELEM={_ELEM[dt]}", f"N={n}", f"BINARY_OP={BINARY_OPS[op]}"])
        k = kernels[n]
        c = torch.empty_like(a)
        args = (_raw(a), _raw(b), _raw(c), cupy.uint32(size))
        return (lambda: k((blocks,), (tg,), args)), c

    return _prepared(prepare)


def silu(dt):
    """A function x -> x * sigmoid(x) as MLX's nn.silu runs without mx.compile: the Sigmoid kernel, then the Multiply
    kernel reading x and the sigmoid back (2.5x the bytes of one fused kernel)."""
    sigmoid, multiply = unary("Sigmoid", dt), binary("Multiply", dt)
    return lambda x: multiply(x, sigmoid(x))


def rms_norm(dt, eps):
    """A function (x, w, b=None) -> rms_norm(x) * w over the last axis (torch CUDA tensors; b ignored: the bench
    passes its layer_norm bias too) with the shape of MLX's `rms_looped<T>`: one 1024-thread block per row."""
    import cupy
    import torch

    kernel = _kernel(_RMS, "rms_looped", [f"ELEM={_ELEM[dt]}"])

    def prepare(x, w, b=None):
        axis = x.shape[-1]
        rows = x.numel() // axis
        if axis % 4:
            raise ValueError("the reference's vector loads take an axis that is a multiple of 4")
        if w.dim() != 1 or w.shape[0] != axis:
            raise ValueError("the weight is one row of the axis' length")
        y = torch.empty_like(x)
        args = (_raw(x), _raw(w), _raw(y), cupy.float32(eps), cupy.uint32(axis), cupy.uint32(1))
        return (lambda: kernel((rows,), (MAX_THREADS,), args)), y

    return _prepared(prepare)


def _time(fn, args, reps=20):
    import torch

    for _ in range(5):
        fn(*args)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn(*args)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / reps


def main():
    """The references alone against PyTorch at the bench's sizes, timed and checked: python3 bench/cuda_same_shape.py.
    GB/s counts the bytes each kernel must move (inputs read once, outputs written once)."""
    import torch

    eps = 1e-5
    torch.manual_seed(0)
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "bf16-int": torch.bfloat16}
    for dt in ("f32", "f16", "bf16", "bf16-int"):
        n = 1 << 26
        x = (torch.rand(n, device="cuda") * 8 - 4).to(tdt[dt])
        y = (torch.rand(n, device="cuda") * 8 - 4).to(tdt[dt])
        r = 8192
        m = (torch.rand((r, r), device="cuda") * 4 - 2).to(tdt[dt])
        w = (torch.rand(r, device="cuda") + 0.5).to(tdt[dt])
        cases = [(f"exp {dt} 2^26", unary("Exp", dt), torch.exp, (x,), 2 * n),
                 (f"sigmoid {dt} 2^26", unary("Sigmoid", dt), torch.sigmoid, (x,), 2 * n),
                 (f"sigmoid {dt} 2^26 (rounded once)", unary("SigmoidFloat", dt), torch.sigmoid, (x,), 2 * n),
                 (f"add {dt} 2^26", binary("Add", dt), torch.add, (x, y), 3 * n),
                 (f"silu {dt} 2^26 (two kernels)", silu(dt), torch.nn.functional.silu, (x,), 2 * n),
                 (f"rms_norm {dt} {r}x{r}", rms_norm(dt, eps),
                  lambda a, b: torch.nn.functional.rms_norm(a, (r,), b, eps=eps), (m, w), 2 * r * r)]
        for name, ref, fn, args, elems in cases:
            want, got = fn(*args).double(), ref(*args).double()
            err = float(((got - want).abs() / want.abs().clamp(min=1)).max())
            nbytes = elems * _ITEMSIZE[dt]
            t_ref, t_torch = _time(ref, args), _time(fn, args)
            print(f"{name}: same-shape CUDA {t_ref:.1f} us ({nbytes / t_ref / 1e3:.0f} GB/s), PyTorch {t_torch:.1f} us "
                  f"({nbytes / t_torch / 1e3:.0f} GB/s), max rel diff {err:.1g}", flush=True)


if __name__ == "__main__":
    main()
