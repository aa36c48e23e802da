"""One module per `grstats` sub-command; `grstats.cli.main` registers them."""
