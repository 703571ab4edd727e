"""The address policy of ``WebFetch``: which hosts and addresses a fetch may connect to.

A fetch names a host; the host resolves to addresses; every address is checked before any
connection is made, and the connection then goes to a checked address (``WebFetch`` pins it).
What is refused, unless an allow-list entry covers it:

- loopback (``127.0.0.0/8``, ``::1``), the unspecified and "this network" addresses
  (``0.0.0.0/8``, ``::``);
- private networks (``10/8``, ``172.16/12``, ``192.168/16``), unique-local IPv6
  (``fc00::/7``) and the shared CGNAT space (``100.64/10``);
- link-local (``169.254/16``, ``fe80::/10``), site-local IPv6, multicast, broadcast,
  documentation, benchmarking and reserved ranges, and IPv6 outside global unicast;
- cloud metadata endpoints (``169.254.169.254``, ``fd00:ec2::254``, ``100.100.100.200``,
  ``192.0.0.192`` and names such as ``metadata.google.internal``): an allow-list entry for a
  whole network never unlocks them, only an entry naming that exact address (or name) does;
- IPv6 forms that carry an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible,
  NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``): the embedded IPv4 address is checked.

Names are checked by what they resolve to, so other spellings of an address (``127.1``,
``2130706433``, ``0x7f.0.0.1``) are refused like ``127.0.0.1``. A :class:`Resolver` turns
names into addresses; the default asks the operating system (``getaddrinfo``), and tests give
a stub.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from dive.errors import DiveError, UserError

__all__ = [
    "METADATA_ADDRESSES",
    "METADATA_HOSTS",
    "AddressPolicy",
    "AddressRefusedError",
    "IPAddress",
    "Resolver",
    "SystemResolver",
    "classify_address",
    "parse_address",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_Network = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, Azure, GCP, OpenStack, DigitalOcean, Oracle…
        "169.254.170.2",  # AWS ECS task metadata
        "fd00:ec2::254",  # AWS IPv6 instance metadata
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (classic)
    )
)
"""Cloud metadata endpoints: refused unless an allow-list entry names the exact address."""

METADATA_HOSTS: frozenset[str] = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.com",
    }
)
"""Host names of cloud metadata services: refused before any lookup unless allow-listed."""


def _nets(*items: tuple[str, str]) -> tuple[tuple[_Network, str], ...]:
    return tuple((ipaddress.ip_network(net), why) for net, why in items)


_V4_REFUSED = _nets(
    ("0.0.0.0/8", "an unspecified ('this network') address"),
    ("10.0.0.0/8", "a private address"),
    ("100.64.0.0/10", "a carrier-grade NAT (shared) address"),
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.0.0/16", "a link-local address"),
    ("172.16.0.0/12", "a private address"),
    ("192.0.0.0/24", "a reserved (IETF protocol assignment) address"),
    ("192.0.2.0/24", "a documentation address"),
    ("192.88.99.0/24", "a reserved (6to4 relay) address"),
    ("192.168.0.0/16", "a private address"),
    ("198.18.0.0/15", "a reserved (benchmarking) address"),
    ("198.51.100.0/24", "a documentation address"),
    ("203.0.113.0/24", "a documentation address"),
    ("224.0.0.0/4", "a multicast address"),
    ("240.0.0.0/4", "a reserved address"),
)

_V6_REFUSED = _nets(
    ("::/128", "an unspecified address"),
    ("::1/128", "a loopback address"),
    ("64:ff9b:1::/48", "a private (local-use NAT64) address"),
    ("100::/64", "a reserved (discard-only) address"),
    ("2001::/23", "a reserved (IETF protocol assignment) address"),
    ("2001:db8::/32", "a documentation address"),
    ("fc00::/7", "a private (unique-local) address"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address"),
    ("ff00::/8", "a multicast address"),
)

_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_V4_COMPATIBLE = ipaddress.ip_network("::/96")


class AddressRefusedError(DiveError):
    """A fetch was refused before connecting: its host or one of its addresses is not public.

    The host or an address it resolves to is loopback, private, link-local, metadata or
    reserved, and no allow-list entry covers it.

    Attributes:
        host: the host name or address literal of the URL.
        address: the refused address, or None when the name itself is refused.
        reason: what the address is (``"a private address"``, ``"a cloud metadata
            endpoint"``…).
    """

    def __init__(self, host: str, address: IPAddress | None, reason: str) -> None:
        self.host = host
        self.address = address
        self.reason = reason
        what = host if address is None or parse_address(host) == address else f"{host} ({address})"
        super().__init__(
            f"refused to connect to {what}: it is {reason}. WebFetch only connects to public "
            "addresses; if this host is trusted, allow it with WebFetch(allow=[...])"
        )


@runtime_checkable
class Resolver(Protocol):
    """Turns a host name into the addresses a connection could go to."""

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        """The addresses ``host`` resolves to (IPv4 or IPv6 text), in preference order.

        Args:
            host: an ASCII host name (IDNA-encoded), never an address literal.
            port: the port the connection will use.

        Raises:
            OSError: the name does not resolve.
        """
        ...


class SystemResolver:
    """The operating system's resolver (``getaddrinfo`` on the running event loop)."""

    async def resolve(self, host: str, port: int) -> Sequence[str]:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        out: list[str] = []
        for *_, sockaddr in infos:
            address = str(sockaddr[0]).split("%", 1)[0]
            if address not in out:
                out.append(address)
        return out


@dataclass(frozen=True, slots=True)
class _Entry:
    network: _Network | None = None
    host: str | None = None  # an exact name, or ".suffix" for "*.suffix"
    port: int | None = None

    def covers_address(self, address: IPAddress, port: int) -> bool:
        if self.network is None or (self.port is not None and self.port != port):
            return False
        if address.version != self.network.version or address not in self.network:
            return False
        # a metadata endpoint needs an entry naming exactly it, never a whole network
        return address not in METADATA_ADDRESSES or self.network.num_addresses == 1

    def covers_host(self, host: str, port: int) -> bool:
        if self.host is None or (self.port is not None and self.port != port):
            return False
        if self.host.startswith("."):
            return host.endswith(self.host) and host not in METADATA_HOSTS
        return host == self.host


def _normal_host(host: str) -> str:
    return host.strip().rstrip(".").lower()


def _parse_entry(text: str) -> _Entry:
    raw = text.strip()
    bad = UserError(
        f"allow-list entry {text!r} is not understood: use an address ('203.0.113.5', '::1'), "
        "a network ('10.0.0.0/8'), a host name ('intranet.example', '*.corp.example'), "
        "optionally with a port ('127.0.0.1:8080', '[::1]:8080', 'intranet.example:8443')"
    )
    if not raw:
        raise bad
    try:
        return _Entry(network=ipaddress.ip_network(raw, strict=False))
    except ValueError:
        pass
    host, port = raw, None
    if raw.startswith("["):
        inner, sep, rest = raw[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise bad
        host, port_text = inner, rest[1:]
        if rest:
            port = _port(port_text, bad)
    elif raw.count(":") == 1:
        host, port_text = raw.split(":")
        port = _port(port_text, bad)
    try:
        return _Entry(network=ipaddress.ip_network(host, strict=False), port=port)
    except ValueError:
        pass
    name = _normal_host(host)
    label = name[2:] if name.startswith("*.") else name
    if not label or any(c in label for c in "/*[]@ ") or ":" in label:
        raise bad
    return _Entry(host="." + label if name.startswith("*.") else name, port=port)


def _port(text: str, bad: UserError) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise bad
    return int(text)


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 form carries (mapped, compatible, NAT64, 6to4), or None."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64 or (address in _V4_COMPATIBLE and int(address) > 1):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _SIX_TO_FOUR:
        return address.sixtofour
    return None


def classify_address(address: IPAddress) -> str | None:
    """What makes ``address`` non-public (``"a private address"``…), or None if it is public.

    Args:
        address: an IPv4 or IPv6 address.
    """
    if address in METADATA_ADDRESSES:
        return "a cloud metadata endpoint"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_v4(address)
        if embedded is not None:
            why = classify_address(embedded)
            return None if why is None else f"{why} (IPv4 {embedded} inside IPv6)"
        for net, why in _V6_REFUSED:
            if address in net:
                return why
        if address not in _GLOBAL_UNICAST_V6:
            return "a reserved address (outside IPv6 global unicast)"
        return None
    for net, why in _V4_REFUSED:
        if address in net:
            return why
    if not address.is_global:
        return "not a public address"
    return None


def parse_address(text: str) -> IPAddress | None:
    """``text`` as an IP address (brackets and an IPv6 zone dropped), or None if it is a name.

    Args:
        text: a host as it appears in a URL or a resolver answer.
    """
    bare = text.strip().removeprefix("[").removesuffix("]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        return None


class AddressPolicy:
    """Which hosts and addresses a fetch may connect to (see the module docs for the rules).

    Args:
        allow: entries that lift the refusal: an address (``"10.1.2.3"``, ``"::1"``), a
            network (``"10.0.0.0/8"``), a host name (``"intranet.example"``) or every
            subdomain of one (``"*.corp.example"``), each optionally limited to a port
            (``"127.0.0.1:8080"``, ``"[::1]:8080"``, ``"intranet.example:8443"``). An allowed
            name is trusted whatever it resolves to (the connection is still pinned to the
            address it resolved to); an allowed address or network lifts the refusal of
            exactly those addresses. Metadata endpoints are only allowed by an entry naming
            that exact address (a trusted name resolving to one is still refused), and
            metadata service names by an entry naming that exact name.

    Raises:
        UserError: an entry is not understood.
    """

    __slots__ = ("_entries", "allow")

    def __init__(self, allow: Iterable[str] = ()) -> None:
        if isinstance(allow, str):
            allow = (allow,)
        self.allow: tuple[str, ...] = tuple(allow)
        self._entries = tuple(_parse_entry(e) for e in self.allow)

    def host_allowed(self, host: str, port: int) -> bool:
        """True when an allow-list entry names ``host`` (then any address it resolves to passes).

        Args:
            host: the URL's host name.
            port: the port of the connection.
        """
        name = _normal_host(host)
        return any(e.covers_host(name, port) for e in self._entries)

    def refusal(self, address: IPAddress, port: int) -> str | None:
        """Why a connection to ``address:port`` is refused, or None if it may go ahead.

        Args:
            address: the address the connection would go to.
            port: its port.
        """
        why = classify_address(address)
        if why is None or any(e.covers_address(address, port) for e in self._entries):
            return None
        return why

    async def checked_addresses(
        self, host: str, port: int, resolver: Resolver
    ) -> tuple[IPAddress, ...]:
        """Resolve ``host`` and check every address; return them all, or refuse.

        An address literal is checked as it is, without a lookup; a name is looked up once
        and every address it resolves to must pass (one refused address refuses the host,
        since a name pointing at a private address is not to be trusted).

        Args:
            host: the URL's host (a name or an address literal).
            port: the port of the connection.
            resolver: turns names into addresses.

        Raises:
            AddressRefusedError: the name or one of its addresses is refused.
            OSError: the name does not resolve.
        """
        literal = parse_address(host)
        if literal is not None:
            why = self.refusal(literal, port)
            if why is not None:
                raise AddressRefusedError(host, literal, why)
            return (literal,)
        name = _normal_host(host)
        trusted = self.host_allowed(name, port)
        if name in METADATA_HOSTS and not trusted:
            raise AddressRefusedError(host, None, "a cloud metadata service name")
        answers = await resolver.resolve(name, port)
        addresses: list[IPAddress] = []
        for text in answers:
            address = parse_address(text)
            if address is None:
                raise AddressRefusedError(
                    host, None, f"resolved to {text!r}, which is not an IP address"
                )
            why = self.refusal(address, port)
            if why is not None and not (trusted and address not in METADATA_ADDRESSES):
                raise AddressRefusedError(host, address, why)
            if address not in addresses:
                addresses.append(address)
        if not addresses:
            raise OSError(f"{host} resolved to no address")
        return tuple(addresses)

    def __repr__(self) -> str:
        return f"AddressPolicy(allow={list(self.allow)!r})"
