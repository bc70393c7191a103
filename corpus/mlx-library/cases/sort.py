"""Sort and argsort (sort.metal), launched as gpu_merge_sort (mlx/backend/metal/sort.cpp) launches them.

Block size: 4 elements per thread, bn the smallest of 32..512 threads that covers the axis (at most 256 for 8-byte
types). One block (axis <= bn * 4): one threadgroup per row, `c*_block_sort_*` when the input is contiguous and the
sorted axis has the smallest or largest stride of both input and (row-contiguous) output, with the rows' segment
strides as ints, else `nc*_block_sort_*` with the other dims' shape and strides. Several blocks: `sort_mbsort_*`
sorts each 2048-element block of each row into a row-contiguous (rows, axis) scratch pair (values, uint32
indices), then for merge_tiles = 2, 4, ... while merge_tiles / 2 < n_blocks, `partition_mbsort_*` (n_blocks + 1
threads per row) finds the merge-path splits and `merge_mbsort_*` merges into the other scratch pair (ping-pong).

MLX then copies the last scratch buffer (values, or indices for argsort) into the output with copy.metal
(copy_gpu_inplace); that copy is not part of sort.metal, so the multi-block cases read the scratch buffer itself:
row r holds the sorted axis of the r-th row-major position over the other dims."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _reduce_util import View  # noqa: E402
from mlxhost import ceildiv, row_strides  # noqa: E402
from mlxrun import Case, Mismatch, itemsize, tname, vec  # noqa: E402

FILE = "sort.metal"
INT32_MAX = (1 << 31) - 1
TN = 4


def block_size(size, dt):
    pot = ceildiv(size, TN)
    bn = 512 if pot > 256 else 256 if pot > 128 else 128 if pot > 64 else 64 if pot > 32 else 32
    if bn == 512 and itemsize(dt) > 4:
        bn = 256
    return bn


def plan_names(dt, view, axis, argsort):
    """The kernel names gpu_merge_sort picks."""
    size = view.shape[axis]
    bn = block_size(size, dt)
    n_blocks = ceildiv(size, bn * TN)
    if n_blocks > 1:
        sfx = f"{tname(dt)}_uint32_bn{bn}_tn{TN}"
        return [f"sort_mbsort_{sfx}", f"partition_mbsort_{sfx}", f"merge_mbsort_{sfx}"], bn, n_blocks
    out_dt = "u32" if argsort else dt
    out_strides = row_strides(view.shape)

    def extreme(strides, s):
        return s == min(strides) or s == max(strides)

    contiguous = view.contiguous and extreme(view.strides, view.strides[axis]) and \
        extreme(out_strides, out_strides[axis])
    name = f"{'c' if contiguous else 'nc'}{'arg' if argsort else ''}_block_sort_{tname(dt)}_{tname(out_dt)}" \
           f"_bn{bn}_tn{TN}"
    return [name], bn, n_blocks


def launch_sort(ctx, dt, src, view, axis, argsort):
    """Returns (buffer, layout): 'out' = a row-contiguous array of the view's shape; 'rows' = (n_rows, size)."""
    names, bn, n_blocks = plan_names(dt, view, axis, argsort)
    size = view.shape[axis]
    n_rows = view.size // size
    nc_shape = [s for i, s in enumerate(view.shape) if i != axis]
    in_nc = [s for i, s in enumerate(view.strides) if i != axis]
    if n_blocks == 1:
        out_dt = "u32" if argsort else dt
        out = ctx.empty(view.size * itemsize(out_dt))
        out_strides = row_strides(view.shape)
        out_nc = [s for i, s in enumerate(out_strides) if i != axis]
        args = {0: src, 1: out, 2: np.int32(size), 3: np.int32(view.strides[axis]), 4: np.int32(out_strides[axis])}
        if names[0].startswith("c"):
            seg_in = seg_out = INT32_MAX
            for n, si, so in zip(nc_shape, in_nc, out_nc):
                if n == 1:
                    continue
                seg_in, seg_out = min(seg_in, si), min(seg_out, so)
            args.update({5: np.int32(seg_in), 6: np.int32(seg_out)})
        else:
            args[5] = np.int32(len(nc_shape))
            if nc_shape:
                args.update({6: vec(nc_shape, np.int32), 7: vec(in_nc, np.int64), 8: vec(out_nc, np.int64)})
            else:
                args.update({6: np.int32(0), 7: np.int64(0), 8: np.int64(0)})
        ctx.launch(names[0], args, groups=(1, n_rows), threadgroup=(bn,))
        return out, "out"
    nc_dim = len(nc_shape)
    if nc_dim == 0:
        nc_shape, in_nc = [0], [1]
    vals = [ctx.empty(n_rows * size * itemsize(dt)) for _ in range(2)]
    idxs = [ctx.empty(n_rows * size * 4) for _ in range(2)]
    parts = ctx.empty(n_rows * (n_blocks + 1) * 4)
    sort_k, part_k, merge_k = names
    ctx.launch(sort_k, {0: src, 1: vals[0], 2: idxs[0], 3: np.int32(size), 4: np.int32(view.strides[axis]),
                        5: np.int32(nc_dim), 6: vec(nc_shape, np.int32), 7: vec(in_nc, np.int64)},
               groups=(n_blocks, n_rows), threadgroup=(bn,))
    ping = False
    n_thr = n_blocks + 1 if n_blocks + 1 < 1024 else 1024
    vin = iin = vout = iout = None
    merge_tiles = 2
    while merge_tiles // 2 < n_blocks:
        a, b = (1, 0) if ping else (0, 1)
        vin, iin, vout, iout = vals[a], idxs[a], vals[b], idxs[b]
        ping = not ping
        ctx.launch(part_k, {0: parts, 1: vin, 2: iin, 3: np.int32(size), 4: np.int32(merge_tiles),
                            5: np.int32(n_blocks)}, groups=(1, n_rows), threadgroup=(n_thr,))
        ctx.launch(merge_k, {0: parts, 1: vin, 2: iin, 3: vout, 4: iout, 5: np.int32(size),
                             6: np.int32(merge_tiles), 7: np.int32(n_blocks)},
                   groups=(n_blocks, n_rows), threadgroup=(bn,))
        merge_tiles *= 2
    return (iout if argsort else vout), "rows"


def nan_last_key(a):
    a = np.asarray(a, dtype=np.float64)
    return np.where(np.isnan(a), np.inf, a), np.isnan(a)


def sort_case(dt, base_shape, axis, argsort=False, perm=None, ties=False, nans=False, note=""):
    view = View(base_shape, perm)
    axis = axis % len(view.shape)
    names, bn, n_blocks = plan_names(dt, view, axis, argsort)
    size = view.shape[axis]

    def run(ctx):
        if dt == "i32":
            vals = ctx.rng.integers(-50, 51 if ties else 10 ** 6, view.size)
        elif ties:
            vals = ctx.rng.integers(-20, 21, view.size).astype(np.float64)
        else:
            vals = ctx.rng.uniform(-100, 100, view.size)
        if nans:
            vals[ctx.rng.random(view.size) < 0.05] = np.nan
        src, stored = ctx.upload(vals, dt)
        buf, layout = launch_sort(ctx, dt, src, view, axis, argsort)
        x = np.moveaxis(view.values(stored), axis, -1).reshape(-1, size)  # (rows, axis) in row-major row order
        want = np.sort(x, axis=-1)  # numpy sorts NaN last, as LessThan does
        out_dt = "u32" if argsort else dt
        got = ctx.read(buf, out_dt, view.size)
        if layout == "out":
            got = np.moveaxis(got.reshape(view.shape), axis, -1)
        got = got.reshape(-1, size)
        if argsort:
            idx = got.astype(np.int64)
            if np.any(idx >= size) or np.any(idx < 0):
                raise Mismatch(f"argsort: index out of range ({idx.min()}..{idx.max()})")
            perm_ok = np.all(np.sort(idx, axis=-1) == np.arange(size)[None, :])
            ctx.errors.append(("permutation", 0.0 if perm_ok else 1.0, 0))
            if not perm_ok:
                bad = int(np.flatnonzero(~np.all(np.sort(idx, axis=-1) == np.arange(size), axis=-1))[0])
                raise Mismatch(f"argsort: row {bad} is not a permutation of 0..{size - 1}")
            got_vals = np.take_along_axis(x, idx, axis=-1)
            g, gn = nan_last_key(got_vals)
            w, wn = nan_last_key(want)
            ctx.check_exact("x[argsort]", np.where(gn, 0, g), np.where(wn, 0, w))
            ctx.check_exact("nan positions", gn, wn)
        else:
            g, gn = nan_last_key(got)
            w, wn = nan_last_key(want)
            ctx.check_exact("nan positions", gn, wn)
            ctx.check_exact("sorted", np.where(gn, 0, g), np.where(wn, 0, w))

    kind = ("argsort" if argsort else "sort") + ("_multiblock" if n_blocks > 1 else "_block")
    shape_s = "x".join(map(str, view.shape)) + view.tag
    return Case(f"sort.{kind}.{dt}.{shape_s}.ax{axis}", "sort", FILE, names, run, note=note)


def cases():
    # single threadgroup
    yield sort_case("f32", (16, 100), 1, note="bn 32")
    yield sort_case("f32", (10, 1000), 1, argsort=True, note="bn 256")
    yield sort_case("f16", (3, 2048), 1, ties=True, note="bn 512, exactly one block")
    yield sort_case("i32", (700, 9), 0, argsort=True, ties=True, note="sorted axis has the largest stride: c kernel")
    yield sort_case("bf16", (4, 300, 5), 1, note="middle axis: nc kernel")
    yield sort_case("f32", (50, 8, 6), 1, argsort=True, perm=(2, 0, 1), note="transposed input: nc kernel")
    yield sort_case("f32", (8, 500), 1, nans=True, note="NaNs sort last")
    # several blocks: block sort, then partition + merge rounds
    yield sort_case("f32", (3, 5000), 1, note="3 blocks, 2 merge rounds")
    yield sort_case("f32", (2, 20000), 1, argsort=True, note="10 blocks, 4 merge rounds")
    yield sort_case("i32", (6000, 3), 0, note="strided sorted axis")
    yield sort_case("f16", (2, 4100), 1, argsort=True, ties=True)
    yield sort_case("bf16", (9000,), 0, note="1-D: nc_dim 0 with the (0)/(1) placeholder shape and strides")
    yield sort_case("f32", (4, 7000), 1, argsort=True, nans=True)
