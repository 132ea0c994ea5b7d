"""Operations: the command line, `dev`'s embedded Temporal and worker process, audits, admin, the codec server."""
