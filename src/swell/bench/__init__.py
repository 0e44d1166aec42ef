"""`swell bench`: grade pipelines on tasks (SWE-bench-format JSONL), independently of
the pipeline: the dataset, checkouts, grading, the runner, reports and their
statistics, and `bench make` (a dataset built from mutants of a project). docs/bench.md."""
