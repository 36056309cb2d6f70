"""`ss -Hl{t,u}n` (listening sockets, no header, numeric) -> the local addresses that listen."""
from __future__ import annotations

from . import ParseError

_ANY = ("*", "0.0.0.0", "[::]", "::")


def listening(text: str, source: str = "ss -Hln") -> set[tuple[str, int]]:
    """{(address, port)} of every listening socket: the fourth column, "ADDR:PORT" (IPv6 in
    brackets; "ADDR%DEV" for a socket bound to a device keeps only ADDR). "*" for every address.
    Empty text is no socket listening, not an error: that is what wait_listening polls for."""
    out = set()
    for n, line in enumerate(text.splitlines(), 1):
        cols = line.split()
        if not cols:
            continue
        if len(cols) < 5:
            raise ParseError(source, f"not an ss socket line (state, queues, local, peer): {line[:80]!r}", n)
        addr, sep, port = cols[3].rpartition(":")
        if not sep or not port.isdigit():
            raise ParseError(source, f"local address {cols[3]!r} has no port", n)
        addr = addr.split("%", 1)[0]
        out.add(("*" if addr in _ANY else addr.strip("[]"), int(port)))
    return out


def listens(sockets: set[tuple[str, int]], ip: str, port: int) -> bool:
    """Whether a socket takes connections for ip:port (bound to it, or to every address)."""
    return (ip, port) in sockets or ("*", port) in sockets
