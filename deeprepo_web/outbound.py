"""Requests the server makes to a URL an editor typed (the judge endpoint, an MLflow server to pull
from): private, loopback, link-local and other non-public addresses are refused unless the operator
lists them in DEEPREPO_OUTBOUND_ALLOW (CIDRs or host names, comma-separated).

A name is resolved once per request and the connection goes to the address that was checked (the
Host header and TLS SNI keep the name), so a DNS answer that changes between the check and the
connect (rebinding) cannot reach an internal address. Each redirect hop passes the same check.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

import httpx
from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_REDIRECTS = 5


class OutboundRefused(httpx.RequestError):
    """One line for the user: which address was refused and how an operator allows it. A RequestError
    (not a TransportError) so callers that retry a flaky network give up on it at once."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


def _system_resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


# The DNS lookup: the one seam tests replace (no resolver serving made-up names runs offline here).
resolve: Callable[[str, int], list[str]] = _system_resolve


def _allow_list() -> tuple[list[ipaddress.IPv4Network | ipaddress.IPv6Network], set[str]]:
    networks, hosts = [], set()
    for item in str(getattr(settings, "DEEPREPO_OUTBOUND_ALLOW", "") or "").split(","):
        item = item.strip().lower()
        if not item:
            continue
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            hosts.add(item.rstrip("."))
    return networks, hosts


def _internal(addr: Address) -> bool:
    if isinstance(addr, ipaddress.IPv6Address):
        inner = addr.ipv4_mapped or addr.sixtofour
        if inner is not None and _internal(inner):
            return True
    return not addr.is_global or addr.is_multicast


def address_check(host: str, addr: Address) -> None:
    networks, hosts = _allow_list()
    if host.lower().rstrip(".") in hosts:
        return
    candidates = [addr] + ([addr.ipv4_mapped] if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped else [])
    if any(a in net for a in candidates for net in networks if a.version == net.version):
        return
    if _internal(addr):
        raise OutboundRefused(
            f"{host} is {addr}, a private, loopback or link-local address: the server does not call those "
            f"unless an operator allows it in DEEPREPO_OUTBOUND_ALLOW")


def host_pin(host: str, port: int) -> Address:
    """The one address this request connects to, checked; raises OutboundRefused."""
    bare = host.strip("[]")
    try:
        literal: Address | None = ipaddress.ip_address(bare)
    except ValueError:
        literal = None
    if literal is not None:
        address_check(bare, literal)
        return literal
    try:
        found = [ipaddress.ip_address(a.split("%")[0]) for a in resolve(bare, port)]
    except (OSError, UnicodeError) as exc:
        raise OutboundRefused(f"{bare} does not resolve: {exc}") from exc
    if not found:
        raise OutboundRefused(f"{bare} does not resolve")
    for addr in found:  # every answer must pass: a mixed answer is refused, not raced
        address_check(bare, addr)
    return found[0]


def url_check(url: str) -> None:
    """For a URL being saved: raises OutboundRefused when the server would refuse to call it."""
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise OutboundRefused(f"{url[:200]!r} is not a URL: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise OutboundRefused(f"{url[:200]!r}: give an http(s) URL with a host")
    host_pin(parsed.host, parsed.port or (443 if parsed.scheme == "https" else 80))


class PinnedTransport(httpx.HTTPTransport):
    """Checks every request's host and connects to the checked address, not to a second lookup."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme not in ("http", "https"):
            raise OutboundRefused(f"{url.scheme}: only http(s) is called")
        addr = host_pin(url.host, url.port or (443 if url.scheme == "https" else 80))
        extensions = dict(request.extensions)
        if url.scheme == "https":
            extensions["sni_hostname"] = url.host
        # The Host header was set from the name when the request was built; only the socket's
        # address changes. The caller's request stays as it was, so redirects resolve against the name.
        pinned = httpx.Request(request.method, url.copy_with(host=str(addr)), headers=request.headers,
                               stream=request.stream, extensions=extensions)
        return super().handle_request(pinned)


def client(**kwargs: Any) -> httpx.Client:
    """An httpx client for editor-given URLs: pinned, checked, redirects followed only through the check."""
    return httpx.Client(transport=PinnedTransport(), follow_redirects=True, max_redirects=MAX_REDIRECTS, **kwargs)
