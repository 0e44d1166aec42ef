"""`swell serve`: the dashboard. An ASGI app (`app.create_app`) with Jinja2 pages, a JSON
API described by OpenAPI, and Server-Sent Events that tail the store. It reads runs only
through the store's reader protocols (and `store.pages` for paged reads); decisions go
through the same store calls and runtime functions the CLI uses. Nothing happens at
import time."""
