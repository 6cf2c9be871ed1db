"""The incident summary as one self-contained HTML page: the same document as the Markdown,
coloured by severity and verdict, with each chart beside the section it illustrates.

Every text is escaped (a model name or a server's error message is someone else's text). The
charts are SVG drawn by pygal without its script (``js=[]``), inlined: nothing is fetched.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

from wizard.i18n.words import ms
from wizard.report.doc import Chart, Charts, Code, Heading, Lines, Table, document

STYLE = """
body{font-family:system-ui,'Noto Sans CJK SC','PingFang SC','Microsoft YaHei','WenQuanYi Micro Hei',sans-serif;max-width:72em;margin:2em auto;padding:0 1em;color:#1d1d1f}
h1{font-size:1.5em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}.word{white-space:nowrap}
th{background:#f3f3f5}ul{padding-left:1.2em}li{margin:.2em 0}code{background:#f3f3f5;padding:0 .2em}
.fail,.bad{color:#b00020;font-weight:600}.warn{color:#9a5b00;font-weight:600}.info{color:#0b5cad}
.good{color:#1b7f3b;font-weight:600}li.fail,li.bad,li.warn,li.good{border-left:4px solid;padding-left:.5em}
li.fail,li.bad,li.warn,li.good{font-weight:normal}li.fail span,li.bad span,li.warn span,li.good span{color:#1d1d1f}
h3.fail,h3.warn,h3.info{border-left:6px solid;padding-left:.5em}
.charts{display:flex;flex-wrap:wrap;gap:.5em}.charts figure{margin:0;width:320px;height:230px}
"""
# before / incident, then after / final
CHART_COLOURS = ("#9aa5b1", "#2f6db5")


def _inline(text: str) -> str:
    """Escaped text where `code` becomes <code>."""
    parts = html.escape(text).split("`")
    if len(parts) % 2 == 0:  # an unmatched backtick is text
        return html.escape(text)
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _tone(tone: str) -> str:
    return f' class="{tone}"' if tone else ""


def html_page(report: dict[str, Any]) -> str:
    """The page."""
    body = []
    title = ""
    for block in document(report):
        if isinstance(block, Heading):
            title = title or block.text
            body.append(
                f"<h{block.level}{_tone(block.tone)}>{_inline(block.text)}</h{block.level}>"
            )
        elif isinstance(block, Lines):
            items = "".join(f"<li{_tone(tone)}>" + (f"<strong>{_inline(label)}</strong>: " if label else "")
                            + f"<span>{_inline(text)}</span></li>" for label, text, tone in block.items)  # fmt: skip
            body.append(f"<ul>{items}</ul>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{_inline(h)}</th>" for h in block.headers)
            rows = "".join("<tr>" + "".join(f"<td{_tone(c.tone)}>{_inline(c.text)}</td>" for c in row) + "</tr>"
                           for row in block.rows)  # fmt: skip
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif isinstance(block, Charts):
            figures = "".join(_figure(chart) for chart in block.charts if _drawable(chart))
            if figures:
                body.append(f'<div class="charts">{figures}</div>')
        elif isinstance(block, Code):
            body.append(f"<pre><code>{html.escape(block.text)}</code></pre>")
    lang = html.escape(report["lang"])
    return (
        f"<!doctype html><html lang='{lang}'><head><meta charset='utf-8'>"
        f"<title>{_plain(title)}</title><style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n"
    )


def _plain(text: str) -> str:
    return html.escape(re.sub("`", "", text))


def _drawable(chart: Chart) -> bool:
    return any(value is not None for _, values in chart.series for value in values)


def _ticks(top: float, most: int = 5) -> list[float]:
    """At most ``most`` round values from 0 to at least ``top``, in steps of 1, 2, 2.5 or 5 x 10^k."""
    if top <= 0:
        return [0.0, 1.0]
    magnitude = 10.0 ** math.floor(math.log10(top / (most - 1)))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if top / (m * magnitude) <= most - 1)
    return [round(i * step, 9) for i in range(math.ceil(top / step - 1e-9) + 1)]


def _figure(chart: Chart) -> str:
    """One segment, its own scale: a 10 ms TPOT stays visible beside a 800 ms E2E elsewhere."""
    import pygal
    from pygal.etree import etree
    from pygal.style import Style

    style = Style(colors=CHART_COLOURS, background="white", plot_background="white",
                  font_family="system-ui,sans-serif", title_font_size=13, label_font_size=11,
                  value_font_size=11)  # fmt: skip
    bar = pygal.Bar(width=320, height=230, js=[], print_values=True, style=style, title=chart.title,
                    value_formatter=ms, legend_at_bottom=True, truncate_label=-1, truncate_legend=-1)  # fmt: skip
    bar.x_labels = chart.groups
    # A few round labels: pygal's own ticks (every 10 up to 140) overlap on a chart this small.
    ticks = _ticks(
        max((v for _, values in chart.series for v in values if v is not None), default=0)
    )
    bar.y_labels, bar.range = ticks, (0, ticks[-1])
    for name, values in chart.series:
        bar.add(name, values)
    tree = bar.render_tree()
    # pygal sets its (absent) tooltip script's config in an inline <script>: the page runs none.
    for parent in list(tree.iter()):
        for child in list(parent):
            if str(child.tag).endswith("script"):
                parent.remove(child)
    svg: bytes = etree.tostring(tree)
    return "<figure>" + svg.decode("utf-8") + "</figure>"
