"""swell as a service: work sources, routing rules, schedules, inbound webhooks, and the
dispatcher that starts one run per work item, exactly once (docs/service.md)."""
