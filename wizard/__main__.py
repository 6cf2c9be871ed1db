"""Allow ``python -m wizard``."""

from wizard.cli.main import main

raise SystemExit(main())
