"""Where the local member's numbers come from (simulated model or a real MySQL server)."""
