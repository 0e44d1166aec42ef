"""One visit: its context, its inputs (artifacts, another run's pipeline_outputs),
the kind's run (execute.py), the output log, contracts at the step boundary
(handover.py), deliverables and finish_visit."""
