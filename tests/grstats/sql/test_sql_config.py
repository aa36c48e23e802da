"""[sql] configuration: off by default, a password from env/file (never inline), hashes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from grstats.config import ConfigError, parse_config
from grstats.sql import native_password_hash

MEMBER = {
    "group": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
    "id": "11111111-1111-1111-1111-111111111111",
}


def _parse(sql: dict[str, object], **extra: object) -> object:
    return parse_config({"member": MEMBER, "sql": sql, **extra}, file="t.toml").sql


def test_sql_is_off_by_default() -> None:
    settings = parse_config({"member": MEMBER}, file="t.toml")
    assert not settings.sql.enabled


def test_inline_password_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"sql.password: never inline"):
        _parse({"listen": "127.0.0.1:3307", "password": "x"})


def test_listen_without_a_password_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"sql.password_env: required"):
        _parse({"listen": "127.0.0.1:3307"})


def test_password_file_is_stored_as_mysql_native_hash(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("hunter2\n", encoding="utf-8")
    sql = _parse({"listen": "127.0.0.1:3307", "password_file": str(secret)},
                 history={"dir": "/h"})  # fmt: skip
    # MySQL's authentication_string of mysql_native_password, computed by hand
    expected = "*" + hashlib.sha1(hashlib.sha1(b"hunter2").digest()).hexdigest().upper()
    assert sql.password_hash == expected  # type: ignore[attr-defined]
    assert sql.history_dir == "/h"  # type: ignore[attr-defined]
    assert (sql.host, sql.port) == ("127.0.0.1", 3307)  # type: ignore[attr-defined]


def test_a_hash_as_the_secret_is_kept() -> None:
    h = "*" + "ab" * 20
    assert native_password_hash(h) == h.upper()


def test_tls_required_needs_a_certificate(tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("x\n", encoding="utf-8")
    base = {"listen": "127.0.0.1:3307", "password_file": str(secret)}
    with pytest.raises(ConfigError, match=r"sql.tls_required: needs tls_cert_file"):
        _parse({**base, "tls_required": True})
    sql = _parse({**base, "tls_required": True, "tls_cert_file": "c", "tls_key_file": "k"})
    assert sql.options().tls_required is True  # type: ignore[attr-defined]
