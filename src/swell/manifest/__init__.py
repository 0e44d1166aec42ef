"""The Wave manifest format: pydantic models, the loader with file:line errors, and lint.

Owns `wave.yaml` / `swell.yaml` (kind: WaveManifest) and pipeline files
(kind: WavePipeline), the template and expression languages used inside them,
and the graph checks behind `swell validate`.
"""
