"""The local HTTP API: JSON tables, /healthz and Prometheus /metrics."""
