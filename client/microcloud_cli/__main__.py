from microcloud_cli.cli import main

raise SystemExit(main())
