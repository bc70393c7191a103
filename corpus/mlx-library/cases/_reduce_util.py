"""Launch-side helpers shared by the reduce, arg_reduce, scan, sort and searchsorted families, re-expressed from what
MLX's host code computes (its backend's common utils): 2-D output grids, contiguous-dims collapsing as MLX does it,
arrays seen through a transpose, and the checks these families need."""
import math

import numpy as np

from mlxhost import row_strides, strided_view

UINT32_MAX = (1 << 32) - 1


def grid_2d(shape, strides, divisor=None):
    """get_2d_grid_dims: the dims of `shape` (broadcast dims, stride 0, left out) packed into (x, y, 1) with x the
    larger, each below 2^32. With `divisor`, the grid covers prod(shape) / divisor: whole dims that the divisor
    takes out are dropped first (each dim shrinks by its gcd with what is left of the divisor)."""
    shape = [int(s) for s in shape]
    if divisor is not None:
        divided = list(shape)
        left = int(divisor)
        for i, s in enumerate(shape):
            if strides[i] == 0:
                continue
            g = math.gcd(s, left)
            divided[i] //= g
            left //= g
        if left == 1:
            return grid_2d(divided, strides)
        # The general path: drop dims that divide the divisor, then divide x or y once it allows it.
        gx = gy = 1
        div = int(divisor)
        for i, s in enumerate(shape):
            if strides[i] == 0:
                continue
            if div % s == 0:
                div //= s
                continue
            if gx * s < UINT32_MAX:
                gx *= s
            else:
                gy *= s
            if div > 1:
                if gx % div == 0:
                    gx //= div
                    div = 1
                elif gy % div == 0:
                    gy //= div
                    div = 1
        if gy > gx:
            gx, gy = gy, gx
        if div > 1:
            gx = -(-gx // div) * div
        return (gx, gy, 1)
    gx = gy = 1
    for s, st in zip(shape, strides):
        if st == 0:
            continue
        if gx * s < UINT32_MAX:
            gx *= s
        else:
            gy *= s
    if gy > gx:
        gx, gy = gy, gx
    return (gx, gy, 1)


def collapse(shape, strides):
    """MLX's collapse_contiguous_dims for one strides list: size-1 dims dropped, a dim merged into the one before
    it when stride_prev == stride * size; a non-empty shape that collapses to nothing becomes ([1], [1])."""
    cs, cst = [], []
    for s, st in zip(shape, strides):
        if s == 1:
            continue
        if cs and st * s == cst[-1]:
            cs[-1] *= s
            cst[-1] = st
        else:
            cs.append(int(s))
            cst.append(int(st))
    if shape and not cs:
        return [1], [1]
    return cs, cst


def elem_to_loc(idx, shape, strides):
    """The memory offset of the idx-th element (row-major over `shape`) of an array with `strides`."""
    loc = 0
    for s, st in zip(reversed(shape), reversed(strides)):
        loc += (idx % s) * st
        idx //= s
    return loc


class View:
    """A row-contiguous array of `base_shape` seen through numpy's transpose(perm): what MLX's transpose gives
    (flags: contiguous, since it covers its data exactly; row_contiguous only for the identity)."""

    def __init__(self, base_shape, perm=None):
        self.base_shape = tuple(int(s) for s in base_shape)
        perm = list(perm) if perm is not None else list(range(len(base_shape)))
        bst = row_strides(self.base_shape)
        self.shape = [self.base_shape[p] for p in perm]
        self.strides = [bst[p] for p in perm]
        self.size = int(np.prod(self.base_shape))
        self.contiguous = True
        rs = row_strides(self.shape)
        self.row_contiguous = all(a == b for a, b, s in zip(self.strides, rs, self.shape) if s != 1)
        self.tag = "" if perm == list(range(len(base_shape))) else "T" + "".join(map(str, perm))

    @classmethod
    def strided(cls, data_size, shape, strides):
        """An array over `data_size` stored elements seen with explicit shape/strides (a broadcast: stride 0).
        MLX's flags for it: contiguous only when it covers exactly its data (here: never, data_size < size)."""
        v = cls.__new__(cls)
        v.base_shape = (int(data_size),)
        v.shape, v.strides = [int(s) for s in shape], [int(s) for s in strides]
        v.size = int(np.prod(v.shape))
        v.contiguous = v.size == data_size and 0 not in v.strides
        rs = row_strides(v.shape)
        v.row_contiguous = v.contiguous and all(a == b for a, b, s in zip(v.strides, rs, v.shape) if s != 1)
        v.tag = "B" + "_".join(map(str, v.strides))
        return v

    def values(self, flat):
        """The view's elements as an ndarray of its shape, from the base array's flat values."""
        return strided_view(np.asarray(flat).reshape(-1), self.shape, self.strides)


def check_scaled(ctx, label, got, want, scale, dt, tol=None):
    """ctx.check on got/scale and want/scale: for float sums and scans, where the natural size of the error is
    the unit roundoff times the size of the partial sums (scale = max(1, sqrt(sum of squares of the terms)))
    rather than the size of the (possibly cancelled) result."""
    scale = np.maximum(1.0, np.asarray(scale, dtype=np.float64))
    ctx.check(label, np.asarray(got, np.float64) / scale, np.asarray(want, np.float64) / scale, tol=tol, dt=dt)
