"""Pure logic of a front's watchers, no servers: a feed watcher's last view, subscriptions, a listed task's
packed memo, the heap trim."""

from __future__ import annotations

from typing import Any

from temporalio.client import WorkflowExecutionStatus

from mcp_tasks_temporal.front.gateway import ListedTask, task_view
from mcp_tasks_temporal.front.push.feed_watch import FeedWatcher, on_feed
from mcp_tasks_temporal.front.push.heap import TRIM_AFTER_TASKS, is_glibc, release_freed_heap, worth_trimming
from mcp_tasks_temporal.front.push.task_watch import attach
from mcp_tasks_temporal.temporal.metrics import FrontMetrics

TASK_ID = "0b6c2f7e-8f0e-4a51-9d7c-6f2e0c8b8a11"
KEY = f"mcp-tasks/anon/{TASK_ID}"
QUESTION: dict[str, Any] = {
    "k1": {"method": "elicitation/create", "params": {"message": "Delete?", "requestedSchema": {}}}
}


def memo(status: str = "working", **more: Any) -> dict[str, Any]:
    return {"createdAt": 1_000, "lastUpdatedAt": 1_000, "status": status, "feedSeq": 1, **more}


def watched(seen: list[dict[str, Any]], first: dict[str, Any] | None = None) -> FeedWatcher:
    watcher = FeedWatcher(KEY, first or memo(), 1)
    attach(watcher, seen.append, None, FrontMetrics(), when_left=lambda _: None)
    return watcher


def test_a_shown_view_is_rebuilt_from_the_memo_not_kept_twice() -> None:
    seen: list[dict[str, Any]] = []
    watcher = watched(seen)
    assert watcher.last is None and not seen
    watcher.show(watcher.memo)
    watcher.show(watcher.memo)  # nothing changed: not published again
    assert seen == [task_view(TASK_ID, memo(), None)]
    assert watcher.last == seen[-1]
    assert watcher._last is None  # pyright: ignore[reportPrivateUsage]


def test_the_last_view_survives_a_memo_or_status_line_not_yet_published() -> None:
    seen: list[dict[str, Any]] = []
    watcher = watched(seen)
    watcher.show(watcher.memo)
    shown = seen[-1]
    watcher.heartbeat = ("halfway", 2_000)
    assert watcher.last == shown  # a new listener gets what was published, not what is about to be
    watcher.update_memo({"status": "input_required", "inputRequests": QUESTION, "lastUpdatedAt": 3_000})
    assert watcher.last == shown
    watcher.heartbeat = None
    watcher.show(watcher.memo)
    assert seen[-1]["status"] == "input_required" and watcher.last == seen[-1]
    assert len(seen) == 2


def test_a_status_line_is_shown_once_and_a_change_back_to_the_shown_view_is_not_repeated() -> None:
    seen: list[dict[str, Any]] = []
    watcher = watched(seen)
    watcher.show(watcher.memo)
    watcher.heartbeat = ("step 1", 2_000)
    watcher.show(watcher.memo)
    assert seen[-1]["statusMessage"] == "step 1"
    watcher.heartbeat = ("step 1", 2_000)
    watcher.show(watcher.memo)
    watcher.update_memo({})  # the same memo: the same view, not published again
    watcher.show(watcher.memo)
    assert len(seen) == 2


def test_an_explicit_view_is_published_once_and_kept() -> None:
    seen: list[dict[str, Any]] = []
    watcher = watched(seen, memo("input_required", inputRequests=QUESTION))
    watcher.show(watcher.memo)
    watcher.publish(task_view(TASK_ID, watcher.memo, None))  # what it shows already
    assert len(seen) == 1
    closed: dict[str, Any] = {**seen[-1], "status": "completed", "result": {"content": []}}
    watcher.publish(closed)
    watcher.publish(closed)
    assert seen[1:] == [closed] and watcher.last == closed


def test_a_late_subscriber_gets_the_last_view_and_leaving_releases_the_watcher() -> None:
    seen: list[dict[str, Any]] = []
    watcher = watched(seen)
    watcher.show(watcher.memo)
    late: list[dict[str, Any]] = []
    lost: list[tuple[str, str]] = []
    left: list[FeedWatcher] = []

    def on_lost(task_id: str, reason: str) -> None:
        lost.append((task_id, reason))

    unsubscribe = attach(watcher, late.append, on_lost, FrontMetrics(), when_left=left.append)
    assert late == [seen[-1]]
    watcher.lose("gone")
    assert lost == [(TASK_ID, "gone")]
    unsubscribe()
    assert late.append not in watcher.subscribers and not left  # the first subscriber is still there
    [first] = list(watcher.subscribers)
    attach(watcher, first, None, FrontMetrics(), when_left=left.append)()
    assert left == [watcher] and not watcher.subscribers


def test_trim_only_after_a_large_listen_and_only_on_glibc() -> None:
    assert not worth_trimming(TRIM_AFTER_TASKS - 1)
    assert worth_trimming(TRIM_AFTER_TASKS)
    assert is_glibc(lambda _: "glibc 2.36")
    assert not is_glibc(lambda _: None)
    assert not is_glibc(lambda _: "musl 1.2")

    def unsupported(_: str) -> str | None:
        raise ValueError("unrecognized configuration name")

    assert not is_glibc(unsupported)
    assert release_freed_heap() == is_glibc()


def test_a_listed_task_keeps_its_memo_packed_and_reads_as_the_snapshot_a_watcher_starts_from() -> None:
    listed = ListedTask(
        namespace="default",
        workflow_id=KEY,
        run_id="run",
        status=WorkflowExecutionStatus.RUNNING,
        start_time_ms=500,
        packed_memo=b'{"status":"input_required","feedSeq":2,"inputRequests":{"k1":{"method":"elicitation/create"}}}',
    )
    assert listed.running and listed.listed and on_feed(listed)
    assert listed.memo["inputRequests"] == {"k1": {"method": "elicitation/create"}}
    seen = listed.snapshot()
    assert seen.listed and seen.running and seen.history_length == 0 and not seen.pending_activities
    assert seen.memo == {**listed.memo, "createdAt": 500}  # the start time stands in, as for any read
    assert (seen.workflow_id, seen.run_id, seen.start_time_ms) == (KEY, "run", 500)
    not_publishing = ListedTask("default", KEY, "run", WorkflowExecutionStatus.RUNNING, 500, b'{"status":"working"}')
    closed = ListedTask("default", KEY, "run", WorkflowExecutionStatus.COMPLETED, 500, b'{"feedSeq":3}')
    assert not on_feed(not_publishing) and not on_feed(closed)
