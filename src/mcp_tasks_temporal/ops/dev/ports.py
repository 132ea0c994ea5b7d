"""Is a TCP port free to listen on? Checked before `dev` starts anything, so a taken port is one clear line."""

from __future__ import annotations

import errno
import socket
from collections.abc import Sequence


class PortInUseError(RuntimeError):
    """A port `dev` needs is taken; `flag` is the option that moves it."""

    def __init__(self, host: str, port: int, flag: str, what: str) -> None:
        super().__init__(host, port, flag, what)
        self.host, self.port, self.flag, self.what = host, port, flag, what

    def __str__(self) -> str:
        return (
            f"port {self.port} on {self.host} ({self.what}) is already in use, perhaps by another "
            f"`mcp-tasks-temporal dev`; choose another with {self.flag} PORT"
        )


def can_listen(host: str, port: int) -> bool:
    """Whether a listening socket could bind `host:port` now.

    `SO_REUSEADDR` as servers set it, so a port whose last connection is in
    TIME_WAIT counts as free (the real server will bind it) while a listener does not.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            if err.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def check_ports(wanted: Sequence[tuple[str, int, str, str]]) -> None:
    """Raise `PortInUseError` for the first of `(host, port, flag, what)` that is taken or given twice."""
    seen: dict[int, str] = {}
    for host, port, flag, what in wanted:
        if port in seen:
            raise ValueError(f"{flag} and {seen[port]} are both {port}; give them different ports")
        seen[port] = flag
        if not can_listen(host, port):
            raise PortInUseError(host, port, flag, what)
