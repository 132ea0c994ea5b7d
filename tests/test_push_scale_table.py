"""The push-at-scale benchmark's table: a size where the baseline is not run still renders (pure logic)."""

from __future__ import annotations

from benchmarks.push_scale import ModeResult, SizeResult, table


def test_a_size_whose_baseline_was_skipped_renders_every_row_to_the_headers_width() -> None:
    feed = ModeResult("feed", acks_s=[0.1], rss_kib_per_task=[1.3], rss_kib_per_task_cold=[0.9], fixed_mib=[-9.9])
    rendered = table([SizeResult(20_000, [ModeResult("poll", skipped="not run past 5,000"), feed])])
    lines = rendered.splitlines()
    assert "not run past 5,000" in rendered
    assert len({line.count("|") for line in lines}) == 1, "every row has the header's cells"
