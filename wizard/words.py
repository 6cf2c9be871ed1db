"""The incident summary's words in English and Chinese, and numbers written for people.

A summary is read under pressure and pasted into tickets: every number carries its unit, a
fraction is a percentage, an unknown value says so (never ``None``), and a verdict is a phrase
("TTFT improved"), not a snake_case id. The wording is here, one place per language, so the
Markdown, HTML and text summaries say the same thing.
"""

from __future__ import annotations

from typing import Any

SEGMENT_NAMES = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "itl_ms": "ITL", "e2e_ms": "E2E"}

WORDS: dict[str, dict[str, str]] = {
    # punctuation: Chinese text takes full-width separators and brackets
    "sep": {"en": "; ", "zh": "；"},
    "comma": {"en": ", ", "zh": "，"},
    "paren": {"en": "{text} ({inner})", "zh": "{text}（{inner}）"},
    "labelled": {"en": "{label}: {text}", "zh": "{label}：{text}"},
    # headings
    "title": {"en": "Latency incident summary: {model} at {target}",
              "zh": "延迟事件摘要：{target} 上的 {model}"},
    "tldr": {"en": "TL;DR", "zh": "TL;DR 结论"},
    "baseline_vs_final": {"en": "Baseline (the incident's first rounds) beside the final state",
                          "zh": "基线（事件的首轮测量）与最终状态对照"},
    "server_side": {"en": "Server side per round", "zh": "每轮的服务端数据"},
    "changes": {"en": "Changes", "zh": "变更"},
    "rounds": {"en": "Every round", "zh": "全部测量轮次"},
    "findings": {"en": "Findings", "zh": "发现"},
    "evidence": {"en": "Evidence", "zh": "证据"},
    "notes": {"en": "What the walk noted", "zh": "诊断过程中的说明"},
    "timeline": {"en": "Timeline", "zh": "时间线"},
    "audit": {"en": "Audit", "zh": "审计"},
    "replay": {"en": "Replay", "zh": "回放"},
    # the answer
    "root_cause": {"en": "Root cause", "zh": "根因"},
    "symptom": {"en": "Symptom", "zh": "症状"},
    "the_change": {"en": "The one change", "zh": "唯一的变更"},
    "effect": {"en": "Proven effect", "zh": "已验证的效果"},
    "outcome": {"en": "Outcome", "zh": "结果"},
    "also_found": {"en": "Also found", "zh": "其他发现"},
    "no_cause": {"en": "no cause found", "zh": "未找到原因"},
    "not_remeasured": {"en": "not measured again after the change", "zh": "变更后未重新测量"},
    "no_change": {"en": "no change was applied", "zh": "未应用任何变更"},
    "outcome.no_cause": {"en": "no cause remains", "zh": "没有遗留的原因"},
    "outcome.cause_remains": {"en": "causes remain: {causes}", "zh": "仍有原因未解决：{causes}"},
    "outcome.nothing_measured": {"en": "nothing was measured", "zh": "没有完成任何测量"},
    "outcome.unknown": {"en": "the walk did not finish", "zh": "诊断未完成"},
    "bursts.typical": {"en": "events per read {before} -> {after} (typical)",
                       "zh": "每次读取的事件数 {before} -> {after}（典型值）"},
    "bursts.max": {"en": "events per read up to {before} -> {after}",
                   "zh": "每次读取的事件数最多 {before} -> {after}"},
    "segment_effect": {"en": "{segment} p50 {before} -> {after} ms ({change}), {verdict}",
                       "zh": "{segment} p50 {before} -> {after} ms（{change}），{verdict}"},
    "segment_effect_bare": {"en": "{segment} p50 {before} -> {after} ms, {verdict}",
                            "zh": "{segment} p50 {before} -> {after} ms，{verdict}"},
    "cause_verdict": {"en": "{code} {verdict} in {round}: {evidence}",
                      "zh": "{code} 在 {round} 中{verdict}：{evidence}"},
    "server_pair": {"en": "server in {before} -> {after}: {items}",
                    "zh": "服务端 {before} -> {after}：{items}"},
    "srv.preemptions": {"en": "preemptions", "zh": "抢占"},
    "srv.waiting": {"en": "waiting max", "zh": "最大排队"},
    "srv.kv_peak": {"en": "KV peak", "zh": "KV 峰值"},
    "not_applied": {"en": "proposed, not applied", "zh": "已建议，未应用"},
    # verdicts: a segment's, then the cause's own evidence
    "verdict.improved": {"en": "improved", "zh": "改善"},
    "verdict.regressed": {"en": "regressed", "zh": "变差"},
    "verdict.within noise": {"en": "within noise", "zh": "在噪声范围内"},
    "verdict.inconclusive": {"en": "inconclusive", "zh": "尚无定论"},
    "verdict.expected": {"en": "worse, as the finding predicted", "zh": "变差，符合发现的预期"},
    "verdict.no significant change": {"en": "no significant change", "zh": "无显著变化"},
    "verdict.insufficient data": {"en": "insufficient data", "zh": "数据不足"},
    "verdict.cause gone": {"en": "cause gone", "zh": "原因已消除"},
    "verdict.cause still there": {"en": "cause still there", "zh": "原因仍在"},
    "noise_band": {"en": "±{band} noise", "zh": "噪声 ±{band}"},
    "severity.fail": {"en": "FAIL", "zh": "严重"},
    "severity.warn": {"en": "WARN", "zh": "警告"},
    "severity.info": {"en": "INFO", "zh": "提示"},
    # tables
    "col.path": {"en": "path", "zh": "路径"},
    "col.state": {"en": "state", "zh": "状态"},
    "col.round": {"en": "round", "zh": "轮次"},
    "col.step": {"en": "step", "zh": "步骤"},
    "col.requests": {"en": "requests ok", "zh": "成功请求"},
    "col.result": {"en": "result", "zh": "结果"},
    "col.change": {"en": "change", "zh": "变更"},
    "col.judged": {"en": "judged on", "zh": "判断依据"},
    "col.before": {"en": "before", "zh": "之前"},
    "col.after": {"en": "after", "zh": "之后"},
    "col.delta": {"en": "difference", "zh": "差值"},
    "col.verdict": {"en": "verdict", "zh": "结论"},
    "col.waiting": {"en": "waiting max (requests)", "zh": "最大排队（请求）"},
    "col.running": {"en": "running max (requests)", "zh": "最大运行（请求）"},
    "col.preemptions": {"en": "preemptions (count)", "zh": "抢占（次）"},
    "col.kv_peak": {"en": "KV cache peak (%)", "zh": "KV 缓存峰值（%）"},
    "col.outside": {"en": "TTFT outside the engine (ms)", "zh": "引擎外的 TTFT（ms）"},
    "col.bursts": {"en": "events per read (typical / max)", "zh": "每次读取事件数（典型 / 最大）"},
    "ms_pair": {"en": "{segment} (ms, p50 / p99)", "zh": "{segment}（ms，p50 / p99）"},
    "ms_p50": {"en": "{segment} p50 (ms)", "zh": "{segment} p50（ms）"},
    "ms_p99": {"en": "{segment} p99 (ms)", "zh": "{segment} p99（ms）"},
    "incident": {"en": "incident", "zh": "事件"},
    "final": {"en": "final", "zh": "最终"},
    "steady": {"en": "steady", "zh": "稳态"},
    "cold": {"en": "cold", "zh": "冷启动"},
    "ok": {"en": "ok", "zh": "成功"},
    "failed": {"en": "failed: {error}", "zh": "失败：{error}"},
    "partial": {"en": "{failed} of {requests} requests failed", "zh": "{requests} 个请求中 {failed} 个失败"},
    "loadgen": {"en": "LoadGen {scenario}: {result} ({detail})",
                "zh": "LoadGen {scenario}：{result}（{detail}）"},
    "loadgen_ok": {"en": "{succeeded} of {queries} queries succeeded",
                   "zh": "{queries} 个查询中 {succeeded} 个成功"},
    "no_rounds": {"en": "Nothing was measured (see the findings: the server may not have been running).",
                  "zh": "没有完成任何测量（见发现：服务可能没有运行）。"},
    "not_measured_again": {"en": "not measured again", "zh": "未再测量"},
    "none": {"en": "Nothing.", "zh": "无。"},
    "unknown": {"en": "unknown", "zh": "未知"},
    "yes": {"en": "yes", "zh": "是"},
    "no": {"en": "no", "zh": "否"},
    # findings and evidence
    "finding_head": {"en": "{code} {severity} ({cause}): {title}", "zh": "{code} {severity}（{cause}）：{title}"},
    "finding_evidence": {"en": "Evidence", "zh": "证据"},
    "finding_advice": {"en": "Advice", "zh": "建议"},
    "finding_docs": {"en": "Docs", "zh": "文档"},
    "vllm_log": {"en": "vLLM log ({file})", "zh": "vLLM 日志（{file}）"},
    "host.evidence": {"en": "GPU host, from the files collected there ({files})",
                      "zh": "GPU 主机，来自在该主机上收集的文件（{files}）"},
    "host.this machine": {"en": "this machine (where the wizard ran, not necessarily the GPU host)",
                          "zh": "本机（运行向导的机器，未必是 GPU 主机）"},
    "no_evidence": {"en": "None given (`--vllm-log FILE`, `--host-evidence DIR`).",
                    "zh": "未提供（`--vllm-log FILE`、`--host-evidence DIR`）。"},
    # the audit
    "nothing_to_flag": {"en": "Nothing to flag.", "zh": "没有需要标记的问题。"},
    "flag.failed": {"en": "round {round} failed: {error}", "zh": "轮次 {round} 失败：{error}"},
    "flag.partial": {"en": "round {round}: {failed} of {requests} requests failed",
                     "zh": "轮次 {round}：{requests} 个请求中 {failed} 个失败"},
    "flag.loadgen": {"en": "LoadGen {scenario} ({round}): {result}, {detail}",
                     "zh": "LoadGen {scenario}（{round}）：{result}，{detail}"},
    "flag.refused": {"en": "refused: {text}", "zh": "已拒绝：{text}"},
    "session_incomplete": {"en": " (session incomplete)", "zh": "（会话未完成）"},
    "salvaged": {"en": " (salvaged: {lost})", "zh": "（已抢救：{lost}）"},
    "window": {"en": "Window: {start} to {end}", "zh": "时间窗口：{start} 至 {end}"},
    "target": {"en": "Target: {target}", "zh": "目标：{target}"},
    "via_proxy": {"en": ", via proxy {proxy}", "zh": "，经代理 {proxy}"},
    "workload.line": {"en": "Workload ({whose}): {model}, {endpoint}, {prompt}, {concurrency} streams",
                      "zh": "负载（{whose}）：{model}，{endpoint}，{prompt}，{concurrency} 路并发"},
    "workload.incident": {"en": "the incident's", "zh": "事件本身的请求形态"},
    "workload.own": {"en": "the wizard's own; run --request-body or --model, --endpoint, ... give the incident's",
                     "zh": "向导自带的请求形态；用 run --request-body 或 --model、--endpoint 等指定事件本身的"},
    "workload.tokens": {"en": "{input} words in, {output} tokens out", "zh": "输入 {input} 词，输出 {output} token"},
    "workload.body": {"en": "the body of {file}", "zh": "{file} 中的请求正文"},
    "server_version": {"en": "Server version: {version}; playbook: {playbook}",
                       "zh": "服务版本：{version}；诊断手册：{playbook}"},
    "rounds_label": {"en": "Rounds", "zh": "测量轮次"},
    "more_flags": {"en": "(+{n} more)", "zh": "（另有 {n} 条）"},
    "rounds_count": {"en": "{total} rounds ({failed} failed)", "zh": "共 {total} 轮（{failed} 轮失败）"},
    "chart.baseline": {"en": "{segment} p50 (ms): incident and final", "zh": "{segment} p50（ms）：事件与最终"},
    "chart.change": {"en": "{segment} p50 (ms), {parameter}", "zh": "{segment} p50（ms），{parameter}"},
}  # fmt: skip

# The evidence's keys, written out; the unit follows the value.
EVIDENCE_LABELS: dict[str, tuple[str, str, str]] = {
    "model": ("model", "模型", ""),
    "engine": ("engine", "引擎", ""),
    "tensor_parallel_size": ("tensor parallel size", "张量并行度", ""),
    "pipeline_parallel_size": ("pipeline parallel size", "流水线并行度", ""),
    "max_model_len": ("max_model_len", "max_model_len", " tokens"),
    "max_num_batched_tokens": ("max_num_batched_tokens", "max_num_batched_tokens", " tokens"),
    "max_num_seqs": ("max_num_seqs", "max_num_seqs", ""),
    "gpu_memory_utilization": ("gpu_memory_utilization", "gpu_memory_utilization", ""),
    "chunked_prefill": ("chunked prefill", "分块预填充", ""),
    "kv_cache_tokens": ("KV cache", "KV 缓存", " tokens"),
    "startup_s": ("start-up", "启动耗时", " s"),
    "error_kinds": ("errors", "错误", ""),
    "physical_cores": ("physical cores", "物理核心", ""),
    "gpus": ("GPUs", "GPU 数量", ""),
    "gpu_names": ("GPU", "GPU 型号", ""),
    "gpu_memory_gib": ("GPU memory", "显存", " GiB"),
    "interconnect": ("interconnect", "互联", ""),
    "cuda_visible_devices": ("CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", ""),
}


def say(key: str, lang: str, **values: Any) -> str:
    """The phrase ``key`` in ``lang`` (English when it has no translation), filled in."""
    phrase = WORDS[key]
    return (phrase.get(lang) or phrase["en"]).format(**values)


def joined(parts: list[str], lang: str, separator: str = "sep") -> str:
    """Parts joined the way the language separates them."""
    return say(separator, lang).join(parts)


def paren(text: str, inner: str, lang: str) -> str:
    """``text (inner)``, or with full-width brackets in Chinese."""
    return say("paren", lang, text=text, inner=inner)


def segment_name(segment: str) -> str:
    """``ttft_ms`` -> ``TTFT``."""
    return SEGMENT_NAMES.get(segment, segment)


def verdict_word(verdict: str, lang: str) -> str:
    """A verdict as a phrase; one the wizard does not know yet is shown as recorded."""
    key = f"verdict.{verdict}"
    return say(key, lang) if key in WORDS else verdict.replace("_", " ")


def ms(value: float | None) -> str:
    """Milliseconds: whole above 100 (``1,357``), one decimal below (``24.6``), ``-`` unknown."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}"


def percent(fraction: float | None) -> str:
    """A fraction as a percentage that keeps small values visible: 0.0011 -> ``0.1 %``."""
    if fraction is None:
        return "-"
    value = fraction * 100
    if value == 0:
        return "0 %"
    if abs(value) < 0.1:
        return "<0.1 %"
    return f"{value:.0f} %" if abs(value) >= 10 else f"{value:.1f} %"


def signed_percent(fraction: float | None) -> str:
    """A relative change: -0.83 -> ``-83 %``."""
    if fraction is None:
        return "-"
    value = round(fraction * 100)
    return f"{value:+d} %" if value else "0 %"


def count(value: float | None) -> str:
    """A count the server reports as a float (``6.0``) shown as ``6``."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def plain(value: Any, lang: str) -> str:
    """Any evidence value for a person: yes/no, unknown, lists joined, numbers without noise."""
    if value is None or value == [] or value == "":
        return say("unknown", lang)
    if isinstance(value, bool):
        return say("yes" if value else "no", lang)
    if isinstance(value, list):
        return ", ".join(sorted({plain(v, lang) for v in value}))
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return count(value) if value.is_integer() else f"{value:.4g}"
    return str(value)


def evidence_item(key: str, value: Any, lang: str) -> str:
    """``tensor parallel size 1``, ``KV cache 461,184 tokens``."""
    en, zh, unit = EVIDENCE_LABELS.get(key, (key, key, ""))
    known = value not in (None, [], "")
    return f"{zh if lang == 'zh' else en} {plain(value, lang)}{unit if known else ''}"
