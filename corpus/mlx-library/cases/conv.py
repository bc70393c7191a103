"""Steel conv2d (kernels/steel/conv/kernels/steel_conv.metal and steel_conv_general.metal), launched as
mlx/backend/metal/conv.cpp launches them for a 2-D Convolution (NHWC input, OHWI weights, NHWC output):
- implicit GEMM (`implicit_gemm_conv_2d_*`): input dilation 1 and channels the specialised loaders take (C <= 4 or
  C % 16 == 0, O <= 16 or O % 16 == 0), grouped convolutions likewise per group (grid z = groups); block sizes from
  the implicit M/N (bm 64 from M >= 8192 with C >= 64, bn 8 with 4x1 simdgroups for N <= 16), the small-channel
  (1..4) and small/large-filter loader variants, the host's input jumps in ImplicitGemmConv2DParams;
- general implicit GEMM (`implicit_gemm_conv_2d_general_*`): input dilation > 1, or other channel counts with a large
  output: the jump parameters and per-phase base_h / base_w tables, function constant align_C (200).
- 3-D implicit GEMM (`implicit_gemm_conv_3d_*`, steel_conv_3d.metal) as conv_3D_gpu launches it for input dilation
  1 and C/groups % 16 == 0 (MLXConvParams<3>, ImplicitGemmConv3DParams), outside the per-frame 2-D route.
- conv1d through the 2-D implicit GEMM (width-1 second axis, zero strides for it, as conv_1D_gpu builds them);
- depthwise 2-D (`depthwise_conv_2d_*`, conv.metal: C == O == groups, C % 16 == 0, kernel <= 7, stride <= 2; kernel
  and stride sizes, tile and flip as function constants) and depthwise 1-D (`depthwise_conv_1d_*`, no simdgroups).
The winograd, padded-channel and explicit (unfold + gemm) routes are not launched here (shapes avoid
them). MLXConvParams<2> is packed as the kernel reads it (int fields, int64 strides at offset 72, groups, flip).
Reference: a direct float64 convolution (cross-correlation; flipped kernel when flip) of the inputs as stored."""
import math
import struct

import numpy as np

from mlxhost import block_dims, ceildiv, row_strides
from mlxrun import Case, itemsize, tname

FILE = "steel/conv/kernels/steel_conv.metal"
FILE_GENERAL = "steel/conv/kernels/steel_conv_general.metal"
FILE_3D = "steel/conv/kernels/steel_conv_3d.metal"
FILE_CONV = "conv.metal"


class ConvParams:
    def __init__(self, N, C, O, iS, wS, oS, st, pad, kdil, idil, groups, flip):
        self.N, self.C, self.O = N, C, O
        self.iS, self.wS, self.oS = list(iS), list(wS), list(oS)
        self.str, self.pad, self.kdil, self.idil = list(st), list(pad), list(kdil), list(idil)
        self.in_strides = row_strides([N, iS[0], iS[1], C])
        self.wt_strides = row_strides([O, wS[0], wS[1], C // groups])
        self.out_strides = row_strides([N, oS[0], oS[1], O])
        self.groups, self.flip = groups, flip

    def pack(self):
        """MLXConvParams<2>: 17 ints, 4 bytes of padding, 3 x 4 int64 strides, int groups, bool flip, padded to 176."""
        ints = [self.N, self.C, self.O] + self.iS + self.wS + self.oS + self.str + self.pad + self.kdil + self.idil
        return struct.pack("<17i4x4q4q4qi?3x", *ints, *self.in_strides, *self.wt_strides, *self.out_strides,
                           self.groups, self.flip)


def out_size(i, w, s, p, kd, idl):
    """The conv op's output size with padding p on both sides."""
    return ((i - 1) * idl + 1 + 2 * p - ((w - 1) * kd + 1)) // s + 1


def implicit_gemm_params(*ints):
    """ImplicitGemmConv2DParams: 10 ints."""
    return struct.pack("<10i", *ints)


def input_jumps(p, bk):
    sign = -1 if p.flip else 1
    ijw = p.in_strides[2] * p.kdil[1]
    ijh = p.in_strides[1] * p.kdil[0]
    jw = sign * ijw
    jh = sign * (ijh - (p.wS[1] - 1) * ijw)
    jc = bk - sign * (p.wS[0] - 1) * ijh - sign * (p.wS[1] - 1) * ijw
    return jw, jh, jc


def implicit_plan(p):
    """implicit_gemm_conv_2D_gpu's choices: (kernel name, bm, bn, bk, wm, wn, gemm params bytes, grid)."""
    cg, og = p.C // p.groups, p.O // p.groups
    M = p.N * p.oS[0] * p.oS[1]
    Nn = og
    K = p.wS[0] * p.wS[1] * cg
    wm, wn = 2, 2
    bm = 64 if M >= 8192 and cg >= 64 else 32
    bn = 64 if (bm == 64 or Nn >= 64) else 32
    bk = 16
    if Nn <= 16:
        bn, wm, wn = 8, 4, 1
    tn, tm = ceildiv(Nn, bn), ceildiv(M, bm)
    swizzle_log = 0
    n_chan = 0
    k_iters = p.wS[0] * p.wS[1] * ceildiv(cg, bk)
    if cg <= 2:
        k_iters = ceildiv(K, bk)
        n_chan = cg
    elif cg <= 4:
        k_iters = ceildiv(p.wS[0] * p.wS[1] * 4, bk)
        n_chan = cg
    small_filter = (not n_chan) and p.wS[0] <= 16 and p.wS[1] <= 16
    jw, jh, jc = input_jumps(p, bk)
    gp = implicit_gemm_params(M, Nn, K, k_iters, jw, jh, jc, tn, tm, swizzle_log)
    name = (f"implicit_gemm_conv_2d_{{dt}}_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}_channel_{n_chan if n_chan else 'l'}"
            f"_filter_{'s' if small_filter else 'l'}")
    tile = 1 << swizzle_log
    return name, gp, (tn * tile, ceildiv(tm, tile), p.groups), (32, wn, wm)


def general_plan(p):
    """implicit_gemm_conv_2D_general_gpu's choices (groups == 1)."""
    M = p.N * p.oS[0] * p.oS[1]
    Nn = p.O
    K = p.wS[0] * p.wS[1] * p.C
    wm, wn = 2, 2
    fwh = math.lcm(p.idil[0], p.kdil[0]) // p.kdil[0]
    fww = math.lcm(p.idil[1], p.kdil[1]) // p.kdil[1]
    foh = math.lcm(p.idil[0], p.str[0]) // p.str[0]
    fow = math.lcm(p.idil[1], p.str[1]) // p.str[1]
    adj_h, adj_w = ceildiv(p.oS[0], foh), ceildiv(p.oS[1], fow)
    adj_hw = adj_h * adj_w
    adj_m = p.N * adj_hw
    jump = struct.pack("<8i", fwh, fww, foh, fow, adj_h, adj_w, adj_hw, adj_m)

    def bases(n_phase, st, pad, wS, kd, idl, wjump):
        jmp = -kd if p.flip else kd
        init = (wS - 1) * kd if p.flip else 0
        out = []
        for i in range(n_phase):
            loop = i * st - pad + init
            base = 0
            # C++ % on a negative value keeps the dividend's sign; the test is only "!= 0", the same either way.
            while base < wS and loop % idl != 0:
                base += 1
                loop += jmp
            out += [base, ceildiv(wS - base, wjump)]
        return np.array(out, dtype=np.int32)

    base_h = bases(foh, p.str[0], p.pad[0], p.wS[0], p.kdil[0], p.idil[0], fwh)
    base_w = bases(fow, p.str[1], p.pad[1], p.wS[1], p.kdil[1], p.idil[1], fww)
    bm = 64 if adj_m >= 8192 and p.C >= 64 else 32
    bn = 64 if (bm == 64 and Nn >= 64) else 32
    bk = 16
    tn, tm = ceildiv(Nn, bn), ceildiv(adj_m, bm)
    swizzle_log = 0
    k_iters = ceildiv(p.C, bk)
    align_c = p.C % bk == 0
    jw, jh, jc = input_jumps(p, bk)
    gp = implicit_gemm_params(M, Nn, K, k_iters, jw, jh, jc, tn, tm, swizzle_log)
    name = f"implicit_gemm_conv_2d_general_{{dt}}_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}"
    tile = 1 << swizzle_log
    return name, gp, jump, base_h, base_w, align_c, (tn * tile, ceildiv(tm, tile), foh * fow), (32, wn, wm)


def route(p):
    """dispatch_conv_2D_gpu's branch for these shapes: 'implicit' or 'general' (others are not in the suite)."""
    st1 = p.str == [1, 1]
    kd1 = p.kdil == [1, 1]
    id1 = p.idil == [1, 1]
    if p.groups > 1:
        cg, og = p.C // p.groups, p.O // p.groups
        assert id1, "grouped with input dilation: explicit gemm route"
        if (cg == 1 and og == 1 and kd1 and p.wS[0] <= 7 and p.wS[1] <= 7 and p.str[0] <= 2 and p.str[1] <= 2
                and p.wt_strides[1] == p.wS[1] and p.C % 16 == 0 and p.C == p.O):
            return "depthwise"
        assert (cg <= 4 or cg % 16 == 0) and (og <= 16 or og % 16 == 0), "explicit grouped route"
        return "implicit"
    inp_large = p.N * p.iS[0] * p.iS[1] >= 4096
    chan_large = p.C + p.O >= 256
    out_large = p.N * p.oS[0] * p.oS[1] >= 256
    assert not (not p.flip and st1 and kd1 and id1 and p.wS == [3, 3] and p.C % 32 == 0 and p.O % 32 == 0
                and inp_large and chan_large), "winograd route"
    specialized = (p.C <= 4 or p.C % 16 == 0) and (p.O <= 16 or p.O % 16 == 0)
    out_aligned = p.O <= 16 or p.O % 16 == 0
    assert not (id1 and st1 and out_large and not specialized and out_aligned and p.wS[0] * p.wS[1] >= 9), \
        "padded-channel route"
    if id1 and specialized:
        return "implicit"
    if (p.C % 16 == 0 and p.O % 16 == 0) or out_large:
        return "general"
    raise AssertionError("explicit gemm route")


def reference(x, w, p):
    """out[n, oh, ow, o] = sum over kh, kw, c of xd[n, oh*s + kh*kd, ow*s + kw*kd, g*Cg + c] * w'[o, kh, kw, c], where
    xd is x dilated by idil and zero-padded by pad, and w' is w (flipped in kh, kw when flip)."""
    N, H, W, C = x.shape
    hd, wd = (H - 1) * p.idil[0] + 1, (W - 1) * p.idil[1] + 1
    need_h = (p.oS[0] - 1) * p.str[0] + (p.wS[0] - 1) * p.kdil[0] + 1
    need_w = (p.oS[1] - 1) * p.str[1] + (p.wS[1] - 1) * p.kdil[1] + 1
    xp = np.zeros((N, max(need_h, hd + p.pad[0]), max(need_w, wd + p.pad[1]), C))
    xp[:, p.pad[0]:p.pad[0] + hd:p.idil[0], p.pad[1]:p.pad[1] + wd:p.idil[1], :] = x
    wf = w[:, ::-1, ::-1, :] if p.flip else w
    cg, og = C // p.groups, p.O // p.groups
    out = np.zeros((N, p.oS[0], p.oS[1], p.O))
    for kh in range(p.wS[0]):
        for kw in range(p.wS[1]):
            h0, w0 = kh * p.kdil[0], kw * p.kdil[1]
            sl = xp[:, h0:h0 + (p.oS[0] - 1) * p.str[0] + 1:p.str[0], w0:w0 + (p.oS[1] - 1) * p.str[1] + 1:p.str[1], :]
            for g in range(p.groups):
                out[..., g * og:(g + 1) * og] += np.einsum(
                    "nhwc,oc->nhwo", sl[..., g * cg:(g + 1) * cg], wf[g * og:(g + 1) * og, kh, kw, :])
    return out


def conv_case(dt, N, hw, C, O, k, st=(1, 1), pad=(0, 0), kdil=(1, 1), idil=(1, 1), groups=1, flip=False, tag="",
              strides=None, name_shape=None):
    """strides: (in, wt, out) strides for MLXConvParams when not the row-contiguous NHWC ones (conv1d's 2-D form).
    name_shape: the case name's shape part when not N x H x W x C - O x kh x kw."""
    oS = [out_size(hw[i], k[i], st[i], pad[i], kdil[i], idil[i]) for i in range(2)]
    p = ConvParams(N, C, O, hw, k, oS, st, pad, kdil, idil, groups, flip)
    if strides is not None:
        p.in_strides, p.wt_strides, p.out_strides = strides
    kind = route(p)
    if kind == "depthwise":
        name = f"depthwise_conv_2d_{tname(dt)}"
        file = FILE_CONV
    elif kind == "implicit":
        name = implicit_plan(p)[0].format(dt=tname(dt))
        file = FILE
    else:
        name = general_plan(p)[0].format(dt=tname(dt))
        file = FILE_GENERAL
    K = k[0] * k[1] * C // groups

    def run(ctx):
        xb, x = ctx.rand((N, hw[0], hw[1], C), dt)
        wb, w = ctx.rand((O, k[0], k[1], C // groups), dt)
        out = ctx.empty(N * oS[0] * oS[1] * O * itemsize(dt))
        if kind == "depthwise":
            # depthwise_conv_2D_gpu: 8 channels x 8 columns x 4 rows per threadgroup, kernel and stride sizes as
            # function constants.
            tc, tw, th = 8, 8, 4
            consts = {0: k[0], 1: k[1], 10: st[0], 11: st[1], 100: th, 101: tw, 200: bool(flip)}
            ctx.launch(name, {0: xb, 1: wb, 2: out, 3: p.pack()},
                       groups=(C // tc, ceildiv(oS[1], tw), ceildiv(oS[0], th) * N), threadgroup=(tc, tw, th),
                       constants=consts)
        elif kind == "implicit":
            _, gp, groups_grid, tg = implicit_plan(p)
            ctx.launch(name, {0: xb, 1: wb, 2: out, 3: p.pack(), 4: gp}, groups=groups_grid, threadgroup=tg)
        else:
            _, gp, jump, base_h, base_w, align_c, groups_grid, tg = general_plan(p)
            ctx.launch(name, {0: xb, 1: wb, 2: out, 3: p.pack(), 4: gp, 5: jump, 6: base_h, 7: base_w},
                       groups=groups_grid, threadgroup=tg, constants={200: align_c})
        got = ctx.read(out, dt, (N, oS[0], oS[1], O))
        # float32 accumulation over K = kh * kw * C/groups terms; halves: the output rounding dominates.
        tol = 1e-5 + 2e-8 * K if dt == "f32" else None
        ctx.check("out", got, reference(x, w, p), tol=tol, dt=dt)

    desc = name_shape or f"{N}x{hw[0]}x{hw[1]}x{C}-{O}x{k[0]}x{k[1]}"
    extras = []
    nd = 1 if name_shape else 2  # conv1d names show the one real axis
    for tag_, v, unit in (("s", st, 1), ("p", pad, 0), ("kd", kdil, 1), ("id", idil, 1)):
        if tuple(v) != (unit, unit):
            extras.append(tag_ + "".join(str(x) for x in v[:nd]))
    if groups > 1:
        extras.append(f"g{groups}")
    if flip:
        extras.append("flip")
    variant = kind + (("_" + tag) if tag else "")
    return Case(f"conv.{variant}.{dt}.{desc}" + ("." + "_".join(extras) if extras else ""), "conv", file, [name], run)


def cases():
    # Implicit GEMM, general channel loader with the small-filter loader.
    yield conv_case("f32", 2, (10, 10), 16, 32, (3, 3), pad=(1, 1))             # bm32 bn32
    yield conv_case("f16", 2, (9, 11), 32, 64, (3, 3), st=(2, 2), pad=(1, 1), kdil=(2, 1))  # bn64
    yield conv_case("bf16", 2, (64, 64), 64, 64, (3, 3), pad=(1, 1), tag="bm64")  # M = 8192, C >= 64: bm64 bn64
    yield conv_case("f32", 2, (3, 40), 16, 16, (1, 17), pad=(0, 8), tag="large_filter")  # filter_l, bn8 4x1
    yield conv_case("f32", 1, (12, 12), 16, 16, (3, 3), pad=(2, 2), flip=True)
    # Small-channel loaders (C = 1..4), bn 8 for O <= 16.
    yield conv_case("bf16", 1, (28, 28), 1, 16, (3, 3), tag="c1")
    yield conv_case("f32", 2, (15, 13), 2, 4, (3, 3), pad=(2, 2), kdil=(2, 2), tag="c2")
    yield conv_case("f16", 2, (17, 13), 3, 8, (5, 5), st=(2, 2), pad=(2, 2), tag="c3")
    yield conv_case("f16", 1, (20, 20), 4, 64, (3, 3), st=(2, 2), tag="c4")
    # Grouped (grid z = groups).
    yield conv_case("f16", 2, (8, 8), 32, 32, (3, 3), pad=(1, 1), groups=2)     # 16 per group: bn8 4x1
    yield conv_case("bf16", 1, (10, 9), 8, 32, (3, 3), groups=2, tag="c4")      # 4 channels per group
    yield conv_case("f32", 1, (7, 7), 64, 128, (1, 1), groups=4)                # 16 in, 32 out per group
    # General implicit GEMM: input dilation (with flip: the transposed-conv form), odd channel counts.
    yield conv_case("f32", 2, (6, 7), 16, 16, (3, 3), pad=(2, 2), idil=(2, 2), flip=True)
    yield conv_case("f16", 2, (24, 24), 24, 40, (3, 3), st=(2, 2), pad=(1, 1))  # align_C false, out_large
    yield conv_case("bf16", 1, (9, 8), 16, 32, (3, 3), st=(3, 3), pad=(1, 1), idil=(2, 2))  # 2x2 output phases
    yield conv_case("f32", 1, (11, 10), 32, 48, (2, 3), st=(2, 1), pad=(1, 1), idil=(3, 2), kdil=(2, 1))
    yield from cases3d()
    yield from cases_more()


# ------------------------------------------------------------------------------------------------ 3-D
def conv3d_case(dt, N, dhw, C, O, k, st=(1, 1, 1), pad=(0, 0, 0), kdil=(1, 1, 1), groups=1, flip=False):
    """implicit_gemm_conv_3D_gpu (input dilation 1, C/groups % 16 == 0, O/groups <= 16 or % 16 == 0)."""
    oS = [out_size(dhw[i], k[i], st[i], pad[i], kdil[i], 1) for i in range(3)]
    cg, og = C // groups, O // groups
    assert cg % 16 == 0 and (og <= 16 or og % 16 == 0)
    # Not the per-frame route (one batch, depth kernel <= 7, depth stride 1, no depth dilation or padding).
    assert not (groups == 1 and N == 1 and k[0] <= 7 and st[0] == 1 and kdil[0] == 1 and pad[0] == 0)
    in_strides = row_strides([N, *dhw, C])
    wt_strides = row_strides([O, *k, cg])
    out_strides = row_strides([N, *oS, O])
    M, Nn, K = N * oS[0] * oS[1] * oS[2], og, k[0] * k[1] * k[2] * cg
    wm, wn = 2, 2
    bm = 64 if M >= 8192 and cg >= 64 else 32
    bn = 64 if (bm == 64 or Nn >= 64) else 32
    bk = 16
    if Nn <= 16:
        bn, wm, wn = 8, 4, 1
    tn, tm = ceildiv(Nn, bn), ceildiv(M, bm)
    small_filter = all(x <= 16 for x in k)
    k_iters = k[0] * k[1] * k[2] * ceildiv(cg, bk)
    sign = -1 if flip else 1
    ijw, ijh, ijd = in_strides[3] * kdil[2], in_strides[2] * kdil[1], in_strides[1] * kdil[0]
    jw = sign * ijw
    jh = sign * (ijh - (k[2] - 1) * ijw)
    jd = sign * (ijd - (k[1] - 1) * ijh - (k[2] - 1) * ijw)
    jc = bk - sign * (k[0] - 1) * ijd - sign * (k[1] - 1) * ijh - sign * (k[2] - 1) * ijw
    gp = struct.pack("<11i", M, Nn, K, k_iters, jw, jh, jd, jc, tn, tm, 0)
    # MLXConvParams<3>: 24 ints, then 3 x 5 int64 strides (offset 96), int groups, bool flip, padded to 224.
    cp = struct.pack("<24i5q5q5qi?3x", N, C, O, *dhw, *k, *oS, *st, *pad, *kdil, 1, 1, 1, *in_strides, *wt_strides,
                     *out_strides, groups, flip)
    name = f"implicit_gemm_conv_3d_{tname(dt)}_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}_filter_{'s' if small_filter else 'l'}"

    def run(ctx):
        xb, x = ctx.rand((N, *dhw, C), dt)
        wb, w = ctx.rand((O, *k, cg), dt)
        out = ctx.empty(N * oS[0] * oS[1] * oS[2] * O * itemsize(dt))
        ctx.launch(name, {0: xb, 1: wb, 2: out, 3: cp, 4: gp}, groups=(tn, tm, groups), threadgroup=(32, wn, wm))
        got = ctx.read(out, dt, (N, *oS, O))
        # Direct reference: a sum over the kernel's depth slices of 2-D convolutions.
        want = np.zeros((N, *oS, O))
        wf = w[:, ::-1, ::-1, ::-1, :] if flip else w
        xp = np.zeros((N, *[dhw[i] + 2 * pad[i] for i in range(3)], C))
        xp[:, pad[0]:pad[0] + dhw[0], pad[1]:pad[1] + dhw[1], pad[2]:pad[2] + dhw[2], :] = x
        for a in range(k[0]):
            for b in range(k[1]):
                for c in range(k[2]):
                    o0 = [a * kdil[0], b * kdil[1], c * kdil[2]]
                    sl = xp[:, o0[0]:o0[0] + (oS[0] - 1) * st[0] + 1:st[0], o0[1]:o0[1] + (oS[1] - 1) * st[1] + 1:st[1],
                            o0[2]:o0[2] + (oS[2] - 1) * st[2] + 1:st[2], :]
                    for g in range(groups):
                        want[..., g * og:(g + 1) * og] += np.einsum(
                            "ndhwc,oc->ndhwo", sl[..., g * cg:(g + 1) * cg], wf[g * og:(g + 1) * og, a, b, c, :])
        tol = 1e-5 + 2e-8 * K if dt == "f32" else None
        ctx.check("out", got, want, tol=tol, dt=dt)

    extras = [f"s{''.join(map(str, st))}"] if tuple(st) != (1, 1, 1) else []
    extras += [f"p{''.join(map(str, pad))}"] if tuple(pad) != (0, 0, 0) else []
    extras += [f"kd{''.join(map(str, kdil))}"] if tuple(kdil) != (1, 1, 1) else []
    extras += [f"g{groups}"] if groups > 1 else []
    extras += ["flip"] if flip else []
    desc = f"{N}x{'x'.join(map(str, dhw))}x{C}-{O}x{'x'.join(map(str, k))}"
    return Case(f"conv.implicit3d.{dt}.{desc}" + ("." + "_".join(extras) if extras else ""), "conv", FILE_3D, [name],
                run)


def cases3d():
    yield conv3d_case("f32", 2, (5, 6, 7), 16, 32, (3, 3, 3), pad=(1, 1, 1))            # bm32 bn32
    yield conv3d_case("f16", 1, (6, 8, 8), 32, 16, (3, 3, 3), st=(2, 2, 2), pad=(1, 0, 1))  # bn8 4x1
    yield conv3d_case("bf16", 2, (4, 5, 6), 32, 64, (2, 3, 3), kdil=(1, 2, 1), groups=2, flip=True)


# ------------------------------------------------------------------------------------------------ 1-D
def conv1d_case(dt, N, T, C, O, K, st=1, pad=0, kdil=1, groups=1):
    """conv_1D_gpu, implicit-gemm branch: the 1-D convolution as a 2-D one of width 1, with zero strides for the
    unit axis in MLXConvParams<2> (as the host builds them)."""
    Tout = out_size(T, K, st, pad, kdil, 1)
    ins = row_strides([N, T, C])
    wts = row_strides([O, K, C // groups])
    outs = row_strides([N, Tout, O])
    strides = ([ins[0], ins[1], 0, ins[2]], [wts[0], wts[1], 0, wts[2]], [outs[0], outs[1], 0, outs[2]])
    return conv_case(dt, N, (T, 1), C, O, (K, 1), st=(st, 1), pad=(pad, 0), kdil=(kdil, 1), groups=groups,
                     tag="conv1d", strides=strides, name_shape=f"{N}x{T}x{C}-{O}x{K}")


def depthwise1d_case(dt, B, T, C, K):
    """depthwise_conv_1D_gpu (groups == C == O, stride 1, no padding/dilation/flip): one thread per output element,
    int32 input strides as a 3-element setBytes, threadgroups from get_block_dims. No simdgroups."""
    Tout = T - K + 1
    name = f"depthwise_conv_1d_{tname(dt)}"

    def run(ctx):
        xb, x = ctx.rand((B, T, C), dt)
        wb, w = ctx.rand((C, K, 1), dt)
        out = ctx.empty(B * Tout * C * itemsize(dt))
        ctx.launch(name, {0: xb, 1: wb, 2: out, 3: np.array(row_strides([B, T, C]), dtype=np.int32),
                          4: np.int32(K)}, grid=(C, Tout, B), threadgroup=block_dims(C, Tout, B))
        want = np.zeros((B, Tout, C))
        for j in range(K):
            want += x[:, j:j + Tout, :] * w[:, j, 0]
        ctx.check("out", ctx.read(out, dt, (B, Tout, C)), want, dt=dt)

    return Case(f"conv.depthwise1d.{dt}.{B}x{T}x{C}-{K}", "conv", FILE_CONV, [name], run)


def cases_more():
    yield conv1d_case("f32", 2, 30, 16, 32, 5, st=2, pad=2)
    yield conv1d_case("f16", 3, 41, 3, 8, 4, kdil=2)                             # small-channel loader
    yield conv_case("f32", 2, (13, 11), 32, 32, (3, 3), pad=(1, 1), groups=32)   # depthwise 2-D
    yield conv_case("bf16", 1, (10, 9), 16, 16, (5, 5), st=(2, 2), pad=(2, 2), groups=16, flip=True)
    yield depthwise1d_case("f32", 2, 50, 24, 5)
    yield depthwise1d_case("f16", 3, 20, 7, 3)
    yield depthwise1d_case("bf16", 1, 33, 40, 7)
