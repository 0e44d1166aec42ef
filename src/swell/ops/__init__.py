"""What the CLI (and later the dashboard) does around runs, beyond running them:
checks before a run starts and the plan it would follow (`preflight`, `plan`), what
this machine has for the project's agents (`toolchain`, `doctor`), starting a run from
a step of a previous one (`rerun`), removing old workspaces (`clean`) and copying a
run's artifacts out (`export`). Commands call these; they print nothing."""
