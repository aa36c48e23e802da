"""`grstats demo` and the local processes it runs, together.

- `steps`: the demo's steps (a broker, three daemons, the readers).
- `supervisor`: starting, watching and stopping child processes.
- `mosquitto`: finding the broker binary and its loopback configuration
  (the test fixtures and benchmarks start their brokers with it too).
"""
