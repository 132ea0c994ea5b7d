"""Push: `subscriptions/listen` for tasks, and the hubs that follow tasks for it and for held calls."""
