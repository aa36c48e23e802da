"""The member daemon and the collector: lifecycle, publisher, receiver, process wiring."""
