"""README.md runs as printed, in order: each fenced shell, console and Python block of the README against a
`dq local` this test starts, each shown output checked (convention: tests/readme/blocks.py).

Every block is one test, named by its line and section, so a failure names the block and a skipped block is
reported with its reason. The blocks run in README order, in one session shared by these tests, each twice in a
row: a reader who runs a block again (a copy-paste repeated, a script run twice) must not meet an error or a hang.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.readme.blocks import OUTPUT_LANGUAGE, RUNNABLE, Block, output_matches, paste_errors, read_blocks
from tests.readme.session import ROOT, BlockFailed, Terminal

README = ROOT / "README.md"
BLOCKS = read_blocks(README)
RUN = [block for block in BLOCKS if block.language in RUNNABLE or block.marker == "file"]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, str | None]]:
    """Runs every block twice in a row, in order; each block's failure (or None) by its line."""
    terminal = Terminal(Path(tmp_path_factory.mktemp("readme")))
    results: dict[int, str | None] = {}
    try:
        terminal.start()
        for block in RUN:
            if block.marker == "skip":
                continue
            try:
                terminal.run(block)
                results[block.line] = None
            except BlockFailed as failure:
                results[block.line] = str(failure)
                continue
            try:
                terminal.run(block, again=True)
            except BlockFailed as failure:
                results[block.line] = f"run a second time in a row, it failed:\n{failure}"
        failed = any(results.values())
        if failed:
            logs = terminal.background_logs()
            server = terminal.server_log.read_text(errors="replace")[-3000:]
            for line, failure in results.items():
                if failure:
                    results[line] = f"{failure}\n\nbackground blocks:\n{logs}\n\ndq local's log (end):\n{server}"
        yield results
    finally:
        terminal.close()


# The first block's setup runs every block (about 40 s on an idle machine; more when the machine is busy).
@pytest.mark.timeout(600)
@pytest.mark.parametrize("block", RUN, ids=[block.name for block in RUN])
def test_the_readme_block_runs_as_printed(block: Block, outcomes: dict[int, str | None]) -> None:
    if block.marker == "skip":
        pytest.skip(f"README.md:{block.line} ({block.section}): {block.argument}")
    failure = outcomes[block.line]
    if failure:
        pytest.fail(f"README.md:{block.line} ({block.section}):\n{failure}", pytrace=False)


def test_the_readme_has_runnable_blocks_and_shows_outputs() -> None:
    """The convention is in force: most blocks run, shown outputs are attached to a block."""
    ran = [block for block in RUN if block.marker != "skip"]
    assert len(ran) >= 10
    assert any(block.output for block in ran) and any(block.commands for block in ran)
    assert not any(block.language == OUTPUT_LANGUAGE and block.marker for block in BLOCKS)


def test_the_readmes_python_blocks_paste_into_the_interactive_python() -> None:
    """The README says its snippets run as printed in `python3`: pasted there too, not only saved as a file."""
    for block in RUN:
        if block.language == "python" and not block.marker:
            assert not paste_errors(block.text), f"README.md:{block.line}: {paste_errors(block.text)}"
    assert paste_errors("for i in range(2):\n    print(i)\nprint(i)\n")


def test_shown_output_is_compared_by_shape_and_wildcards() -> None:
    shown = "sent S0.1795363714863000005edf7\n orders  97   9 s\n...\nreceipt MXxv...\n"
    assert output_matches(shown, "sent S3.17953637148630000aaaaaa\norders 97 12 s\nline\nline\nreceipt MXxvabc\n")
    assert not output_matches(shown, "sent S3.17953637148630000aaaaaa\norders 98 12 s\nreceipt MXxvabc\n")
    assert not output_matches("created queue orders\n", "created queue orders\nand more\n")


def test_the_readmes_pip_pins_are_the_projects_own() -> None:
    """The README's `pip install name==version` lines run in the project's venv: a pin other than
    requirements-dev.txt's would change the venv the tests run in."""
    pinned: dict[str, str] = {}
    for path in ("requirements.txt", "requirements-dev.txt"):
        for line in (ROOT / path).read_text().splitlines():
            name, _, version = line.split("#", 1)[0].strip().partition("==")
            if version:
                pinned[name.split("[", 1)[0].lower()] = version.strip()
    shown = [
        word.strip("'\"")
        for block in RUN
        if block.language in {"bash", "sh", "shell", "console"}
        and block.marker != "skip"
        and "pip install" in block.text
        for word in block.text.split()
        if "==" in word
    ]
    assert shown, "the README says how to install the AWS CLI and Celery"
    for word in shown:
        name, version = word.split("==", 1)
        assert pinned.get(name.split("[", 1)[0].lower()) == version, f"{word} is not pinned so in requirements*.txt"
