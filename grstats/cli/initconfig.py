"""The member config `grstats init` writes: what the server said, plus what it cannot say.

Strategy: a fixed, commented template filled with values that are quoted by
`_q` (TOML basic strings), so nothing read from the server can break out of
its line. Only the keys a node must set are written; everything else keeps
its default, documented in the example config shipped with grstats.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from grstats.sources.mysql.preflight import ServerFacts

__all__ = ["NodeAnswers", "render_member_config"]


@dataclass(frozen=True, slots=True)
class NodeAnswers:
    """What the operator gives (flags or prompts): the broker and the credentials' sources."""

    mysql_dsn: str
    mysql_password_env: str | None
    mysql_password_file: str | None
    bus_host: str
    bus_port: int
    bus_tls: bool
    bus_ca_file: str | None
    bus_username: str
    bus_password_env: str | None
    bus_password_file: str | None
    history_dir: str


def _q(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _secret(env: str | None, file: str | None, env_default: str) -> str:
    if file:
        return f"password_file = {_q(file)}"
    return f"password_env = {_q(env or env_default)}"


def render_member_config(facts: ServerFacts, answers: NodeAnswers, source: str) -> str:
    """The TOML text of this node's `grstats.toml`.

    Args:
        facts: what the local server said.
        answers: the broker and the credentials' sources.
        source: where the facts came from (host:port), for the header comment.

    Returns:
        The file's text.
    """
    gr = facts.group_name
    if gr:
        group_comment = "# @@group_replication_group_name"
    elif gr is None:
        group_comment = (
            "# Group Replication is not installed on this server: the daemon reads the\n"
            "# group name from the server once it is (left empty here)"
        )
    else:
        group_comment = (
            "# Group Replication has no group name yet (group_replication_group_name is\n"
            "# empty): the daemon reads it from the server once it is set"
        )
    tls_lines = f"tls = {'true' if answers.bus_tls else 'false'}"
    if answers.bus_ca_file:
        tls_lines += f"\nca_file = {_q(answers.bus_ca_file)}   # the broker's CA (ca.crt)"
    return f"""\
# grstats.toml for this node, written by `grstats init` from {source}
# (MySQL {facts.version}). Every other key keeps its default: see the example
# config (`grstats init --print grstats.toml`). Check it with
#   grstats check --config <this file>

[member]
{group_comment}
group = {_q(gr or "")}
id = {_q(facts.server_uuid)}   # @@server_uuid
host = {_q(facts.member_host)}   # MEMBER_HOST (@@report_host, else @@hostname)
port = {facts.member_port}   # MEMBER_PORT (@@report_port, else @@port)

[source]
kind = "mysql"

[mysql]
dsn = {_q(answers.mysql_dsn)}
{_secret(answers.mysql_password_env, answers.mysql_password_file, "GRSTATS_MYSQL_PASSWORD")}

[bus]
host = {_q(answers.bus_host)}
port = {answers.bus_port}
{tls_lines}
# the member's server UUID: the shipped ACL lets a member write only under it
username = {_q(answers.bus_username)}
{_secret(answers.bus_password_env, answers.bus_password_file, "GRSTATS_BUS_PASSWORD")}

[history]
dir = {_q(answers.history_dir)}   # empty: no history
"""
