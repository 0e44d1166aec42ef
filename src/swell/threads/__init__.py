"""Threads: a run's history as rounds, rendered for agents by fidelity, and retrieved
page by page within a character budget (`swell thread`)."""
