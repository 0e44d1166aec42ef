from swell.cli.app import main

main()
