"""The 2025-era protocol (the `initialize` handshake revisions): their tasks, their questions, their sessions."""
