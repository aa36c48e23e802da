"""PySpark jobs: history -> minute/hour/day rollups and the weekly conflict report.

Imports nothing from `grstats`: this package ships to a Spark cluster on its own.
The report (on the driver) imports `protocol.applier_verdict`, the pure verdict
rule it shares with `grstats applier --explain`.
"""
