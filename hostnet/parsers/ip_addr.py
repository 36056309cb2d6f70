"""`ip -j addr show dev IFACE` -> the interface's usable addresses."""
from __future__ import annotations

import ipaddress
import json

from . import ParseError


def addresses(text: str, source: str = "ip -j addr show") -> set[str]:
    """The interface's addresses in the short form `ss` prints (ipaddress's), tentative ones
    (duplicate detection still running: not usable yet) left out."""
    try:
        links = json.loads(text or "[]")
        return {str(ipaddress.ip_address(a["local"])) for link in links for a in link.get("addr_info", [])
                if "local" in a and not a.get("tentative")}
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ParseError(source, f"not ip's JSON address list ({exc})") from None
