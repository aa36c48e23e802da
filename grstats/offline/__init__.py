"""Work done without a daemon, below the commands that start it.

- `backfill`: days of simulated group history in the daemon's own Parquet
  format (`grstats simulate`), with `flowfill`: the flow-control columns a
  collector's replay would record, in bulk.
- `binlog_scan`: what binary logs say about replication delay (`grstats binlog`).

Layering: above core, sources and history (it uses them), beside daemon,
below cli; nothing here prints or parses a command line.
"""
