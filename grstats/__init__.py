"""grstats: MySQL Group Replication member statistics for every member, with history.

structlog's `structlog.dev` (imported by `import structlog`) imports rich, if
installed, for its console tracebacks: 66 modules and 3 MB of RSS in every
process, though a daemon logs JSON lines (the console renderer then formats
tracebacks plainly). So structlog is imported here, first, with rich hidden;
rich stays importable for the commands that draw with it (watch, simulate).
"""

import sys

if "structlog" not in sys.modules and "rich" not in sys.modules:
    sys.modules["rich"] = None  # type: ignore[assignment]  # None: `import rich` fails
    try:
        import structlog  # noqa: F401 - imported now so that it does without rich
    finally:
        del sys.modules["rich"]

__version__ = "0.1.0"
__all__ = ["__version__"]
