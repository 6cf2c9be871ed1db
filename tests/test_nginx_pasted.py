"""`probe nginx-config` on what engineers hand over: envsubst templates, `nginx -T` dumps with the
version above them, includes that are missing or do not parse; effective values where a directive
is unset (proxy_http_version like proxy_buffering)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wizard_command
from wizard.probes.readers.nginx_config import analyse

FIXTURES = Path(__file__).parent / "fixtures" / "nginx"


@pytest.mark.parametrize(
    ("name", "version", "effective"),
    [("dump-nginx-1.29.8.txt", "1.29.8", "1.1"), ("dump-nginx-1.22.1.txt", "1.22.1", "1.0")],
)
def test_unset_proxy_http_version_is_the_default_of_the_version_given(
    name: str, version: str, effective: str
) -> None:
    report = analyse(FIXTURES / name)
    (location,) = report["locations"]
    assert report["nginx_version"] == version and report["notes"] == []
    assert (location["proxy_http_version"], location["proxy_http_version_from"]) == (
        effective,
        "default",
    )
    assert ("LAT005" in {f["code"] for f in report["findings"]}) is (effective == "1.0")


def test_without_a_version_the_older_default_is_reported_and_said(tmp_path: Path) -> None:
    report = analyse(FIXTURES / "missing-include.conf")
    assert report["nginx_version"] is None
    assert report["locations"][0]["proxy_http_version"] == "1.0"
    assert any("reported as 1.0, nginx's default before 1.29.7" in n for n in report["notes"])
    # An explicit value is never second-guessed.
    path = tmp_path / "set.conf"
    path.write_text("location / { proxy_pass http://a; proxy_http_version 1.1; }\n")
    explicit = analyse(path)
    assert explicit["locations"][0]["proxy_http_version_from"] == "location"
    assert not any("proxy_http_version is not set" in n for n in explicit["notes"])


def test_template_placeholders_are_notes_not_silent_nulls() -> None:
    report = analyse(FIXTURES / "template-envsubst.conf.template")
    (location,) = report["locations"]
    assert location["proxy_read_timeout_s"] is None and location["proxy_http_version"] == "1.1"
    notes = "\n".join(report["notes"])
    assert (
        "template-envsubst.conf.template:11: proxy_read_timeout ${READ_TIMEOUT}: a template placeholder"
        in notes
    )
    assert ":10: proxy_buffering ${PROXY_BUFFERING}" in notes
    # A placeholder is no "on": no buffering finding is made up from it.
    assert "LAT001" not in {f["code"] for f in report["findings"]}


def test_includes_that_match_nothing_are_said() -> None:
    notes = analyse(FIXTURES / "missing-include.conf")["notes"]
    assert any(
        ":3: include /etc/nginx/sites-enabled/* matches none of the files given" in n for n in notes
    )


def test_an_included_file_that_does_not_parse_is_one_error_and_the_rest_is_read() -> None:
    report = analyse(FIXTURES / "include-broken")
    assert sorted(loc["listen"] for loc in report["locations"]) == ["80", "8082"]
    (error,) = report["errors"]
    assert error["file"].endswith("conf.d/broken.conf")
    assert error["included_from"].endswith("include-broken/nginx.conf:3")
    assert "\n" not in error["error"] and error["error"].startswith(error["file"] + ":")


def test_the_cli_shows_errors_and_notes_and_fails_on_errors() -> None:
    result = subprocess.run(wizard_command("probe", "nginx-config", str(FIXTURES / "include-broken")),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "error: " in result.stdout and "note: proxy_http_version is not set" in result.stdout
    clean = subprocess.run(wizard_command("probe", "nginx-config", str(FIXTURES / "dump-nginx-1.29.8.txt"),
                                          "--json"), capture_output=True, text=True, timeout=60)  # fmt: skip
    assert clean.returncode == 0, clean.stdout
    assert json.loads(clean.stdout)["locations"][0]["proxy_http_version"] == "1.1"
