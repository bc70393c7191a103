#!/usr/bin/env python3
"""uzu's kernel entry points, made as uzu's build makes them.

uzu (trymirai/uzu) writes its Metal kernels as templates annotated with the macros of `common/dsl.h` (VARIANTS,
CONSTRAINT, PUBLIC, KERNEL, SPECIALIZE, OPTIONAL, AXIS, GROUPS, THREADS); its Rust build (build/metal/ast.rs and
wrapper.rs) reads the annotations from Apple's compiler's AST dump and appends to each file a footer of `[[kernel]]`
wrappers: one per combination of the VARIANTS values that every CONSTRAINT admits, SPECIALIZE arguments as function
constants, OPTIONAL arguments behind function constants, threadgroup arrays declared in the wrapper. This module reads
the same annotations from the source text (the macros are written literally in the kernel declarations) and writes
the same wrappers, so that each file can be compiled whole, as uzu's build compiles it.

Differences from uzu's build, none of which changes what is compiled: wrapper names are `Name_v1_v2...` (uzu's
`static_mangle` is not part of the snapshot), and constraint expressions are evaluated in Python after translating
C's logical operators (uzu's evaluator is not part of the snapshot either).

    python3 corpus/uzu/uzu_dsl.py KERNEL_DIR [--file REL] [--list] [--footer REL]
"""
import argparse
import itertools
import os
import re
import sys

ANNOTATIONS = ("OPTIONAL", "SPECIALIZE", "AXIS", "GROUPS", "THREADS")


def strip_comments(text):
    """The source without comments (strings kept, line breaks kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def closing(text, open_at, pair="()"):
    """Index of the bracket that closes the one at open_at."""
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == pair[0]:
            depth += 1
        elif text[k] == pair[1]:
            depth -= 1
            if depth == 0:
                return k
    raise ValueError("unbalanced %s at offset %d" % (pair, open_at))


def split_top(text, sep=","):
    """Splits at separators outside (), [], {} and <> of template argument lists."""
    parts, depth, angle, start = [], 0, 0, 0
    for k, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "<" and depth == 0 and re.search(r"[\w>]\s*$", text[:k]) and not text[k + 1:k + 2] in "<=":
            angle += 1
        elif c == ">" and depth == 0 and angle > 0 and text[k - 1] != "-":
            angle -= 1
        elif c == sep and depth == 0 and angle == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def macro_calls(text, names):
    """(name, argument text or None, start, end) of each call of the named macros in text, in order."""
    calls = []
    for m in re.finditer(r"\b(%s)\b" % "|".join(names), text):
        k = m.end()
        while k < len(text) and text[k].isspace():
            k += 1
        if k < len(text) and text[k] == "(":
            end = closing(text, k)
            calls.append((m.group(1), text[k + 1:end], m.start(), end + 1))
        else:
            calls.append((m.group(1), None, m.start(), m.end()))
    return calls


class Argument:
    def __init__(self, text):
        self.condition = None
        self.kind = None  # buffer, constant, shared, specialize, axis, groups, threads, thread_context
        self.annotation = None
        rest = text
        for name, args, start, end in reversed(macro_calls(text, ANNOTATIONS)):
            rest = rest[:start] + " " + rest[end:]
            if name == "OPTIONAL":
                self.condition = args.strip()
            else:
                self.kind = {"SPECIALIZE": "specialize", "AXIS": "axis", "GROUPS": "groups", "THREADS": "threads"}[name]
                self.annotation = [a.strip() for a in split_top(args)] if args is not None else []
        rest = " ".join(rest.split())
        dims = re.search(r"((?:\[[^\]]*\]\s*)+)$", rest)
        self.dims = dims.group(1).replace(" ", "") if dims else ""
        rest = rest[:dims.start()].strip() if dims else rest
        m = re.search(r"(\w+)$", rest)
        if not m:
            raise ValueError("cannot read the argument '%s'" % text)
        self.name = m.group(1)
        self.type = rest[:m.start()].strip()
        words = re.findall(r"[\w:]+|[*&]", self.type)
        if self.kind is None:
            if self.type.replace("const", "").strip() == "ThreadContext":
                self.kind = "thread_context"
            elif "device" in words and ("*" in words or self.dims):
                self.kind = "buffer"
            elif "constant" in words:
                self.kind = "constant"
            elif "threadgroup" in words:
                self.kind = "shared"
            else:
                raise ValueError("cannot classify the argument '%s'" % text)
        if self.condition and self.kind not in ("buffer", "constant", "shared"):
            raise ValueError("only a buffer, a constant or a threadgroup argument can be OPTIONAL: '%s'" % text)

    def element_type(self):
        """A threadgroup argument's type without its pointer, reference or array part."""
        return self.type.split("*")[0].split("&")[0].strip()

    def decayed_type(self):
        """The type the underlying function's parameter has (an array decays to a pointer)."""
        return self.element_type() + " *" if self.dims or "*" in self.type else self.type


class Kernel:
    def __init__(self, name, template, annotations, arguments, public):
        self.name = name
        self.public = public
        self.arguments = [Argument(a) for a in split_top(arguments)]
        params = [p.split("=")[0].strip() for p in split_top(template)] if template else []
        self.template_names = [re.search(r"(\w+)$", p).group(1) for p in params]
        self.variants = []  # (name, [values]) in annotation order
        self.constraints = []
        for name, args, _, _ in annotations:
            if name == "VARIANTS":
                parts = split_top(args)
                self.variants.append((parts[0], parts[1:]))
            elif name == "CONSTRAINT":
                self.constraints.append(" ".join(args.split()))
        if [v[0] for v in self.variants] != self.template_names:
            raise ValueError("%s: VARIANTS (%s) do not name the template parameters (%s) in order" %
                             (self.name, ", ".join(v[0] for v in self.variants), ", ".join(self.template_names)))

    def combinations(self):
        """Each admitted assignment of VARIANTS values, as [(name, value)]."""
        if not self.variants:
            return [[]]
        names = [v[0] for v in self.variants]
        out = []
        for values in itertools.product(*[v[1] for v in self.variants]):
            pairs = list(zip(names, values))
            if all(satisfied(c, pairs) for c in self.constraints):
                out.append(pairs)
        return out

    def has(self, kind):
        return any(a.kind == kind for a in self.arguments)


INTEGER_DEFINES = {}  # `#define NAME 32` of the kernel directory's headers, which constraints may name


def integer_defines(text):
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*#define\s+(\w+)\s+(\d+)[uU]?\s*$", text, re.M)}


def satisfied(constraint, pairs):
    """Whether a CONSTRAINT holds for one assignment: names of type parameters compare with "type" strings, value
    parameters with their values, enumerators (A::B) with themselves."""
    env = dict(INTEGER_DEFINES)
    for name, value in pairs:
        if re.fullmatch(r"-?\d+[uU]?", value):
            env[name] = int(value.rstrip("uU"))
        elif value in ("true", "false"):
            env[name] = value == "true"
        else:
            env[name] = value
    expr = re.sub(r"\b\w+(::\w+)+\b", lambda m: repr(m.group(0)), constraint)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    expr = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", expr))
    return bool(eval(expr, {"__builtins__": {}}, env))


def kernels_of(text):
    """The DSL kernels declared in one file's source, in order."""
    text = strip_comments(text)
    found = []
    for m in re.finditer(r"\bKERNEL\s*\(\s*(\w+)\s*\)\s*\(", text):
        open_at = m.end() - 1
        arguments = text[open_at + 1:closing(text, open_at)]
        # The declaration's prefix: back to the end of the previous declaration.
        start = max(text.rfind(";", 0, m.start()), text.rfind("}", 0, m.start()), text.rfind("#", 0, m.start()))
        start = text.find("\n", start) if text[start:start + 1] == "#" else start
        prefix = text[start + 1:m.start()]
        template = None
        t = re.search(r"\btemplate\s*<", prefix)
        if t:
            close = closing(prefix, t.end() - 1, "<>")
            template = prefix[t.end():close]
            prefix = prefix[close + 1:]
        annotations = [c for c in macro_calls(prefix, ("VARIANTS", "CONSTRAINT", "PUBLIC"))]
        public = any(c[0] == "PUBLIC" for c in annotations)
        found.append(Kernel(m.group(1), template, annotations, arguments, public))
    return found


def enum_like_types(kernel_dir):
    """Types uzu's build passes through a uint32_t function constant: the enums and flag structs of generated/."""
    names = set()
    gen = os.path.join(kernel_dir, "generated")
    for f in sorted(os.listdir(gen)) if os.path.isdir(gen) else []:
        text = open(os.path.join(gen, f)).read()
        names.update(re.findall(r"\benum\s+(?:class\s+)?(\w+)", text))
        names.update(n for n in re.findall(r"\bstruct\s+(\w+)\s*\{", text) if re.search(r"\b%s\(uint32_t" % n, text))
    return names


def mangle(name, values):
    return "_".join([name] + [re.sub(r"\W+", "_", v.split("::")[-1]) for v in values])


def footer(kernels, enums):
    """The wrappers uzu's build appends to a file that declares these kernels."""
    out, next_index = [], 0
    for k in kernels:
        specialized = [a for a in k.arguments if a.kind == "specialize"]
        if specialized:
            lines = []
            for offset, a in enumerate(specialized):
                base_type = a.type.replace("const ", "").strip()
                slot_type = "uint32_t" if base_type in enums else base_type
                lines.append("constant %s __dsl_specialize_%s_%s [[function_constant(%d)]];" %
                             (slot_type, k.name, a.name, next_index + offset))
            for a in specialized:
                base_type = a.type.replace("const ", "").strip()
                if base_type in enums:
                    lines.append("constant {t} __dsl_typed_{k}_{a} = {t}(__dsl_specialize_{k}_{a});".format(
                        t=base_type, k=k.name, a=a.name))
            for a in specialized:
                base_type = a.type.replace("const ", "").strip()
                alias = "__dsl_%s_%s_%s" % ("typed" if base_type in enums else "specialize", k.name, a.name)
                lines.append("#define %s %s" % (a.name, alias))
            out.append("\n".join(lines) + "\n")
            next_index += len(specialized)
        threads = ["(%s)" % a.annotation[1] for a in k.arguments if a.kind == "axis"]
        threads += ["(%s)" % a.annotation[0] for a in k.arguments if a.kind == "threads"]
        max_threads = " * ".join(threads) if threads else "1"
        for pairs in k.combinations():
            values = [v for _, v in pairs]
            wrapper = mangle(k.name, values)
            underlying = "%s<%s>" % (k.name, ", ".join(values)) if pairs else k.name
            params, conditions = [], []
            bound = [a for a in k.arguments if a.kind in ("buffer", "constant")]
            for i, a in enumerate(bound):
                if a.condition:
                    field = "__dsl_buffer_condition_%s_%s" % (wrapper, a.name)
                    conditions.append("constant bool %s = (%s);" % (field, a.condition))
                    params.append("%s %s%s [[buffer(%d), function_constant(%s)]]" % (a.type, a.name, a.dims, i, field))
                else:
                    params.append("%s %s%s [[buffer(%d)]]" % (a.type, a.name, a.dims, i))
            optional_shared = [a for a in k.arguments if a.kind == "shared" and a.condition]
            for i, a in enumerate(optional_shared):
                params.append("%s* %s [[threadgroup(%d)]]" % (a.element_type(), a.name, i))
            if k.has("axis"):
                if k.has("groups") or k.has("threads"):
                    raise ValueError("%s: mixing groups/threads and axis is not supported" % k.name)
                params.append("uint3 __dsl_axis_idx [[thread_position_in_grid]]")
            if k.has("groups") or k.has("thread_context"):
                params.append("uint3 __dsl_group_idx [[threadgroup_position_in_grid]]")
            if k.has("threads"):
                params.append("uint3 __dsl_thread_idx [[thread_position_in_threadgroup]]")
            if k.has("thread_context"):
                params += ["uint __dsl_simd_lane_idx [[thread_index_in_simdgroup]]",
                           "uint __dsl_simd_group_idx [[simdgroup_index_in_threadgroup]]",
                           "uint __dsl_simd_group_size [[threads_per_simdgroup]]",
                           "uint __dsl_simd_group_per_threadgroup [[simdgroups_per_threadgroup]]"]
            body = ["%s %s%s" % (a.element_type(), a.name, a.dims) for a in k.arguments
                    if a.kind == "shared" and not a.condition]
            group_axes, thread_axes, call = iter("xyz"), iter("xyz"), []
            for a in k.arguments:
                if a.kind == "shared" and a.condition:
                    call.append("(%s)%s" % (a.decayed_type(), a.name))
                elif a.kind == "axis":
                    call.append("__dsl_axis_idx." + next(group_axes))
                elif a.kind == "groups":
                    call.append("__dsl_group_idx." + next(group_axes))
                elif a.kind == "threads":
                    call.append("__dsl_thread_idx." + next(thread_axes))
                elif a.kind == "thread_context":
                    call.append("ThreadContext { .simd_lane_id = __dsl_simd_lane_idx, .simdgroup_index = "
                                "__dsl_simd_group_idx, .simdgroup_size = __dsl_simd_group_size, "
                                ".simdgroups_per_threadgroup = __dsl_simd_group_per_threadgroup, "
                                ".threadgroup_position = __dsl_group_idx }")
                else:
                    call.append(a.name)
            body.append("%s(%s)" % (underlying, ", ".join(call)))
            defs = "".join("\n#define %s %s" % p for p in pairs)
            undefs = "".join("#undef %s\n" % n for n, _ in pairs)
            out.append("%s\n%s\n[[kernel, max_total_threads_per_threadgroup(%s)]] void %s(%s) {\n%s}\n%s" % (
                defs, "\n".join(conditions), max_threads, wrapper, ", ".join(params),
                "".join("  %s;\n" % line for line in body), undefs))
        if specialized:
            out.append("".join("#undef %s\n" % a.name for a in specialized))
    return "".join(out)


def entry_names(kernels):
    return [mangle(k.name, [v for _, v in pairs]) for k in kernels for pairs in k.combinations()]


def metal_files(kernel_dir):
    for root, _, files in os.walk(kernel_dir):
        for f in sorted(files):
            if f.endswith(".metal"):
                yield os.path.relpath(os.path.join(root, f), kernel_dir)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kernel_dir", help="uzu's crates/backend-uzu/src/backends/metal/kernel")
    ap.add_argument("--file", help="one .metal file (relative to kernel_dir)")
    ap.add_argument("--list", action="store_true", help="print each file's entry points")
    ap.add_argument("--footer", action="store_true", help="print the file's source with its wrappers appended")
    args = ap.parse_args()
    if not os.path.isdir(args.kernel_dir):
        print("SKIP: no kernel folder at %s" % args.kernel_dir)
        return
    files = [args.file] if args.file else sorted(metal_files(args.kernel_dir))
    enums = enum_like_types(args.kernel_dir)
    for root, _, names in os.walk(args.kernel_dir):
        for f in names:
            if f.endswith(".h"):
                INTEGER_DEFINES.update(integer_defines(open(os.path.join(root, f)).read()))
    total = 0
    for rel in files:
        source = open(os.path.join(args.kernel_dir, rel)).read()
        INTEGER_DEFINES.update(integer_defines(source))
        kernels = kernels_of(source)
        if args.footer:
            sys.stdout.write(source + "\n" + footer(kernels, enums))
            continue
        names = entry_names(kernels)
        total += len(names)
        print("%5d %s" % (len(names), rel))
        if args.list:
            for n in names:
                print("      " + n)
    if not args.footer:
        print("%5d entry points in %d files" % (total, len(files)))


if __name__ == "__main__":
    main()
