from hetsim.cli import main

raise SystemExit(main())
