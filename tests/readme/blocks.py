"""README.md's fenced blocks, as the README test reads them, and how a block's shown output is compared.

The convention (every fence names its language; markers are an HTML comment on the line above a fence):

- `bash`, `sh`, `shell`: run as printed in one bash session, under `set -e -o pipefail`;
- `console`: `$ ` lines are commands (a line ending in a backslash continues), the lines after one are its output
  (a command shown with none must print nothing);
- `python`: run as a fresh `python3` session would, in the session's working directory and environment, and it
  must also paste into the interactive `python3` (a blank line after each compound statement);
- the languages in `NOT_RUN` (`text`, `json`, ...) are shown only; any other tag fails, as does a fence with none;
  fences may be indented (in a list) or made of tildes, and are read all the same;
- a `text` block right after a `bash`/`sh`/`shell`/`python` block (only blank lines between) is its output;
- `<!-- readme: skip (reason) -->`: not run, reported with the reason;
- `<!-- readme: background -->`: a shell block that runs until stopped (a second terminal), started in the background;
- `<!-- readme: file PATH -->`: the block is saved as PATH instead of being run.

Shown output is compared line by line: spaces collapsed, blank lines ignored, `...` (or `…`) matches any text in a
line and a line of just `...` any number of lines; values that differ on every run (message ids, receipt handles,
ages, clock times, timestamps, UUIDs) are compared by their shape.
"""

from __future__ import annotations

import code
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

SHELL_LANGUAGES = frozenset({"bash", "sh", "shell"})
RUNNABLE = SHELL_LANGUAGES | {"console", "python"}
OUTPUT_LANGUAGE = "text"
# Languages that are shown, never run. Any other tag fails the test, so a runnable block written as ```py,
# ```python3 or ```zsh cannot be left out silently.
NOT_RUN = frozenset({OUTPUT_LANGUAGE, "json", "jsonl", "yaml", "http", "toml", "ini", "diff", "html", "javascript"})
MARKER = re.compile(r"^<!--\s*readme:\s*(?P<verb>\w+)\s*(?P<rest>.*?)\s*-->\s*$")
# A fence may be indented (inside a list item) or quoted (`> `), and made of backticks or tildes, as Markdown
# renders them all.
FENCE = re.compile(r"^(?P<indent>[ >]*)(?P<fence>`{3,}(?=[^`]*$)|~{3,})(?P<info>.*)$")
HEADING = re.compile(r"^#+\s+(?P<title>.+?)\s*$")


class ReadmeFormatError(ValueError):
    """The README breaks the convention: a fence without a language, an unknown or misplaced marker."""


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    section: str
    marker: str = ""  # "", "skip", "background" or "file"
    argument: str = ""  # the skip reason or the file's path
    output: str | None = None  # the text block shown as this block's output
    commands: list[tuple[str, str]] = field(default_factory=list)  # console: (command, expected output)

    @property
    def name(self) -> str:
        slug = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")[:40]
        return f"L{self.line}-{self.language}-{slug}"


def read_blocks(path: Path) -> list[Block]:
    """Every fenced block of the README in order, with its marker and its shown output attached."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    section = "top"
    previous_fence_end = -10
    index = 0
    while index < len(lines):
        line = lines[index]
        heading = HEADING.match(line)
        if heading:
            section = heading.group("title")
        marker_match = MARKER.match(line.strip())
        if marker_match and not (index + 1 < len(lines) and FENCE.match(lines[index + 1])):
            raise ReadmeFormatError(f"README.md:{index + 1}: a readme marker must be the line right above a fence")
        fence = FENCE.match(line)
        if not fence:
            index += 1
            continue
        language = fence.group("info").strip().split(" ")[0].lower()
        if not language:
            raise ReadmeFormatError(
                f"README.md:{index + 1}: a fence without a language; write ```bash, ```console, ```python, "
                "```text, ```json ... (see tests/readme/blocks.py)"
            )
        if language not in RUNNABLE | NOT_RUN:
            raise ReadmeFormatError(
                f"README.md:{index + 1}: ```{language} is neither run nor known as shown-only; write one of "
                f"{', '.join(sorted(RUNNABLE | NOT_RUN))} (see tests/readme/blocks.py)"
            )
        indent, mark = fence.group("indent"), fence.group("fence")
        closing = re.compile(rf"^[ >]*{re.escape(mark[0])}{{{len(mark)},}}\s*$")
        end = index + 1
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        if end == len(lines):
            raise ReadmeFormatError(f"README.md:{index + 1}: a fence that is never closed")
        body = [
            text[len(indent) :] if text.startswith(indent) else text.lstrip(" >") for text in lines[index + 1 : end]
        ]
        block = Block(index + 1, language, "\n".join(body) + "\n", section)
        above = MARKER.match(lines[index - 1].strip()) if index > 0 else None
        if above:
            block.marker, block.argument = _marker(above, index)
        between = lines[previous_fence_end + 1 : index]
        attached = (
            language == OUTPUT_LANGUAGE
            and blocks
            and previous_fence_end >= 0
            and all(not text.strip() for text in between)
            and blocks[-1].language in RUNNABLE - {"console"}
            and blocks[-1].output is None
            and not block.marker
        )
        if attached:
            blocks[-1].output = block.text
        else:
            if language == "console":
                block.commands = console_commands(block.text)
            blocks.append(block)
        previous_fence_end = end
        index = end + 1
    return blocks


def paste_errors(text: str) -> list[str]:
    """The syntax errors a Python block raises when pasted into the interactive `python3` (3.11's REPL ends a
    compound statement only at a blank line, so a `for` loop followed at once by a statement is a SyntaxError
    there, though it runs as a file). Nothing is executed."""
    errors: list[str] = []

    class Paste(code.InteractiveConsole):
        def runcode(self, code: object) -> None:
            pass

        def showsyntaxerror(self, filename: str | None = None, **_: object) -> None:
            errors.append(str(sys.exc_info()[1]))

    console = Paste()
    for line in text.splitlines():
        console.push(line)
    console.push("")
    return errors


def _marker(match: re.Match[str], index: int) -> tuple[str, str]:
    verb, rest = match.group("verb"), match.group("rest")
    if verb == "skip":
        reason = rest.strip()
        if not (reason.startswith("(") and reason.endswith(")") and len(reason) > 2):
            raise ReadmeFormatError(f"README.md:{index}: write the reason: <!-- readme: skip (reason) -->")
        return verb, reason[1:-1]
    if verb == "background" and not rest:
        return verb, ""
    if verb == "file" and rest and " " not in rest:
        return verb, rest
    raise ReadmeFormatError(f"README.md:{index}: unknown readme marker {match.group(0)!r}")


def console_commands(text: str) -> list[tuple[str, str]]:
    """A console transcript's commands (continuation lines joined as the shell joins them) and their outputs."""
    commands: list[tuple[str, str]] = []
    command: list[str] = []
    output: list[str] = []
    for line in text.splitlines():
        if line.startswith("$ ") and not (command and command[-1].endswith("\\") and not output):
            if command:
                commands.append(("\n".join(command), "\n".join(output)))
            command, output = [line[2:]], []
        elif command and command[-1].endswith("\\") and not output:
            command.append(line)
        elif command:
            output.append(line)
        elif line.strip():
            raise ReadmeFormatError(f"a console block must start with a `$ ` command, not {line!r}")
    if command:
        commands.append(("\n".join(command), "\n".join(output)))
    return commands


# ---- comparing output ----------------------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Values that differ on every run, replaced by their shape on both sides before comparing.
VOLATILE = (
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\b[SF][A-Za-z0-9_-]{0,40}\.[0-9a-f]{16,}\b"), "<message-id>"),
    (re.compile(r"[A-Za-z0-9+/_=-]{40,}(\.[A-Za-z0-9+/_=-]+)?"), "<handle>"),
    (re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?"), "<timestamp>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\b"), "<clock>"),
    (re.compile(r"\b\d+(\.\d+)? ?(ms|s|min|h)\b"), "<duration>"),
    # `dq` prints an age under half a second as "now": "1 s ago" in the README is the same shape.
    (re.compile(r"<duration> ago|\bin <duration>|\bnow\b"), "<when>"),
)
WILDCARD = re.compile(r"\.\.\.|…")


def normalize(text: str) -> list[str]:
    """The lines that are compared: no colours, volatile values by shape, spaces collapsed, no blank lines."""
    lines = []
    for line in ANSI.sub("", text).splitlines():
        for pattern, shape in VOLATILE:
            line = pattern.sub(shape, line)
        line = " ".join(line.split())
        if line:
            lines.append(line)
    return lines


def _line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in WILDCARD.split(expected)))


def output_matches(expected: str, actual: str) -> bool:
    """Whether `actual` is what the README shows as `expected`, by the rules in this module's docstring."""
    wanted = [normalize_wildcards(line) for line in normalize(expected)]
    got = normalize(actual)
    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) in memo:
            return memo[(i, j)]
        if i == len(wanted):
            result = j == len(got)
        elif wanted[i] in ("...", "…"):
            result = any(match(i + 1, k) for k in range(j, len(got) + 1))
        else:
            result = j < len(got) and _line_pattern(wanted[i]).fullmatch(got[j]) is not None and match(i + 1, j + 1)
        memo[(i, j)] = result
        return result

    return match(0, 0)


def normalize_wildcards(line: str) -> str:
    return line.replace("…", "...")
