"""Who may use the dashboard: loopback by default, a token for anything else, CSRF
tokens on every POST.

- `check_bind`: an address other than loopback refuses to start without a token
  (the dashboard can approve gates and cancel runs).
- With a token, every request carries it: `Authorization: Bearer T`, or the cookie
  that `/?token=T` sets once (then the address bar drops it). Compared with
  `hmac.compare_digest`, so timing says nothing about it.
- Without a token (loopback), the Host header must name loopback: a web page that
  rebinds its own DNS name to 127.0.0.1 still cannot read the dashboard.
- Starting or resuming a run runs agents: it needs the token on loopback too. Without
  `--token`, `swell serve` makes one for this purpose alone (`starter`) and prints it.
- POSTs carry the app's CSRF token (form field `csrf` or header `X-CSRF-Token`):
  another site's form cannot make a browser act here.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from swell.errors import SwellError

COOKIE = "swell_token"
CSRF_HEADER = "x-csrf-token"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1", "[::1]")
SIGNED = "/api/hooks/"  # webhooks: checked by their signature (web/hooks.py), not the token
OPEN_PATH = "/healthz"  # the one path that needs no token (web/health.py)


class BindRefused(SwellError):
    """`swell serve` asked to listen beyond loopback without a token."""

    exit_code = 2


def is_loopback(host: str) -> bool:
    if host.strip("[]") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise BindRefused(
            f"refusing to serve on {host} without a token: anyone who can reach it could "
            "approve gates and cancel runs. Pass --token (or SWELL_SERVE_TOKEN), or bind "
            "to 127.0.0.1"
        )


def same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


@dataclass
class Guard:
    token: str | None
    csrf: str
    starter: str | None = None  # the token that starts runs when `token` is not set

    def _bearer(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        return value.strip() if scheme.lower() == "bearer" else None

    def authorised(self, request: Request) -> bool:
        if self.token is None:
            host = (request.headers.get("host") or "").rsplit(":", 1)[0]
            return host in LOOPBACK_NAMES or is_loopback(host)
        return same(self._bearer(request), self.token) or same(
            request.cookies.get(COOKIE), self.token
        )

    def may_start(self, request: Request) -> bool:
        """Whether the request carries the token that starts and resumes runs."""
        expected = self.token or self.starter
        if expected is None:
            return False
        return same(self._bearer(request), expected) or same(request.cookies.get(COOKIE), expected)

    def by_header(self, request: Request) -> bool:
        """Whether the token came in a header, which another site's page cannot set."""
        expected = self.token or self.starter
        return expected is not None and same(self._bearer(request), expected)

    def csrf_ok(self, request: Request, form_value: str | None) -> bool:
        return same(request.headers.get(CSRF_HEADER) or form_value, self.csrf)


def _denied(request: Request, status: int, message: str) -> Response:
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": message}, status_code=status)
    return PlainTextResponse(message, status_code=status)


def _login(request: Request, guard: Guard) -> Response | None:
    """`?token=T` on a GET: set the cookie and reload without the token in the URL."""
    given = request.query_params.get("token")
    expected = guard.token or guard.starter
    if request.method != "GET" or given is None or expected is None:
        return None
    if not same(given, expected):
        return _denied(request, 401, "wrong token")
    rest = [(k, v) for k, v in parse_qsl(request.url.query) if k != "token"]
    target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, expected, httponly=True, samesite="strict")
    return response


Handler = Callable[[Request], Awaitable[Response]]


def middleware(guard: Guard) -> Callable[[Request, Handler], Awaitable[Response]]:
    async def check(request: Request, call_next: Handler) -> Response:
        if request.url.path == OPEN_PATH:  # says only whether the store answers
            return await call_next(request)
        if request.url.path.startswith(SIGNED):  # a forge proves itself by signature
            return await call_next(request)
        login = _login(request, guard)
        if login is not None:
            return login
        if not guard.authorised(request):
            return _denied(request, 401, "a valid token is needed (Authorization: Bearer)")
        return await call_next(request)

    return check
