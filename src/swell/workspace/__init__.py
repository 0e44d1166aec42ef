"""Run workspaces and artifact files: where steps work, and what they leave behind."""
