"""The run suite's harness: MLX's kernels compiled unchanged, launched the way MLX's host code launches them
(mlx/backend/metal/*.cpp), checked against CPU references written in numpy from what each op means.

A case module (cases/*.py) defines `cases()`, yielding `Case` objects. A case names the .metal file (relative to
MLX's kernels folder) and the entry points it launches, and a `run(ctx)` function that records the launches on
`ctx` exactly as MLX's host code would (kernel name selection, grid and threadgroup, setBytes parameters, function
constants, threadgroup memory, multi-pass sequences) and checks the outputs with `ctx.check`.

mlxhost.py holds the launch-side helpers MLX's host code uses (block dims, 2-D grids, contiguous-dims collapsing).
"""
import os
import struct
import concurrent.futures
import sys
import time
import traceback

import numpy as np

import metal2vk as m2v
from mlxhost import mlx_buffer_size

MAX_THREADS = 1024  # MTLComputePipelineState.maxTotalThreadsPerThreadgroup that MLX's host code reads

# Our short dtype names -> (MLX's type name in kernel names, numpy storage dtype, default tolerance)
DTYPES = {
    "f32": ("float32", np.dtype(np.float32), 1e-5),
    "f16": ("float16", np.dtype(np.float16), 2e-3),
    "bf16": ("bfloat16", m2v.bfloat16, 1.6e-2),
    "i32": ("int32", np.dtype(np.int32), 0),
    "u32": ("uint32", np.dtype(np.uint32), 0),
    "i64": ("int64", np.dtype(np.int64), 0),
    "u64": ("uint64", np.dtype(np.uint64), 0),
    "i16": ("int16", np.dtype(np.int16), 0),
    "u16": ("uint16", np.dtype(np.uint16), 0),
    "i8": ("int8", np.dtype(np.int8), 0),
    "u8": ("uint8", np.dtype(np.uint8), 0),
    "bool": ("bool_", np.dtype(np.bool_), 0),
}
FLOATS = ("f32", "f16", "bf16")


def tname(dt):
    """MLX's type name as it appears in kernel names (type_to_name): float32, float16, bfloat16, int32, ..."""
    return DTYPES[dt][0]


def itemsize(dt):
    return DTYPES[dt][1].itemsize


def store(values, dt):
    """float64/int values -> the array of dtype `dt` as the GPU stores it (bfloat16 rounds to nearest even)."""
    if dt == "bf16":
        return m2v.to_bfloat16(np.asarray(values, dtype=np.float64).astype(np.float32))
    return np.ascontiguousarray(np.asarray(values).astype(DTYPES[dt][1]))


def load(arr, dt):
    """An array of dtype `dt` -> float64 values (ints stay exact up to 2^53)."""
    if dt == "bf16":
        return m2v.from_bfloat16(arr).astype(np.float64)
    if dt in ("i64", "u64"):
        return np.asarray(arr)
    return np.asarray(arr).astype(np.float64)


def rounded(values, dt):
    """The values the GPU sees after storing them as `dt`."""
    return load(store(values, dt), dt)


def split_entry(file, entry):
    """(file, entry) of a case's kernel: `entry` lives in the case's file, `OTHER.metal:entry` in another one."""
    if ":" in entry:
        other, name = entry.split(":", 1)
        return other, name
    return file, entry


class Case:
    """kernels: the entry points run() launches, of `file` (relative to MLX's kernels folder) or, written
    `OTHER.metal:entry`, of another file (a sequence that passes through copy.metal or reduce.metal, say)."""

    def __init__(self, name, family, file, kernels, run, note="", budget_scale=1):
        self.name, self.family, self.file, self.kernels, self.run, self.note = name, family, file, kernels, run, note
        # A case known to be long waits `budget_scale` times the device's budget (metal2vk.device_info()["timeout_ms"]:
        # a GPU's is seconds, a CPU device's minutes) before it counts as hung.
        self.budget_scale = budget_scale


class Mismatch(Exception):
    pass


class Ctx:
    """What a case records its launches on. One per case; the stream and compiled libraries are shared."""

    def __init__(self, runner, case, seed):
        self.runner, self.case = runner, case
        self.s = runner.stream
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.errors = []  # (label, max error, tolerance)
        self.dispatches = 0
        self.matrix_paths = set()  # how the launched kernels multiply simdgroup matrices (Kernel.simdgroup_matrix_path)

    # --- kernels and buffers ---
    def kernel(self, entry):
        """`entry` of the case's file, or `FILE:entry` of another file (multi-file sequences)."""
        return self.runner.kernel(*split_entry(self.case.file, entry))

    # Buffers are as long as MLX's allocator makes them (whole 16 KiB pages): some kernels touch a few elements past
    # an array's end, which on Metal lands in that slack.
    def buffer(self, arr):
        arr = np.ascontiguousarray(arr)
        b = m2v.Buffer(mlx_buffer_size(arr.nbytes))
        if arr.nbytes:
            self.s.upload(b, arr)
        return b

    def empty(self, nbytes, poison=True):
        """A fresh buffer; poisoned with 0xFF bytes (NaN for floats, -1 for ints) so unwritten outputs show."""
        b = m2v.Buffer(mlx_buffer_size(nbytes))
        self.s.fill(b, 0xFF if poison else 0)
        return b

    def zeros(self, nbytes):
        return self.empty(nbytes, poison=False)

    def rand(self, shape, dt, lo=-1.0, hi=1.0):
        """Uniform random input: (device buffer, the float64 values as stored)."""
        if dt in FLOATS:
            v = rounded(self.rng.uniform(lo, hi, size=shape), dt)
        elif dt == "bool":
            v = self.rng.integers(0, 2, size=shape).astype(np.bool_)
        else:
            v = self.rng.integers(int(lo), int(hi) + 1, size=shape)
            v = v.astype(DTYPES[dt][1])
        return self.buffer(store(v, dt)), (v if dt in FLOATS else np.asarray(v))

    def upload(self, values, dt):
        """Stores float64/int `values` as `dt`: (buffer, the values as stored)."""
        arr = store(values, dt)
        return self.buffer(arr), load(arr, dt) if dt in FLOATS else np.asarray(arr)

    def read(self, buf, dt, shape, offset=0):
        arr = self.s.read(buf, DTYPES[dt][1], tuple(np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),),
                          offset)
        return load(arr, dt) if dt in FLOATS else arr

    # --- launches ---
    def launch(self, entry, args, grid=None, groups=None, threadgroup=(1, 1, 1), constants=None, tgmem=None):
        """One dispatch. args: {index: Buffer | (Buffer, byte offset) | numpy scalar/array | bytes}: buffers bind
        with setBuffer, everything else goes through setBytes. `grid` (threads, dispatchThreads) or `groups`
        (dispatchThreadgroups). constants: {index: value}; tgmem: {index: bytes}."""
        s = self.s
        kernel = self.kernel(entry)
        s.set_kernel(kernel)
        for index, value in (constants or {}).items():
            s.set_function_constant(index, value)
        for index, length in (tgmem or {}).items():
            s.set_threadgroup_memory_length(int(length), index)
        for index, a in args.items():
            if isinstance(a, m2v.Buffer):
                s.set_buffer(a, index)
            elif isinstance(a, tuple) and isinstance(a[0], m2v.Buffer):
                s.set_buffer(a[0], index, int(a[1]))
            else:
                s.set_bytes(a if isinstance(a, (bytes, bytearray)) else np.ascontiguousarray(a), index)
        if kernel.simdgroup_matrix_path:
            self.matrix_paths.add(kernel.simdgroup_matrix_path)
        dims = lambda d: tuple(int(x) for x in (list(d) + [1, 1])[:3])
        if groups is not None:
            s.dispatch_threadgroups(dims(groups), dims(threadgroup))
        else:
            s.dispatch_threads(dims(grid), dims(threadgroup))
        self.dispatches += 1

    # --- checking ---
    def check(self, label, got, want, tol=None, dt=None):
        """max |got - want| / max(1, |want|) over the elements where `want` is not NaN must be <= tol (default by
        dtype). NaN or inf on one side only is an infinite error; equal infinities match."""
        got = np.asarray(got, dtype=np.float64).reshape(-1)
        want = np.asarray(want, dtype=np.float64).reshape(-1)
        if got.shape != want.shape:
            raise Mismatch(f"{label}: {got.size} values, reference has {want.size}")
        if tol is None:
            tol = DTYPES[dt][2] if dt else 1e-5
        mask = ~np.isnan(want)
        g, w = got[mask], want[mask]
        with np.errstate(invalid="ignore", over="ignore"):
            same_inf = np.isinf(w) & (g == w)
            err = np.where(same_inf, 0.0, np.abs(g - w) / np.maximum(1.0, np.abs(w)))
        err = np.where(np.isnan(err), np.inf, err)
        worst = float(err.max()) if err.size else 0.0
        self.errors.append((label, worst, tol))
        if worst > tol:
            i = int(np.argmax(err))
            idx = np.flatnonzero(mask)[i]
            raise Mismatch(f"{label}: max error {worst:.3g} > {tol:g} at flat index {idx} (got {g[i]!r}, "
                           f"want {w[i]!r})")

    def check_exact(self, label, got, want):
        got, want = np.asarray(got).reshape(-1), np.asarray(want).reshape(-1)
        if got.shape != want.shape:
            raise Mismatch(f"{label}: {got.size} values, reference has {want.size}")
        bad = np.flatnonzero(got != want)
        self.errors.append((label, float(bad.size), 0))
        if bad.size:
            i = int(bad[0])
            raise Mismatch(f"{label}: {bad.size} of {got.size} differ, first at {i} (got {got[i]!r}, want {want[i]!r})")


def u32(v):
    return np.uint32(v)


def i32(v):
    return np.int32(v)


def i64(v):
    return np.int64(v)


def f32(v):
    return np.float32(v)


def vec(values, dtype):
    """set_vector_bytes: the vector's elements back to back (MLX sends at least one element's room)."""
    a = np.asarray(values, dtype=dtype).reshape(-1)
    return a if a.size else np.zeros(1, dtype=dtype)


def pack(fmt, *values):
    """A setBytes struct with explicit layout (struct module format, little endian)."""
    return struct.pack("<" + fmt, *values)


# ---------------------------------------------------------------------------------------------------------------
class Result:
    def __init__(self, case):
        self.case = case
        self.stage = "not run"  # compile | refused | error | ran | matched
        self.cause = ""
        self.message = ""
        self.gpu_us = None
        self.max_error = None
        self.seed = None
        self.dispatches = 0
        self.matrix_path = ""  # "cooperative_matrix", "shuffle" or both, for kernels with a cooperative build


def device_error_cause(e):
    return "timeout" if isinstance(e, m2v.TimeoutError) else "device error"


class Runner:
    def __init__(self, mlx_root, jobs=0, log=sys.stderr):
        self.mlx_root = mlx_root
        self.kernels_dir = os.path.join(mlx_root, "mlx", "backend", "metal", "kernels")
        self.jobs = jobs
        self.libs = {}  # file -> Library
        self.compile_errors = {}  # (file, entry) -> message
        self.compile_ms = {}
        self.log = log
        self.stream = None

    def compile(self, cases):
        """Compiles each file once, only the entries the cases launch (partial: one entry's failure is its own)."""
        wanted = {}
        for c in cases:
            for k in c.kernels:
                file, entry = split_entry(c.file, k)
                wanted.setdefault(file, set()).add(entry)
        def compile_file(item):
            file, entries = item
            t0 = time.time()
            lib = m2v.compile_library(os.path.join(self.kernels_dir, file), entries=sorted(entries),
                                      include_dirs=[self.mlx_root], jobs=self.jobs, partial=True)
            return file, entries, lib, (time.time() - t0) * 1e3

        # Files compile side by side (the compiler releases the GIL): a file of a few slow entry points (MLX's NAX
        # files: 5-50 s each) no longer leaves the other cores idle.
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(len(wanted), os.cpu_count() or 1))) as pool:
            compiled = list(pool.map(compile_file, sorted(wanted.items())))
        for file, entries, lib, ms in compiled:
            self.compile_ms[file] = ms
            self.libs[file] = lib
            errors = [ln for ln in lib.diagnostics.splitlines() if "error" in ln]
            for e in entries:
                if e not in lib:
                    # the entry's own diagnostic when one names it, else the library's first
                    own = next((ln for ln in errors if f"'{e}'" in ln), "")
                    self.compile_errors[(file, e)] = own or (errors[0] if errors else "entry point not produced")
            print(f"compiled {file}: {len(lib)}/{len(entries)} entries in {self.compile_ms[file]:.0f} ms",
                  file=self.log)

    def device_timeout_ms(self):
        return m2v.device_info()["timeout_ms"]

    def kernel(self, file, entry):
        return self.libs[file][entry]

    def run_case(self, case, seed):
        r = Result(case)
        r.seed = seed
        missing = [split_entry(case.file, e) for e in case.kernels if split_entry(case.file, e) in self.compile_errors]
        if missing:
            r.stage, r.cause = "compile", "compile error"
            r.message = f"{missing[0][1]}: {self.compile_errors[missing[0]]}"
            return r
        self.stream.take_timings()
        self.stream.timeout_ms = max(1, int(self.device_timeout_ms() * case.budget_scale)) if case.budget_scale != 1 else 0
        ctx = Ctx(self, case, seed)
        try:
            case.run(ctx)
            self.stream.synchronize()
            r.stage = "matched"
        except Mismatch as e:
            r.stage, r.cause, r.message = "ran", "mismatch", str(e)
        except m2v.UnsupportedError as e:
            r.stage, r.cause, r.message = "refused", "refused by device", str(e).splitlines()[0]
        except m2v.DeviceError as e:
            # A timeout or a lost device fails this case alone: the next stream runs on the same device when the
            # kernels were stopped, on a new one when the device was given up.
            r.stage, r.cause, r.message = "error", device_error_cause(e), str(e).splitlines()[0]
            self.stream = m2v.Stream(timestamps=True)
        except Exception as e:  # a harness error is reported, never hidden
            r.stage, r.cause = "error", type(e).__name__
            r.message = (str(e).splitlines() or [""])[0] + " | " + traceback.format_exc().splitlines()[-3].strip()
        try:
            self.stream.synchronize()
            t = self.stream.take_timings()
            if t and r.stage in ("matched", "ran"):
                r.gpu_us = sum(x["gpu_ns"] for x in t) / 1e3
        except Exception as e:  # a fault after the checks still fails the case
            r.stage, r.cause, r.message = "error", device_error_cause(e), str(e).splitlines()[0]
            self.stream = m2v.Stream(timestamps=True)
        r.dispatches = ctx.dispatches
        r.matrix_path = ",".join(sorted(ctx.matrix_paths))
        if ctx.errors:
            r.max_error = max(x[1] for x in ctx.errors)
        msgs = m2v.validation_messages()
        if msgs and r.stage == "matched":
            r.stage, r.cause, r.message = "ran", "validation message", msgs[0].splitlines()[0]
        return r
