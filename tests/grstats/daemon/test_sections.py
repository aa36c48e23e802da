"""The local envelope's ext.commit_path_comm: encoded again only when the server's row changed."""

from __future__ import annotations

import dataclasses

import pytest

from grstats.core import sections
from grstats.daemon.sections import ExtSections
from protocol import GroupCommunication, decode_commit_path_comm
from tests.fixtures.member_tables import local_sample

LEADER = "cccccccc-cccc-cccc-cccc-cccccccccccc"
OTHER = "dddddddd-dddd-dddd-dddd-dddddddddddd"


@pytest.fixture
def encodes(monkeypatch: pytest.MonkeyPatch) -> list[GroupCommunication]:
    """The section's declared encoder, counting its calls."""
    done: list[GroupCommunication] = []
    declared = sections.declared().by_name["commit_path_comm"]
    real = declared.encode
    assert real is not None

    def counted(comm: GroupCommunication) -> object:
        done.append(comm)
        return real(comm)

    patched = dataclasses.replace(declared, encode=counted)
    swapped = tuple(patched if s is declared else s for s in sections.SECTIONS)
    monkeypatch.setattr(sections, "SECTIONS", swapped)
    return done


def test_an_unchanged_communication_row_is_encoded_once(encodes: list[GroupCommunication]) -> None:
    ext = ExtSections()
    for _ in range(3):  # a new but equal row each sample, as a source reads it
        comm = GroupCommunication(10, "8.0.27", (LEADER,), (LEADER,), True)
        sample = dataclasses.replace(local_sample(), communication=comm)
        wire = ext.ext(sample, gtids=False)["commit_path_comm"]
        assert wire == [1, 10, "8.0.27", [LEADER], [LEADER], 1]
    assert len(encodes) == 1
    moved = GroupCommunication(10, "8.0.27", (OTHER,), (OTHER,), True)
    wire = ext.ext(dataclasses.replace(local_sample(), communication=moved), gtids=False)
    assert decode_commit_path_comm(wire["commit_path_comm"]) == moved
    assert len(encodes) == 2


def test_a_refused_row_is_counted_every_time() -> None:
    ext = ExtSections()
    bad = GroupCommunication(10, "8.0.27-a-very-long-version", None, None, None)  # > 16 chars
    for _ in range(2):
        got = ext.ext(dataclasses.replace(local_sample(), communication=bad), gtids=False)
        assert "commit_path_comm" not in got
    assert ext.sections_unsendable["commit_path_comm"] == 2
