"""mkdocs hooks: pages generated at build time, never written into the source tree.

- ``cli.md``: the command-line reference, every command's ``--help`` as the parser prints it.
- ``tutorial.md``: ``tutorial.ipynb`` executed (nbclient, in a temporary directory) and rendered
  with its outputs; the notebook itself is published beside it, without outputs, to download.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import nbformat
from mkdocs.structure.files import File, Files
from nbclient import NotebookClient

from prdist.cli import build_parser

#: Width of the rendered help (argparse reads it from COLUMNS): the same page on any terminal.
HELP_COLUMNS = "100"
NOTEBOOK = "tutorial.ipynb"
#: Seconds a tutorial cell may take before the build fails.
CELL_TIMEOUT = 300


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("prdist",)) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command of ``parser`` and its sub-commands, depth first: (words, parser)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, (*path, name))


def cli_page() -> str:
    """The command-line reference in Markdown, one section per command."""
    lines = [
        "# Command-line reference",
        "",
        "Every command's `--help`, generated from the parser when the documentation is built. "
        "Exit codes: 0 done, 1 failure, 2 bad input (one line naming the problem and the fix), "
        "3 labels awaited.",
    ]
    with mock.patch.dict(os.environ, {"COLUMNS": HELP_COLUMNS}):
        for words, parser in commands(build_parser()):
            lines += ["", f"## {' '.join(words)}", "", "```text", parser.format_help().rstrip(), "```"]
    return "\n".join(lines) + "\n"


def executed(notebook_path: Path, data_dir: Path) -> nbformat.NotebookNode:
    """The notebook run in a fresh temporary directory; any cell's error fails the build."""
    notebook = nbformat.read(notebook_path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="prdist-docs-") as workdir, mock.patch.dict(
        # TMPDIR: the kernel's temporary files (the tutorial's resource and report) go here too.
        os.environ, {"PRDIST_REVERB_DATA": os.environ.get("PRDIST_REVERB_DATA", str(data_dir)), "TMPDIR": workdir}
    ):
        NotebookClient(
            notebook, timeout=CELL_TIMEOUT, kernel_name="python3", resources={"metadata": {"path": workdir}}
        ).execute()
    return notebook


def _fenced(text: str, language: str = "text") -> str:
    fence = "~~~~" if "```" in text else "```"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def _html_block(html: str) -> str:
    # Markdown ends a raw HTML block at a blank line: keep the output one block.
    return '<div class="nb-output">\n' + re.sub(r"\n\s*\n", "\n", html.strip()) + "\n</div>"


def _output(output: nbformat.NotebookNode) -> str:
    if output.output_type == "stream":
        return _fenced(output.text)
    data = output.get("data", {})
    if "image/svg+xml" in data:
        return _html_block(data["image/svg+xml"])
    if "image/png" in data:
        png = data["image/png"].replace("\n", "")
        return _html_block(f'<img alt="output" src="data:image/png;base64,{png}">')
    if "text/html" in data:
        return _html_block(data["text/html"])
    if "text/plain" in data:
        return _fenced(data["text/plain"])
    raise ValueError(f"the tutorial has an output the docs cannot render: {sorted(data)}")


def notebook_page(notebook: nbformat.NotebookNode, download: str) -> str:
    """Markdown of an executed notebook: its text, code and outputs, in order."""
    blocks = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            blocks.append(cell.source)
        elif cell.cell_type == "code":
            blocks.append(_fenced(cell.source, "python"))
            blocks += [_output(output) for output in cell.outputs]
    blocks.insert(1, f"*Executed when this site was built. Download the notebook: [{download}]({download}).*")
    return "\n\n".join(blocks) + "\n"


def on_files(files: Files, config) -> Files:
    docs = Path(config.docs_dir)
    data_dir = Path(config.config_file_path).resolve().parent.parent / "shared" / "data" / "reverb-emnlp2011"
    files.append(File.generated(config, "cli.md", content=cli_page()))
    notebook = executed(docs / NOTEBOOK, data_dir)
    files.append(File.generated(config, "tutorial.md", content=notebook_page(notebook, NOTEBOOK)))
    return files

