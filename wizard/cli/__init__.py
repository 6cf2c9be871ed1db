"""Command-line entry points: one module per subcommand, each thin and cheap to import."""
