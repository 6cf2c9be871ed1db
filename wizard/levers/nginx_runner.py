"""A throwaway nginx on loopback in front of an upstream: temporary prefix, its own pid, logs and
temp paths, run in the foreground as a child process and stopped with ``-s quit``.

Used by ``latency-wizard demo`` and by the tests. ``directives`` go into the proxied location, so a
variant is one dict: ``{}`` is nginx's defaults (buffering on), ``{"proxy_buffering": "off"}`` the
fix, ``{"gzip": "on", "gzip_types": "text/event-stream"}`` the gzip trap.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from wizard.errors import WizardError

# The combined format plus each hop's time as name=value (docs/cli.md, triage --nginx-access-log).
TIMING_FORMAT = (
    '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent '
    '"$http_referer" "$http_user_agent" rt=$request_time uct="$upstream_connect_time" '
    'uht="$upstream_header_time" urt="$upstream_response_time"'
)
SEARCH_PATHS = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")


def find_nginx() -> str | None:
    """The nginx binary, or None when it is not installed."""
    found = shutil.which("nginx")
    if found:
        return found
    return next((path for path in SEARCH_PATHS if Path(path).exists()), None)


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Nginx:
    """One nginx instance proxying ``/`` to ``upstream``."""

    def __init__(
        self, upstream: str, directives: dict[str, str] | None = None, binary: str | None = None,
        servers: tuple[str, ...] = (), balancing: str = "", timing_log: bool = False,
    ):  # fmt: skip
        """``servers`` ("127.0.0.1:8001 weight=2", ...) make ``upstream`` the name of an
        ``upstream`` block over them (``balancing``: its method line, e.g. ``ip_hash``);
        ``timing_log`` writes the access log in TIMING_FORMAT (what ``triage
        --nginx-access-log`` reads)."""
        self.binary = binary or find_nginx()
        if self.binary is None:
            raise WizardError("nginx is not installed (Debian: apt-get install nginx)")
        self.upstream = upstream.rstrip("/")
        self.servers = servers
        self.balancing = balancing
        self.directives = dict(directives or {})
        self.timing_log = timing_log
        self.port = free_port()
        self.prefix = Path(tempfile.mkdtemp(prefix="latency-wizard-nginx-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Base URL of the proxy."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def config_path(self) -> Path:
        """The nginx.conf this instance runs with."""
        return self.prefix / "conf" / "nginx.conf"

    @property
    def error_log(self) -> Path:
        """nginx's error log (timeouts show here, not as status codes)."""
        return self.prefix / "logs" / "error.log"

    def config(self) -> str:
        """The whole nginx.conf for the current directives."""
        location = "".join(
            f"            {name} {value};\n" for name, value in self.directives.items()
        )
        p = self.prefix
        upstream_block = ""
        if self.servers:
            name = self.upstream.split("://", 1)[-1]
            lines = [f"{self.balancing};"] if self.balancing else []
            lines += [f"server {server};" for server in self.servers]
            upstream_block = f"    upstream {name} {{ {' '.join(lines)} }}\n"
        log_format, log_name = "", ""
        if self.timing_log:
            log_format, log_name = f"    log_format timing '{TIMING_FORMAT}';\n", " timing"
        return f"""\
worker_processes 1;
error_log {p}/logs/error.log info;
pid {p}/logs/nginx.pid;
events {{ worker_connections 1024; }}
http {{
{log_format}    access_log {p}/logs/access.log{log_name};
    client_body_temp_path {p}/tmp/body;
    proxy_temp_path {p}/tmp/proxy;
    fastcgi_temp_path {p}/tmp/fastcgi;
    uwsgi_temp_path {p}/tmp/uwsgi;
    scgi_temp_path {p}/tmp/scgi;
{upstream_block}    server {{
        listen 127.0.0.1:{self.port};
        location / {{
            proxy_pass {self.upstream};
{location}        }}
    }}
}}
"""

    @property
    def access_log(self) -> Path:
        """nginx's access log."""
        return self.prefix / "logs" / "access.log"

    def _write(self) -> Path:
        for sub in ("conf", "logs", "tmp"):
            (self.prefix / sub).mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self.config())
        return self.config_path

    def _command(self, *extra: str) -> list[str]:
        assert self.binary is not None
        return [
            self.binary,
            "-p",
            str(self.prefix),
            "-c",
            str(self.prefix / "conf" / "nginx.conf"),
            *extra,
        ]

    def start(self, timeout: float = 10.0) -> Nginx:
        """Write the config, check it, start nginx and wait until it accepts connections."""
        self._write()
        self._test()
        self.process = subprocess.Popen(
            self._command("-g", "daemon off; user root;"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise WizardError(f"nginx exited at start; see {self.error_log}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2),
            ):
                return self
            time.sleep(0.05)
        self.stop()
        raise WizardError("nginx did not start listening in time")

    def _test(self) -> None:
        """``nginx -t`` on the written config; WizardError with nginx's own reason (its [emerg]
        line, not the "test failed" that follows it)."""
        test = subprocess.run(self._command("-t"), capture_output=True, text=True)
        if test.returncode != 0:
            lines = test.stderr.strip().splitlines()
            reason = next((line for line in lines if "[emerg]" in line), lines[-1] if lines else "")
            reason = re.sub(r"^.*?\[emerg\] \d+#\d+: ", "", reason)  # its time and pid
            raise WizardError(f"nginx rejected the config: {reason or 'unknown error'}")

    def reload(self, directives: dict[str, str], timeout: float = 10.0) -> None:
        """Apply new location directives with a graceful reload, and return once only workers
        started with the new config are left: nginx answers a reload by starting new workers
        and asking the old ones to finish, and an old one still running may accept a connection
        under the config it was started with."""
        previous, self.directives = self.directives, dict(directives)
        self._write()
        try:
            self._test()
        except WizardError:
            # nginx runs on with the config it has: so does this object, and so does the file.
            self.directives = previous
            self._write()
            raise
        assert self.process is not None
        master = psutil.Process(self.process.pid)
        old = {child.pid for child in master.children()}
        subprocess.run(self._command("-s", "reload"), capture_output=True, check=False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            now = {child.pid for child in master.children()}
            if now and not now & old:
                return
            time.sleep(0.01)
        raise WizardError(f"nginx did not take the new config within {timeout:.0f} s")

    def stop(self, keep_prefix: bool = False) -> None:
        """Quit gracefully, then make sure the master is gone; remove the prefix (its config and
        logs) unless asked to keep it."""
        if self.process is not None and self.process.poll() is None:
            subprocess.run(self._command("-s", "quit"), capture_output=True, check=False)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not keep_prefix:
            shutil.rmtree(self.prefix, ignore_errors=True)

    def __enter__(self) -> Nginx:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
