"""Probes the playbook can call, by name. Importing this module imports no probe.

A walk probe is ``async def probe(ctx: ProbeContext, params: dict) -> dict`` returning facts; the
runner (``wizard.probes.runner``) times it, applies a timeout and turns any failure into data.
"""

from __future__ import annotations

PROBES: dict[str, str] = {
    "endpoints": "wizard.probes.http.endpoints:probe",
    "fleet": "wizard.probes.fleet:probe",
    "measure": "wizard.probes.http.measure_probe:probe",
    "replicas": "wizard.probes.fleet.replicas:probe",
    "metrics": "wizard.probes.readers.metrics:probe",
    "validate": "wizard.probes.http.validate:probe",
    "audit": "wizard.walk.audit:probe",
    "nginx-config": "wizard.probes.readers.nginx_config:probe",
    "nginx-access": "wizard.probes.readers.nginx_access:probe",
    "host": "wizard.probes.readers.host:probe",
    "vllm-log": "wizard.probes.readers.vllm_logs:probe",
    "engine-state": "wizard.probes.readers.engine_state:probe",
    "request-shape": "wizard.probes.http.request_shape:probe",
}
