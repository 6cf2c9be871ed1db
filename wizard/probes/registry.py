"""Probes the playbook can call, by name. Importing this module imports no probe.

A walk probe is ``async def probe(ctx: ProbeContext, params: dict) -> dict`` returning facts; the
runner (``wizard.probes.runner``) times it, applies a timeout and turns any failure into data.
"""

from __future__ import annotations

PROBES: dict[str, str] = {
    "endpoints": "wizard.probes.endpoints:probe",
    "fleet": "wizard.probes.fleet:probe",
    "measure": "wizard.probes.measure_probe:probe",
    "replicas": "wizard.probes.replicas:probe",
    "metrics": "wizard.probes.metrics:probe",
    "validate": "wizard.probes.validate:probe",
    "audit": "wizard.audit:probe",
    "nginx-config": "wizard.probes.nginx_config:probe",
    "nginx-access": "wizard.probes.nginx_access:probe",
    "host": "wizard.probes.host:probe",
    "vllm-log": "wizard.probes.vllm_log:probe",
    "engine-state": "wizard.probes.engine_state:probe",
    "request-shape": "wizard.probes.request_shape:probe",
}
