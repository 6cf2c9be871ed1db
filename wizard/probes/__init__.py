"""Probes: each gathers evidence and returns data; none prints or exits."""
