"""What the local HTTP API needs: where to listen and its bounds, each default stated here.

The config package's `ApiSettings` inherits these fields (and so their
defaults) and adds only the checks of `[api]`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ApiOptions"]


@dataclass(frozen=True, slots=True)
class ApiOptions:
    """The API server's address and bounds.

    Attributes:
        host, port: where to listen (port 0: any free port).
        max_connections: connections served at once; more are refused with 503.
        head_timeout: seconds a client has to send its whole request head.
        write_timeout: seconds a client has to take the whole answer.
        max_request_bytes: bound on the request head (request line + headers).
        write_buffer_bytes: user-space and kernel send buffer per connection.
        page_series_bytes: bound on the live page's last 15 minutes of every
            member (`core.recent`); members past it get no sparkline, counted.
    """

    host: str = "127.0.0.1"
    port: int = 8437
    max_connections: int = 64
    head_timeout: float = 5.0
    write_timeout: float = 10.0
    max_request_bytes: int = 8192
    write_buffer_bytes: int = 65536
    page_series_bytes: int = 4 << 20

    @property
    def listen(self) -> str:
        """The `host:port` text of `[api] listen`."""
        return f"{self.host}:{self.port}"
