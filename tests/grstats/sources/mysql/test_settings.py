"""The mysql source's pure parts: the wire's signed integers, the DSN, the settings."""

from __future__ import annotations

import pytest

from grstats.sources.mysql import MySQLSettings, parse_dsn, wire_int32, wire_int64

# -- signed wire representation ----------------------------------------------------------


@pytest.mark.parametrize(
    ("unsigned", "signed"),
    [
        (0, 0),
        (12345, 12345),
        (9223372036854775807, 9223372036854775807),  # 2**63 - 1 stays
        (9223372036854775808, -9223372036854775808),  # 2**63 -> INT64_MIN
        (18446744073709551615, -1),  # 2**64 - 1
        (18446744073709551000, -616),  # 2**64 - 616
    ],
)
def test_wire_int64_wraps_unsigned_counters(unsigned: int, signed: int) -> None:
    assert wire_int64(unsigned) == signed


# A queue size is never negative, yet MySQL's sender would wrap one >= 2**31
# (pipeline_stats.cc send_stats_member_message: static_cast<int32> of
# applier_module->get_message_queue_size()), and the waiting-apply counter of
# servers before MySQL's fix went negative, shown by P_S as 2**64 - |x| (the
# fix: get_transactions_waiting_apply_during_recovery returns 0 rather than
# going negative). grstats never sends a wrapped number: it clamps to
# [0, 2**31 - 1] -- a negative becomes 0, as fixed MySQL reports it.
@pytest.mark.parametrize(
    ("unsigned", "sent"),
    [
        (0, 0),
        (25000, 25000),
        (2147483647, 2147483647),  # INT32_MAX stays
        (2147483648, 2147483647),  # 2**31 saturates (static_cast would give -2**31)
        (4294967291, 2147483647),  # 2**32 - 5 saturates (static_cast would give -5)
        (3000000000, 2147483647),  # static_cast would give -1294967296
        (2**63 - 1, 2147483647),  # the largest non-negative int64 P_S can hold
        (18446744073709551611, 0),  # P_S shows int32 -5 as 2**64 - 5: negative -> 0
        (2**63, 0),  # INT64_MIN seen unsigned
    ],
)
def test_wire_int32_clamps_queue_sizes_to_0_and_int32_max(unsigned: int, sent: int) -> None:
    assert wire_int32(unsigned) == sent


# -- DSN and settings ------------------------------------------------------------------------


def test_parse_dsn_reads_user_host_port_and_params() -> None:
    dsn = "mysql://gr%40stats@db1.example:3307?charset=utf8mb4&unix_socket=/run/mysqld/s.sock"
    assert parse_dsn(dsn) == (
        "gr@stats",
        "db1.example",
        3307,
        {"charset": "utf8mb4", "unix_socket": "/run/mysqld/s.sock"},
    )


def test_parse_dsn_defaults_port_3306() -> None:
    assert parse_dsn("mysql://grstats@127.0.0.1") == ("grstats", "127.0.0.1", 3306, {})


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("", "empty"),
        ("postgres://grstats@h:5432", "mysql:// scheme"),
        ("grstats@127.0.0.1:3306", "mysql:// scheme"),
        ("mysql://grstats:secret@127.0.0.1", "password"),
        ("mysql://127.0.0.1:3306", "user name"),
        ("mysql://grstats@:3306", "host"),
        ("mysql://grstats@127.0.0.1:abc", "port must be an integer 1-65535, got 'abc'"),
        ("mysql://grstats@127.0.0.1:70000", "port must be an integer 1-65535"),
        ("mysql://grstats@127.0.0.1:3306/mydb", "path"),
        ("mysql://grstats@127.0.0.1?sslmode=on", "unknown parameter 'sslmode'"),
        ("mysql://grstats@127.0.0.1?charset=", "empty value"),
    ],
)
def test_parse_dsn_rejects_with_named_problem(dsn: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_dsn(dsn)


def test_settings_hide_password_from_repr() -> None:
    settings = MySQLSettings(dsn="mysql://grstats@127.0.0.1:3306", password="s3cr3t-pw")
    assert "s3cr3t-pw" not in repr(settings)
    assert (settings.poll_timeout, settings.connect_timeout, settings.offline_after) == (2, 2, 10)
    assert (settings.retry_initial, settings.retry_max) == (0.5, 10)


def test_settings_reject_non_positive_timeout_naming_field() -> None:
    with pytest.raises(ValueError, match="poll_timeout"):
        MySQLSettings(poll_timeout=0)
