from swell.cli.app import entry

entry()
