"""Every word a user sees, in English and Chinese: the walk, the command line, triage, the probes'
views and the readers' notes. Loads nothing of wizard but itself; never ui, cli or anything else.
"""
