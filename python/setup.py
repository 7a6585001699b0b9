"""Builds the package `recourse` from this repository (docs/python.md).

    /usr/bin/python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-index --no-build-isolation ./python

The extension module is built by CMake in the repository's build tree (RECOURSE_BUILD_DIR,
default ../build) with -DRECOURSE_PYTHON=ON, against the engine library the rest of the build
uses: an engine already built there is not compiled again. Needs pybind11-dev and python3-dev
(scripts/deps.sh installs them).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class CMakeBuild(build_ext):
    """Configures the repository's CMake tree with the module on, builds only the module and
    copies it where setuptools packages it."""

    def build_extension(self, ext):
        build = Path(os.environ.get("RECOURSE_BUILD_DIR", ROOT / "build")).resolve()
        configure = ["cmake", "-S", str(ROOT), "-B", str(build), "-DRECOURSE_PYTHON=ON",
                     f"-DPython_EXECUTABLE={sys.executable}"]
        if not (build / "CMakeCache.txt").exists():
            configure += ["-G", "Ninja" if shutil.which("ninja") else "Unix Makefiles",
                          "-DCMAKE_BUILD_TYPE=Release"]
        subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        subprocess.run(["cmake", "--build", str(build), "--target", "recourse_python", "-j", jobs],
                       check=True)
        built = next((build / "python").glob("_recourse*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)


setup(
    name="recourse",
    version="0.1.0",
    description="Decide how an agent recovers when a tool call fails (the recourse engine)",
    packages=["recourse"],
    package_data={"recourse": ["py.typed", "*.pyi"]},
    ext_modules=[Extension("recourse._recourse", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    zip_safe=False,
)
