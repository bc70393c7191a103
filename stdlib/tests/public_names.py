#!/usr/bin/env python3
"""Holds the names our metal_stdlib makes visible to user code to the Metal Shading Language specification's list.

Compiles `#include <metal_stdlib>` with clang (the compiler's language and include rules), reads the declarations at
namespace scope from clang's JSON AST, and fails when a name that user code can see -- in namespace `metal` (and its
`fast`/`precise` namespaces) or at global scope -- is not in stdlib/tests/metal_public_names.txt. Names that start
with `__` or `_` and an upper-case letter are reserved to the implementation in C++ and may be anything; so may
anything in namespace `__m2v`. Names Apple's library has for implementation use that real Metal code names
(`_numeric_limits_impl`, `_fp_numeric_limits_impl_base`) are in the list too.

usage: public_names.py [--clang clang-22] [--list] INCLUDE_DIR NAMES_FILE
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile

RESERVED = re.compile(r"^(__|_[A-Z])")
DECL_KINDS = {
    "FunctionDecl", "FunctionTemplateDecl", "CXXRecordDecl", "ClassTemplateDecl", "TypedefDecl", "TypeAliasDecl",
    "TypeAliasTemplateDecl", "VarDecl", "VarTemplateDecl", "EnumDecl", "EnumConstantDecl", "UsingShadowDecl",
    "ClassTemplatePartialSpecializationDecl", "ClassTemplateSpecializationDecl", "VarTemplateSpecializationDecl",
    "VarTemplatePartialSpecializationDecl",
}
SPECIALIZATIONS = {"ClassTemplatePartialSpecializationDecl", "ClassTemplateSpecializationDecl",
                   "VarTemplateSpecializationDecl", "VarTemplatePartialSpecializationDecl"}


def public_names(clang, include_dir):
    with tempfile.NamedTemporaryFile("w", suffix=".cpp") as f:
        f.write("#include <metal_stdlib>\n")
        f.flush()
        cmd = [clang, "-cc1", "-triple", "nvptx64-nvidia-cuda", "-x", "c++", "-std=c++17", "-nostdsysteminc",
               "-nobuiltininc", "-nostdinc++", "-fgnuc-version=4.2.1", "-D__METAL_VERSION__=320", "-D__METAL__=1",
               "-D__HAVE_NATIVE_BFLOAT__=1", "-D__HAVE_BFLOAT__=1", "-isystem", include_dir, "-include",
               "__m2v/base.h", "-ast-dump=json", f.name]
        out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("clang failed:\n" + out.stderr[:4000])
    tu = json.loads(out.stdout)
    names = set()

    def walk(node, prefix):
        for d in node.get("inner", []):
            kind, name = d.get("kind"), d.get("name", "")
            if d.get("isImplicit"):
                continue
            if kind == "NamespaceDecl":
                if name == "__m2v" or RESERVED.match(name):
                    continue
                names.add(prefix + name)
                walk(d, prefix + name + "::")
            elif kind == "LinkageSpecDecl":
                walk(d, prefix)
            elif kind == "EnumDecl":
                if name and not RESERVED.match(name):
                    names.add(prefix + name)
                if not d.get("scopedEnumTag"):  # an unscoped enum's constants are names of its scope
                    for c in d.get("inner", []):
                        if c.get("kind") == "EnumConstantDecl" and not RESERVED.match(c.get("name", "")):
                            names.add(prefix + c["name"])
            elif kind == "UsingDecl":  # `using metal::exp;` in namespace fast: the name, unqualified
                short = name.split("::")[-1]
                if short and not RESERVED.match(short) and not short.startswith("operator"):
                    names.add(prefix + short)
            elif kind in DECL_KINDS and kind not in SPECIALIZATIONS:
                if name and not RESERVED.match(name) and not name.startswith("operator"):
                    names.add(prefix + name)
    walk(tu, "")
    # what the predefines and clang itself declare at global scope is not ours
    return {n for n in names if not n.startswith(("std::",))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clang", default="clang-22")
    ap.add_argument("--list", action="store_true", help="print the names found and exit")
    ap.add_argument("include_dir")
    ap.add_argument("names_file")
    a = ap.parse_args()
    found = public_names(a.clang, a.include_dir)
    if a.list:
        print("\n".join(sorted(found)))
        return 0
    allowed = set()
    for line in open(a.names_file):
        line = line.split("#", 1)[0].strip()
        if line:
            allowed.update(line.split())
    extra = sorted(found - allowed)
    if extra:
        print(f"FAIL: {len(extra)} public name(s) in our metal_stdlib that the Metal Shading Language specification "
              f"does not list ({a.names_file}):")
        for n in extra:
            print("  " + n)
        return 1
    print(f"ok: {len(found)} public names, all in the specification's list ({len(allowed)} names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
