"""Sans-IO codecs for grstats (placeholder until protocol modules land)."""
