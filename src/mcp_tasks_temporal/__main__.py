from mcp_tasks_temporal.cli import main

main()
