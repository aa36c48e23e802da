"""The one TOML reader: typed reads from a table, each failure a `ConfigError`.

Strategy: `read_toml` is the only place a grstats.toml is parsed (the daemon's
`load_config` and the CLI's `load_client_settings` both go through it).
`Section` wraps one TOML table and reads typed values from it, recording which
keys were consumed so that unknown keys can be refused. A `Spec` describes how
one key is read (type, range, choices); settings dataclasses carry their spec
in field metadata (`setting(default, spec)`), so a key's default lives only in
the dataclass and `read_fields` derives the keys from the fields.

Invariants: every failure is a `ConfigError` carrying the file, the dotted key
and the problem as data; `str()` is the one line shown to the user.
"""

from __future__ import annotations

import dataclasses
import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grstats.config._files import LocalInputError, read_local_file

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_NESTING",
    "MAX_STRING_CHARS",
    "ConfigError",
    "Section",
    "Spec",
    "flag",
    "integer",
    "number",
    "optional_text",
    "read_fields",
    "read_secret",
    "read_toml",
    "setting",
    "show",
    "table",
    "text",
]


MAX_CONFIG_BYTES = 1 << 20  # a config file (the shipped one is ~15 KB)
MAX_SECRET_BYTES = 64 << 10  # a password file
MAX_NESTING = 16  # tables and arrays inside each other (a config needs 3)
MAX_STRING_CHARS = 4096  # any string value (paths, names, DSNs): longer is a mistake


class ConfigError(Exception):
    """A configuration mistake.

    Attributes:
        file: the file name shown (the path when the file cannot be read).
        key: the dotted key (`bus.port`, `simulated.script[0].at`), a section
            name, or "" for a problem with the whole file.
        problem: what is wrong, for a human.

    `str()` is the one line shown to the user: `file: key: problem`.
    """

    def __init__(self, file: str, key: str, problem: str) -> None:
        super().__init__(file, key, problem)
        self.file = file
        self.key = key
        self.problem = problem

    def __str__(self) -> str:
        if self.key:
            return f"{self.file}: {self.key}: {self.problem}"
        return f"{self.file}: {self.problem}"


def show(value: Any) -> str:
    """A TOML value as the user wrote it, for error messages."""
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


class Section:
    """Typed reads from one TOML table; tracks which keys were consumed."""

    def __init__(self, file: str, name: str, data: Mapping[str, Any]) -> None:
        self.file = file
        self.name = name
        self.data = data
        self.used: set[str] = set()

    def fail(self, key: str, message: str) -> ConfigError:
        where = f"{self.name}.{key}" if self.name else key
        return ConfigError(self.file, where, message)

    def _get(self, key: str) -> Any:
        self.used.add(key)
        return self.data.get(key)

    def string(self, key: str, default: str, *, choices: tuple[str, ...] = ()) -> str:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.fail(key, f"expected a string, got {show(value)}")
        if "\x00" in value:  # a path or name with a NUL crashes the OS call, not this check
            raise self.fail(key, "contains a NUL character")
        if len(value) > MAX_STRING_CHARS:
            raise self.fail(key, f"{len(value)} characters: at most {MAX_STRING_CHARS}")
        if choices and value not in choices:
            allowed = ", ".join(f'"{c}"' for c in choices)
            raise self.fail(key, f"expected one of {allowed}, got {show(value)}")
        return value

    def optional_string(self, key: str) -> str | None:
        value = self.string(key, "")
        return value or None

    def integer(self, key: str, default: int, low: int, high: int) -> int:
        value = self._get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self.fail(key, f"expected an integer {low}-{high}, got {show(value)}")
        return value

    def number(self, key: str, default: float, low: float, high: float) -> float:
        value = self._get(key)
        if value is None:
            return default
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not low <= value <= high
        ):
            raise self.fail(key, f"expected a number {low:g}-{high:g}, got {show(value)}")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {show(value)}")
        return value

    def raw(self, key: str) -> Any:
        return self._get(key)

    def check_unknown(self) -> None:
        for key in self.data:
            if key not in self.used:
                raise self.fail(key, "unknown key")


# -- specs: how one key is read; the default always comes from the dataclass ------------


@dataclass(frozen=True, slots=True)
class Spec:
    """How one TOML key is read: `read(section, key, default) -> value`."""

    read: Callable[[Section, str, Any], Any]


def text(*, choices: tuple[str, ...] = (), lower: bool = False, nonempty: bool = False) -> Spec:
    """A string, optionally one of `choices`, lower-cased, or required non-empty."""

    def read(section: Section, key: str, default: Any) -> Any:
        value = section.string(key, default, choices=choices)
        if nonempty and not value:
            raise section.fail(key, "must not be empty")
        return value.lower() if lower else value

    return Spec(read)


def optional_text() -> Spec:
    """A string; absent or "" is None."""
    return Spec(lambda section, key, default: section.optional_string(key))


def integer(low: int, high: int) -> Spec:
    """An integer in [low, high] (booleans refused)."""
    return Spec(lambda section, key, default: section.integer(key, default, low, high))


def number(low: float, high: float) -> Spec:
    """A finite number in [low, high], as float."""
    return Spec(lambda section, key, default: section.number(key, default, low, high))


def flag() -> Spec:
    """true or false."""
    return Spec(lambda section, key, default: section.boolean(key, default))


_SPEC = "grstats.config.spec"


def setting(default: Any, spec: Spec) -> Any:
    """A dataclass field read from the TOML key of the same name.

    Args:
        default: the one statement of the key's default.
        spec: how the key is read.

    Returns:
        A `dataclasses.field` carrying the spec in its metadata.
    """
    return dataclasses.field(default=default, metadata={_SPEC: spec})


def read_fields(
    section: Section, cls: type[Any], specs: Mapping[str, Spec] | None = None
) -> dict[str, Any]:
    """Read every field of dataclass `cls` that has a spec from `section`.

    Args:
        section: the TOML table.
        cls: the settings dataclass; a field's default is the key's default.
        specs: specs by field name, overriding or adding to the fields' metadata
            (for dataclasses defined outside grstats.config).

    Returns:
        Keyword arguments for `cls` (absent keys get the field's default).

    Raises:
        ConfigError: a key has the wrong type or is out of range.
    """
    specs = specs or {}
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        spec = specs.get(f.name) or f.metadata.get(_SPEC)
        if spec is None:
            continue  # not a TOML key (derived, or read by the caller)
        default = f.default if f.default is not dataclasses.MISSING else None
        out[f.name] = spec.read(section, f.name, default)
    return out


def table(file: str, doc: Mapping[str, Any], name: str) -> Section:
    """The `[name]` table of a parsed document (empty when absent)."""
    data = doc.get(name, {})
    if not isinstance(data, dict):
        raise ConfigError(file, name, f"expected a table, got {show(data)}")
    return Section(file, name, data)


def read_secret(section: Section, env_key: str, file_key: str) -> str | None:
    """A password from an environment variable or a file, never inline.

    Args:
        section: the section holding `<env_key>` and `<file_key>`.
        env_key: key naming the environment variable.
        file_key: key naming the file (first line is the secret).

    Returns:
        The secret, or None if neither key is set.

    Raises:
        ConfigError: the variable is unset or the file cannot be read.
    """
    env_name = section.optional_string(env_key)
    file_name = section.optional_string(file_key)
    if env_name and file_name:
        raise section.fail(file_key, f"set either {env_key} or {file_key}, not both")
    if env_name:
        value = os.environ.get(env_name)
        if value is None:
            raise section.fail(env_key, f"environment variable {env_name} is not set")
        return value
    if file_name:
        try:
            content = read_local_file(file_name, MAX_SECRET_BYTES).decode("utf-8")
        except LocalInputError as exc:
            reason = str(exc).removeprefix("cannot read: ")
            raise section.fail(file_key, f"cannot read {file_name}: {reason}") from None
        except UnicodeDecodeError:
            raise section.fail(file_key, f"{file_name}: not UTF-8 text") from None
        return content.splitlines()[0] if content else ""
    return None


def read_toml(path: str | Path) -> tuple[str, dict[str, Any]]:
    """Read and parse a TOML file: the only TOML parsing path in grstats.

    Args:
        path: the file.

    Returns:
        (the file name used in messages, the parsed document).

    Raises:
        ConfigError: the file cannot be read, is not a regular file, is over
            `MAX_CONFIG_BYTES`, is not UTF-8, is not TOML or nests past `MAX_NESTING`.
    """
    file = Path(path)
    name = file.name
    try:
        raw = read_local_file(file, MAX_CONFIG_BYTES)
    except LocalInputError as exc:
        raise ConfigError(str(path), "", str(exc)) from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(name, "", "not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(name, "", f"invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per level: thousands deep end here
        raise ConfigError(name, "", f"nested too deeply (at most {MAX_NESTING} levels)") from None
    depth = _depth(doc)
    if depth > MAX_NESTING:
        raise ConfigError(name, "", f"nested {depth} levels deep (at most {MAX_NESTING})")
    return name, doc


def _depth(doc: Any) -> int:
    # iterative: a document just under the recursion limit must not recurse here either
    deepest, stack = 0, [(doc, 0)]
    while stack:
        value, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(value, dict):
            stack.extend((v, level + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, level + 1) for v in value)
    return deepest
