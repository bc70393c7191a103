"""Launch-side helpers that MLX's Metal host code relies on (its backend's utils), written for this suite from what
they compute: threadgroup shapes, contiguous-dims collapsing, strides, work per thread."""
import numpy as np


def ceildiv(a, b):
    return -(-int(a) // int(b))


def work_per_thread(itemsize, size=None):
    """Elements per thread of the contiguous elementwise kernels: 8 bytes' worth from 2^16 elements on."""
    if size is not None and size < (1 << 16):
        return 1
    return max(1, 8 // itemsize)


def block_dims(dim0, dim1=1, dim2=1, pow2=10):
    """A power-of-two threadgroup shape of at most 2^pow2 threads that covers the grid as evenly as it can: each
    axis in turn doubles while the grid extent allows it."""
    pows = [0, 0, 0]
    dims = [dim0, dim1, dim2]
    total = 0
    while True:
        before = total
        for a in range(3):
            if dims[a] >= (1 << (pows[a] + 1)):
                pows[a] += 1
                total += 1
            if total == pow2:
                break
        if total == before or total == pow2:
            break
    return (1 << pows[0], 1 << pows[1], 1 << pows[2])


def row_strides(shape):
    """Row-contiguous strides in elements."""
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= int(d)
    return list(reversed(strides))


def collapse_contiguous_dims(shape, *strides_list):
    """Drops size-1 dims and merges neighbours that are contiguous in every strides list (stride[i] ==
    stride[i+1] * shape[i+1]). Returns (shape, [strides...])."""
    dims = [i for i, d in enumerate(shape) if d != 1] or [len(shape) - 1] if shape else []
    out_shape = []
    out_strides = [[] for _ in strides_list]
    for i in dims:
        if out_shape and all(st[-1] == s[i] * shape[i] for st, s in zip(out_strides, strides_list)):
            out_shape[-1] *= shape[i]
            for st, s in zip(out_strides, strides_list):
                st[-1] = s[i]
        else:
            out_shape.append(int(shape[i]))
            for st, s in zip(out_strides, strides_list):
                st.append(int(s[i]))
    return out_shape, out_strides


def strided_view(base, shape, strides, offset=0):
    """The elements of a flat array seen through (shape, strides in elements, offset): what a kernel reading a
    non-contiguous array with elem_to_loc sees."""
    idx = np.full(tuple(shape), offset, dtype=np.int64)
    for axis, (n, s) in enumerate(zip(shape, strides)):
        sh = [1] * len(shape)
        sh[axis] = n
        idx = idx + (np.arange(n, dtype=np.int64) * s).reshape(sh)
    return np.asarray(base).reshape(-1)[idx]


def transposed(base_shape, perm):
    """The (shape, strides) of a row-contiguous array of `base_shape` seen through numpy's transpose(perm)."""
    base_strides = row_strides(base_shape)
    return [int(base_shape[p]) for p in perm], [base_strides[p] for p in perm]


APPLE_PAGE = 16384  # vm_page_size on Apple silicon


def mlx_buffer_size(nbytes):
    """The length of the Metal buffer MLX's allocator hands out for `nbytes`: sizes above a page round up to whole
    16 KiB pages, and smaller buffers still sit in page-granular Metal allocations. Some kernels touch a few elements
    past an array's logical end (fft's ReadWriter for a partial last threadgroup); on Metal that lands in this slack,
    so a faithful launch allocates it too."""
    return max(ceildiv(int(nbytes), APPLE_PAGE), 1) * APPLE_PAGE


def padded_to_page(arr):
    """A flat copy of `arr` (any dtype) zero-padded to mlx_buffer_size bytes, for uploading as MLX would hold it."""
    flat = np.ascontiguousarray(arr).reshape(-1)
    extra = mlx_buffer_size(flat.nbytes) - flat.nbytes
    return np.concatenate([flat.view(np.uint8), np.zeros(extra, dtype=np.uint8)])
