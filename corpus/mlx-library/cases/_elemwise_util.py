"""Shared by the elementwise families (unary, binary, ternary, copy): an MLX array as its kernels see it (a strided
view of a buffer, with MLX's data_size and contiguity flags), MLX's multi-array contiguous-dims collapsing, and input
and output helpers. Written for this suite from what MLX's host code computes (mlx/backend/common/utils.*)."""
import numpy as np

from mlxhost import row_strides, strided_view
from mlxrun import itemsize

INT32_MAX = (1 << 31) - 1


class View:
    """An array as MLX holds it: shape, strides and offset (elements) into a buffer, and data_size: the elements
    its contiguous kernels walk (the span the view covers; a transposed or broadcast view keeps its source's)."""

    def __init__(self, shape, strides=None, offset=0, data_size=None):
        self.shape = [int(s) for s in shape]
        self.strides = [int(s) for s in (row_strides(self.shape) if strides is None else strides)]
        self.offset = int(offset)
        self.size = int(np.prod(self.shape)) if self.shape else 1
        if data_size is None:  # the span the view covers (all strides here are >= 0)
            data_size = 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides) if s > 0)
        self.data_size = int(data_size)
        # MLX's check_contiguity: row/col flags ignore size-1 dims; `contiguous` = no holes in the span
        no_bsx, f, b = 1, 1, 1
        self.row_contiguous = self.col_contiguous = True
        n = len(self.shape)
        for i in range(n):
            ri = n - 1 - i
            self.col_contiguous &= self.strides[i] == f or self.shape[i] == 1
            self.row_contiguous &= self.strides[ri] == b or self.shape[ri] == 1
            f *= self.shape[i]
            b *= self.shape[ri]
            if self.strides[i] > 0:
                no_bsx *= self.shape[i]
        self.contiguous = no_bsx == self.data_size

    @property
    def extent(self):
        """Elements of the buffer from its start that the view may touch (offset + span)."""
        return self.offset + 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides) if s > 0)

    def values(self, base):
        """The logical array this view shows of the flat `base`."""
        return strided_view(base, self.shape, self.strides, self.offset)


def contiguous(shape):
    return View(shape)


def transposed(base_shape, perm, offset=0):
    """numpy's transpose(perm) of a row-contiguous array of base_shape (no holes: MLX calls it contiguous)."""
    rs = row_strides(base_shape)
    return View([base_shape[p] for p in perm], [rs[p] for p in perm], offset)


def sliced(base_shape, starts, steps, shape, perm=None):
    """base[starts::steps] (each axis, then optionally transposed by perm) of a row-contiguous base: holes."""
    rs = row_strides(base_shape)
    offset = sum(s * r for s, r in zip(starts, rs))
    strides = [r * st for r, st in zip(rs, steps)]
    shape = list(shape)
    if perm is not None:
        shape, strides = [shape[p] for p in perm], [strides[p] for p in perm]
    return View(shape, strides, offset)


def broadcast(src_shape, out_shape):
    """A row-contiguous array of src_shape broadcast to out_shape (stride 0 on the new/size-1 axes)."""
    src_shape = [1] * (len(out_shape) - len(src_shape)) + list(src_shape)
    rs = row_strides(src_shape)
    strides = [0 if (s == 1 and o != 1) else r for s, o, r in zip(src_shape, out_shape, rs)]
    return View(out_shape, strides, 0, data_size=int(np.prod(src_shape)))


def collapse(shape, strides_list, size_cap=INT32_MAX):
    """MLX's collapse_contiguous_dims over several strides lists: neighbours i-1, i merge when every list has
    stride[i] * shape[i] == stride[i-1] (size-1 dims included in that test) and the merged size stays under size_cap;
    size-1 dims are then dropped; the merged group keeps its last dim's strides. All size 1: shape [1], strides [0]."""
    groups, cur = [], []
    if shape:
        if shape[0] != 1:
            cur.append(0)
        size = shape[0]
        for i in range(1, len(shape)):
            size *= shape[i]
            ok = True
            for st in strides_list:
                if st[i] * shape[i] != st[i - 1] or size > size_cap:
                    ok = False
                    size = shape[i]
                    break
            if not ok:
                if cur:
                    groups.append(cur)
                cur = []
            if shape[i] != 1:
                cur.append(i)
        if cur:
            groups.append(cur)
    out_shape = [int(np.prod([shape[i] for i in g])) for g in groups]
    out_strides = [[int(st[g[-1]]) for g in groups] for st in strides_list]
    if shape and not out_shape:
        out_shape = [1]
        out_strides = [[0] for _ in strides_list]
    return out_shape, out_strides


def make_input(ctx, view, dt, lo=-1.0, hi=1.0):
    """A buffer of random `dt` values covering the view: (buffer, flat stored values, the view's logical values)."""
    buf, base = ctx.rand((view.extent,), dt, lo, hi)
    return buf, base, view.values(base)


def output_values(ctx, buf, view, dt):
    """Reads an output buffer and returns the logical array its view shows."""
    flat = ctx.read(buf, dt, view.extent)
    return view.values(flat)


def boff(view, dt):
    """(buffer offset in bytes) of a view's first element, as set_input_array binds it."""
    return view.offset * itemsize(dt)


def shape_label(shape):
    return "x".join(map(str, shape)) if len(shape) else "scalar"
