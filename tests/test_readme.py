"""Every `python` and `bash` block of the README and docs/*.md runs, as written, against a live `dev`.

`dev` runs exactly as the README starts it: no flags, from a fresh directory,
on the README's own ports (8000, 7233, 8233). When any of them is taken the
test skips and says so, unless `MCP_TASKS_README_PORTS=rewrite`: then `dev`
runs on free ports and the README's `127.0.0.1:8000` in the blocks is rewritten
to match, and `127.0.0.1:7233` to its Temporal (the only changes made to any block). `text` blocks are sample output
and are not run (nor are `json` and `toml` samples); a block whose first line
is `# not run by the README test: <why>`, or whose fence follows an HTML comment
`<!-- not run: <why> -->`, is left out, visibly to anyone reading the source. The
README's opening block, the two commands that install and run the product and
its tests, is left out too: it is what `.ci/run` (with .ci/fresh_install.sh) and
this suite's own set-up already run. Each document's bash blocks run in one
shell session of their own, in order; each python block in a fresh interpreter.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mcp_tasks_temporal.ops.dev.ports import can_listen
from tests.processes import REPO_ROOT, Process, free_port, wait_until
from tests.processes import child_env as process_env

pytestmark = pytest.mark.slow

README = REPO_ROOT / "README.md"
DOCS = [README, *sorted((REPO_ROOT / "docs").glob("*.md"))]
SCRIPT = str(Path(sys.executable).parent / "mcp-tasks-temporal")
README_PORTS = {"port": 8000, "temporal": 7233, "ui": 8233}
NOT_RUN = re.compile(r"^# not run by the README test: (?P<why>\S.*)$")
NOT_RUN_COMMENT = re.compile(r"^<!-- not run: (?P<why>\S.*) -->$")
RUNNABLE = {"python": "python", "bash": "bash", "sh": "bash"}
SAMPLES = {"text", "json", "toml"}
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")


@dataclass(frozen=True)
class Block:
    doc: str
    """The document, relative to the repository (README.md, docs/clients.md, ...)."""
    line: int
    """Where the block's code starts in its document (1-based)."""
    lang: str
    code: str
    opening: bool = False
    """The README's first block: the install-and-run and install-and-test commands."""
    marked: str | None = None
    """Why not run, from an `<!-- not run: why -->` comment right before the fence."""

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def not_run_because(self) -> str | None:
        if self.opening:
            return "the opening install commands are what CI and this suite's set-up run"
        if self.marked is not None:
            return self.marked
        first = self.code.splitlines()[0] if self.code else ""
        match = NOT_RUN.match(first)
        return match["why"] if match else None


def doc_blocks(doc: Path) -> list[Block]:
    name = doc.relative_to(REPO_ROOT).as_posix()
    blocks: list[Block] = []
    lines = doc.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        code = "\n".join(lines[index + 1 : end]) + "\n"
        comment = NOT_RUN_COMMENT.match(lines[index - 1].strip()) if index else None
        first = doc == README and not blocks
        blocks.append(Block(name, index + 2, opening["lang"], code, first, comment["why"] if comment else None))
        index = end + 1
    return blocks


BLOCKS = [block for doc in DOCS for block in doc_blocks(doc)]


def runnable(lang: str, doc: str | None = None) -> list[Block]:
    return [
        b
        for b in BLOCKS
        if RUNNABLE.get(b.lang) == lang and b.not_run_because is None and (doc is None or b.doc == doc)
    ]


def test_every_block_is_run_sample_output_or_says_why_not() -> None:
    for block in BLOCKS:
        assert block.lang in RUNNABLE or block.lang in SAMPLES, (
            f"{block.where}: a ```{block.lang or '(no language)'} block: use python, bash, text, json or toml "
            "(and mark a code block that cannot run here with `<!-- not run: why -->` before it)"
        )
    assert runnable("python", "README.md") and runnable("bash", "README.md"), "the tour must have runnable blocks"
    skipped = [b for b in BLOCKS if b.not_run_because is not None]
    assert all(b.lang in RUNNABLE for b in skipped), "only code blocks can be marked as not run"


@dataclass(frozen=True)
class LiveDev:
    url: str
    port: int
    workdir: Path
    rewritten: bool
    temporal_port: int = README_PORTS["temporal"]

    def code_of(self, block: Block) -> str:
        if not self.rewritten:
            return block.code
        code = block.code.replace("127.0.0.1:8000", f"127.0.0.1:{self.port}")
        return code.replace("127.0.0.1:7233", f"127.0.0.1:{self.temporal_port}")

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in process_env().items() if k != "PYTHONPATH"}
        # A reader's shell has the venv's commands; the client journal goes to this test's directory.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        env["XDG_STATE_HOME"] = str(self.workdir / "state-home")
        return env


@pytest.fixture(scope="module")
def live_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDev]:
    workdir = tmp_path_factory.mktemp("readme")
    rewrite = os.environ.get("MCP_TASKS_README_PORTS") == "rewrite"
    if rewrite:
        ports = {"port": free_port(), "temporal": free_port(), "ui": free_port()}
        command = [SCRIPT, "dev", "--port", str(ports["port"]), "--temporal-port", str(ports["temporal"])]
        command += ["--ui-port", str(ports["ui"])]
    else:
        taken = [str(port) for port in README_PORTS.values() if not can_listen("127.0.0.1", port)]
        if taken:
            pytest.skip(
                f"the README's blocks use ports 8000/7233/8233 and {', '.join(taken)} is taken here; "
                "free them, or set MCP_TASKS_README_PORTS=rewrite to run on free ports"
            )
        ports, command = README_PORTS, [SCRIPT, "dev"]  # exactly the README's command
    dev = Process("readme-dev", command, workdir / "dev.log")
    log = dev.log_path.open("ab")
    dev.popen = subprocess.Popen(
        command, cwd=workdir, env=process_env(), stdout=log, stderr=log, start_new_session=True
    )
    log.close()
    try:
        wait_until(lambda: "Press Ctrl-C to stop." in dev.log() or not dev.alive, timeout=120, what="dev")
        assert dev.alive, dev.log()
        yield LiveDev(f"http://127.0.0.1:{ports['port']}/mcp", ports["port"], workdir, rewrite, ports["temporal"])
    finally:
        dev.stop(signal.SIGINT, timeout=30)


def _run(live_dev: LiveDev, command: list[str], script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        input=script,
        cwd=live_dev.workdir,
        env=live_dev.env(),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.parametrize("block", runnable("python"), ids=lambda b: b.where)
def test_python_block_runs(live_dev: LiveDev, block: Block) -> None:
    done = _run(live_dev, [sys.executable, "-"], live_dev.code_of(block))
    assert done.returncode == 0, f"{block.where} failed:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("doc", sorted({b.doc for b in runnable("bash")}))
def test_bash_blocks_run_in_one_shell_session(live_dev: LiveDev, doc: str) -> None:
    """One session per document, as a reader types them: a later block uses what an earlier one defined."""
    parts = ["set -euo pipefail"]
    for block in runnable("bash", doc):
        parts += [f"echo '>>> {block.where}'", live_dev.code_of(block)]
    done = _run(live_dev, ["bash", "-s"], "\n".join(parts))
    transcript = f"{done.stdout}\n{done.stderr}"
    print(transcript)
    assert done.returncode == 0, transcript
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            assert '"error"' not in line, f"a JSON-RPC error in {doc}'s shell blocks:\n{transcript}"
    if doc == "README.md":
        answers = [line for line in done.stdout.splitlines() if line.startswith('{"jsonrpc"')]
        assert len(answers) >= 3, f"every mcp call answers with one JSON-RPC message:\n{transcript}"
