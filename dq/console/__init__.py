"""`dq console`: a web console for operators, served on 127.0.0.1 and driven through the same HTTP client as `dq`.

The browser talks only to this local server (`server`); every queue operation it asks for becomes one call of the
`dq` target (`targets.HttpTarget`) to the local server or a deployed API, signed there as `dq` signs. The browser
never sees an AWS credential nor the API's address beyond its name.
"""

from .server import ConsoleServer, serve

__all__ = ["ConsoleServer", "serve"]
