"""Channel error episodes: each member's replication channel errors, first and last seen.

Strategy: the history rows carry the member's newest open channel error at
recording time (`ch_error_*`: channel, thread, MySQL error number; NULL
without one). An *episode* is a run of a member's samples, in sampled_at
order, with the same (channel, thread, number): it starts at the first such
sample and ends at the last one before a sample with another error or none.
Runs are found with a window over each member and day (a change of the key
starts a new run: the running sum of changes numbers them), so each day's
partition holds that day's pieces; an episode across midnight is two pieces,
which the weekly report joins by their key (it shows first and last seen).
Rows of several recording daemons for the same member (a collector's copy
beside the member's own) carry the same key and fall into the same runs.

Output table (partitioned like the others by group and UTC date):
channel_error_episodes: group_name, member_id, channel_name, thread,
error_number, first_seen, last_seen, samples.
Invariants: functions of pyspark.sql.functions and windows only; per-day
inputs, so an incremental run that redoes a date redoes exactly its partition.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark_rollups.schema import (
    CHANNEL_INPUT_COLUMNS,
    CHANNEL_SCHEMA,
    DAY,
    GROUP_NAME,
    MEMBER_ID,
    SAMPLED_AT,
)

__all__ = [
    "CHANNEL_TABLES",
    "EPISODE_COLUMNS",
    "channel_tables",
    "error_episodes",
    "read_channel_columns",
]

CHANNEL_TABLES = ("channel_error_episodes",)
# the episode table's columns after group_name, member_id
EPISODE_COLUMNS: tuple[str, ...] = (
    "channel_name",
    "thread",
    "error_number",
    "first_seen",
    "last_seen",
    "samples",
)
_KEY = ("ch_error_channel", "ch_error_thread", "ch_error_number")


def read_channel_columns(spark: SparkSession, paths: list[str]) -> DataFrame:
    """The channel error columns of the history files under `paths` (NULL before them).

    Args:
        spark: the session.
        paths: partition directories, or files (`segments.screen_segments`).

    Returns:
        schema.CHANNEL_INPUT_COLUMNS of every row.
    """
    reader = spark.read.schema(CHANNEL_SCHEMA).option("pathGlobFilter", "part-*.parquet")
    return reader.parquet(*paths).select(*CHANNEL_INPUT_COLUMNS)


def error_episodes(history: DataFrame) -> DataFrame:
    """The episodes of every member and day of `history` (see the module docstring).

    Args:
        history: rows with schema.CHANNEL_INPUT_COLUMNS.

    Returns:
        group_name, member_id, EPISODE_COLUMNS..., day.
    """
    rows = history.withColumn(DAY, F.to_date(SAMPLED_AT))
    member_day = Window.partitionBy(GROUP_NAME, MEMBER_ID, DAY).orderBy(SAMPLED_AT)
    key = F.concat_ws("\x00", *(F.coalesce(F.col(c).cast("string"), F.lit("")) for c in _KEY))
    changed = F.coalesce(F.lag(key).over(member_day) != key, F.lit(True))
    runs = rows.withColumn("run", F.sum(changed.cast("int")).over(member_day))
    return (
        runs.where(F.col("ch_error_number").isNotNull())
        .groupBy(GROUP_NAME, MEMBER_ID, DAY, "run", *_KEY)
        .agg(
            F.min(SAMPLED_AT).alias("first_seen"),
            F.max(SAMPLED_AT).alias("last_seen"),
            F.count("*").alias("samples"),
        )
        .select(
            GROUP_NAME,
            MEMBER_ID,
            F.col("ch_error_channel").alias("channel_name"),
            F.col("ch_error_thread").alias("thread"),
            F.col("ch_error_number").alias("error_number"),
            "first_seen",
            "last_seen",
            "samples",
            DAY,
        )
    )


def channel_tables(history: DataFrame) -> dict[str, DataFrame]:
    """The channel tables of `history` (table name -> DataFrame with `day`)."""
    return {CHANNEL_TABLES[0]: error_episodes(history)}
