"""swell: an orchestrator for multi-agent software pipelines in the Wave manifest format."""

__version__ = "0.1.0"
