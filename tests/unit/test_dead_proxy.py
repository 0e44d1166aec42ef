"""The dead proxy the adapter tests route agent CLIs through (tests/twins/proxy.py)."""

from __future__ import annotations

import urllib.request

from twins.proxy import DeadProxy
from twins.server import Reply, Twin


def test_a_twin_opened_after_a_closed_proxy_answers_every_request() -> None:
    # closed under its accepting thread, the proxy's descriptor went to the next socket
    # opened, a twin's, and the thread took the twin's connections and dropped them
    for _ in range(20):
        dead = DeadProxy()
        dead.close()
        assert not dead.thread.is_alive()
        with Twin([Reply(text="hi")], protocols=("openai_chat",)) as twin:
            request = urllib.request.Request(f"{twin.url}/v1/models")
            with urllib.request.urlopen(request, timeout=5) as response:
                assert response.status < 500
