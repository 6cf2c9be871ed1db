"""``latency-wizard demo``: the whole walk against the built-in simulator (and a real nginx)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from wizard.cli.inputs import count, seconds
from wizard.cli.run import operator_arguments, rounds_argument

if TYPE_CHECKING:
    from wizard.demo import DemoStack
    from wizard.i18n.words_cli import Words
    from wizard.sim.scenarios import Scenario


def register(subparsers: Any, words: Words) -> None:
    """Add ``demo``."""
    demo = subparsers.add_parser(
        "demo", help=words("demo.help"), description=words("demo.description")
    )
    demo.add_argument("--scenario", default="healthy", help=words("demo.scenario"))
    operator_arguments(demo, words)
    demo.add_argument("--transcript", help=words("demo.transcript"))
    demo.add_argument("--no-nginx", action="store_true", help=words("demo.no_nginx"))
    demo.add_argument("--withhold", action="append", choices=["log", "host"], default=[],
                      metavar="{log,host}", help=words("demo.withhold"))  # fmt: skip
    demo.add_argument("--engine-flag", action="append", default=[], metavar="NAME=VALUE",
                      help=words("demo.engine_flag"))  # fmt: skip
    demo.add_argument("--keep-files", action="store_true", help=words("demo.keep_files"))
    demo.add_argument("--deadline", type=seconds, metavar="SECONDS", help=words("run.deadline"))
    demo.add_argument("--max-requests", type=count, metavar="N", help=words("run.max_requests"))
    # The demo shows the walk's answer and its proof on a built-in server, in half a minute:
    # brief rounds reach the same answer (benchmarks/results/demo_speed.md); `run` stays full.
    rounds_argument(demo, words, default="brief")
    demo.set_defaults(handler=demo_command)


def demo_command(args: argparse.Namespace) -> int:
    """Start the stack, walk, clean up."""
    import signal

    from wizard.cli.inputs import default_language
    from wizard.cli.run import chosen_rounds
    from wizard.demo import DemoStack, engine_flags
    from wizard.errors import require_extra
    from wizard.i18n.words import say
    from wizard.sim.scenarios import get_scenario
    from wizard.ui import interrupt
    from wizard.ui.render import console

    require_extra("sim", "latency-wizard demo")
    scenario = get_scenario(args.scenario)  # unknown names fail before anything starts
    flags = engine_flags(args.engine_flag)
    rounds = chosen_rounds(args)
    stack = DemoStack(args.scenario, with_nginx=not args.no_nginx)
    stack.sim_flags.update(flags)
    # SIGTERM ends the demo as Ctrl-C does: the walk's task is cancelled, its processes stopped.
    previous = signal.signal(signal.SIGTERM, interrupt.on_signal)
    try:
        # The simulator boots (~0.8 s: its simulated weights and CUDA graphs) while the walk's
        # code and playbook load; anything refused meanwhile stops it and removes its folder.
        stack.launch()
        return _walk(args, stack, scenario, flags, rounds)
    finally:
        for folder in stack.stop(keep_files=args.keep_files):
            console().print(say("demo.kept", args.lang or default_language(), folder=folder),
                            soft_wrap=True)  # fmt: skip
        signal.signal(signal.SIGTERM, previous)


def _walk(args: argparse.Namespace, stack: DemoStack, scenario: Scenario, flags: dict[str, str],
          rounds: str) -> int:  # fmt: skip
    """Load the playbook and the answers, wait for the stack, walk."""
    import sys
    from pathlib import Path

    from wizard import playbook
    from wizard.cli.inputs import default_language
    from wizard.cli.run import (
        _create,
        default_transcript_path,
        execute,
        show_budget,
    )
    from wizard.i18n.words import say
    from wizard.record.transcript import Redactor
    from wizard.ui.interactive import InteractiveOperator
    from wizard.ui.render import console
    from wizard.walk.operator import AutoOperator, ScriptedOperator
    from wizard.workload import Workload

    book = playbook.load()
    # A bad answers file is refused before the walk starts (the simulator launched meanwhile is
    # stopped and its folder removed; nothing is printed before the refusal).
    answers = ScriptedOperator.from_file(Path(args.answers), book) if args.answers else None
    screen = console()
    if answers is not None:
        answers.applier = stack
        operator: Any = answers
    elif args.auto or not sys.stdin.isatty():
        operator = AutoOperator(stack)
    else:
        operator = InteractiveOperator(stack)
    lang = args.lang or default_language()
    screen.print(say("demo.starting", lang, scenario=args.scenario), soft_wrap=True)
    stack.start()
    screen.print(say("demo.sim", lang, url=stack.sim_url, log=stack.sim_log), soft_wrap=True)
    if stack.nginx is not None:
        screen.print(say("demo.nginx", lang, url=stack.nginx.url), soft_wrap=True)
        screen.print(say("demo.upstream", lang), soft_wrap=True)
    elif not args.no_nginx:
        screen.print(say("demo.no_nginx", lang))
    proxy = stack.nginx.url if stack.nginx is not None else None
    path = Path(args.transcript) if args.transcript else default_transcript_path(stack.sim_url)
    # The demo's incident is completions traffic (its simulator answers both APIs), with the
    # scenario's own requests where the fault is in them.
    workload = Workload(endpoint="completions", body=scenario.incident_body, rounds=rounds)
    header = {"playbook_id": book.id, "playbook_sha256": book.sha256, "playbook_path": book.path,
              "target": stack.sim_url, "proxy": proxy, "lang": lang,
              "nginx_conf": str(stack.nginx.config_path) if stack.nginx is not None else None,
              "nginx_access_log": str(stack.nginx.access_log) if stack.nginx is not None else None,
              "vllm_log": None if "log" in args.withhold else str(stack.sim_log),
              "host_evidence": None if "host" in args.withhold else str(stack.host_evidence),
              "demo": {"scenario": args.scenario, "nginx": proxy is not None,
                       "engine_flags": flags, "withheld": sorted(set(args.withhold))},
              "workload": workload.to_header(), "rounds": workload.rounds}  # fmt: skip
    args.timeout = 60.0
    # Its own simulator, no production's: shown and recorded as `run` does, never asked.
    known = {"proxy": proxy, "target": stack.sim_url, "nginx_conf": header["nginx_conf"],
             "replicas": None}  # fmt: skip
    planned = show_budget(book, workload, known, args, lang, consent=False)
    writer = _create(path, header, Redactor())
    hint = say("demo.resume_hint", lang)
    return execute(book, writer, operator, args, None, header, events=[], resume_hint=hint,
                   planned=planned)  # fmt: skip
