"""The levers: the one change a finding proposes, computed from the server's current values for each
layer (vLLM, nginx, the client), the refusals' changes, the check after a restart, vLLM's defaults
and versions, and the throwaway nginx. May load playbook (conditions), errors and i18n; never ui,
report, walk or cli.
"""
