"""Builds the metal2vk Python package with CMake (see pyproject.toml).

The extension (metal2vk/_core) and libmetal2vk.so.0 (the compiler and runtime, LLVM linked in) come from the
portable configuration, built for the interpreter running this script; they go into the package folder, where
_core finds the library ($ORIGIN). M2V_CMAKE_ARGS adds CMake arguments; JOBS sets the build parallelism (default 2:
static links are memory-heavy).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(metal2vk VERSION ([0-9.]+)", text).group(1)


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = Path(self.build_temp).resolve() / "cmake"
        stage = Path(self.build_temp).resolve() / "stage"
        configure = [
            "cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
            "-DM2V_PORTABLE=ON", f"-DM2V_PYTHON={sys.executable}",
        ] + shlex.split(os.environ.get("M2V_CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        subprocess.check_call(["cmake", "--build", str(build), "-j", os.environ.get("JOBS", "2"),
                               "--target", "metal2vk", "m2v_python"])
        shutil.rmtree(stage, ignore_errors=True)
        for component in ("library", "python"):
            subprocess.check_call(["cmake", "--install", str(build), "--prefix", str(stage), "--strip",
                                   "--component", component])
        dest = Path(self.get_ext_fullpath(ext.name)).parent
        dest.mkdir(parents=True, exist_ok=True)
        built = list((stage / "python" / "metal2vk").glob("_core*.so"))
        if len(built) != 1:
            raise RuntimeError(f"expected one metal2vk/_core*.so in {stage}, found {built}")
        shutil.copyfile(built[0], self.get_ext_fullpath(ext.name))
        # Under its SONAME, beside _core (RUNPATH $ORIGIN).
        shutil.copyfile(stage / "lib" / f"libmetal2vk.so.{project_version()}", dest / "libmetal2vk.so.0")


setup(
    version=project_version(),
    packages=["metal2vk"],
    package_dir={"": "python"},
    ext_modules=[Extension("metal2vk._core", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-python"}, "egg_info": {"egg_base": "build-python"}},
    zip_safe=False,
)
