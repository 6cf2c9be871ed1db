"""Allow ``python -m wizard``."""

from wizard.cli.main import main

code = main()
# A KeyboardInterrupt that once left code compiled from a string (dataclasses and namedtuples build
# their methods with exec, in the imports a Ctrl-C may land in) marks `python -m` to end by SIGINT
# (status -2) even though main() caught it and returned 130; running a string to its end clears
# the mark. (The `latency-wizard` script exits with the code either way.)
exec("")
raise SystemExit(code)
