"""Where a test's code reaches for the network: every name looked up and every connection tried
(shared by tests).

Counting the attempts a command makes observes its retries and whether it waits on the network
at all, where timing it would only suggest them.
"""

from __future__ import annotations

import socket

LOOPBACK = {"127.0.0.1", "::1", "localhost"}


def record_attempts(monkeypatch) -> list[tuple[str, object]]:
    """Record, from now until ``monkeypatch`` undoes it, every ``getaddrinfo`` lookup and every socket
    ``connect``/``connect_ex`` of this process (any thread) as ("lookup", host) or ("connect",
    (host, port)); each still runs for real. Returns the list it appends to."""
    attempts = []
    lookup, connect, connect_ex = socket.getaddrinfo, socket.socket.connect, socket.socket.connect_ex

    def recorded_lookup(host, *args, **kwargs):
        attempts.append(("lookup", host.decode() if isinstance(host, bytes) else host))
        return lookup(host, *args, **kwargs)

    def recorded(real):
        def attempt(sock, address):
            attempts.append(("connect", address))
            return real(sock, address)

        return attempt

    monkeypatch.setattr(socket, "getaddrinfo", recorded_lookup)
    monkeypatch.setattr(socket.socket, "connect", recorded(connect))
    monkeypatch.setattr(socket.socket, "connect_ex", recorded(connect_ex))
    return attempts


def beyond_loopback(attempts) -> list:
    """The attempts of :func:`record_attempts` that reach past this machine (loopback and Unix sockets stay)."""
    def local(target) -> bool:
        host = target[0] if isinstance(target, tuple) else target
        # None: a lookup for binding; a path or bytes: a Unix socket
        return host is None or host in LOOPBACK or isinstance(host, bytes) or host.startswith("/")

    return [(kind, target) for kind, target in attempts if not local(target)]


def connections_to(attempts, port: int) -> int:
    """How many connections of :func:`record_attempts` went to ``port`` (on any host)."""
    return sum(1 for kind, target in attempts if kind == "connect" and isinstance(target, tuple) and target[1] == port)
