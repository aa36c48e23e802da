"""Child processes run the checkout under test, not what the venv has installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import CHECKOUT


def test_a_child_process_imports_the_checkout_under_test(tmp_path: Path) -> None:
    # as a daemon starts: the venv's interpreter, another working directory,
    # nothing but the environment to say where grstats is
    code = "import grstats, protocol, spark_rollups; print(grstats.__file__, protocol.__file__)"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [
        str(CHECKOUT / "grstats" / "__init__.py"),
        str(CHECKOUT / "protocol" / "__init__.py"),
    ]
