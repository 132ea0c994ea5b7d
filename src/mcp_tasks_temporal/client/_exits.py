"""The command line's exit statuses and token variable, shared by its parser and its commands."""

EXIT_TOOL_ERROR = 1
EXIT_USAGE = 2
EXIT_PROTOCOL = 3
EXIT_CANCELLED = 4
EXIT_AUTH = 5
EXIT_UNREACHABLE = 6
EXIT_UNEXPECTED = 70

TOKEN_ENV = "MCP_TASKS_TOKEN"
