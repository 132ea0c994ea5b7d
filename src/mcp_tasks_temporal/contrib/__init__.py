"""Optional integrations, each importable only with its extra installed."""
