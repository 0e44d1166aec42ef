"""Running an agent for a visit: adapter and model (tiers), relay, thread context,
skills, the stall watchdog, preloading, persona names."""
