"""The terminal side of the client commands: a live status line, and elicitation forms asked field by field.

Prompts and the status line go to stderr and answers are read from stdin, so
stdout carries only the result, and a script can pipe the answers in. When stdin
ends before a question is answered there is nobody to ask: the command ends
(`NoTerminal`) with the command that answers the question instead of waiting
for an answer that cannot come.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, NoReturn, TextIO, cast

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext

from mcp_tasks_temporal.client import DetailedTask, InputDeferred

DECLINE = "!decline"
CANCEL = "!cancel"
_TICK_S = 0.5
_PROG = "mcp-tasks-temporal"


def answer_command(task_id: str, key: str) -> str:
    """What answers one question of a task from another shell."""
    return f"answer it with `{_PROG} answer {task_id} {key} VALUE|JSON`"


class NoTerminal(Exception):
    """A question came and stdin ended (or never was a terminal) before an answer: nobody here can answer it.

    The task keeps waiting for the answer; the command ends, saying how to give it.
    """

    def __init__(self, task_id: str | None, key: str) -> None:
        self.task_id = task_id
        self.key = key
        where = "stdin ended" if sys.stdin.isatty() else "stdin is not a terminal and holds no answer"
        if task_id is None:  # a call answered without a task: its question ends with the command
            fix = "pipe the answer into this command's stdin, or run it on a terminal"
            super().__init__(f"the tool asks {key!r} and nobody here can answer it ({where}): {fix}")
            return
        super().__init__(
            f"task {task_id} asks {key!r} and nobody here can answer it ({where}); the task waits: "
            f"{answer_command(task_id, key)}, then `{_PROG} watch {task_id}` (or pipe the answer into this "
            "command's stdin; --no-input follows a task without asking)"
        )


def as_object(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else `{}`: schemas and results arrive untyped."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return cast(list[Any], value) if isinstance(value, list) else []


class StatusLine:
    """`task <id>: <status> - <statusMessage> (<elapsed>)` on stderr while a task is followed.

    On a terminal the line is redrawn in place (and its clock ticks); otherwise
    each change is one line, so logs and tests see every state.
    """

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = self.stream.isatty()
        self.started = time.monotonic()
        self._task: DetailedTask | None = None
        self._shown = ""
        self._suspended = False

    def _text(self) -> str:
        task = self._task
        if task is None:
            return ""
        elapsed = time.monotonic() - self.started
        message = f" - {task.status_message}" if task.status_message else ""
        return f"task {task.task_id[:8]}: {task.status}{message} ({elapsed:.1f}s)"

    @property
    def task_id(self) -> str | None:
        """The task on the line, once one was shown."""
        return self._task.task_id if self._task is not None else None

    def show(self, task: DetailedTask) -> None:
        before = self._task
        changed = before is None or (task.status, task.status_message) != (before.status, before.status_message)
        self._task = task
        if self.quiet or self._suspended:
            return
        if self.tty:
            self._draw()
        elif changed:
            print(self._text(), file=self.stream, flush=True)

    def _draw(self) -> None:
        text = self._text()
        pad = max(len(self._shown) - len(text), 0)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._shown = text

    def clear(self) -> None:
        if self.tty and self._shown:
            self.stream.write("\r" + " " * len(self._shown) + "\r")
            self.stream.flush()
            self._shown = ""

    def suspend(self) -> None:
        """Stop drawing (a prompt is about to use the terminal)."""
        self.clear()
        self._suspended = True

    def resume(self) -> None:
        self._suspended = False

    async def tick(self) -> None:
        """Keep the elapsed time moving on a terminal; run it in a task group and cancel it when done."""
        if not self.tty or self.quiet:
            return
        while True:
            await anyio.sleep(_TICK_S)
            if self._task is not None and not self._suspended:
                self._draw()


class TerminalPrompter:
    """Answers elicitation requests by asking on stderr and reading stdin.

    With `ask=False` (`--no-input`) every question is left open for `answer` from elsewhere.
    """

    def __init__(self, status: StatusLine | None = None, stream: TextIO | None = None, *, ask: bool = True) -> None:
        self.status = status
        self.stream = stream or sys.stderr
        self.ask = ask

    async def __call__(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        if not self.ask:
            raise InputDeferred()
        if self.status is not None:
            self.status.suspend()
        try:
            if isinstance(params, types.ElicitRequestURLParams):
                return await self._url(context, params)
            return await self._form(context, params)
        finally:
            if self.status is not None:
                self.status.resume()

    def _say(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    async def _ask(self, prompt: str) -> str | None:
        """One answer line, or `None` at the end of stdin."""
        self.stream.write(prompt)
        self.stream.flush()
        # A blocked readline cannot be interrupted; abandoning it lets Ctrl-C end the command.
        line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        if not line:
            self._say("")
            return None
        answer = line.rstrip("\r\n")
        if not sys.stdin.isatty():
            self._say(answer)  # piped answers are not echoed by a terminal; keep the transcript readable
        return answer

    def _defer(self, context: ClientRequestContext) -> NoReturn:
        """No one to ask (stdin ended): the question stays open, and the command ends saying how to answer it.

        Answering `cancel` on the user's behalf would end a task nobody chose to end, and waiting
        would wait for an answer that cannot come.
        """
        raise NoTerminal(self.status.task_id if self.status is not None else None, str(context.request_id))

    async def _url(self, context: ClientRequestContext, params: types.ElicitRequestURLParams) -> types.ElicitResult:
        self._say(f"? {params.message}\n  Open: {params.url}")
        answer = await self._ask(f"  Press Enter when done ({DECLINE} to refuse): ")
        if answer is None:
            self._defer(context)
        if answer.strip() == CANCEL:
            return types.ElicitResult(action="cancel")
        if answer.strip() == DECLINE:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept")

    async def _form(self, context: ClientRequestContext, params: types.ElicitRequestFormParams) -> types.ElicitResult:
        schema = params.requested_schema
        properties = as_object(schema.get("properties"))
        required = {str(name) for name in as_list(schema.get("required"))}
        self._say(f"? {params.message}  (empty skips an optional field; {DECLINE} or {CANCEL} to refuse)")
        content: dict[str, Any] = {}
        for name, spec in properties.items():
            field = as_object(spec)
            while True:
                answer = await self._ask(f"  {_label(name, field, name in required)}: ")
                if answer is None:
                    self._defer(context)
                if answer.strip() == CANCEL:
                    return types.ElicitResult(action="cancel")
                if answer.strip() == DECLINE:
                    return types.ElicitResult(action="decline")
                if answer == "":
                    if "default" in field:
                        content[name] = field["default"]
                        break
                    if name not in required:
                        break
                    self._say(f"  {name} is required")
                    continue
                try:
                    content[name] = convert(answer, field)
                except ValueError as problem:
                    self._say(f"  {problem}")
                    continue
                break
        return types.ElicitResult(action="accept", content=content)


def _label(name: str, field: dict[str, Any], required: bool) -> str:
    title = field.get("title") or name
    kind = field.get("type", "string")
    choices = as_list(field.get("enum")) or [as_object(option).get("const") for option in as_list(field.get("oneOf"))]
    hint = "/".join(str(c) for c in choices) if choices else ("y/n" if kind == "boolean" else kind)
    description = f" - {field['description']}" if field.get("description") else ""
    return f"{title} [{hint}{', required' if required else ''}]{description}"


def convert(answer: str, field: dict[str, Any]) -> Any:
    """An answer typed at the prompt, as the JSON value the schema asks for.

    Raises:
        ValueError: The text is not a value of that type (the prompt asks again).
    """
    kind = field.get("type", "string")
    if kind == "boolean":
        lowered = answer.strip().lower()
        if lowered in ("y", "yes", "true", "1"):
            return True
        if lowered in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer y or n")
    if kind == "integer":
        try:
            return int(answer.strip())
        except ValueError:
            raise ValueError("a whole number, please") from None
    if kind == "number":
        try:
            return float(answer.strip())
        except ValueError:
            raise ValueError("a number, please") from None
    if kind == "array":
        values = [part.strip() for part in answer.split(",") if part.strip()]
        allowed = as_list(as_object(field.get("items")).get("enum"))
        if allowed and any(v not in allowed for v in values):
            raise ValueError(f"choose from {', '.join(map(str, allowed))}")
        return values
    choices = as_list(field.get("enum"))
    if choices and answer not in choices:
        raise ValueError(f"choose one of {', '.join(map(str, choices))}")
    return answer


def render_result(result: dict[str, Any], stream: TextIO | None = None) -> None:
    """A `CallToolResult` for people: its text blocks, else its structured content as JSON."""
    out = stream or sys.stdout
    blocks = [as_object(block) for block in as_list(result.get("content"))]
    for block in blocks:
        if block.get("type") == "text":
            print(block.get("text", ""), file=out)
        else:
            label = block.get("mimeType") or block.get("uri") or ""
            print(f"[{block.get('type')}{' ' + str(label) if label else ''}]", file=out)
    if not any(block.get("type") == "text" for block in blocks) and result.get("structuredContent") is not None:
        print(json.dumps(result["structuredContent"], indent=2), file=out)
    out.flush()


def describe_task(task: DetailedTask, tool: str | None) -> None:
    """A task for people: status line, details, outstanding questions, then its result or error."""
    line = f"{task.task_id}  {task.status}"
    if task.status_message:
        line += f"  {task.status_message}"
    print(line)
    details = [f"tool {tool}"] if tool else []
    details.append(f"created {task.created_at}")
    details.append(f"ttl {task.ttl_ms} ms" if task.ttl_ms is not None else "no ttl")
    print("  " + ", ".join(details))
    if task.web_ui:
        print(f"  temporal web ui {task.web_ui}")
    for key, request in (task.input_requests or {}).items():
        params = as_object(request.get("params"))
        print(f"  needs input {key}: {request.get('method')} {params.get('message', '')}".rstrip())
    if task.result is not None:
        render_result(task.result)
    if task.error is not None:
        print(f"  error {task.error.code}: {task.error.message}")


def format_age(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.0f}h"
    return f"{seconds / 86400:.0f}d"
