"""grstats: MySQL Group Replication member statistics for every member, with history."""

__version__ = "0.1.0"
__all__ = ["__version__"]
