"""One module per scenario: each `run(quick)` prints its figures and returns them as a dict."""
