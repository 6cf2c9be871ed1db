"""``latency-wizard run`` and ``resume``: walk the playbook against a server, one change at a time."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.cli.inputs import (
    check_base_url,
    check_nginx_conf,
    check_transcript_path,
    count,
    default_language,
    language,
    seconds,
    transcript_input,
)

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words


def register(subparsers: Any, words: Words) -> None:
    """Add ``run`` and ``resume``."""
    from wizard.cli import probe_fleet

    run = subparsers.add_parser(
        "run", help=words("run.help"), description=words("run.description"),
        epilog=words("run.epilog"), raw_description=True,
    )  # fmt: skip
    run.add_argument("--target", help=words("run.target"))
    run.add_argument("--proxy", help=words("run.proxy"))
    run.add_argument("--nginx-conf", help=words("run.nginx_conf"))
    run.add_argument("--nginx-access-log", metavar="FILE", help=words("run.access_log"))
    run.add_argument("--replica", action="append", metavar="URL", help=words("run.replica"))
    run.add_argument("--vllm-log", metavar="FILE", help=words("run.vllm_log"))
    run.add_argument("--host-evidence", metavar="DIR", help=words("run.host_evidence"))
    workload_arguments(run, words)
    fleet = run.add_argument_group(words("run.fleet"), words("run.fleet.description"))
    probe_fleet.fleet_arguments(fleet, words, required=False)
    run.add_argument("--transcript", help=words("run.transcript"))
    run.add_argument("--playbook", help=words("run.playbook"))
    run.add_argument("--timeout", type=seconds, default=60.0, help=words("timeout_per_request"))
    run.add_argument("--deadline", type=seconds, metavar="SECONDS", help=words("run.deadline"))
    run.add_argument("--max-requests", type=count, metavar="N", help=words("run.max_requests"))
    rounds_argument(run, words)
    run.add_argument("--api-key-env", help=words("api_key_env"))
    operator_arguments(run, words)
    run.set_defaults(handler=run_command)
    resume = subparsers.add_parser(
        "resume", help=words("resume.help"), description=words("resume.description")
    )
    resume.add_argument("transcript", help=words("resume.transcript"))
    resume.add_argument("--salvage", action="store_true",
                        help=words("resume.salvage", salvage=words("salvage")))  # fmt: skip
    resume.add_argument("--api-key-env", help=words("api_key_env"))
    for flag in ("--target", "--proxy"):
        resume.add_argument(flag, metavar="URL", help=words("resume.url", name=flag[2:]))
    resume.add_argument("--replica", action="append", metavar="URL",
                        help=words("resume.url", name="replica"))  # fmt: skip
    resume.add_argument("--timeout", type=seconds, default=60.0, help=words("timeout_per_request"))
    resume.add_argument("--deadline", type=seconds, metavar="SECONDS", help=words("run.deadline"))
    resume.add_argument(
        "--max-requests", type=count, metavar="N", help=words("resume.max_requests")
    )
    operator_arguments(resume, words)
    resume.set_defaults(handler=resume_command)


def rounds_argument(parser: argparse.ArgumentParser, words: Words, default: str = "full") -> None:
    """``--rounds`` (run, demo): how much each round measures (vocabulary.ROUND_DEPTHS)."""
    from wizard.playbook.vocabulary import ROUND_DEPTHS

    parser.add_argument("--rounds", choices=ROUND_DEPTHS, help=words("run.rounds", default=default))
    parser.set_defaults(rounds_default=default)


def chosen_rounds(args: argparse.Namespace) -> str:
    """``--rounds``, else ``$LATENCY_WIZARD_ROUNDS`` (the test suite sets it), else the command's
    own default (full for ``run``, brief for the demo)."""
    from wizard.errors import UsageError
    from wizard.playbook.vocabulary import ROUND_DEPTHS

    if args.rounds:
        return str(args.rounds)
    value = os.environ.get("LATENCY_WIZARD_ROUNDS", "")
    if value and value not in ROUND_DEPTHS:
        raise UsageError.said("error.rounds_env", choices=" or ".join(ROUND_DEPTHS), value=value)
    return value or str(args.rounds_default)


def workload_arguments(parser: argparse.ArgumentParser, words: Words) -> None:
    """The incident's request shape (P1.1): every round of the walk is measured with it."""
    shape = parser.add_argument_group(words("workload"), words("workload.description"))
    shape.add_argument("--model", help=words("workload.model"))
    shape.add_argument(
        "--endpoint", choices=["completions", "chat"], help=words("workload.endpoint")
    )
    shape.add_argument("--input-tokens", type=int, metavar="N", help=words("workload.input_tokens"))
    shape.add_argument("--output-tokens", "--max-tokens", dest="output_tokens", type=int,
                       metavar="N", help=words("workload.output_tokens"))  # fmt: skip
    shape.add_argument("--concurrency", type=int, metavar="N", help=words("workload.concurrency"))
    shape.add_argument("--request-body", metavar="FILE", help=words("workload.request_body"))


def operator_arguments(parser: argparse.ArgumentParser, words: Words) -> None:
    """Who answers the walk's questions (--auto, --answers) and in which language (shared with
    ``demo``)."""
    who = parser.add_mutually_exclusive_group()
    who.add_argument("--auto", action="store_true", help=words("walk.auto"))
    who.add_argument("--answers", help=words("walk.answers"))
    parser.add_argument("--lang", choices=["en", "zh"], help=words("walk.lang"))


def choose_operator(args: argparse.Namespace, playbook: Any, applier: Any = None) -> Any:
    """The operator the flags ask for; without a TTY one of --auto/--answers is required."""
    from wizard.errors import UsageError
    from wizard.ui.interactive import InteractiveOperator
    from wizard.walk.operator import AutoOperator, ScriptedOperator

    if args.auto:
        return AutoOperator(applier)
    if args.answers:
        return ScriptedOperator.from_file(Path(args.answers), playbook, applier)
    if not sys.stdin.isatty():
        raise UsageError.said("error.no_terminal")
    return InteractiveOperator(applier)


def default_transcript_path(target: str) -> Path:
    """``transcripts/<UTC time>-<host-port>.ndjson`` (never a URL's userinfo)."""
    import datetime
    import re

    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%SZ")
    where = re.sub(r"^[^/?#]*@", "", target.split("://", 1)[-1])  # the userinfo, if any
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", where).strip("-")
    return Path("transcripts") / f"{stamp}-{host}.ndjson"


def run_command(args: argparse.Namespace) -> int:
    """Start a new walk."""
    from wizard import playbook as playbook_module
    from wizard.auth import api_key_from_env, url_secrets
    from wizard.errors import UsageError
    from wizard.record.transcript import Redactor
    from wizard.workload import from_arguments

    # Every input is read and checked before the first request (Prometheus, the target): a broken
    # file is said at once, not after a network round trip.
    check_evidence_paths(args)
    check_nginx_conf(args.nginx_conf)
    workload = from_arguments(args.model, args.endpoint, args.input_tokens, args.output_tokens,
                              args.concurrency, args.request_body, chosen_rounds(args))  # fmt: skip
    if args.prometheus is None and args.target is None:
        raise UsageError.said("error.target_required")
    for url in filter(None, (args.target, args.proxy)):
        check_base_url(url)
    if args.replica:
        from wizard.probes.fleet.replica_sources import from_list

        from_list(args.replica)  # a bad URL is a usage error before anything runs
    book = playbook_module.load(args.playbook or playbook_module.DEFAULT_PLAYBOOK)
    operator = choose_operator(args, book)
    check_transcript_path(Path(args.transcript or default_transcript_path("")))
    fleet = _read_fleet(args)
    for url in filter(None, (args.target, args.proxy)):
        preflight(url, log_given=bool(args.vllm_log), timeout_s=args.timeout)
    planned = _budget(args, book, workload, operator, fleet)
    api_key = api_key_from_env(args.api_key_env)
    path = Path(args.transcript) if args.transcript else default_transcript_path(args.target)
    header = {"playbook_id": book.id, "playbook_sha256": book.sha256, "playbook_path": book.path,
              "target": args.target, "proxy": args.proxy, "nginx_conf": _absolute(args.nginx_conf),
              "nginx_access_log": _absolute(args.nginx_access_log),
              "vllm_log": _absolute(args.vllm_log), "host_evidence": _absolute(args.host_evidence),
              "lang": args.lang or default_language(), "prometheus": args.prometheus,
              "fleet_window": args.window, "fleet_job": args.job, "replicas": args.replica,
              "workload": workload.to_header(), "rounds": workload.rounds}  # fmt: skip
    secrets = url_secrets(args.target, args.proxy, args.prometheus, *(args.replica or []))
    writer = _create(path, header, Redactor([api_key, *secrets]))
    return execute(book, writer, operator, args, api_key, header, events=[], fleet=fleet,
                   planned=planned)  # fmt: skip


def _budget(args: argparse.Namespace, book: Any, workload: Any, operator: Any,
            fleet: dict[str, Any] | None) -> dict[str, Any]:  # fmt: skip
    """The load the walk will send, printed before its first request; a person at the terminal
    consents to it once (an explicit answer), else nothing is sent nor written."""
    from wizard.ui.interactive import InteractiveOperator

    lang = args.lang or default_language()
    known = {"proxy": args.proxy, "target": args.target, "nginx_conf": args.nginx_conf,
             "replicas": args.replica, "fleet": fleet}  # fmt: skip
    return show_budget(book, workload, known, args, lang,
                       consent=isinstance(operator, InteractiveOperator))  # fmt: skip


def show_budget(book: Any, workload: Any, known: dict[str, Any], args: argparse.Namespace,
                lang: str, consent: bool, start: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The ``budget`` event's data for a walk (``run``, ``demo``, a ``resume`` from ``start``),
    printed; with ``consent``, asked once at the terminal. ``known``: the session's proxy,
    target, nginx config, listed replicas and the fleet read at the start of ``run`` (what the
    replicas probe will find); ``args``: --max-requests, --deadline, --timeout."""
    from wizard.auth import without_userinfo
    from wizard.errors import WizardError
    from wizard.i18n.words import texts
    from wizard.ui import aio, prompts
    from wizard.ui.render import console
    from wizard.ui.render_budget import budget_text
    from wizard.walk import budget
    from wizard.walk.engine import session_facts

    session = session_facts(known["proxy"], known["target"], known["nginx_conf"], workload)
    rounds = budget.known_replica_rounds(known["replicas"], known["nginx_conf"],
                                         known.get("fleet"), known["proxy"])  # fmt: skip
    stages = budget.plan(book, workload, session, rounds, start)
    deadline = args.deadline or budget.default_deadline(stages, args.timeout)
    planned = budget.budget_event(stages, args.max_requests, deadline, rounds)
    if workload.rounds == "brief":
        planned["brief"] = True
    console().print(budget_text(planned, lang), soft_wrap=True)
    if consent:
        question = texts("budget.consent", target=without_userinfo(known["target"]))[lang]
        if not aio.run(prompts.yes_no(question, None, lang)):
            raise WizardError.said("budget.declined")
    return planned


def _read_fleet(args: argparse.Namespace) -> dict[str, Any] | None:
    """With --prometheus: the fleet over the window, and --target defaulted to the replica that
    differs (its URL from Prometheus' targets). The same report is recorded by the walk."""
    from wizard.cli import probe_fleet
    from wizard.errors import UsageError
    from wizard.i18n.words import say

    if args.prometheus is None:
        return None
    report = probe_fleet.read(args)
    look_at = report["look_at"]
    if args.target is None:
        if look_at is None:
            raise UsageError.said("error.no_replica_differs", window=args.window)
        if look_at["url"] is None:
            raise UsageError.said("error.replica_no_url", instance=look_at["instance"])
        args.target = look_at["url"]
        lang = args.lang or default_language()
        why = (look_at.get("why_texts") or {}).get(lang) or look_at["why"]
        print(say("run.fleet_walking", lang, instance=look_at["instance"], target=args.target, why=why),
              file=sys.stderr)  # fmt: skip
    return report


def check_evidence_paths(args: argparse.Namespace) -> None:
    """Refuse, before anything runs, an evidence path that is missing or of the wrong kind."""
    from wizard.errors import UsageError

    log, host, conf = args.vllm_log, args.host_evidence, args.nginx_conf
    access = args.nginx_access_log
    if host and Path(host).exists() and not Path(host).is_dir():
        raise UsageError.said("error.host_evidence_file", path=host)
    for flag, given in (("--vllm-log", log), ("--host-evidence", host), ("--nginx-conf", conf),
                        ("--nginx-access-log", access)):  # fmt: skip
        if given and not Path(given).exists():
            raise UsageError.said("error.flag_missing", flag=flag, path=given)
        if given and not os.access(given, os.R_OK):
            raise UsageError.said("error.flag_unreadable", flag=flag, path=given)
    if log and Path(log).is_dir():
        from wizard.errors import WizardError
        from wizard.probes.readers.vllm_logs import log_files

        try:
            log_files(Path(log))
        except WizardError as exc:  # a folder of replicas' logs without any
            raise UsageError.said("error.flag_said", flag="--vllm-log", message=exc.texts) from None


def _absolute(path: str | None) -> str | None:
    # Kept in the transcript header so that `resume` finds the same files from any directory.
    return str(Path(path).resolve()) if path else None


PREFLIGHT_TIMEOUT_S = 10.0


def preflight(
    url: str,
    log_given: bool = False,
    timeout_s: float = PREFLIGHT_TIMEOUT_S,
    log_hint: str = "--vllm-log FILE",
) -> None:
    """Fail in one line, before anything is written, when nothing answers at ``url``.

    With the server's log at hand the walk goes on: a server that did not start is diagnosed from
    its log. ``timeout_s`` is the read timeout asked for (at most PREFLIGHT_TIMEOUT_S): the check
    has the same deadline as every other request, so headers trickled a byte at a time end it there.
    """
    import httpx

    from wizard.auth import without_userinfo
    from wizard.errors import WizardError
    from wizard.i18n.words import texts
    from wizard.probes.http.bounded import BoundedRequestError, headers_within_deadline
    from wizard.probes.http.reach import explain_texts, server_down
    from wizard.ui import aio

    try:
        aio.run(
            headers_within_deadline(
                url.rstrip("/") + "/health", timeout_s=min(timeout_s, PREFLIGHT_TIMEOUT_S)
            )
        )
    except httpx.HTTPError as exc:
        message = texts(
            "error.cannot_reach", url=without_userinfo(url), why=explain_texts(exc, url)
        )
        log_tells = server_down(exc)
    except BoundedRequestError as exc:
        message = texts("error.cannot_reach", url=without_userinfo(url), why=str(exc))
        log_tells = True  # headers that never come: a server that hangs, its log may say why
    else:
        return
    if not log_given:
        # The log explains a server that did not start, died or hangs; not an address's fault.
        if log_tells:
            raise WizardError.said("error.log_hint", message=message, hint=log_hint)
        raise WizardError(message["en"], message)
    from wizard.i18n.words import say

    lang = language()
    print(say("note.reading_log", lang, message=message.get(lang, message["en"])), file=sys.stderr)


def _create(path: Path, header: dict[str, Any], redactor: Any) -> Any:
    """The transcript's writer, its header written. A Ctrl-C meanwhile is held until the walk
    starts (``execute``), which keeps the transcript and prints how to resume it."""
    from wizard.errors import UsageError
    from wizard.i18n.words import WORDS
    from wizard.record.transcript import TranscriptWriter
    from wizard.ui import interrupt

    try:
        with interrupt.held():
            return TranscriptWriter.create(path, header, redactor)
    except PermissionError:
        raise UsageError.said("error.cannot_write_transcript", path=path,
                              why=WORDS["oserror.EACCES"]) from None  # fmt: skip
    except OSError as exc:
        raise UsageError.os_said("error.cannot_write_transcript", exc, path=path) from None


def resume_command(args: argparse.Namespace) -> int:
    """Continue an interrupted walk from its transcript."""
    from wizard import playbook as playbook_module
    from wizard.auth import api_key_from_env, url_secrets
    from wizard.cli import authority
    from wizard.errors import UsageError
    from wizard.i18n.words import texts
    from wizard.record import transcript

    loaded = transcript_input(args)
    if loaded.complete:
        raise UsageError.said("error.completed_session", path=args.transcript)
    header = {**loaded.header, **_unmasked_urls(loaded.header, args)}
    book = playbook_module.load(header.get("playbook_path") or playbook_module.DEFAULT_PLAYBOOK)
    if book.sha256 != header["playbook_sha256"]:
        raise UsageError.said("error.playbook_changed")
    operator = choose_operator(args, book)
    api_key = api_key_from_env(args.api_key_env)
    # The URLs come from the transcript: data, not authority (cli/authority.py).
    if not authority.confirm(_unnamed_urls(header, args), loaded.path,
                             args.lang or header.get("lang") or default_language(),
                             authority.at_terminal(auto=args.auto, answers=args.answers),
                             has_key=api_key is not None):  # fmt: skip
        api_key = None
    lost = loaded.lost
    aside = transcript.set_aside_lost(loaded) if lost is not None else None
    secrets = [
        api_key,
        *url_secrets(header["target"], header.get("proxy"), *(header.get("replicas") or [])),
    ]
    writer = transcript.TranscriptWriter.resume(loaded, transcript.Redactor(secrets))
    if lost is not None:
        said = texts("transcript.salvaged_note", lost=lost.said(), aside=aside)
        writer.append("note", None, {"text": said["en"], "texts": said})
    args.lang = args.lang or header.get("lang")
    return execute(book, writer, operator, args, api_key, header, events=loaded.events)


def _unmasked_urls(header: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The session's URLs with the credentials its transcript masked, given again on the command
    line (``--target``/``--proxy``/``--replica``); each must be a recorded one once masked."""
    from wizard.auth import MASK, without_userinfo
    from wizard.errors import UsageError

    replicas = header.get("replicas") or []
    if not isinstance(replicas, list) or not all(isinstance(r, str) for r in replicas):
        raise UsageError.said("error.replicas_not_urls", path=args.transcript)
    urls: dict[str, Any] = {"replicas": list(replicas)} if replicas else {}
    recorded = [
        ("target", header.get("target"), args.target),
        ("proxy", header.get("proxy"), args.proxy),
    ]
    given_replicas = {without_userinfo(url): url for url in args.replica or []}
    if given_replicas.keys() - set(replicas):
        raise UsageError.said("error.not_sessions_url", name="replica",
                              recorded=", ".join(replicas) or "-")  # fmt: skip
    recorded += [("replica", url, given_replicas.get(url)) for url in replicas]
    for key, url, given in recorded:
        if given is not None and without_userinfo(given) != url:
            raise UsageError.said("error.not_sessions_url", name=key, recorded=url)
        if given is None and url and f"://{MASK}@" in url:
            raise UsageError.said("error.masked_url", name=key, recorded=url)
        if given is not None and key == "replica":
            urls["replicas"][replicas.index(url)] = given
        elif given is not None:
            urls[key] = given
    return urls


def _unnamed_urls(header: dict[str, Any], args: argparse.Namespace) -> list[Any]:
    """The URLs the resumed walk would contact that only its transcript names (not given with
    --target, --proxy or --replica on this command line)."""
    from wizard.auth import without_userinfo
    from wizard.cli.authority import Unnamed

    named = {without_userinfo(u) for u in [args.target, args.proxy, *(args.replica or [])] if u}
    recorded = [("--target", header["target"]), ("--proxy", header.get("proxy")),
                *(("--replica", url) for url in header.get("replicas") or [])]  # fmt: skip
    return [Unnamed(flag, without_userinfo(url)) for flag, url in recorded
            if url and without_userinfo(url) not in named]  # fmt: skip


def _spinner(screen: Any, lang: str) -> tuple[Any, Any]:
    """A transient rich status line while a probe runs, with its round's progress (n/N, elapsed,
    time left) as requests finish; only on a terminal. Returns (on_busy, on_progress)."""
    current: list[tuple[Any, dict[str, Any]]] = []

    def busy(call: dict[str, Any] | None) -> None:
        from wizard.ui.render_events import busy_text

        while current:
            current.pop()[0].stop()
        if call is not None and screen.is_terminal:
            status = screen.status(busy_text(call, lang) + " ...")
            status.start()
            current.append((status, call))

    def progress(now: dict[str, Any]) -> None:
        from wizard.ui.render_events import progress_text

        if current:  # LoadGen reports from its own thread; rich's Live updates under a lock
            status, call = current[-1]
            status.update(progress_text(call, now, lang))

    return busy, progress


def _walk(book: Any, writer: Any, operator: Any, args: argparse.Namespace, api_key: str | None,
          header: dict[str, Any], events: list[dict[str, Any]], fleet: dict[str, Any] | None,
          lang: str, planned: dict[str, Any] | None = None) -> tuple[Any, Any]:  # fmt: skip
    """Set the session up and walk; return the console and the session."""
    from wizard.auth import auth_headers
    from wizard.i18n.words import say
    from wizard.probes.runner import ProbeContext
    from wizard.ui import aio
    from wizard.ui.render import console
    from wizard.ui.render_events import render_event
    from wizard.walk.engine import walk
    from wizard.walk.resume import check_resumed_server, restore
    from wizard.walk.session import Session
    from wizard.workload import Workload

    screen = console()

    def show(event: dict[str, Any]) -> None:
        renderable = render_event(event, lang)
        if renderable is not None:
            screen.print(renderable)

    context = ProbeContext(target=header["target"], proxy=header.get("proxy"), nginx_conf=header.get("nginx_conf"),
                           nginx_access_log=header.get("nginx_access_log"),
                           vllm_log=header.get("vllm_log"), host_evidence=header.get("host_evidence"),
                           headers=auth_headers(api_key), timeout_s=args.timeout,
                           fleet_query=_fleet_query(header), fleet=fleet,
                           replicas=header.get("replicas"))  # fmt: skip
    context.workload = Workload.from_header(header.get("workload"), header.get("rounds"))
    context.model = context.workload.model
    on_busy, context.on_progress = _spinner(screen, lang)
    session = Session(book, context, operator, writer, lang, show, on_busy=on_busy)
    start = restore(session, events) if events else None
    if events and planned is None:
        # Resumed: what is left of the walk, from the node it continues at, shown before its
        # server check pings; not asked again (the person consented to the walk's load at `run`).
        known = {"proxy": header.get("proxy"), "target": header["target"],
                 "nginx_conf": header.get("nginx_conf"), "replicas": header.get("replicas")}  # fmt: skip
        planned = show_budget(book, context.workload, known, args, lang, False, start)
    if planned is not None:
        # Shown before the first request; recorded, not shown again. The deadline runs from here.
        from wizard.walk.budget import Limits

        writer.append("budget", None, planned)
        session.limits = Limits(planned["deadline_s"], planned["max_requests"],
                                planned.get("replicas_rounds", 0))  # fmt: skip
    if events:
        screen.print(
            say("end.resuming", lang, path=writer.path, start=start), style="bold", soft_wrap=True
        )
        aio.run(check_resumed_server(session, str(start)))
    aio.run(walk(session, start))
    return screen, session


def execute(book: Any, writer: Any, operator: Any, args: argparse.Namespace, api_key: str | None,
            header: dict[str, Any], events: list[dict[str, Any]], resume_hint: str | None = None,
            fleet: dict[str, Any] | None = None, planned: dict[str, Any] | None = None) -> int:  # fmt: skip
    """Walk (or continue) with live rendering; keep the transcript on Ctrl-C and say how to resume.

    Everything after the transcript was created is inside the Ctrl-C handling, the imports and the
    session's setup too: an interrupt there also leaves a transcript to resume."""
    lang = args.lang or header.get("lang") or default_language()
    try:
        screen, session = _walk(book, writer, operator, args, api_key, header, events, fleet, lang,
                                planned)  # fmt: skip
    except KeyboardInterrupt:
        from wizard.i18n.words import say
        from wizard.ui.render import console

        screen = console()
        screen.print(say("end.interrupted", lang, path=writer.path), soft_wrap=True)
        screen.print(resume_hint or say("end.resume", lang, command=resume_command_line(writer.path, header)),
                     soft_wrap=True)  # fmt: skip
        return 130
    finally:
        writer.close()
    from wizard.i18n.words import say
    from wizard.walk.engine import UNMEASURABLE_CAUSES, outcome

    _print_answer(screen, writer.path, lang)
    screen.print(say("end.transcript", lang, path=writer.path), soft_wrap=True)
    screen.print(
        say("end.summary", lang, command=f"latency-wizard export {writer.path} --format md"),
        soft_wrap=True,
    )
    screen.print(say("end.paste", lang, command=f"latency-wizard export {writer.path} --format text"),
                 soft_wrap=True)  # fmt: skip
    if any(f["cause"] in UNMEASURABLE_CAUSES for f in session.findings):
        return 1  # no OpenAI API at the target (LAT021): the walk could not be done there
    return EXIT_CODES[outcome(session)["outcome"]]


def resume_command_line(path: Path, header: dict[str, Any]) -> str:
    """The command that continues this walk, naming its URLs again (a transcript's own URLs are
    confirmed before anything is sent to them); a URL's userinfo is never printed."""
    import shlex

    from wizard.auth import MASK, without_userinfo

    named = [("--target", header.get("target")), ("--proxy", header.get("proxy")),
             *(("--replica", url) for url in header.get("replicas") or [])]  # fmt: skip
    # A masked userinfo is asked for again by resume: the hint says what goes there.
    shown = [(flag, without_userinfo(url).replace(f"://{MASK}@", "://USER:PASSWORD@"))
             for flag, url in named if url]  # fmt: skip
    flags = "".join(f" {flag} {shlex.quote(url)}" for flag, url in shown)
    return f"latency-wizard resume {shlex.quote(str(path))}{flags}"


def _print_answer(screen: Any, path: Path, lang: str) -> None:
    """The answer the summary leads with, at the end of the walk (the summary's own lines)."""
    from rich.markup import escape
    from rich.rule import Rule

    from wizard import report
    from wizard.i18n.words import say
    from wizard.record import transcript
    from wizard.report.text import answer_lines
    from wizard.report.walk_waterfall import lines

    built = report.build(transcript.load(path), lang)
    screen.print(Rule(f"[bold]{escape(say('tldr', lang))}[/]"))
    for line in answer_lines(built):
        screen.print(escape(line), soft_wrap=True)
    if built["waterfall"]:  # the first token hop by hop, as the summary shows it
        screen.print(say("triage.h.waterfall", lang), style="bold", soft_wrap=True)
        for row in built["waterfall"]:
            for index, line in enumerate(lines(row, lang)):
                screen.print(escape(("  " if index == 0 else "    ") + line), soft_wrap=True)


def _fleet_query(header: dict[str, Any]) -> Any:
    # Kept in the header, so that a resumed walk reads the same fleet.
    if not header.get("prometheus"):
        return None
    from wizard.probes.fleet import FleetQuery

    return FleetQuery(
        header["prometheus"], header.get("fleet_window") or "5m", header.get("fleet_job")
    )


EXIT_CODES = {"no_cause": 0, "cause_remains": 3, "nothing_measured": 4}
