"""The `mysql` source: poll the local MySQL server's Group Replication tables (asyncmy).

Strategy / invariants
---------------------
One asyncmy connection is kept open and every `sample()` call reads, with plain
text-protocol SELECTs, 8 statements a poll in 1 round trip on 8.x (1., 2., 3.,
the lag's four and the Gr_* status in one COM_QUERY: CLIENT_MULTI_STATEMENTS,
connection.Connection.batch; each statement gets the answer it would have had
alone); 10 on 9.x, in 1 round trip too once a poll found WL#15620's two
tables (``benchmarks/profile_daemon.py`` shows their share):

1. ``SELECT * FROM performance_schema.replication_group_member_stats`` and
2. ``SELECT * FROM performance_schema.replication_group_members``, whole: the
   local rows are picked from them as ``WHERE MEMBER_ID = @@server_uuid OR
   MEMBER_ID = ''`` would (the empty MEMBER_ID is the row MySQL shows before GR
   ever started, ps_information.cc: plugin never initialised), and the other
   members of the server's view (WL#10380) come from the same rows. Columns
   are matched by name from the result's description on every read, so
   servers without the newer columns (5.7 and early 8.0 lack
   COUNT_TRANSACTIONS_REMOTE_* / _LOCAL_*; MEMBER_ROLE, MEMBER_VERSION and
   MEMBER_COMMUNICATION_STACK may be missing) simply yield 0 or "" for them;
3. ``SELECT @@server_uuid, @@group_replication_group_name,
   @@group_replication_flow_control_mode, @@GLOBAL.gtid_executed,
   @@GLOBAL.gtid_purged`` -- whom the daemon speaks for, the configured group
   name, the flow-control mode (QUOTA -> 1, DISABLED -> 0, NULL -> 1, MySQL's
   default) and the GTID sets (gtidstate.py). Without the GR plugin its
   variables are unknown (error 1193): the same without them (mode 1). Read
   after 1., so that @@gtid_executed holds every transaction the stats' sets
   name;
4. replication lag by stage (`LocalSample.lag`, WL#7374; rows to values in
   lag.py): the four replication_* tables of the GR channels, after
   ``SET @@session.time_zone = '+00:00'`` once per connection so that their
   TIMESTAMP(6) columns come back in UTC whatever the server's or the
   daemon's zone. Lag is an extra: it is read after the stats, within what is
   left of ``poll_timeout`` minus a margin (the stats too, as they share its
   round trip: stats not read by then are the poll's timeout); a lag query that times out or
   breaks the connection drops the connection (reconnected at once by the
   next call) but the stats sample is still returned, with lag (); a table
   the server does not have gives no rows. Each such failure is logged once.
5. applier metrics (WL#15620's two tables, or what 8.0's tell from the
   workers rows 4. read; applier.py) and
6. the server's own flow-control figures, `LocalSample.flow_control`: the
   four Gr_flow_control_throttle_* global status variables in one query of
   performance_schema.global_status (flowstats.py; time sum in microseconds,
   summed per held transaction), with the Gr_* commit-path figures
   (commitstats.py); None on a server without them. Both are extras like the
   lag, read within the same deadline.

What changes only with the group or the server is read at a cadence, not every
poll (cadence.py: first poll, new session, view id / state / role change, a
failed read, a clock step back, else every ``cadence.REREAD_S``):
replication_group_communication_information, and whether
replication_applier_metrics exists while it does not (extras.py).

The sample shows exactly what the server shows, nothing invented: MEMBER_ID,
MEMBER_HOST, VIEW_ID as shown (possibly ""), MEMBER_PORT NULL -> None, state,
role, version and communication stack as shown ("" where the column is absent
or empty; an 8.0 server whose GR never started shows MEMBER_ID "", port NULL,
state OFFLINE; a 2024+ one shows its own identity with state OFFLINE in
replication_group_members but still MEMBER_ID "" in the stats row).

P_S shows every counter as BIGINT UNSIGNED; the wire message carries signed
two's complement (PROTOCOL.md §4, §8). `wire_int64` maps the unsigned value back
(>= 2**63 wraps negative), so a counter the server shows round-trips to the
bytes the server itself would broadcast. The two queue sizes are int32 on the
wire and `wire_int32` clamps them to [0, 2**31 - 1] rather than wrapping (see
its docstring for why).

`sample()` never raises for a server problem and returns within
``poll_timeout`` seconds: the whole call (a reconnect attempt included) runs
under one deadline. A query that times out or a broken connection drops the
connection; reconnect attempts are made by later `sample()` calls once a
capped, jittered exponential backoff (``retry_initial`` doubling up to
``retry_max``) has elapsed -- there is no background task to own. After a
working connection breaks, one immediate reconnect is tried in the same call
(a killed or recycled session heals without a gap). While unreachable the last
good sample is returned (restamped with the caller's ``now_us``) until
``offline_after`` seconds of the caller's clock have passed since it; then a
sample whose member is OFFLINE (identifiers kept; role, view id, counters and
GTID texts empty or 0, as MySQL shows an OFFLINE member). A server that answers
but has no GR rows (plugin not installed) gives state OFFLINE with empty
identifiers, as the row MySQL shows before GR starts, and the configured group
name (empty when not configured).
A query that the server rejects (missing table or variable, missing privilege)
is treated as absent and logged once per connection.

`stats.transaction_gtids_present` is always False: the sample carries the
current GTID texts and the publisher decides when a message carries them.

Settings: `grstats.sources.mysql.settings`. Modules: `settings` (DSN and
settings), `values` (server values to wire values, rows to the sample),
`connection` (one asyncmy connection, backoff, queries), `source` (`MySQLSource`),
`extras` (what is read after the stats, under their deadline), `cadence` (when a
slowly-changing read is due), `lag` (WL#7374
tables), `applier` (WL#15620 tables), `flowstats` (Gr_flow_control_throttle_*
status variables).
"""

from grstats.sources.mysql.settings import DEFAULT_PORT, DSN_PARAMS, MySQLSettings, parse_dsn
from grstats.sources.mysql.source import MySQLSource
from grstats.sources.mysql.values import wire_int32, wire_int64

__all__ = [
    "DEFAULT_PORT",
    "DSN_PARAMS",
    "MySQLSettings",
    "MySQLSource",
    "parse_dsn",
    "wire_int32",
    "wire_int64",
]
