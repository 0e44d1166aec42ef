"""The `swell` command line: one module per command group; parsing and printing only."""
