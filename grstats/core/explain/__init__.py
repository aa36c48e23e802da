"""The `--explain` texts: what a person reads about each member's verdicts.

Strategy: pure functions from table rows and the group's member labels
(`grstats.core.labels.member_labels`) to text, so the CLI's `--explain` and
the daemon's live page say the same thing from one source. Members are named
host:port (a member without a label, one no server's view lists, keeps its
UUID); durations read as `4 h 23 min` (`protocol.humanize.duration`); every
text from a row goes through `grstats.core.visible`.
"""

from __future__ import annotations

from grstats.core.explain.applier import applier_text, applier_verdicts
from grstats.core.explain.commit_path import commit_path_text, commit_path_verdicts
from grstats.core.explain.gtids import MAX_STATEMENTS, gtids_text, inject_statements
from grstats.core.explain.names import who

__all__ = [
    "MAX_STATEMENTS",
    "applier_text",
    "applier_verdicts",
    "commit_path_text",
    "commit_path_verdicts",
    "gtids_text",
    "inject_statements",
    "who",
]
