"""``latency-wizard playbook check|show|findings``: validate and look at a playbook."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words


def register(subparsers: Any, words: Words) -> None:
    """Add ``playbook`` and its actions."""
    playbook = subparsers.add_parser("playbook", help=words("playbook.help"))
    actions = playbook.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser("check", help=words("playbook.check.help"),
                               description=words("playbook.check.description"))  # fmt: skip
    check.add_argument("path", nargs="?", help=words("playbook_path"))
    check.set_defaults(handler=check_command)
    show = actions.add_parser("show", help=words("playbook.show.help"))
    show.add_argument("path", nargs="?", help=words("playbook_path"))
    show.add_argument("--format", choices=["tree", "mermaid", "dot"], default="tree")
    show.set_defaults(handler=show_command)
    findings = actions.add_parser("findings", help=words("playbook.findings.help"))
    findings.add_argument("path", nargs="?", help=words("playbook_path"))
    findings.set_defaults(handler=findings_command)


def _load(path: str | None) -> Any:
    from wizard import playbook

    return playbook.load(path or playbook.DEFAULT_PLAYBOOK)


def check_command(args: argparse.Namespace) -> int:
    """Print ``ok`` and a summary, or every problem on its own line."""
    import sys

    from wizard.playbook import PlaybookError

    try:
        book = _load(args.path)
    except PlaybookError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 1
    from wizard.cli.inputs import language
    from wizard.i18n.words import say
    from wizard.playbook import acted_on

    covered = {item for node in book.nodes.values() for item in node.covers}
    print(say("playbook.ok", language(), path=book.path, nodes=len(book.nodes),
              stages=len(book.stages), findings=len(book.findings), covered=len(covered),
              acted=len(acted_on(book))))  # fmt: skip
    return 0


def show_command(args: argparse.Namespace) -> int:
    """Print the graph as an indented tree, a Mermaid flowchart or Graphviz dot."""
    book = _load(args.path)
    print(render_graph(book, args.format))
    return 0


def render_graph(book: Any, style: str) -> str:
    """The playbook's graph in one of three text formats."""
    from wizard.playbook import END

    def label(node_id: str) -> str:
        return "end" if node_id == END else f"{node_id} [{book.nodes[node_id].stage}]"

    if style == "mermaid":
        lines = ["flowchart TD"]
        for node_id in book.nodes:
            for edge in book.nodes[node_id].next:
                arrow = (
                    "-.->|loop|" if edge.loop else ("-->|if|" if edge.when is not True else "-->")
                )
                lines.append(
                    f'  {_ident(node_id)}["{label(node_id)}"] {arrow} {_ident(edge.to)}["{label(edge.to)}"]'
                )
        return "\n".join(lines)
    if style == "dot":
        lines = [f'digraph "{book.id}" {{', "  rankdir=TB;"]
        for node_id in book.nodes:
            shape = "box" if book.nodes[node_id].measure else "ellipse"
            lines.append(f'  "{node_id}" [label="{label(node_id)}", shape={shape}];')
            for edge in book.nodes[node_id].next:
                style_attr = ", style=dashed" if edge.loop else ""
                lines.append(
                    f'  "{node_id}" -> "{edge.to}" [label="{"if" if edge.when is not True else ""}"{style_attr}];'
                )
        return "\n".join([*lines, "}"])
    seen: set[str] = set()
    out: list[str] = []

    def walk(node_id: str, depth: int, how: str) -> None:
        prefix = "  " * depth + (f"{how} " if how else "")
        if node_id in seen or node_id == END:
            out.append(f"{prefix}{label(node_id)}{' (seen above)' if node_id != END else ''}")
            return
        seen.add(node_id)
        node = book.nodes[node_id]
        out.append(f"{prefix}{label(node_id)}{' (measures)' if node.measure else ''}")
        for edge in node.next:
            walk(edge.to, depth + 1, "↺" if edge.loop else ("?" if edge.when is not True else "→"))

    walk(book.start, 0, "")
    return "\n".join(out)


def _ident(node_id: str) -> str:
    return node_id.replace(".", "_")


def findings_command(args: argparse.Namespace) -> int:
    """Print the finding catalogue as Markdown."""
    print(findings_markdown(_load(args.path)), end="")
    return 0


def _code(template: str) -> str:
    """An evidence template as table-safe inline code."""
    return "`" + template.replace("|", "\\|").replace("`", "'") + "`"


def _change_cell(change: dict[str, Any] | None) -> str:
    """A fixed change as its text; a computed one as its lever and how its value is computed."""
    if change is None:
        return "-"
    if "compute" not in change:
        return f"`{change['apply']}`"
    from wizard.levers.changes import COMPUTERS

    # The summary paragraph of the computing function's docstring (the rest says how).
    summary = (COMPUTERS[change["compute"]].__doc__ or "").split("\n\n")[0]
    how = " ".join(summary.split(": ", 1)[-1].split()).rstrip(".")
    return f"{change.get('direction', 'set')} `{change['parameter']}` (computed: {how})"


def findings_markdown(book: Any) -> str:
    """Every finding: code, severity, cause, title, its evidence, the change it proposes, the
    evidence that shows it gone, the procedure items it acts on, docs; then every threshold the
    findings' rules and the nodes' edges compare with and where it comes from."""
    lines = [
        "# Finding codes",
        "",
        "Generated from `wizard/playbook/vllm-latency.yaml` by `latency-wizard playbook findings`; a test keeps",
        "this page equal to the playbook. `{a.b}` is a fact of the walk, `{answers.x}` an answer.",
        "",
        "| code | severity | cause | title | evidence | the one change it proposes "
        "| shown gone by | acts on | docs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for code, finding in sorted(book.findings.items()):
        change = _change_cell(finding.change)
        docs = " ".join(f"<{link}>" for link in finding.docs)
        gone = _code(finding.gone_evidence["en"]) if finding.gone_evidence else "-"
        acts = ", ".join(finding.acts_on) or "-"
        lines.append(f"| {code} | {finding.severity} | `{finding.cause}` | {finding.title['en']} / "
                     f"{finding.title['zh']} | {_code(finding.evidence.get('en', ''))} | {change} | {gone} "
                     f"| {acts} | {docs} |")  # fmt: skip
    lines += [
        "",
        "## Where each threshold comes from",
        "",
        "Every number a finding's rules (and its `gone`) or a node's edges compare with, and its",
        "source: vLLM's or nginx's docs and source, the measured baseline and its A/A noise band,",
        "the client's measured lag, a definition, or a value chosen (said so). From the `thresholds`",
        "of each finding and node in the playbook; a test keeps every number of the conditions",
        "listed here.",
        "",
        "| finding or node | compared | value | where it comes from |",
        "|---|---|---|---|",
    ]
    owners = [*sorted(book.findings.items()), *book.nodes.items()]
    for owner, holder in owners:
        for limit in holder.thresholds:
            value = f"{limit.value:g}" if isinstance(limit.value, int | float) else (
                f"`{limit.value}`")  # fmt: skip
            lines.append(f"| {owner} | `{limit.at}` | {value} | "
                         f"{limit.source['en'].replace('|', '/')} |")  # fmt: skip
    return "\n".join(lines) + "\n"
