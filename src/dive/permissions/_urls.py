"""URL specifiers: hosts normalised the way a fetcher reaches them, and URL globs.

**Hosts.** An HTTP client does not connect to the host text as written: it maps it (NFKC,
the ideographic and full-width dots U+3002, U+FF0E and U+FF61 to ``.``, lower case, a
trailing dot dropped) and encodes an international name to its ASCII (punycode) form, so
``https://evil<U+3002>com/`` reaches ``evil.com`` and ``https://bücher.de/`` reaches
``xn--bcher-kva.de``. :func:`host_forms` applies the same mapping to a URL's host and to a
``domain:`` rule's host. Where encodings disagree (IDNA 2003 maps ``ß`` to ``ss``, IDNA 2008
keeps it) or a numeric host has other spellings (``2130706433`` is ``127.0.0.1`` to the
resolver), every form is kept: an allow rule must cover each of them, a deny rule matches
any. A host that cannot be encoded has no form, and no allow rule matches it. IP literals
are written in their canonical form (``[0::1]`` is ``::1``).

**Globs.** A URL specifier with ``://`` is matched part by part: the scheme, the host (where
``*`` stays inside the host: it never crosses ``/``, ``@`` or ``:``), the port (when the
specifier names none, only the scheme's default port matches) and the rest of the URL
(path, query, fragment: ``*`` matches any characters). A specifier without ``://`` is a
glob over the whole URL.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from urllib.parse import urlsplit

from dive.permissions._paths import glob_regex

__all__ = ["domain_forms", "domain_matches", "host_forms", "url_glob_matches", "url_hosts"]

_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
_LABELS = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_NUMERIC = re.compile(r"(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+)){0,3}")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _ip(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def _punycode(host: str) -> str:
    """Each non-ASCII label as ``xn--`` punycode, the characters kept (IDNA 2008's reading)."""
    return ".".join(
        label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
        for label in host.split(".")
    )


def host_forms(host: str) -> tuple[str, ...]:
    """Every ASCII form ``host`` may take on the wire, sorted (empty: it cannot be encoded).

    Args:
        host: a host name or IP literal (brackets allowed), as written in a URL or a rule.
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    literal = _ip(text)
    if literal is not None:
        return (literal,)
    text = unicodedata.normalize("NFKC", text).translate(_DOTS).lower().rstrip(".")
    if not text:
        return ()
    forms: set[str] = set()
    if text.isascii():
        forms.add(text)
        if _NUMERIC.fullmatch(text):
            try:  # the resolver reads ``127.1`` and ``0x7f000001`` as IPv4 addresses
                forms.add(socket.inet_ntoa(socket.inet_aton(text)))
            except OSError:
                pass
    else:
        try:
            forms.add(_punycode(text))
        except UnicodeError:
            return ()
        try:  # IDNA 2003 (nameprep) may map it elsewhere, or refuse a newer character
            forms.add(text.encode("idna").decode("ascii").lower())
        except UnicodeError:
            pass
    return tuple(sorted(forms))


def url_hosts(value: str, *, web_only: bool) -> tuple[str, ...] | None:
    """The forms of a URL's host (None: it has none, or is not http(s) and ``web_only``).

    Args:
        value: the URL.
        web_only: require an ``http`` or ``https`` URL.
    """
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname
    except ValueError:
        return None
    if not host or (web_only and parts.scheme.lower() not in _DEFAULT_PORTS):
        return None
    return host_forms(host)


def domain_forms(domain: str) -> tuple[bool, tuple[str, ...]]:
    """A ``domain:`` rule's host: whether it is ``*.``-wildcarded, and its forms.

    Raises:
        ValueError: it is not a host name or IP literal (with what to write instead).
    """
    wildcard = domain.startswith("*.")
    forms = host_forms(domain[2:] if wildcard else domain)
    if not forms or not all(_LABELS.fullmatch(f) or _ip(f) for f in forms):
        raise ValueError(
            f"{domain!r} is not a host name; write domain:example.com or "
            "domain:*.example.com (no scheme, path or port)"
        )
    return wildcard, forms


def domain_matches(
    wildcard: bool, domains: tuple[str, ...], hosts: tuple[str, ...], *, allow: bool
) -> bool:
    """``domain:`` matching: the host itself, or (wildcard) any subdomain.

    For allow every form of the host must match (and there must be one); for deny any may.
    """

    def one(host: str) -> bool:
        if wildcard:
            return any(host.endswith("." + d) for d in domains)
        return host in domains

    if allow:
        return bool(hosts) and all(one(h) for h in hosts)
    return any(one(h) for h in hosts)


def _host_glob(glob: str) -> re.Pattern[str]:
    """A host glob (normalised like a host) where ``*`` never leaves the host."""
    text = unicodedata.normalize("NFKC", glob).translate(_DOTS).lower().rstrip(".")
    labels: list[str] = []
    for label in text.split("."):
        if "*" not in label and not label.isascii():
            try:
                label = _punycode(label)
            except UnicodeError:
                pass
        labels.append(label)
    body = "[^/@:]*".join(re.escape(p) for p in ".".join(labels).split("*"))
    return re.compile(body)


def _split_url(value: str) -> tuple[str, str, str, str] | None:
    """``(scheme, host, port, rest)`` of a ``scheme://host:port/rest`` specifier."""
    scheme, sep, after = value.partition("://")
    if not sep:
        return None
    end = len(after)
    for stop in "/?#":
        i = after.find(stop)
        if 0 <= i < end:
            end = i
    authority = after[:end]
    host, port = authority, ""
    m = re.fullmatch(r"(.*?)(?::([^:\]]*))?", authority)
    if m is not None and not (authority.startswith("[") and authority.endswith("]")):
        host, port = m.group(1), m.group(2) or ""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return scheme.lower(), host, port, after[end:]


def url_glob_matches(spec: str, value: str, *, allow: bool) -> bool:
    """Whether a URL glob specifier matches a URL (see the module docs).

    Args:
        spec: the specifier, such as ``https://*.example.com/docs/*``.
        value: the call's URL.
        allow: the strict reading (every host form must match).
    """
    url = value.strip()
    pattern = _split_url(spec.strip())
    if pattern is None:
        return glob_regex(spec).fullmatch(url) is not None
    scheme_glob, host_glob, port_glob, rest_glob = pattern
    try:
        parts = urlsplit(url)
        port = parts.port
        host = parts.hostname
    except ValueError:
        return False
    if not host:
        return False
    scheme = parts.scheme.lower()
    netloc_end = url.find(parts.netloc, len(parts.scheme) + 3) + len(parts.netloc)
    rest = url[netloc_end:]
    if port is None:
        port = _DEFAULT_PORTS.get(scheme)
    if not glob_regex(scheme_glob).fullmatch(scheme):
        return False
    if port_glob:
        if port is None or not glob_regex(port_glob).fullmatch(str(port)):
            return False
    elif port != _DEFAULT_PORTS.get(scheme):
        return False
    if rest_glob:
        if not glob_regex(rest_glob).fullmatch(rest):
            return False
    elif rest not in ("", "/"):
        return False
    regex = _host_glob(host_glob)
    hosts = host_forms(host)
    if allow:
        return bool(hosts) and all(regex.fullmatch(h) for h in hosts)
    return any(regex.fullmatch(h) for h in hosts)
