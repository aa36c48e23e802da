"""One module per `grstats` sub-command; `grstats.cli` registers them."""
