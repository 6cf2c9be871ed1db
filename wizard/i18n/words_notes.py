"""The notes the readers of pasted evidence write (``probe nginx-config``, ``probe topology``,
``probe metrics``) on what they could not read or repaired, in English and Chinese; part of
``WORDS``. The English is the recorded ``notes`` text, word for word (scripts read it)."""

from __future__ import annotations

NOTE_WORDS: dict[str, dict[str, str]] = {
    "nginxnote.include_none": {
        "en": "{where}: include {pattern} matches none of the files given: what it holds is not analysed",
        "zh": "{where}：`include {pattern}` 没有匹配到给出的任何文件：其中的内容未分析",
    },
    "nginxnote.template": {
        "en": "{where}: {directive} {value}: a template placeholder, its value is not in the config",
        "zh": "{where}：`{directive} {value}` 是模板占位符，配置中没有它的值",
    },
    "nginxnote.http_default": {
        "en": "proxy_http_version is not set: reported as 1.0, nginx's default before 1.29.7 (1.1 since); paste `nginx -V` above the config to have it read",
        "zh": "未设置 proxy_http_version：按 1.0 报告，即 nginx 1.29.7 之前的默认值"
        "（之后为 1.1）；把 `nginx -V` 的输出粘贴在配置前面即可读到版本",
    },
    "topnote.twice": {
        "en": "line {number}: a second {name} row (the table pasted twice?): ignored",
        "zh": "第 {number} 行：又一个 {name} 行（表格粘贴了两次？）：已忽略",
    },
    "topnote.not_in_header": {
        "en": "line {number}: {name} is not in the header: ignored",
        "zh": "第 {number} 行：表头中没有 {name}：已忽略",
    },
    "topnote.x_missing": {
        "en": "{name}: its own X is missing: put back in its column",
        "zh": "{name}：缺少它自己的 X：已放回它的列",
    },
    "topnote.no_x": {
        "en": "{name}: its row has no X: read as printed",
        "zh": "{name}：它的行没有 X：按原样读取",
    },
    "topnote.shifted": {
        "en": "{name}: its row was shifted by {shift} cell(s) in the paste: realigned on its X",
        "zh": "{name}：粘贴时它的行错位了 {shift} 个单元格：已按它的 X 重新对齐",
    },
    "metricsnote.skipped": {
        "en": "skipped {n} line(s) that are no Prometheus exposition text ({quoted}{more})",
        "zh": "跳过了 {n} 行不是 Prometheus 暴露格式的文本（{quoted}{more}）",
    },
    # An nginx fix that is more than one directive (probe nginx-config's `directive_texts`).
    "nginxfix.gzip_types": {
        "en": "gzip_types without text/event-stream (or proxy_buffering off;)",
        "zh": "gzip_types 中去掉 text/event-stream（或 proxy_buffering off;）",
    },
    "nginxfix.read_timeout": {
        "en": "proxy_read_timeout {seconds}s; (or vLLM --sse-keep-alive-interval)",
        "zh": "proxy_read_timeout {seconds}s;（或 vLLM 的 --sse-keep-alive-interval）",
    },
    # Text refused as no metrics (probe metrics --file, a paste).
    "metrics.html": {
        "en": "this is HTML, not Prometheus metrics: is the URL the server's /metrics?",
        "zh": "这是 HTML，不是 Prometheus 指标：这个 URL 是服务的 /metrics 吗？",
    },
    "metrics.no_samples": {
        "en": "not valid Prometheus text: no samples in it{skipped}",
        "zh": "不是有效的 Prometheus 文本：其中没有样本{skipped}",
    },
    "metrics.skipped_said": {"en": " ({note})", "zh": "（{note}）"},
    "metrics.invalid": {
        "en": "not valid Prometheus text: {detail}",
        "zh": "不是有效的 Prometheus 文本：{detail}",
    },
    # A skipped line is the paste's own text: quoted as it came (as code in Chinese).
    "metricsnote.line": {"en": "line {number}: {text}", "zh": "第 {number} 行 `{text}`"},
    "metricsnote.more": {"en": " and {n} more", "zh": "，另有 {n} 行"},
    "metricsnote.generation": {
        "en": "no series only one generation exposes (an engine label, kv_cache_usage_perc, "
        "gpu_cache_usage_perc, ...): the generation is unknown",
        "zh": "没有只有某一代 vLLM 才暴露的序列（engine 标签、kv_cache_usage_perc、"
        "gpu_cache_usage_perc 等）：无法判断它是哪一代",
    },
}
