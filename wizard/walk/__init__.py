"""The walk: the loop over the playbook's nodes, the one-change loop, the operator's answers, the
closing audit, the load budget and the baseline's own stability. May load playbook, probes,
levers, measure, record and i18n; never ui, report or cli (the engine knows no terminal).
"""
