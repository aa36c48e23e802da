"""`python -m spark_rollups rollup|report ...` (also `spark-submit spark_rollups/__main__.py ...`).

Strategy: argparse subcommands that hand their arguments to `rollup.main` and
`report.main`; user mistakes are one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # run as a file by spark-submit: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

USAGE = """\
usage: python -m spark_rollups {rollup,report} [options]

commands:
  rollup   history Parquet -> member_minute/hour/day, group_hour/day tables
  report   the weekly conflict report of one ISO week (Markdown, HTML, PNG, CSV)

examples:
  python -m spark_rollups rollup --history /var/lib/grstats/history --out rollups
  python -m spark_rollups rollup --history hist --out rollups --since 2026-11-16
  python -m spark_rollups report --rollups rollups --week 2026-W47 --out report
  spark-submit --master spark://head:7077 spark_rollups/__main__.py rollup --history ... --out ...

`python -m spark_rollups COMMAND --help` lists a command's options.
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch to a subcommand.

    Args:
        argv: arguments without the program name; None = sys.argv[1:].

    Returns:
        The subcommand's exit status; 2 for an unknown command.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command == "rollup":
        from spark_rollups.rollup import main as rollup_main  # noqa: PLC0415 - lazy pyspark

        return rollup_main(rest)
    if command == "report":
        from spark_rollups.report import main as report_main  # noqa: PLC0415 - lazy pyspark

        return report_main(rest)
    print(
        f"spark_rollups: unknown command {command!r} (expected rollup or report)", file=sys.stderr
    )
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
