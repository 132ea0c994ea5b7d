from mcp_tasks_temporal.ops.cli import main

main()
