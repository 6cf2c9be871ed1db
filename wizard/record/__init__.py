"""The record: the transcript (an append-only, hash-chained NDJSON contract), its event shapes and
signatures, and what comes from outside made safe to keep and show (JSON, terminal text). May
load playbook (vocabulary), auth, files, errors and i18n; never ui, report, walk, probes or cli.
"""
