"""GTID divergence rollups: errant and clone-needed minutes per member, hour and day.

Strategy: the history rows carry the recording daemon's verdict of
grstats_member_gtids for the row's member (`gtid_*`, DESIGN.md section 6):
its errant count, missing count and recovery method.  Everything here is
counted in *minutes* (UTC minutes of sampled_at), so that the rows of several
recording daemons for the same member (each member records its own row, a
scope "all" daemon the others' too) and duplicated rows count once:

- member-minute: (group, member, UTC minute) over the rows with a verdict
  (gtid_recovery_method not NULL; older files, collectors and members without
  ext.gtids have none).  It is *errant* if one of its rows has
  gtid_errant_count > 0 and *clone-needed* if one has recovery method CLONE;
- per member and hour (day): `minutes` with a verdict, `errant_minutes`,
  `clone_minutes`, `errant_max` and `missing_max` (the largest counts of its
  rows), `first_errant` / `last_errant` (the first and last sampled_at of a
  row with errant GTIDs; NULL when none).  A day is exactly the sum (minimum,
  maximum) of its hours; rows exist for every hour with a verdict, so a quiet
  week shows its coverage.

Output tables (partitioned like the others by group and UTC date):
gtid_member_hour, gtid_member_day.
Invariants: functions of pyspark.sql.functions only; per-day inputs, so an
incremental run that redoes a date redoes exactly its partitions.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_rollups.schema import (
    BUCKET,
    DAY,
    GROUP_NAME,
    GTID_INPUT_COLUMNS,
    GTID_SCHEMA,
    MEMBER_ID,
    SAMPLED_AT,
)

__all__ = [
    "GTID_MEMBER_COLUMNS",
    "GTID_TABLES",
    "gtid_minutes",
    "gtid_tables",
    "read_gtid_columns",
]

GTID_TABLES = ("gtid_member_hour", "gtid_member_day")
MINUTE = "minute"
# the member tables' columns after group_name, member_id, bucket_start
GTID_MEMBER_COLUMNS: tuple[str, ...] = (
    "minutes",
    "errant_minutes",
    "clone_minutes",
    "errant_max",
    "missing_max",
    "first_errant",
    "last_errant",
)


def read_gtid_columns(spark: SparkSession, paths: list[str]) -> DataFrame:
    """The GTID columns of the history files under `paths` (NULL in files before them).

    Args:
        spark: the session.
        paths: partition directories, or files (`segments.screen_segments`).

    Returns:
        schema.GTID_INPUT_COLUMNS of every row.
    """
    reader = spark.read.schema(GTID_SCHEMA).option("pathGlobFilter", "part-*.parquet")
    return reader.parquet(*paths).select(*GTID_INPUT_COLUMNS)


def gtid_minutes(history: DataFrame) -> DataFrame:
    """One row per member-minute with a verdict (see the module docstring).

    Args:
        history: history rows with the GTID columns (schema.GTID_SCHEMA).

    Returns:
        group_name, member_id, day, minute, errant, clone, errant_max, missing_max,
        first_errant, last_errant.
    """
    rows = history.where(F.col("gtid_recovery_method").isNotNull())
    errant = F.coalesce(F.col("gtid_errant_count") > 0, F.lit(False))
    return rows.groupBy(
        GROUP_NAME,
        MEMBER_ID,
        F.to_date(SAMPLED_AT).alias(DAY),
        F.date_trunc("minute", SAMPLED_AT).alias(MINUTE),
    ).agg(
        F.bool_or(errant).alias("errant"),
        F.bool_or(F.col("gtid_recovery_method") == "CLONE").alias("clone"),
        F.max("gtid_errant_count").alias("errant_max"),
        F.max("gtid_missing_count").alias("missing_max"),
        F.min(F.when(errant, F.col(SAMPLED_AT))).alias("first_errant"),
        F.max(F.when(errant, F.col(SAMPLED_AT))).alias("last_errant"),
    )


def _member_table(minutes: DataFrame, bucket: Column) -> DataFrame:
    return (
        minutes.groupBy(GROUP_NAME, MEMBER_ID, DAY, bucket.alias(BUCKET))
        .agg(
            F.count("*").alias("minutes"),
            F.count_if(F.col("errant")).alias("errant_minutes"),
            F.count_if(F.col("clone")).alias("clone_minutes"),
            F.max("errant_max").alias("errant_max"),
            F.max("missing_max").alias("missing_max"),
            F.min("first_errant").alias("first_errant"),
            F.max("last_errant").alias("last_errant"),
        )
        .select(GROUP_NAME, MEMBER_ID, BUCKET, *GTID_MEMBER_COLUMNS, DAY)
    )


def gtid_tables(history: DataFrame) -> dict[str, DataFrame]:
    """The GTID divergence tables of `history` (one scan, the member-minutes shared).

    Args:
        history: history rows with the GTID columns.

    Returns:
        Table name -> DataFrame (with `day`, the output partition).
    """
    minutes = gtid_minutes(history)
    return {
        "gtid_member_hour": _member_table(minutes, F.date_trunc("hour", MINUTE)),
        "gtid_member_day": _member_table(minutes, F.date_trunc("day", MINUTE)),
    }
