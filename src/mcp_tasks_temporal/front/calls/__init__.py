"""`tools/call` on a front: task tools and workflow tools, as tasks or as plain calls held open."""
