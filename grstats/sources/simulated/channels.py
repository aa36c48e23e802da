"""The six WL#3656 channel tables of a simulated member, as its server would show them.

Strategy: a member in the group has the group_replication_applier channel
(GR creates it with host "<NULL>", port 0 and no user:
plugin/group_replication/src/handlers/applier_handler.cc, initialize_channel),
its receiver ON (GR's applier receives from the group, not from a source) and
its applier ON with `WORKERS` workers, their stage transactions those of the
member's lag (lag.py), so the tables agree with grstats_member_lag.
While the member is RECOVERING it also has the group_replication_recovery
channel, connected to its donor: the first other member ONLINE at that
second, at that member's host:port (recovery_state_transfer.cc configures
the channel with the donor's host and port and the recovery user). The
recovery channel's rows go when the member leaves RECOVERING.

Two scripted faults (settings.ScriptEvent):

* ``recovery_error`` (`count`: the error number, 2003 when left at 1): for
  `duration_s` the recovery channel cannot connect to its donor. Its receiver
  is CONNECTING with that error; GR tries again every `RECONNECT_INTERVAL_S`
  (group_replication_recovery_reconnect_interval's default), each attempt a
  new LAST_ERROR_TIMESTAMP, with the text MySQL writes for it (captured from
  8.0.26+ servers' SHOW REPLICA STATUS: "Error connecting to source
  'user@host:port'. This was attempt 1/1, with a delay of 60 seconds between
  attempts. Message: Can't connect to MySQL server on 'host:port' (111)").
  Then it connects: ON, the error cleared (a successful connection clears it).
* ``applier_error`` (`count`: the error number, 1062 when left at 1): worker 1
  of group_replication_applier stops on the transaction it was applying, for
  `duration_s` (0: from then on): the worker, the coordinator and the applier
  OFF, the worker's and the coordinator's error as MySQL words them
  (ER_REPLICA_WORKER_STOPPED_PREVIOUS_THD_ERROR's "Coordinator stopped because
  there were error(s) in the worker(s) ..."; the worker's "Worker 1 failed
  executing transaction ... Error_code: 1062").

Invariants: pure in (settings, member, second): every daemon computes the
same rows; no clock, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

from grstats.core import columns as col
from grstats.core.lag import ChannelLag, StageTrx
from grstats.core.lagrows import format_timestamp
from grstats.sources.simulated.membership import Membership
from grstats.sources.simulated.settings import ScriptEvent, SimulationSettings
from protocol import MirroredTable, MirroredTables

__all__ = ["CHANNEL_ACTIONS", "RECONNECT_INTERVAL_S", "WORKERS", "MemberChannels"]

CHANNEL_ACTIONS = ("recovery_error", "applier_error")
RECONNECT_INTERVAL_S = 60  # group_replication_recovery_reconnect_interval (default)
WORKERS = 4  # replica_parallel_workers (8.0.27+ default)
RECOVERY_USER = "rpl_user"
_DEFAULT_ERROR = {"recovery_error": 2003, "applier_error": 1062}
_APPLIER = col.GROUP_REPLICATION_CHANNEL
_RECOVERY = col.RECOVERY_CHANNEL
_NULL_HOST = "<NULL>"  # GR's channels before a donor is set (applier_handler.cc)
_ZERO = format_timestamp(None)
_Rows = dict[str, list[tuple[object, ...]]]  # table -> its rows, MySQL's column order


@dataclass(frozen=True, slots=True)
class _Fault:
    member: int
    action: str
    start_s: int
    end_s: int | None  # None: from then on
    error: int

    def on(self, s: int) -> bool:
        return self.start_s <= s and (self.end_s is None or s < self.end_s)


def _faults(settings: SimulationSettings) -> tuple[_Fault, ...]:
    index = {m: i for i, m in enumerate(settings.members)}
    out = []
    for ev in settings.script:
        if ev.action in CHANNEL_ACTIONS:
            out.append(_fault(index[ev.member.lower()], ev))
    return tuple(out)


def _fault(m: int, ev: ScriptEvent) -> _Fault:
    start = int(ev.at_s)
    end = None if ev.duration_s <= 0 else int(ev.at_s + ev.duration_s)
    error = _DEFAULT_ERROR[ev.action] if ev.count == 1 else ev.count
    return _Fault(m, ev.action, start, end, error)


def _names(table: col.TableDef) -> tuple[str, ...]:
    return table.names[1:]  # MySQL's columns: MEMBER_ID is grstats'


def _row(table: col.TableDef, **values: object) -> tuple[object, ...]:
    """One row of `table` in MySQL's column order; a column not given is MySQL's default."""
    out = []
    for c in table.columns[1:]:
        if c.name in values:
            out.append(values[c.name])
        elif c.kind == "timestamp":
            out.append(_ZERO)
        elif c.numeric:
            out.append(0)
        else:
            out.append("")
    return tuple(out)


def _stage(stage: StageTrx, prefix: str, *ends: str) -> dict[str, object]:
    """The GTID and timestamps of one stage transaction, as MySQL's columns name them."""
    figures = (stage.original_commit_us, stage.immediate_commit_us, stage.start_us, stage.end_us)
    out: dict[str, object] = {prefix: stage.gtid}
    for end, us in zip(("ORIGINAL_COMMIT", "IMMEDIATE_COMMIT", *ends), figures, strict=False):
        out[f"{prefix}_{end}_TIMESTAMP"] = format_timestamp(us)
    return out


class MemberChannels:
    """The channel rows of every member of a simulated group (pure)."""

    def __init__(self, settings: SimulationSettings, membership: Membership) -> None:
        self._settings = settings
        self._membership = membership
        self._faults = _faults(settings)

    def _fault(self, m: int, action: str, s: int) -> _Fault | None:
        return next(
            (f for f in self._faults if f.member == m and f.action == action and f.on(s)), None
        )

    def donor(self, m: int, s: int) -> int | None:
        """The member `m` recovers from at second `s`: the first other one ONLINE."""
        ms = self._membership
        n = len(self._settings.members)
        return next((d for d in range(n) if d != m and ms.state(d, s) == "ONLINE"), None)

    def at(self, m: int, t_us: int, lag: tuple[ChannelLag, ...]) -> MirroredTables | None:
        """Member `m`'s rows of the six tables at `t_us`; None outside the group.

        Args:
            m: the member's index.
            t_us: microseconds since the epoch.
            lag: the member's stage lag at `t_us` (its applier channel's transactions).
        """
        s = t_us // 1_000_000
        state = self._membership.state(m, s)
        if state not in ("ONLINE", "RECOVERING", "UNREACHABLE"):
            return None
        applier = next((c for c in lag if c.channel == _APPLIER), ChannelLag())
        rows: _Rows = {t.name: [] for t in col.CHANNEL_TABLES}
        self._applier_rows(rows, m, s, applier)
        if state == "RECOVERING":
            self._recovery_rows(rows, m, s)
        return MirroredTables(
            t_us,
            tuple(
                MirroredTable(t.name, _names(t), tuple(rows[t.name]))  # type: ignore[arg-type]  # values are cells
                for t in col.CHANNEL_TABLES
            ),
        )

    def _config_rows(
        self,
        rows: _Rows,
        channel: str,
        host: str,
        port: int,
        user: str,
    ) -> None:
        rows[col.CONNECTION_CONFIGURATION.name].append(
            _row(
                col.CONNECTION_CONFIGURATION,
                CHANNEL_NAME=channel,
                HOST=host,
                PORT=port,
                USER=user,
                AUTO_POSITION="1",
                SSL_ALLOWED="NO",
                SSL_VERIFY_SERVER_CERTIFICATE="NO",
                CONNECTION_RETRY_INTERVAL=60,
                CONNECTION_RETRY_COUNT=1 if channel == _RECOVERY else 10,
                HEARTBEAT_INTERVAL=30.0,
                GET_PUBLIC_KEY="NO",
                COMPRESSION_ALGORITHM="uncompressed",
                ZSTD_COMPRESSION_LEVEL=3,
                TLS_CIPHERSUITES=None,
                SOURCE_CONNECTION_AUTO_FAILOVER="0",
                GTID_ONLY="1" if channel == _APPLIER else "0",
            )
        )
        rows[col.APPLIER_CONFIGURATION.name].append(
            _row(
                col.APPLIER_CONFIGURATION,
                CHANNEL_NAME=channel,
                PRIVILEGE_CHECKS_USER=None,
                REQUIRE_ROW_FORMAT="YES" if channel == _APPLIER else "NO",
                REQUIRE_TABLE_PRIMARY_KEY_CHECK="STREAM",
                ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_TYPE="OFF",
                ASSIGN_GTIDS_TO_ANONYMOUS_TRANSACTIONS_VALUE=None,
            )
        )

    def _thread_id(self, m: int, offset: int) -> int:
        return 40 + 10 * m + offset  # stable per member: a restart is not modelled

    def _applier_rows(self, rows: _Rows, m: int, s: int, lag: ChannelLag) -> None:
        settings = self._settings
        self._config_rows(rows, _APPLIER, _NULL_HOST, 0, "")
        fault = self._fault(m, "applier_error", s)
        on = "OFF" if fault is not None else "ON"
        rows[col.CONNECTION_STATUS.name].append(
            _row(
                col.CONNECTION_STATUS,
                CHANNEL_NAME=_APPLIER,
                GROUP_NAME=settings.group,
                SOURCE_UUID=settings.group,
                THREAD_ID=None,
                SERVICE_STATE="ON",
                RECEIVED_TRANSACTION_SET="",
                QUEUEING_TRANSACTION="",
                **_stage(lag.last_queued, col.LAST_QUEUED_TRANSACTION, "START_QUEUE", "END_QUEUE"),
            )
        )
        rows[col.APPLIER_STATUS.name].append(
            _row(col.APPLIER_STATUS, CHANNEL_NAME=_APPLIER, SERVICE_STATE=on, REMAINING_DELAY=None)
        )
        error: dict[str, object] = {}
        worker_error: dict[str, object] = {}
        if fault is not None:
            gtid = lag.applying.gtid or lag.last_applied.gtid or f"{settings.group}:1"
            when = format_timestamp(fault.start_s * 1_000_000)
            failed = f"Worker 1 failed executing transaction '{gtid}' at source log , end_log_pos 0"
            worker_error = {
                col.LAST_ERROR_NUMBER: fault.error,
                col.LAST_ERROR_MESSAGE: f"{failed}; Could not execute Write_rows event on table "
                f"app.t1; Duplicate entry '1' for key 't1.PRIMARY', Error_code: {fault.error}; "
                "handler error HA_ERR_FOUND_DUPP_KEY",
                col.LAST_ERROR_TIMESTAMP: when,
            }
            error = {
                col.LAST_ERROR_NUMBER: fault.error,
                col.LAST_ERROR_MESSAGE: "Coordinator stopped because there were error(s) in the "
                f"worker(s). The most recent failure being: {failed}. See error log and/or "
                "performance_schema.replication_applier_status_by_worker table for more "
                "details about this failure or others, if any.",
                col.LAST_ERROR_TIMESTAMP: when,
            }
        rows[col.APPLIER_STATUS_BY_COORDINATOR.name].append(
            _row(
                col.APPLIER_STATUS_BY_COORDINATOR,
                CHANNEL_NAME=_APPLIER,
                THREAD_ID=None if fault else self._thread_id(m, 1),
                SERVICE_STATE=on,
                PROCESSING_TRANSACTION=lag.processing.gtid,
                **_stage(
                    lag.last_processed, col.LAST_PROCESSED_TRANSACTION, "START_BUFFER", "END_BUFFER"
                ),
                **error,
            )
        )
        for worker in range(1, WORKERS + 1):
            mine = worker_error if worker == 1 else {}
            stopped = fault is not None
            rows[col.APPLIER_STATUS_BY_WORKER.name].append(
                _row(
                    col.APPLIER_STATUS_BY_WORKER,
                    CHANNEL_NAME=_APPLIER,
                    WORKER_ID=worker,
                    THREAD_ID=None if stopped else self._thread_id(m, 1 + worker),
                    SERVICE_STATE="OFF" if stopped else "ON",
                    **_stage(
                        lag.last_applied if worker == 1 else StageTrx(),
                        col.LAST_APPLIED_TRANSACTION,
                        "START_APPLY",
                        "END_APPLY",
                    ),
                    **_stage(
                        lag.applying if worker == 1 else StageTrx(),
                        col.APPLYING_TRANSACTION,
                        "START_APPLY",
                    ),
                    **mine,
                )
            )

    def _recovery_rows(self, rows: _Rows, m: int, s: int) -> None:
        d = self.donor(m, s)
        host, port = self._membership.host(d) if d is not None else (_NULL_HOST, 0)
        self._config_rows(rows, _RECOVERY, host, port, RECOVERY_USER)
        fault = self._fault(m, "recovery_error", s)
        status: dict[str, object] = {"SERVICE_STATE": "ON", col.THREAD_ID: self._thread_id(m, 8)}
        if d is not None:
            status[col.SOURCE_UUID] = self._settings.members[d]
        if fault is not None:
            attempt_s = s - (s - fault.start_s) % RECONNECT_INTERVAL_S
            status.update(
                SERVICE_STATE="CONNECTING",
                SOURCE_UUID="",
                LAST_ERROR_NUMBER=fault.error,
                LAST_ERROR_MESSAGE=f"Error connecting to source '{RECOVERY_USER}@{host}:{port}'. "
                f"This was attempt 1/1, with a delay of {RECONNECT_INTERVAL_S} seconds between "
                f"attempts. Message: Can't connect to MySQL server on '{host}:{port}' (111)",
                LAST_ERROR_TIMESTAMP=format_timestamp(attempt_s * 1_000_000),
            )
        rows[col.CONNECTION_STATUS.name].append(
            _row(
                col.CONNECTION_STATUS,
                CHANNEL_NAME=_RECOVERY,
                GROUP_NAME="",
                RECEIVED_TRANSACTION_SET="",
                **status,
            )
        )
        rows[col.APPLIER_STATUS.name].append(
            _row(
                col.APPLIER_STATUS, CHANNEL_NAME=_RECOVERY, SERVICE_STATE="ON", REMAINING_DELAY=None
            )
        )
        rows[col.APPLIER_STATUS_BY_COORDINATOR.name].append(
            _row(
                col.APPLIER_STATUS_BY_COORDINATOR,
                CHANNEL_NAME=_RECOVERY,
                THREAD_ID=self._thread_id(m, 9),
                SERVICE_STATE="ON",
                LAST_PROCESSED_TRANSACTION="",
                PROCESSING_TRANSACTION="",
            )
        )
