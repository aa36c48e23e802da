"""Every documented command line parses as its program parses it; every cited file exists.

The lines come from README.md, docs/*.md, the `--help` epilogs and the files
grstats writes for the user (`tests/fixtures/examples.py`). This module only
parses them (fast, no daemon); tests/test_playground.py runs the ones that
can run against the playground. A wrong hint fails here.
"""

from __future__ import annotations

import re

import click
import pytest

from tests.fixtures.examples import Example, examples, parse_error
from tests.fixtures.paths import REPO_ROOT

EXAMPLES = examples()


def test_the_examples_are_found_where_a_newcomer_reads_them() -> None:
    places = {e.where for e in EXAMPLES}
    assert {"README.md", "docs/cli.md", "docs/operator-guide.md"} <= places, places
    assert {"grstats --help", "grstats init --help", "python -m spark_rollups --help"} <= places
    assert "grstats/cli/initconfig.py" in places  # the config `grstats init` writes
    assert len(EXAMPLES) >= 80, len(EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: f"{e.where}: {e.line[:60]}")
def test_every_documented_command_parses(example: Example) -> None:
    assert parse_error(example) is None, f"{example.where}: {example.line}"


def test_a_wrong_hint_is_caught() -> None:
    """The hints issue 42 found wrong would fail this module."""
    for line in (
        "grstats init --print grstats-systemd.service > /etc/systemd/system/grstats.service",
        "grstats init --print-example",
        "python -m spark_rollups rollup --histroy h --out r",
        "make playgroun",
    ):
        assert parse_error(Example("here", line)) is not None, line


def _help_texts() -> list[tuple[str, str]]:
    from grstats.cli.main import main  # noqa: PLC0415
    from spark_rollups.report import build_parser as report_parser  # noqa: PLC0415
    from spark_rollups.rollup import build_parser as rollup_parser  # noqa: PLC0415

    assert isinstance(main, click.Group)
    context = click.Context(main)
    texts = [("grstats", main.get_help(context))]
    for name in main.list_commands(context):
        command = main.get_command(context, name)
        assert command is not None
        texts.append((name, command.get_help(click.Context(command, info_name=name))))
    texts.append(("rollup", rollup_parser().format_help()))
    texts.append(("report", report_parser().format_help()))
    return texts


def test_every_file_a_help_text_cites_is_in_the_repository() -> None:
    # a document of the repository (DESIGN.md, docs/report.md), not an output (report.md)
    cited = re.compile(r"\b((?:docs/[\w-]+|[A-Z][A-Z_-]+)\.md)\b")
    for name, text in _help_texts():
        for path in cited.findall(text):
            assert (REPO_ROOT / path).is_file(), f"{name} --help cites {path}"


def test_every_link_between_the_documents_leads_somewhere() -> None:
    link = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
    for path in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        for target in link.findall(path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (path.parent / target).exists(), f"{path.name} links to {target}"


def test_the_readme_stays_short() -> None:
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines: move the detail to docs/"
