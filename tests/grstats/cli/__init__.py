"""Tests of grstats.cli: commands, readers, rendering."""
