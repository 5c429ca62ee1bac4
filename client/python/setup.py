# setup.py: builds the simhash Python package (client/python/) with setuptools.
#
# The extension simhash._simhash compiles the project's own C sources: the algorithm
# core (common/core/*.c: fingerprints, permutation tables, matching, corpus; needs
# libxxhash, libutf8proc, libxml2 and threads) and the client library (client/lib/*.c, on hiredis). They
# are found two folders up (this file lives in client/python/ of the source tree);
# SIMHASH_SRC=/path/to/checkout overrides that. pip (>= 21.3, Debian 12 has 23) builds
# a local directory in place, so the relative location holds during `pip install`.
#
#   python3 -m pip install --no-build-isolation ./client/python            # in a venv
#   python3 -m pip install --no-build-isolation --target DIR ./client/python
#
# SIMHASH_PY_WERROR=1 turns compiler warnings into errors (the tests set it).
import glob
import os
import subprocess
import platform
import re
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.environ.get("SIMHASH_SRC") or os.path.join(HERE, "..", ".."))
CORE = os.path.join(ROOT, "common", "core")
CLIB = os.path.join(ROOT, "client", "lib")
CINC = os.path.join(ROOT, "client", "include")

if not os.path.isfile(os.path.join(CORE, "fingerprint.c")):
    sys.exit("simhash setup.py: the C sources are not at %s (build from a checkout of the "
             "simhash tree, or set SIMHASH_SRC to one)" % ROOT)


def project_version():
    """The version in the top CMakeLists.txt (project(simhash VERSION x.y.z))."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(simhash VERSION ([0-9.]+)", f.read())
    return m.group(1) if m else "0.0.0"


VERSION = project_version()
# Absolute paths: setuptools then puts the objects under build/temp*/<path>, inside
# the build folder (relative ../.. paths would put them beside the sources).
sources = (sorted(glob.glob(os.path.join(HERE, "src", "*.c"))) +
           sorted(glob.glob(os.path.join(CORE, "*.c"))) +
           sorted(glob.glob(os.path.join(CLIB, "*.c"))))
cflags = ["-std=gnu11", "-Wall", "-Wextra", "-Wshadow", "-pthread", "-O2"]
if platform.machine() in ("x86_64", "AMD64"):
    cflags.append("-mpopcnt")        # as the CMake build: Hamming distance is one instruction
if os.environ.get("SIMHASH_PY_WERROR") == "1":
    cflags.append("-Werror")


def pkg_include_dirs(pkg, fallback):
    """The -I folders pkg-config names for pkg (fallback when pkg-config is absent)."""
    try:
        out = subprocess.run(["pkg-config", "--cflags-only-I", pkg], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return fallback
    return [f[2:] for f in out.split() if f.startswith("-I")]


# libxml2's headers live in a folder of their own
XML2_INCLUDE = pkg_include_dirs("libxml-2.0", ["/usr/include/libxml2"])

# Headers too, so that a rebuild in place follows a change of any of them.
depends = (sorted(glob.glob(os.path.join(HERE, "src", "*.h"))) +
           sorted(glob.glob(os.path.join(CORE, "*.h"))) +
           sorted(glob.glob(os.path.join(CLIB, "*.h"))) +
           [os.path.join(CINC, "simhash", "client.h")])

ext = Extension(
    "simhash._simhash",
    sources=sources,
    depends=depends,
    include_dirs=[os.path.join(HERE, "src"), CORE, CLIB, CINC] + XML2_INCLUDE,
    define_macros=[("SIMHASH_VERSION", '"%s"' % VERSION), ("_GNU_SOURCE", None)],
    libraries=["hiredis", "xxhash", "utf8proc", "xml2", "m"],
    extra_compile_args=cflags,
    extra_link_args=["-pthread"],
)

setup(
    name="simhash",
    version=VERSION,
    description="Near-duplicate detection with 64-bit simhash: the simhash-py API on the "
                "simhash C core, and a client of the distributed corpus",
    license="MIT",
    packages=["simhash"],
    package_data={"simhash": ["__init__.pyi", "py.typed"]},
    ext_modules=[ext],
    python_requires=">=3.9",
    zip_safe=False,
)
