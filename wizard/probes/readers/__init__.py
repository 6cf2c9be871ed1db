"""Probes that read what a server and its host already say: vLLM's logs and arguments, /metrics,
nginx's config and access log, the GPU host. May load measure, record, levers (vLLM's defaults),
playbook (yamlines) and the HTTP probes' bounded requests; never ui, report, walk or cli.
"""
