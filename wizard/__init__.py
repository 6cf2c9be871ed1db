"""latency-wizard: a guided troubleshooting wizard for LLM inference latency on vLLM."""

__version__ = "0.1.0"
