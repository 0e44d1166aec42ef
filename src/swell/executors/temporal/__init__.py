"""The Temporal executor: a run is a workflow whose id is the run id, each visit an
activity on a `swell worker` process (docs/scale-out.md).

The workflow (workflow.py) drives the loop with the engine's pure completion core and
is the only writer of the run's events; activities (activities.py) run the existing
visit executor; the client side (client.py) starts runs and reaches them for gates
and cancellation. Needs `pip install 'swell[temporal]'`.
"""

QUEUE = "swell"  # the task queue when neither `--queue` nor runtime.temporal.queue says
ADDRESS = "127.0.0.1:7233"
NAMESPACE = "default"
WORKFLOW = "swell.run"
