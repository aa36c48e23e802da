"""Pure state and shapes: columns, tables, admission, snapshots, topics, samples.

Imports only the standard library and `protocol`: no asyncio, no logging, no
clock (time is always an argument). Everything above it (sources, bus,
history, api, daemon, cli) builds on these shapes.
"""
