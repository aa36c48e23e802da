"""Sustained throttled periods: a member's episodes merged across the quota's release cycles.

Strategy: MySQL's QUOTA flow control throttles the writers while a queue is
over its threshold, releases the quota when the queues go back under, and
throttles again seconds later: `flow_control_episodes` (runs of caused
seconds at most `EPISODE_GAP_S` apart) are therefore a few seconds each,
even on an afternoon when the group is held back throughout.  The rule that
turns them into what an operator means by "the group was held back from 10:00
to 23:00":

    a member's consecutive episodes are one sustained period when the gap
    between the end of one and the start of the next is at most
    `SUSTAINED_GAP_S` (5 minutes);

5 minutes spans many release cycles (each lasts as long as the queues stay
under the threshold, seconds under a sustained load) yet keeps apart two
busy periods separated by a quiet stretch.  A period reports its wall-clock
length (first to last caused second), the caused (throttled) seconds inside
it and their share of the length, how many episodes it joins, the
bottleneck kinds and the largest queues.  The episodes are cut at UTC
midnight by the rollup; the rule joins those pieces too (their gap is at
most EPISODE_GAP_S).

Invariants: a pure DataFrame -> DataFrame function of
pyspark.sql.functions (a window per member ordered by the episode start);
the per-second episodes stay in the rollup table unchanged.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

__all__ = ["SUSTAINED_GAP_S", "sustained_periods"]

SUSTAINED_GAP_S = 300


def sustained_periods(episodes: DataFrame, gap_s: int = SUSTAINED_GAP_S) -> DataFrame:
    """Merge each member's episodes whose gap is at most `gap_s` seconds.

    Args:
        episodes: group_name, member_id, start_s, end_s (Unix seconds, the
            first and last caused second), throttled_seconds, bottleneck
            ("applier", "certifier" or both joined by "+"), excess_max,
            certifier_queue_max, applier_queue_max.
        gap_s: the largest gap (next start - previous end, seconds) inside a period.

    Returns:
        group_name, member_id, start_s, end_s, length_s (end - start + 1),
        throttled_seconds, throttled_share (throttled / length), episodes,
        bottleneck, excess_max, certifier_queue_max, applier_queue_max.
    """
    order = Window.partitionBy("group_name", "member_id").orderBy("start_s", "end_s")
    # the latest end so far, not the previous row's: an episode inside a longer one
    # (overlapping pieces) must not open a period
    reach = F.max("end_s").over(order.rowsBetween(Window.unboundedPreceding, -1))
    opens = F.when(reach.isNull() | (F.col("start_s") - reach > gap_s), 1).otherwise(0)
    numbered = episodes.withColumn("_opens", opens).withColumn(
        "_period", F.sum("_opens").over(order.rowsBetween(Window.unboundedPreceding, 0))
    )
    kinds = F.array_sort(F.array_distinct(F.flatten(F.collect_list(F.split("bottleneck", "\\+")))))
    merged = numbered.groupBy("group_name", "member_id", "_period").agg(
        F.min("start_s").alias("start_s"),
        F.max("end_s").alias("end_s"),
        F.sum("throttled_seconds").alias("throttled_seconds"),
        F.count("*").alias("episodes"),
        F.array_join(F.filter(kinds, lambda k: k != ""), "+").alias("bottleneck"),
        *(F.max(c).alias(c) for c in ("excess_max", "certifier_queue_max", "applier_queue_max")),
    )
    length = F.col("end_s") - F.col("start_s") + 1
    return merged.select(
        "group_name",
        "member_id",
        "start_s",
        "end_s",
        length.alias("length_s"),
        "throttled_seconds",
        (F.col("throttled_seconds") / length).alias("throttled_share"),
        "episodes",
        "bottleneck",
        "excess_max",
        "certifier_queue_max",
        "applier_queue_max",
    )
