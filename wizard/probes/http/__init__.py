"""Probes that send requests: the timing client (its lean HTTP path and connections), streams, load,
the proxy comparison, LoadGen's validation. May load measure, record, i18n and the readers; never
ui, report, walk or cli.
"""
