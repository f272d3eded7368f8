"""Only the wheel tag lives here (everything else is in pyproject.toml): a wheel that bundles
libTaskerWorkerFFI.so (build_wheel.sh) is py3-none-<platform>; without it the package is pure."""

import sysconfig
from pathlib import Path

from setuptools import setup

BUNDLED = (Path(__file__).parent / "src" / "tasker_worker_swift" / "lib" / "libTaskerWorkerFFI.so").is_file()
commands = {}
if BUNDLED:
    try:
        from setuptools.command.bdist_wheel import bdist_wheel
    except ImportError:  # setuptools < 70
        from wheel.bdist_wheel import bdist_wheel

    class PlatformWheel(bdist_wheel):
        """ctypes only: any Python 3, but this platform's machine code."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            return "py3", "none", sysconfig.get_platform().replace("-", "_").replace(".", "_")

    commands["bdist_wheel"] = PlatformWheel

setup(cmdclass=commands)
