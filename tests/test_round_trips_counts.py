"""The round-trip benchmark's arithmetic on Prometheus counters (pure logic): per unit, with the idle rate out."""

from __future__ import annotations

from benchmarks.round_trips import Snapshot, Tally, by_label, difference, idle_rates, parse_series, total

FRONT = """# HELP temporal_request_total Count of client request successes by rpc name
temporal_request_total{namespace="default",operation="StartWorkflowExecution",task_queue="bench"} 4
temporal_request_total{namespace="default",operation="DescribeWorkflowExecution",service_name="temporal-core-sdk"} 9
temporal_long_request_total{namespace="default",operation="GetWorkflowExecutionHistory"} 2
temporal_request_latency_bucket{operation="GetSystemInfo",service_name="temporal-core-sdk",le="50"} 1
"""
WORKER = """temporal_long_request_total{namespace="default",operation="PollWorkflowTaskQueue",task_queue="bench"} 7
temporal_activity_task_received_total{activity_type="mcp_tasks.run_tool",eager="true",task_queue="bench"} 3
temporal_activity_task_received_total{activity_type="mcp_tasks.run_tool",eager="false",task_queue="bench"} 1
temporal_workflow_task_execution_latency_count{namespace="default",task_queue="bench"} 8
"""


def test_counters_are_read_by_name_and_label_and_summed_over_the_other_labels() -> None:
    front, worker = parse_series(FRONT), parse_series(WORKER)
    rpcs = by_label(front, ["temporal_request_total"], "operation")
    assert rpcs == {"StartWorkflowExecution": 4, "DescribeWorkflowExecution": 9}
    assert total(worker, "temporal_activity_task_received_total") == 4
    assert total(worker, "temporal_activity_task_received_total", eager="true") == 3
    assert total(front, "temporal_request_latency_bucket") == 1, "histogram samples are read like any other"


def _snapshot(at: float, front: str, worker: str, server: dict[str, float]) -> Snapshot:
    return Snapshot(at, parse_series(front), parse_series(worker), {}, server)


def test_the_difference_per_unit_takes_the_idle_rate_over_the_same_time_out() -> None:
    idle = idle_rates(
        _snapshot(0.0, "", WORKER, {"PollWorkflowTaskQueue": 10}),
        _snapshot(10.0, "", WORKER.replace("} 7", "} 8"), {"PollWorkflowTaskQueue": 11}),
    )
    assert idle["worker"]["PollWorkflowTaskQueue (long poll)"] == 0.1
    busy = WORKER.replace("} 7", "} 13").replace("} 8", "} 12")
    counts = difference(
        _snapshot(100.0, FRONT, WORKER, {"PollWorkflowTaskQueue": 20}),
        _snapshot(120.0, FRONT.replace("} 4", "} 6"), busy, {"PollWorkflowTaskQueue": 26}),
        idle,
        units=2,
    )
    assert counts.rpcs["front"] == Tally({"StartWorkflowExecution": 1.0})
    # 6 more polls in 20 s, 2 of them the idle rate's: 2 per unit.
    assert counts.rpcs["worker"]["PollWorkflowTaskQueue (long poll)"] == 2.0
    assert counts.rpcs["dev server"]["PollWorkflowTaskQueue"] == 2.0
    assert counts.worker["workflow tasks run"] == 2.0
    assert counts.rpcs["front"]["DescribeWorkflowExecution"] == 0.0, "a counter that did not move is absent"
