#!/usr/bin/env python3
"""Never a signal: `m2v compile` exits 0..5 on hostile input, within a time limit.

Generates a directory of malformed kernel files (truncations of the suite's kernels, binary garbage, a 10 MB chain of
nested macros, an exponential macro, unterminated comments, strings and blocks, expressions of 100,000 terms, a
thousand entry points and ten thousand declarations, absurd attribute values, ...), compiles each with a timeout and
fails on any exit by signal, any timeout, any exit code outside 0..5 and any crash caught by m2v's fatal-signal
handler. The exit code itself is not asserted (most are 1: an error in the input); tests/compiler/errors pins the
diagnostics of the crashes this found (hostile_*.metal).

usage: hostile_inputs.py M2V KERNELS_DIR WORK_DIR [--timeout SECONDS] [--keep]
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time


def truncations(kernels_dir, rng):
    """Every 7th suite kernel cut at a few offsets: mid-token, mid-attribute, mid-comment, anywhere."""
    names = sorted(f for f in os.listdir(kernels_dir) if f.endswith(".metal"))[::7]
    for name in names:
        text = open(os.path.join(kernels_dir, name), "rb").read()
        for frac in (0.1, 0.37, 0.5, 0.81, 0.97):
            cut = max(1, int(len(text) * frac))
            yield f"trunc_{name[:-6]}_{int(frac * 100)}.metal", text[:cut]
        # a random cut just after a '[[' or '(' or '<': the rewriter's and clang's partial constructs
        for token in (b"[[", b"(", b"<", b"{"):
            at = text.find(token, rng.randrange(len(text)))
            if at >= 0:
                yield f"trunc_{name[:-6]}_after_{ord(token[:1])}.metal", text[:at + len(token)]


def garbage(rng):
    yield "garbage_random_4k.metal", bytes(rng.randrange(256) for _ in range(4096))
    yield "garbage_random_256k.metal", os.urandom(256 * 1024)
    yield "garbage_nul.metal", b"\0" * 10000
    yield "garbage_nul_in_kernel.metal", (b"#include <metal_stdlib>\nkernel void f(device float* o [[buffer(0)]])"
                                          b" { o[0] = 1\0.0f; }\n")
    yield "garbage_bad_utf8.metal", b"kernel void \xff\xfe\xc0(device float* o [[buffer(0)]]) { o[0] = 1; }\n"
    yield "garbage_utf16_bom.metal", "kernel void f(device float* o [[buffer(0)]]) { o[0] = 1; }".encode("utf-16")
    yield "empty.metal", b""
    yield "only_newlines.metal", b"\n" * 100000
    yield "long_line.metal", b"// " + b"x" * (4 << 20) + b"\nkernel void f(device int* o [[buffer(0)]]) { o[0] = 1; }\n"
    yield "long_identifier.metal", (b"kernel void " + b"k" * (1 << 20) + b"(device int* o [[buffer(0)]]) { o[0] = 1; }\n")
    # the rewriter's input: attribute brackets in every odd place
    yield "brackets_open.metal", b"[[" * 50000
    yield "brackets_close.metal", b"]]" * 50000
    yield "brackets_mixed.metal", bytes(rng.choice(b"[]()<>{};,:") for _ in range(200000))


def nested_macros():
    # ~10 MB of macro definitions, each expanding to the previous one: expansion depth 300,000.
    lines = ["#include <metal_stdlib>", "#define M0 1"]
    n = 300000
    for i in range(1, n):
        lines.append(f"#define M{i} (M{i - 1} + 0*{'x' * 10})")
    lines.append(f"kernel void f(device int* o [[buffer(0)]]) {{ o[0] = M{n - 1}; }}")
    yield "macros_chain_10mb.metal", "\n".join(lines).encode()
    # exponential expansion: 2^40 tokens if nothing stopped it
    lines = ["#define E0 x"] + [f"#define E{i} E{i - 1} E{i - 1}" for i in range(1, 41)]
    lines.append("kernel void f(device int* o [[buffer(0)]]) { int x = 1; o[0] = E40; }")
    yield "macros_exponential.metal", "\n".join(lines).encode()
    yield "macros_self_include.metal", b'#include __FILE__\nkernel void f(device int* o [[buffer(0)]]) { o[0] = 1; }\n'
    yield "parens_deep.metal", (b"kernel void f(device int* o [[buffer(0)]]) { o[0] = " + b"(" * 200000 + b"1" +
                                b")" * 200000 + b"; }\n")
    yield "sum_100k_terms.metal", (b"kernel void f(device int* o [[buffer(0)]]) { o[0] = " +
                                   b"+".join([b"o[1]"] * 100000) + b"; }\n")
    yield "ifs_5000.metal", (b"kernel void f(device int* o [[buffer(0)]]) { int x = 0;\n" +
                             b"".join(b"if (o[%d] > 0) { x += %d; }\n" % (i % 7, i) for i in range(5000)) +
                             b"o[0] = x; }\n")
    yield "braces_deep.metal", (b"kernel void f(device int* o [[buffer(0)]]) { " + b"{" * 100000 + b"o[0] = 1;" +
                                b"}" * 100000 + b" }\n")
    yield "templates_deep.metal", (b"template <int N> struct R { static constant int v = R<N - 1>::v + 1; };\n"
                                   b"template <> struct R<0> { static constant int v = 0; };\n"
                                   b"kernel void f(device int* o [[buffer(0)]]) { o[0] = R<100000>::v; }\n")
    yield "constexpr_loop.metal", (b"constexpr int spin(int n) { while (n >= 0) n++; return n; }\n"
                                   b"kernel void f(device int* o [[buffer(0)]]) { constexpr int v = spin(1); o[0] = v; }\n")


def unterminated():
    head = b"#include <metal_stdlib>\nusing namespace metal;\n"
    k = b"kernel void f(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {"
    yield "unterminated_comment.metal", head + b"/* never closed\n" + k + b" o[i] = 1; }\n"
    yield "unterminated_comment_in_attr.metal", head + b"kernel void f(device float* o [[buffer(/*0)]]) { o[0] = 1; }\n"
    yield "unterminated_string.metal", head + k + b' const constant char* s = "abc\n o[i] = 1; }\n'
    yield "unterminated_char.metal", head + k + b" char c = 'a\n o[i] = 1; }\n"
    yield "unterminated_raw_string.metal", head + k + b' auto s = R"x(abc\n o[i] = 1; }\n'
    yield "unterminated_block.metal", head + k + b" o[i] = 1;\n"
    yield "unterminated_if.metal", head + b"#if 1\n" + k + b" o[i] = 1; }\n"
    yield "unterminated_attr.metal", head + b"kernel void f(device float* o [[buffer(0)\n"
    yield "unterminated_attr_arg.metal", head + b"kernel void f(device float* o [[buffer(\n"
    yield "unterminated_template.metal", head + b"template <typename T\nkernel void f(device T* o [[buffer(0)]]) {}\n"
    yield "unterminated_host_name.metal", (head + b"template <typename T> kernel void f(device T* o [[buffer(0)]]) {}\n"
                                           b'template [[host_name("f_float")]] kernel void f<float>(device float*')
    yield "backslash_eof.metal", head + k + b" o[i] = 1; }\\"


def odd_attributes():
    head = b"#include <metal_stdlib>\nusing namespace metal;\n"
    for name, attr in [("huge", b"buffer(99999999999999999999)"), ("negative", b"buffer(-2147483648)"),
                       ("int64", b"buffer(9223372036854775807)"), ("expr", b"buffer(1 << 40)"),
                       ("float", b"buffer(1.5)"), ("string", b'buffer("0")'), ("empty", b"buffer()"),
                       ("tg_huge", b"threadgroup(4294967296)"), ("nested", b"buffer([[buffer(0)]])"),
                       ("unknown", b"frobnicate(3)"), ("many", b"buffer(0), buffer(1), buffer(2)")]:
        yield f"attr_{name}.metal", head + b"kernel void f(device float* o [[" + attr + b"]]) { o[0] = 1; }\n"
    yield "fc_huge.metal", head + b"constant int c [[function_constant(4294967297)]];\n" \
                                  b"kernel void f(device int* o [[buffer(0)]]) { o[0] = c; }\n"
    yield "fc_negative.metal", head + b"constant int c [[function_constant(-1)]];\n" \
                                      b"kernel void f(device int* o [[buffer(0)]]) { o[0] = c; }\n"
    yield "host_name_empty.metal", head + (b"template <typename T> kernel void f(device T* o [[buffer(0)]]) {}\n"
                                           b'template [[host_name("")]] kernel void f<float>(device float*);\n')
    yield "host_name_dup.metal", head + (b"template <typename T> kernel void f(device T* o [[buffer(0)]]) {}\n"
                                         b'template [[host_name("g")]] kernel void f<float>(device float*);\n'
                                         b'template [[host_name("g")]] kernel void f<int>(device int*);\n')
    yield "kernel_returns.metal", head + b"kernel int f(device int* o [[buffer(0)]]) { return 1; }\n"
    yield "kernel_variadic.metal", head + b"kernel void f(device int* o [[buffer(0)]], ...) { o[0] = 1; }\n"
    yield "kernel_recursive_main.metal", head + b"kernel void f(device int* o [[buffer(0)]]) { f(o); }\n"


def many_entries(count):
    head = "#include <metal_stdlib>\nusing namespace metal;\n"
    body = "".join(f"kernel void k{i}(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                   f"{{ o[i] = {i}.0f; }}\n" for i in range(count))
    yield f"entries_{count}.metal", (head + body).encode()
    # the same count of declarations only (nothing to compile): the front end alone
    decls = "".join(f"kernel void d{i}(device float* o [[buffer(0)]]);\n" for i in range(count * 10))
    yield f"declarations_{count * 10}.metal", (head + decls).encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("m2v")
    ap.add_argument("kernels_dir")
    ap.add_argument("work_dir")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--entries", type=int, default=1000, help="entry points in the many-entries file")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--only", default="", help="substring of the case names to run")
    a = ap.parse_args()
    rng = random.Random(14)
    shutil.rmtree(a.work_dir, ignore_errors=True)
    os.makedirs(a.work_dir)
    cases = []
    for gen in (truncations(a.kernels_dir, rng), garbage(rng), nested_macros(), unterminated(), odd_attributes(),
                many_entries(a.entries)):
        for name, data in gen:
            if a.only and a.only not in name:
                continue
            path = os.path.join(a.work_dir, name)
            with open(path, "wb") as f:
                f.write(data)
            cases.append(path)
    failures = []
    counts = {}
    for path in cases:
        out = path[:-6] + ".out"
        start = time.monotonic()
        try:
            r = subprocess.run([a.m2v, "compile", path, "-o", out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               timeout=a.timeout)
            rc = r.returncode
            err = r.stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            rc, err = None, ""
        took = time.monotonic() - start
        name = os.path.basename(path)
        if rc is None:
            failures.append(f"{name}: no exit within {a.timeout:.0f} s")
        elif rc < 0:
            failures.append(f"{name}: killed by signal {signal.Signals(-rc).name}\n{err[-2000:]}")
        elif rc > 5:
            failures.append(f"{name}: exit code {rc} (outside 0..5)\n{err[-2000:]}")
        elif "internal error: crashed" in err:
            failures.append(f"{name}: crashed (caught by m2v's fatal-signal handler)\n{err[-2000:]}")
        elif rc == 4:
            # an internal error is a clean exit, but worth seeing
            print(f"note: {name}: exit 4 (internal error): {err.strip().splitlines()[-1] if err.strip() else ''}")
        counts[rc] = counts.get(rc, 0) + 1
        print(f"{name}: exit {rc} in {took:.1f} s", flush=True)
        shutil.rmtree(out, ignore_errors=True)
    print(f"{len(cases)} hostile inputs; exit codes: {dict(sorted((str(k), v) for k, v in counts.items()))}")
    if not a.keep:
        shutil.rmtree(a.work_dir, ignore_errors=True)
    if failures:
        print("FAIL:\n" + "\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
