"""`grstats ...`: the entry point, table readers, rendering and the sub-commands."""
