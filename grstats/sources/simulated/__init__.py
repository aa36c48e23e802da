"""The simulated group: a deterministic model every member's daemon computes identically."""
