"""How a browser reads the scheme, host and port of a URL (the WHATWG URL standard).

The URL policy must judge the host Chromium will contact, not the text an agent typed: to a
browser `http://0x7f000001/`, `http://2130706433/`, `http://0177.0.0.1/`, `http://127.1/`,
`http://１２７.0.0.1/` and `http://127.0.0.1./` are all 127.0.0.1, `http://good.com@127.0.0.1/` and
`http://127.0.0.1\\@good.com/` both go to 127.0.0.1, and `HTTP://LOCALHOST/` is localhost.
`read_url` applies the standard's parsing steps that decide those three parts and nothing more.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

import idna

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21, "file": None}
"""The standard's special schemes: their URLs have a host, and `\\` separates like `/`."""
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
FORBIDDEN_HOST = re.compile(r"[\x00-\x20#%/:<>?@\[\\\]^|\x7f]")
"""Code points a domain may not contain once decoded (the standard's forbidden domain code points)."""
IPV4_PART = {16: re.compile(r"[0-9A-Fa-f]*"), 8: re.compile(r"[0-7]*"), 10: re.compile(r"[0-9]+")}

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class BadUrl(ValueError):
    """A URL a browser would not load (no scheme, a malformed host or port)."""


@dataclass(frozen=True)
class BrowserUrl:
    """The parts of a URL that decide where a browser connects, in the browser's canonical form."""

    scheme: str
    """Lower case, without the colon."""
    host: str
    """Lower-case ASCII domain without trailing dots, dotted IPv4, or bracketed IPv6; '' for schemes
    without a host (about:, data:, javascript: ...)."""
    port: int | None
    """The explicit port, else the scheme's default port."""
    address: Address | None
    """The host as an IP address when it is one."""
    rest: str = ""
    """What follows `scheme:` for schemes without a host (`blank` in about:blank)."""


def read_url(url: str) -> BrowserUrl:
    """Scheme, host and port of `url` as Chromium reads them; BadUrl where it would not load it."""
    text = re.sub(r"[\t\n\r]", "", url.strip("".join(map(chr, range(0x21)))))
    match = SCHEME.match(text)
    if not match:
        raise BadUrl("it has no scheme")
    scheme, rest = match.group()[:-1].lower(), text[match.end():]
    if scheme not in DEFAULT_PORTS:
        return BrowserUrl(scheme, "", None, None, re.split(r"[?#]", rest, maxsplit=1)[0])
    authority = re.split(r"[/\\?#]", rest.lstrip("/\\"), maxsplit=1)[0]
    hostport = authority.rpartition("@")[2]  # everything up to the last @ is user info
    if hostport.startswith("["):
        inside, bracket, port_text = hostport[1:].partition("]")
        if not bracket or "%" in inside:
            raise BadUrl(f"{hostport!r} is not an IPv6 host")
        address: Address | None = _ipv6(inside)
        host = f"[{address.compressed}]"
    else:
        host_text, colon, port_text = hostport.partition(":")
        port_text = colon + port_text
        host, address = _domain_or_ipv4(host_text)
    if port_text and not re.fullmatch(r":[0-9]*", port_text):
        raise BadUrl(f"{port_text[1:]!r} is not a port")
    port = int(port_text[1:]) if port_text[1:] else DEFAULT_PORTS[scheme]
    if port is not None and port > 65535:
        raise BadUrl(f"port {port} is out of range")
    if not host and scheme != "file":
        raise BadUrl("it has no host")
    return BrowserUrl(scheme, host, port, address)


def _ipv6(text: str) -> ipaddress.IPv6Address:
    try:
        return ipaddress.IPv6Address(text)
    except ValueError:
        raise BadUrl(f"[{text}] is not an IPv6 address") from None


def _domain_or_ipv4(text: str) -> tuple[str, ipaddress.IPv4Address | None]:
    """Percent-decoding, Unicode mapping (full-width digits and dots) and lower case, then the
    standard's IPv4 parser when the name ends in a number."""
    try:
        domain = unquote_to_bytes(text).decode("utf-8")
        if not domain.isascii():
            domain = idna.uts46_remap(domain, std3_rules=False, transitional=False)
        if not domain.isascii():
            domain = idna.encode(domain, uts46=False).decode("ascii")
    except (UnicodeError, idna.IDNAError) as error:
        raise BadUrl(f"{text!r} is not a host name: {error}") from None
    domain = domain.lower()
    if FORBIDDEN_HOST.search(domain):
        raise BadUrl(f"{text!r} is not a host name")
    name = domain.rstrip(".")
    last = name.rpartition(".")[2]
    if re.fullmatch(r"[0-9]+|0[xX][0-9A-Fa-f]*", last):
        address = _ipv4(name)
        return str(address), address
    return name, None


def _ipv4(name: str) -> ipaddress.IPv4Address:
    """The standard's IPv4 parser: 1 to 4 parts, each decimal, octal (leading 0) or hex (0x); the last
    part fills the remaining bytes, so 127.1 is 127.0.0.1 and 2130706433 is too."""
    parts = name.split(".")
    if len(parts) > 4:
        raise BadUrl(f"{name!r} has too many parts for an IPv4 address")
    numbers = [_ipv4_number(part, name) for part in parts]
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        raise BadUrl(f"{name!r} is out of range for an IPv4 address")
    value = numbers[-1] + sum(n * 256 ** (3 - i) for i, n in enumerate(numbers[:-1]))
    return ipaddress.IPv4Address(value)


def _ipv4_number(part: str, name: str) -> int:
    if part[:2] in ("0x", "0X"):
        digits, base = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    if not IPV4_PART[base].fullmatch(digits):
        raise BadUrl(f"{name!r} is not an IPv4 address")
    return int(digits, base) if digits else 0
