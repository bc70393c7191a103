"""Quantization in numpy for the quantized family: affine (w ~= scale * q + bias per group along the last axis) and the
fp formats (mxfp4: e2m1 values with an e8m0 power-of-two scale per 32; nvfp4: e2m1 values with an e4m3 scale per 16;
mxfp8: e4m3 values with an e8m0 scale per 32), written from the formats' definitions. The packing is the one the
kernels' loaders read: each row of the weight matrix is a little-endian bit stream, value i in bits
[i * bits, (i + 1) * bits), stored as uint32 words."""
import numpy as np


def pack_rows(q, bits):
    """Integer codes (..., C) in [0, 2^bits) -> uint32 words (..., C * bits / 32), LSB-first bit stream per row."""
    q = np.asarray(q, dtype=np.uint64)
    assert (q.shape[-1] * bits) % 32 == 0, "a packed row must fill whole 32-bit words"
    bitv = ((q[..., None] >> np.arange(bits, dtype=np.uint64)) & 1).astype(np.uint8)
    bitv = bitv.reshape(q.shape[:-1] + (q.shape[-1] * bits,))
    packed = np.packbits(bitv, axis=-1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u4")


def unpack_rows(words, bits, count):
    """The inverse of pack_rows (used to check the packing itself)."""
    b = np.ascontiguousarray(words).view(np.uint8)
    bitv = np.unpackbits(b, axis=-1, bitorder="little")[..., :count * bits]
    bitv = bitv.reshape(b.shape[:-1] + (count, bits)).astype(np.uint64)
    return (bitv << np.arange(bits, dtype=np.uint64)).sum(-1)


def affine_quantize(w, group_size, bits, rounded):
    """w (..., C), groups of `group_size` along the last axis. Returns (q codes, scales, biases) where scales and
    biases are the values as stored in the activation dtype (`rounded` maps float64 -> stored float64)."""
    shp = w.shape
    g = w.reshape(shp[:-1] + (shp[-1] // group_size, group_size))
    lo, hi = g.min(-1), g.max(-1)
    n = (1 << bits) - 1
    scales = rounded((hi - lo) / n)
    biases = rounded(lo)
    q = np.clip(np.rint((g - biases[..., None]) / scales[..., None]), 0, n)
    return q.reshape(shp).astype(np.int64), scales, biases


def affine_dequantize(q, scales, biases, group_size):
    shp = q.shape
    g = q.reshape(shp[:-1] + (shp[-1] // group_size, group_size)).astype(np.float64)
    return (g * scales[..., None] + biases[..., None]).reshape(shp)


# --- fp formats -----------------------------------------------------------------------------------------------
def e2m1_values():
    """The 16 fp4 e2m1 codes: sign bit 3, two exponent bits (bias 1), one mantissa bit; no inf/NaN."""
    mags = []
    for c in range(8):
        e, m = c >> 1, c & 1
        mags.append(m * 0.5 if e == 0 else (1 + m / 2) * 2.0 ** (e - 1))
    return np.array(mags + [-v for v in mags])


def e4m3_values():
    """The 256 fp8 e4m3 (OCP 'fn') codes: sign, 4 exponent bits (bias 7), 3 mantissa bits, S.1111.111 is NaN."""
    vals = np.empty(256)
    for c in range(256):
        s, e, m = c >> 7, (c >> 3) & 15, c & 7
        if e == 15 and m == 7:
            v = np.nan
        elif e == 0:
            v = m / 8 * 2.0 ** -6
        else:
            v = (1 + m / 8) * 2.0 ** (e - 7)
        vals[c] = -v if s else v
    return vals


def e8m0_value(code):
    """fp8 e8m0: 2^(code - 127); 255 is NaN."""
    code = np.asarray(code, dtype=np.float64)
    return np.where(code == 255, np.nan, 2.0 ** (code - 127))


E2M1 = e2m1_values()
E4M3 = e4m3_values()

FP_MODES = {  # mode -> (group size, bits, element format, scale format)
    "mxfp4": (32, 4, "e2m1", "e8m0"),
    "nvfp4": (16, 4, "e2m1", "e4m3"),
    "mxfp8": (32, 8, "e4m3", "e8m0"),
}


def nearest_code(table, v):
    """The code whose value is nearest to each of v (NaN codes excluded)."""
    ok = np.flatnonzero(~np.isnan(table))
    d = np.abs(v[..., None] - table[ok])
    return ok[np.argmin(d, axis=-1)]


def fp_quantize(w, mode):
    """w (..., C) -> (element codes (..., C), scale codes (..., C / group)) as uint8 values."""
    gs, bits, elem, sfmt = FP_MODES[mode]
    table = E2M1 if elem == "e2m1" else E4M3
    vmax = 6.0 if elem == "e2m1" else 448.0
    shp = w.shape
    g = w.reshape(shp[:-1] + (shp[-1] // gs, gs))
    amax = np.maximum(np.abs(g).max(-1), 1e-30)
    if sfmt == "e8m0":
        scode = np.clip(np.ceil(np.log2(amax / vmax)) + 127, 1, 254).astype(np.int64)
        scale = e8m0_value(scode)
    else:  # the smallest positive e4m3 value >= amax / 6 (all of the group's values fit)
        pos = np.arange(1, 127)
        want = amax / vmax
        idx = np.searchsorted(E4M3[pos], want)
        scode = pos[np.minimum(idx, pos.size - 1)]
        scale = E4M3[scode]
    codes = nearest_code(table, g / scale[..., None])
    return codes.reshape(shp).astype(np.int64), scode.astype(np.int64)


def fp_dequantize(codes, scodes, mode):
    gs, bits, elem, sfmt = FP_MODES[mode]
    vals = (E2M1 if elem == "e2m1" else E4M3)[codes]
    scale = e8m0_value(scodes) if sfmt == "e8m0" else E4M3[scodes]
    shp = codes.shape
    return (vals.reshape(shp[:-1] + (shp[-1] // gs, gs)) * scale[..., None]).reshape(shp)
