"""PySpark jobs: history -> minute/hour/day rollups and the weekly conflict report.

Imports nothing from `grstats`: this package ships to a Spark cluster on its own.
"""
