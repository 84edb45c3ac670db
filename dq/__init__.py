"""Developer tools: the `dq` command line and the local server."""
