"""Copies the shipped files (config/, systemd/) into the wheel as grstats/shipped/.

Everything else is in pyproject.toml; grstats.cli.shipped reads the copies.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED_DIRS = ("config", "systemd")


class BuildWithShipped(build_py):
    def run(self) -> None:
        super().run()
        root = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "grstats" / "shipped"
        for name in SHIPPED_DIRS:
            src = root / name
            if src.is_dir():
                shutil.copytree(src, target / name, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithShipped})
