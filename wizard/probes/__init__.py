"""Probes: each gathers evidence and returns data; none prints or exits. ``http`` sends requests,
``readers`` read what is already said, ``fleet`` reads many replicas; this package holds the
registry and the runner. Never loads ui, report, walk or cli.
"""
