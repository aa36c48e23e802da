"""`grstats binlog --summary` logic over a >= 1 GB synthetic relay log.

The log (8.0 GTID events, a table map, 8 KB row events -- MySQL's default
binlog_row_event_max_size -- and an XID per transaction, all with CRC32) is
generated into a temporary directory and deleted afterwards. Every event's
checksum is verified, so the reference is `zlib.crc32` over the same bytes,
read the same way: the figure is scan throughput as a ratio to it (goal >= 0.5).
Peak RSS before and after the scan shows the memory bound.

Run: python benchmarks/bench_binlog.py [--size-mb 1024] [--keep-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import struct
import tempfile
import time
import zlib
from pathlib import Path

from _common import machine

from grstats.offline.binlog_scan import DEFAULT_CHUNK_SIZE, Summary, scan_files

ROW_EVENT_SIZE = 8192
ROWS_PER_TRX = 8
SOURCES = [bytes.fromhex(f"{i:02x}" * 16) for i in (0x3E, 0x9A, 0xC4)]


def _event(event_type: int, body: bytes, timestamp: int) -> bytes:
    size = 19 + len(body) + 4
    raw = struct.pack("<IBIIIH", timestamp, event_type, 7, size, 0, 0) + body
    return raw + struct.pack("<I", zlib.crc32(raw))


def _generate(path: Path, size: int) -> int:
    fde_body = struct.pack("<H", 4) + b"8.0.40".ljust(50, b"\0") + struct.pack("<I", 0) + b"\x13"
    table_map = _event(19, bytes(40), 1_763_900_000)
    row = _event(
        30,
        bytes(range(256)) * ((ROW_EVENT_SIZE - 23) // 256) + bytes((ROW_EVENT_SIZE - 23) % 256),
        1_763_900_000,
    )
    rows = table_map + row * ROWS_PER_TRX
    written = 0
    count = 0
    with path.open("wb") as out:
        out.write(b"\xfebin" + _event(15, fde_body + bytes(41) + b"\x01", 1_763_900_000))
        while written < size:
            count += 1
            immediate = 1_763_900_000_000_000 + count * 20_000
            original = immediate - 500 - (count * 7919) % 250_000
            xid = _event(16, struct.pack("<Q", count), immediate // 1_000_000)
            length = 80 + len(rows) + len(xid)  # the GTID event is 80 bytes
            body = (
                b"\x00" + SOURCES[count % 3] + struct.pack("<q", count) + b"\x02"
                + struct.pack("<qq", count - 1, count)
                + (immediate | 1 << 55).to_bytes(7, "little") + original.to_bytes(7, "little")
                + b"\xfd" + length.to_bytes(3, "little") + struct.pack("<I", 80040)
            )  # fmt: skip
            block = _event(33, body, immediate // 1_000_000) + rows + xid
            out.write(block)
            written += len(block)
    return count


def _crc_reference(path: Path) -> float:
    start = time.perf_counter()
    buffer = bytearray(DEFAULT_CHUNK_SIZE)
    view = memoryview(buffer)
    crc = 0
    with path.open("rb", buffering=0) as handle:
        while count := handle.readinto(buffer):
            crc = zlib.crc32(view[:count], crc)
    return time.perf_counter() - start


def _scan(path: Path) -> tuple[float, Summary]:
    start = time.perf_counter()
    summary = Summary()
    for trx in scan_files([path]):
        summary.add(trx)
    return time.perf_counter() - start, summary


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    args = parser.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(machine(f"zlib {zlib.ZLIB_RUNTIME_VERSION}", f"load {load}"))
    with tempfile.TemporaryDirectory(prefix="bench-binlog-") as tmp:
        path = Path(tmp) / "relay-bin.000001"
        started = time.perf_counter()
        transactions = _generate(path, args.size_mb * 1024 * 1024)
        size = path.stat().st_size
        took = time.perf_counter() - started
        print(f"generated {size / 2**20:.0f} MiB, {transactions} transactions in {took:.1f} s")
        _crc_reference(path)  # warm the page cache for both runs
        rss_before = _rss_mb()
        results = []
        for _ in range(3):  # interleaved, so a load spike hits both sides alike
            crc_time = _crc_reference(path)
            scan_time, summary = _scan(path)
            results.append((crc_time, scan_time))
        rss_after = _rss_mb()
    results.sort(key=lambda r: r[0] / r[1])
    crc_time, scan_time = results[1]  # the median ratio
    assert summary.transactions == transactions
    mib = size / 2**20
    print(f"zlib.crc32 over the file : {crc_time:6.2f} s  {mib / crc_time:7.0f} MiB/s")
    print(f"binlog --summary scan    : {scan_time:6.2f} s  {mib / scan_time:7.0f} MiB/s")
    ratios = ", ".join(f"{c / t:.2f}x" for c, t in results)
    print(
        f"ratio scan/crc32         : {crc_time / scan_time:.2f}x median of {ratios}  (goal >= 0.5x)"
    )
    print(
        f"peak RSS                 : {rss_before:.0f} MiB before scans, {rss_after:.0f} MiB after"
    )
    for row in summary.rows("source"):
        print(
            f"  {row.key}  trx={row.transactions}  p50={row.p50}  p99={row.p99}  max={row.max} us"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
