"""Every word a user sees, in English and Chinese (the walk in the terminal, the operator's
prompts, the summaries), and numbers written for people.

What the walk records (a note, a finding's evidence, the client's and the host's notes) keeps its
English text and, beside it, the same in every language (``texts``): a replay or export in either
language shows it without a second table.

A summary is read under pressure and pasted into tickets: every number carries its unit, a
fraction is a percentage, an unknown value says so (never ``None``), and a verdict is a phrase
("TTFT improved"), not a snake_case id. The wording is here, one place per language, so the
Markdown, HTML and text summaries say the same thing.
"""

from __future__ import annotations

from typing import Any

from wizard.i18n.words_notes import NOTE_WORDS
from wizard.i18n.words_triage import TRIAGE_WORDS
from wizard.i18n.words_views import VIEW_WORDS

LANGS = ("en", "zh")

SEGMENT_NAMES = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "itl_ms": "ITL", "e2e_ms": "E2E"}

WORDS: dict[str, dict[str, str]] = {
    **VIEW_WORDS,
    **NOTE_WORDS,
    **TRIAGE_WORDS,
    # punctuation: Chinese text takes full-width separators and brackets
    "sep": {"en": "; ", "zh": "；"},
    "comma": {"en": ", ", "zh": "，"},
    "paren": {"en": "{text} ({inner})", "zh": "{text}（{inner}）"},
    "labelled": {"en": "{label}: {text}", "zh": "{label}：{text}"},
    # headings
    "title": {"en": "Latency incident summary: {model} at {target}",
              "zh": "延迟故障摘要：{target} 上的 {model}"},
    "tldr": {"en": "TL;DR", "zh": "TL;DR 结论"},
    "baseline_vs_final": {"en": "Baseline (the incident's first rounds) beside the final state",
                          "zh": "基线（故障时的首轮测量）与最终状态对照"},
    "baseline_unchanged": {"en": "Baseline (the incident's first rounds; nothing was changed)",
                           "zh": "基线（故障时的首轮测量；未做任何变更）"},
    "baseline_after_fix": {"en": "Baseline (the first rounds, measured after the fix) beside the final state",
                           "zh": "基线（修复后才测得的首轮测量）与最终状态对照"},
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
    "band.near_zero_median": {"en": "median {median} ms: events arrived in bursts, judged by the difference",
                              "zh": "中位数 {median} ms：事件成批到达，按差值判断"},
    "band.beyond": {"en": "{segment} moved more than 2x (no band)", "zh": "{segment} 相差超过 2 倍（无噪声范围）"},
    "band.band_too_wide": {"en": "no band: the same round measured twice moved by more than 2x",
                           "zh": "无噪声范围：同一轮测两次相差超过 2 倍"},
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
    # LoadGen before the first change and after the last, on its own path: no one change's effect.
    # A transcript that cannot be written or trusted (transcript.py), and what replay says of it.
    "transcript.exists": {"en": "{path} already exists; choose another --transcript", "zh": "{path} 已存在；请换一个 --transcript"},
    "transcript.cannot_write": {"en": "cannot write to the transcript {path}: {why}; it is kept up to event {seq}: free the space, then 'latency-wizard resume {path}'",
                                "zh": "无法写入记录 {path}：{why}；记录保留到第 {seq} 个事件：腾出空间后运行 'latency-wizard resume {path}'"},
    "transcript.aside_exists": {"en": "{aside} already exists; move it away first", "zh": "{aside} 已存在；请先把它移走"},
    "transcript.empty": {"en": "{path}: empty file (is this a transcript?)", "zh": "{path}：空文件（这是记录文件吗？）"},
    "transcript.line": {"en": "{path}:{line}: {reason}{hint}", "zh": "{path}:{line}：{reason}{hint}"},
    "transcript.not_header": {"en": "not a latency-wizard transcript header", "zh": "不是 latency-wizard 记录的头部"},
    "transcript.newer": {"en": "schema_version {version} is newer than this tool", "zh": "schema_version {version} 比本工具支持的更新"},
    "transcript.header_shape": {"en": "{why}", "zh": "头部格式不对：{why}"},
    "transcript.torn": {"en": "last line is truncated (the session was cut mid-write)", "zh": "最后一行不完整（会话在写入中途被打断）"},
    "transcript.not_utf8": {"en": "not UTF-8 text (is this a transcript?)", "zh": "不是 UTF-8 文本（这是记录文件吗？）"},
    "transcript.not_json": {"en": "not JSON (the file is damaged)", "zh": "不是 JSON（文件已损坏）"},
    "transcript.not_record": {"en": "not a transcript record", "zh": "不是一条记录"},
    "transcript.edited": {"en": "line was edited (its hash does not match)", "zh": "这一行被改动过（哈希不符）"},
    "transcript.chain": {"en": "chain broken (a line before it was edited, removed or reordered)", "zh": "哈希链断开（它之前的某一行被改动、删除或调换了顺序）"},
    "transcript.seq": {"en": "expected seq {expected}, found {found}", "zh": "应为 seq {expected}，实际为 {found}"},
    "transcript.field": {"en": "event field '{field}' is missing or malformed", "zh": "事件字段 '{field}' 缺失或格式不对"},
    "transcript.node": {"en": "event field 'node' is malformed", "zh": "事件字段 'node' 格式不对"},
    "transcript.salvage_hint": {"en": "; --salvage keeps the {n} verified events before it", "zh": "；--salvage 可保留它之前已验证的 {n} 个事件"},
    "transcript.line_span": {"en": "line {n}", "zh": "第 {n} 行"},
    "transcript.lines_span": {"en": "lines {first}-{last}", "zh": "第 {first}-{last} 行"},
    "transcript.lost": {"en": "{span} ({bytes} bytes) not kept: {reason}", "zh": "{span}（{bytes} 字节）未保留：{reason}"},
    "transcript.salvaged": {"en": "latency-wizard {command}: salvaged {path}: kept {n} verified events; {lost}",
                            "zh": "latency-wizard {command}：已抢救 {path}：保留了 {n} 个已验证的事件；{lost}"},
    "transcript.salvaged_note": {"en": "salvaged: {lost}; those bytes are kept in {aside}", "zh": "已抢救：{lost}；这些字节保存在 {aside}"},
    # What an answer file held instead of an answer: never the value (it may be a secret).
    "answer_kind.text": {"en": "a text of {n} characters", "zh": "一段 {n} 个字符的文本"},
    "answer_kind.nothing": {"en": "nothing", "zh": "空值"},
    "answer_kind.other": {"en": "a {type}", "zh": "一个 {type}"},
    "answer_kind.secret_key": {"en": "(a key of {n} characters, not shown: it may be a secret)", "zh": "（一个 {n} 个字符的键，不显示：它可能是密钥）"},
    "error.answer_number": {"en": "answer to '{id}' must be a number, got {kind}", "zh": "'{id}' 的回答必须是数字，给出的是{kind}"},
    "error.answer_negative": {"en": "answer to '{id}' must be 0 or more, got a negative number", "zh": "'{id}' 的回答必须大于或等于 0，给出的是负数"},
    "error.answer_yes_no": {"en": "answer to '{id}' must be yes or no, got {kind}", "zh": "'{id}' 的回答必须是 yes 或 no，给出的是{kind}"},
    "error.answer_choice": {"en": "answer to '{id}' must be one of {choices}, got {kind}", "zh": "'{id}' 的回答必须是 {choices} 之一，给出的是{kind}"},
    "error.answers_unreadable": {"en": "cannot read answers file {path}: {why}", "zh": "无法读取回答文件 {path}：{why}"},
    "error.not_utf8": {"en": "{path}: not UTF-8 text (byte {byte})", "zh": "{path}：不是 UTF-8 文本（第 {byte} 个字节）"},
    "error.answers_value": {"en": "{path}: a value in the answers file cannot be read", "zh": "{path}：回答文件中有一个值无法读取"},
    "error.answers_yaml": {"en": "{path}: invalid YAML in answers file", "zh": "{path}：回答文件不是有效的 YAML"},
    "error.answers_not_mapping": {"en": "{path}: an answers file maps question ids (and finding codes) to answers", "zh": "{path}：回答文件应是从问题 id（以及发现代码）到回答的映射"},
    "error.answers_decision": {"en": "{path}: {code}: a change decision is 'apply', 'skip' or a mapping", "zh": "{path}：{code}：对变更的决定是 'apply'、'skip' 或一个映射"},
    "error.in_file": {"en": "{path}: {message}", "zh": "{path}：{message}"},
    "error.answers_unknown": {"en": "{path}: unknown question id or finding code {given}", "zh": "{path}：未知的问题 id 或发现代码 {given}"},
    "error.body_and_input_tokens": {"en": "--input-tokens and --request-body cannot go together: the body's prompt is replayed", "zh": "--input-tokens 与 --request-body 不能同时使用：请求体中的提示会原样重放"},
    "error.body_endpoint": {"en": "--endpoint {endpoint} does not fit {path}: its body is a {kind} request ({field})", "zh": "--endpoint {endpoint} 与 {path} 不符：它的请求体是 {kind} 请求（{field}）"},
    "error.body_model": {"en": "--model {model} differs from the model in {path} ({body_model})", "zh": "--model {model} 与 {path} 中的模型（{body_model}）不同"},
    "error.body_folder": {"en": "--request-body {path} is a folder: give a file holding one JSON body", "zh": "--request-body {path} 是文件夹：请给出一个包含单个 JSON 请求体的文件"},
    "error.body_missing": {"en": "--request-body {path}: no such file", "zh": "--request-body {path}：没有这个文件"},
    "error.body_unreadable": {"en": "--request-body {path}: {why}", "zh": "--request-body {path}：{why}"},
    "error.body_large": {"en": "--request-body {path}: larger than {mib} MiB", "zh": "--request-body {path}：大于 {mib} MiB"},
    "error.body_json": {"en": "--request-body {path}:{line}: not JSON ({why}); give the request's body as the service receives it", "zh": "--request-body {path}:{line}：不是 JSON（第 {column} 列出错）；请给出服务收到的请求体原文"},
    "error.body_not_object": {"en": "--request-body {path}: a request body is a JSON object", "zh": "--request-body {path}：请求体应是一个 JSON 对象"},
    "error.body_prompt_or_messages": {"en": "--request-body {path}: a body has a text `prompt` (/v1/completions) or a `messages` list (/v1/chat/completions), one of the two", "zh": "--request-body {path}：请求体要么有文本 `prompt`（/v1/completions），要么有 `messages` 列表（/v1/chat/completions），二者取其一"},
    "error.not_host_folder": {"en": "{path}: not a folder of files collected on the GPU host", "zh": "{path}：不是从 GPU 主机收集的文件所在的文件夹"},
    "error.no_conf_files": {"en": "{path}: no *.conf files here", "zh": "{path}：这里没有 *.conf 文件"},
    "playbook.ok": {"en": "ok: {path}: {nodes} nodes in {stages} stages, {findings} findings, {covered} procedure items covered, {acted} acted on by a rule, a probe or the audit",
                    "zh": "通过：{path}：{stages} 个阶段中的 {nodes} 个节点，{findings} 项发现，覆盖 {covered} 个流程条目，其中 {acted} 个由规则、探测或审计执行"},
    "replay.not_shown": {"en": "event {seq} ({type}) not shown: {why}", "zh": "第 {seq} 个事件（{type}）无法显示：{why}"},
    "replay.heading": {"en": "{path}: hash chain verified, {n} events, target {target}", "zh": "{path}：哈希链已验证，{n} 个事件，目标 {target}"},
    # What a transcript's signature says (transcript.Signature), and so what its chain proves.
    "transcript.signature.signed": {
        "en": "signed by this machine's key: unchanged since it was written here (an edit, even one that rebuilt the hash chain, would break the signature)",
        "zh": "由本机密钥签名：写下之后没有被改动（任何改动，即使重建了哈希链，都会使签名失效）"},
    "transcript.signature.unsigned": {
        "en": "not signed: the hash chain proves only that nothing was damaged by accident (a cut write, a changed byte), not that nobody edited it on purpose and rebuilt the chain; its target and URLs are not trusted",
        "zh": "未签名：哈希链只能证明它没有意外损坏（写入中断、字节改变），不能证明没有人故意改动并重建了哈希链；其中的目标和 URL 不被信任"},
    "transcript.signature.elsewhere": {
        "en": "not signed by this machine (signed with another key): the hash chain proves only that nothing was damaged by accident, not that nobody edited it on purpose and rebuilt the chain; its target and URLs are not trusted",
        "zh": "不是由本机签名（用另一个密钥签名）：哈希链只能证明它没有意外损坏，不能证明没有人故意改动并重建了哈希链；其中的目标和 URL 不被信任"},
    "transcript.signature.mismatch": {
        "en": "signature does not match from line {line}: changed after this machine signed it (an edit that rebuilt the hash chain) or continued elsewhere; the hash chain alone cannot tell a deliberate edit; its target and URLs are not trusted",
        "zh": "从第 {line} 行起签名不符：本机签名之后被改动过（重建了哈希链的改动），或在别处被续写；仅凭哈希链无法发现故意的改动；其中的目标和 URL 不被信任"},
    # A transcript's URLs are data (cli/authority.py): shown, confirmed, never given the key unasked.
    "authority.shown": {"en": "{path} names {url} as the {flag} (this command line did not)",
                        "zh": "{path} 把 {url} 记为 {flag}（本次命令行没有给出）"},
    "authority.refused": {
        "en": "{path} names {urls}, which this command line did not: a transcript does not choose where requests and the API key go; pass {flags} to confirm",
        "zh": "{path} 记录了 {urls}，而本次命令行没有给出：记录不能决定请求和 API 密钥发往哪里；请传入 {flags} 以确认"},
    "authority.ask": {"en": "Send requests to {urls}, named only by the transcript?",
                      "zh": "向仅由记录给出的 {urls} 发送请求吗？"},
    "authority.declined": {"en": "stopped: nothing was sent to {urls}", "zh": "已停止：没有向 {urls} 发送任何内容"},
    "authority.no_key": {
        "en": "the API key is not sent to {urls}: only to URLs named on the command line ({flags})",
        "zh": "API 密钥不会发往 {urls}：只发往命令行中给出的 URL（{flags}）"},
    # export -o: nothing is overwritten by surprise (cli/output.py).
    "export.same_file": {"en": "-o {path} is the transcript being exported: it is not overwritten; choose another file",
                         "zh": "-o {path} 就是正在导出的记录：不会覆盖它；请换一个文件"},
    "export.symlink": {"en": "-o {path} is a symbolic link: it is not followed; name the file itself",
                       "zh": "-o {path} 是符号链接：不会跟随它；请直接给出文件本身"},
    "export.exists": {"en": "-o {path} already exists: pass --force to replace it", "zh": "-o {path} 已存在：传入 --force 才会替换它"},
    "error.replicas_not_urls": {"en": "{path}: the header's replicas are not a list of URLs", "zh": "{path}：头部的 replicas 不是 URL 列表"},
    "replay.incomplete": {"en": " (incomplete: continue it with 'latency-wizard resume')", "zh": "（未完成：用 'latency-wizard resume' 继续）"},
    "path.direct": {"en": "direct", "zh": "直连"},
    "path.proxy": {"en": "proxy", "zh": "经代理"},
    "walk.round_title": {"en": "{label}: {path} path, {url}", "zh": "{label}：{path}路径，{url}"},
    "validation_on": {"en": "Validation, {path} path (every change together)",
                      "zh": "验证，{path}路径（全部变更合计）"},
    "validation_again": {"en": "Validation, {path} path (the same server, measured again)",
                         "zh": "验证，{path}路径（同一服务器再测一次）"},
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
    "incident": {"en": "incident", "zh": "故障"},
    "final": {"en": "final", "zh": "最终"},
    # The first round of a server that was measured only once it was fixed (it did not start).
    "after_fix": {"en": "after the fix", "zh": "修复后"},
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
    "workload.incident": {"en": "the incident's", "zh": "故障时的请求形态"},
    "workload.own": {"en": "the wizard's own; run --request-body or --model, --endpoint, ... give the incident's",
                     "zh": "向导自带的请求形态；故障时的请求形态可用 run --request-body 或 --model、--endpoint 等给出"},
    "workload.tokens": {"en": "{input} words in, {output} tokens out", "zh": "输入 {input} 词，输出 {output} token"},
    "workload.body": {"en": "the body of {file}", "zh": "{file} 中的请求正文"},
    "server_version": {"en": "Server version: {version}; playbook: {playbook}",
                       "zh": "服务版本：{version}；诊断手册：{playbook}"},
    "rounds_label": {"en": "Rounds", "zh": "测量轮次"},
    "more_flags": {"en": "(+{n} more)", "zh": "（另有 {n} 条）"},
    "rounds_count": {"en": "{total} rounds ({failed} failed)", "zh": "共 {total} 轮（{failed} 轮失败）"},
    "chart.baseline": {"en": "{segment} p50 (ms): incident and final", "zh": "{segment} p50（ms）：故障时与最终"},
    "chart.baseline_after_fix": {"en": "{segment} p50 (ms): after the fix and final",
                                 "zh": "{segment} p50（ms）：修复后与最终"},
    "chart.change": {"en": "{segment} p50 (ms), {parameter}", "zh": "{segment} p50（ms），{parameter}"},
    # the walk's notes (walk/session.py, note), recorded in every language
    "note.skipped_because": {"en": "probe {probe} ({label}) skipped: {why}", "zh": "跳过探测 {probe}（{label}）：{why}"},
    "note.skipped": {"en": "probe {probe} ({label}) skipped (its condition does not hold)",
                     "zh": "跳过探测 {probe}（{label}）：条件不满足"},
    "note.sweep": {"en": "{code} found on the closing sweep: its evidence came after {node} ran (or that step was not on this walk's route)",
                   "zh": "{code} 在收尾复查中发现：其证据在 {node} 运行之后才出现（或该步骤不在本次诊断的路线上）"},
    "note.no_side_by_side": {"en": "{after} is not set beside {before}: {missing} measured no latency evidence (not run, failed queries, or Offline)",
                             "zh": "{after} 未与 {before} 对照：{missing} 没有测到延迟证据（未运行、查询失败或 Offline）"},
    "note.other_specs": {"en": "{after} is not set beside {before}: they ran under different specs",
                         "zh": "{after} 未与 {before} 对照：两者的请求规格不同"},
    "note.no_value": {"en": "{code}: no value to apply ({why})", "zh": "{code}：没有可应用的值（{why}）"},
    "note.not_applied": {"en": "{code}: change not applied ({why})", "zh": "{code}：变更未应用（{why}）"},
    "note.refused": {"en": "refused: {why}; one change per round (P0.2), so its effect can be attributed",
                     "zh": "已拒绝：{why}；每轮只改一项（P0.2），效果才能归因"},
    "note.nothing_to_repeat": {"en": "nothing measured yet to repeat after this change",
                               "zh": "还没有可在变更后重复的测量"},
    "note.judged_at_start": {"en": "{code}: judged when the server answers again, from its answer and its log",
                             "zh": "{code}：待服务再次响应后，根据其响应和日志判断"},
    "note.log_unchanged": {"en": "{code}: the log holds nothing written since the failed start, so the "
                                 "restarted server's settings cannot be read there: no verdict (let vLLM "
                                 "write its output to the --vllm-log file)",
                           "zh": "{code}：日志中没有失败启动之后写入的内容，读不到重启后服务的设置，因此不作结论"
                                 "（让 vLLM 把输出写入 --vllm-log 指定的文件）"},
    "note.log_unchanged_serving": {"en": "{code}: the log holds nothing written since the change, so the "
                                         "restarted server cannot be read there: no verdict (restart vLLM "
                                         "with the change, its output in the --vllm-log file)",
                                   "zh": "{code}：日志中没有变更之后写入的内容，读不到重启后的服务，因此不作结论"
                                         "（带着修改重启 vLLM，并把输出写入 --vllm-log 指定的文件）"},
    "note.start_after_serving": {"en": "but {code} came while the server was serving, after its start: a start "
                                       "without it shows only that the server starts; only a round under the "
                                       "load it came under, with the log read again, can show it gone",
                                 "zh": "但 {code} 出现在服务运行期间、启动之后：新的一次启动中没有它，只说明服务能启动；"
                                       "只有在它出现时的负载下再测一轮并重新读取日志，才能说明它已消除"},
    "note.refused_start_args_missing": {"en": "the refused start logged no configuration (no `non-default "
                                              "args` line in its log), so the one-change check has nothing "
                                              "to compare: it needs the refused start's log from its first line",
                                        "zh": "被拒绝的启动没有记录配置（日志中没有 `non-default args` 行），"
                                              "单项修改核对无从比较：需要被拒绝那次启动从第一行开始的日志"},
    "note.served_start_args_missing": {"en": "the earlier start logged no configuration (no `non-default "
                                             "args` line in its log), so the one-change check has nothing to "
                                             "compare: it needs the earlier start's log from its first line",
                                       "zh": "之前的那次启动没有记录配置（日志中没有 `non-default args` 行），"
                                             "单项修改核对无从比较：需要之前那次启动从第一行开始的日志"},
    "note.new_start_args_missing": {"en": "the new start logged no configuration (no `non-default args` "
                                          "line in its log), so the one-change check has nothing to "
                                          "compare: it needs the new start's log from its first line",
                                    "zh": "新的一次启动没有记录配置（日志中没有 `non-default args` 行），"
                                          "单项修改核对无从比较：需要新启动从第一行开始的日志"},
    "note.no_earlier": {"en": "no earlier {round} round to compare with", "zh": "没有更早的 {round} 轮次可比较"},
    "note.still_current": {"en": "{round}: no change since its last round touches its path ({changes}); its figures stand, no request sent",
                           "zh": "{round}：上次测量后的改动都不涉及它的访问路径（{changes}）；沿用上次的数据，不发送请求"},
    "note.still_current_unchanged": {"en": "{round}: nothing was changed since its last round; its figures stand, no request sent",
                                     "zh": "{round}：上次测量后没有任何改动；沿用上次的数据，不发送请求"},
    "note.validation_still_current": {"en": "{round}: not run; no change since {before} touches its path ({changes}), so it would measure {before}'s state again: {before}'s figures stand",
                                      "zh": "{round}：未运行；{before} 之后的改动都不涉及它的访问路径（{changes}），再测只会重复 {before} 的状态：沿用 {before} 的数据"},
    "note.validation_unchanged": {"en": "{round}: not run; nothing was changed since {before}, so it would measure {before}'s state again: {before}'s figures stand",
                                  "zh": "{round}：未运行；{before} 之后没有任何改动，再测只会重复 {before} 的状态：沿用 {before} 的数据"},
    "note.baseline_disagrees": {"en": "{round} and its repeat disagree beyond their own intervals ({moved}): measuring the repeat again ({again})",
                                "zh": "{round} 与其重复测量的差异超出各自的区间（{moved}）：再测一次（{again}）"},
    "note.baseline_unstable": {"en": "{round} is not stable: measured again, its repeat still disagrees ({moved}); a rule that depends on which of the two is believed is inconclusive",
                               "zh": "{round} 不稳定：再测一次后仍不一致（{moved}）；取决于相信哪一轮的规则无定论"},
    "reason.baseline_unstable": {"en": "the baseline is not stable ({round}, A vs A: {moved})",
                                 "zh": "基线不稳定（{round}，A/A 对比：{moved}）"},
    "note.inconclusive": {"en": "a verdict is inconclusive after {n} round(s): measuring {round} again ({label}) to narrow its interval",
                          "zh": "{n} 轮后结论仍无定论：再次测量 {round}（{label}）以缩小区间"},
    "note.contended_again": {"en": "the measuring client was contended in {round} ({why}): measuring it again ({n} of {most})",
                             "zh": "{round} 中测量客户端受到争用（{why}）：再次测量（第 {n} 次，最多 {most} 次）"},
    "note.contended_over_cap": {"en": "the measuring client was contended in {round} ({why}): not measured again, its {n} "
                                      "requests would pass --max-requests {most}",
                                "zh": "{round} 中测量客户端受到争用（{why}）：不再测量，它的 {n} 个请求会超出 --max-requests {most}"},
    "walk.engine_serving": {"en": "  engine: no sign it died while serving (/health {health})",
                            "zh": "  引擎：没有服务中死亡的迹象（/health {health}）"},
    "walk.inconclusive": {"en": "{code} inconclusive: the measuring client was contended ({rounds}); {reason}",
                          "zh": "{code} 尚无定论：测量客户端受到争用（{rounds}）；{reason}"},
    "inconclusive_label": {"en": "Inconclusive", "zh": "尚无定论"},
    "inconclusive_rules": {"en": "the measuring client was contended, so these could not be judged: {codes}",
                           "zh": "测量客户端受到争用，以下各项无法判断：{codes}"},
    "no_cause_inconclusive": {"en": "no cause found, but not every check could be judged (below)",
                              "zh": "未找到原因，但并非每项检查都能判断（见下）"},
    "cmp.contended": {"en": "inconclusive (client contended)",
                      "zh": "尚无定论（客户端受到争用）"},
    "note.not_compared": {"en": "not compared with the {against}: {why}", "zh": "未与{against}比较：{why}"},
    # an operator's decision, as recorded (operator.Decision.note)
    # The playbook's own reasons a change is not offered (computed ones stay as recorded).
    "not_applicable.the walk stopped: nothing to measure at this target": {
        "en": "the walk stopped: nothing to measure at this target",
        "zh": "诊断已停止：这个目标上没有可测量的对象"},
    "decision.no change proposed": {"en": "no change proposed", "zh": "没有建议的变更"},
    "decision.auto mode proposes changes; it applies none to systems it does not own": {
        "en": "auto mode proposes changes; it applies none to systems it does not own",
        "zh": "自动模式只建议变更，不会改动不属于它的系统"},
    "decision.skipped by the answers file": {"en": "skipped by the answers file", "zh": "答案文件选择跳过"},
    "decision.applied by the operator (answers file)": {"en": "applied by the operator (answers file)",
                                                        "zh": "由操作者应用（答案文件）"},
    "decision.nothing here can apply this change": {"en": "nothing here can apply this change",
                                                    "zh": "这里没有能应用此变更的途径"},
    "decision.skipped by the operator": {"en": "skipped by the operator", "zh": "操作者选择跳过"},
    "decision.applied by the operator": {"en": "applied by the operator", "zh": "由操作者应用"},
    "decision.the wizard lowered its own concurrency and measures again": {
        "en": "the wizard lowered its own concurrency and measures again", "zh": "向导降低了自身的并发度并重新测量"},
    # the measuring client's verdict on itself (probes.load.ClientHealth)
    "client.saturated": {"en": "the client used {cpu} of a core and its event loop woke {lag} ms late (p90; {floor} ms with nothing in flight): its own work set the pace, its timings overstate latency",
                         "zh": "客户端占用了一个核心的 {cpu}，事件循环晚醒 {lag} ms（p90；空闲时 {floor} ms）：节奏由它自身的工作决定，测得的延迟偏高"},
    "client.contended": {"en": "the client was kept waiting for a CPU (event-loop lag p90 {lag} ms at only {cpu} of a core): other processes share this machine's cores; timings may be up to {high} ms high",
                         "zh": "客户端在等待 CPU（事件循环延迟 p90 {lag} ms，仅占一个核心的 {cpu}）：其他进程共用本机核心；计时最多可能偏高 {high} ms"},
    "client.send_delayed": {"en": "the client held its requests back: {delay} ms (p99 {delay99} ms) from stamp to the request written out (pool wait p99 {pool} ms, {cpu} of a core): fewer requests were in flight than asked, and each arriving event waited its turn",
                            "zh": "客户端延后了请求：从打时间戳到写出请求 {delay} ms（p99 {delay99} ms；连接池等待 p99 {pool} ms，占一个核心的 {cpu}）：在途请求少于要求，每个到达的事件都在排队"},
    # the host probe's notes (probes.host)
    "host.collect": {"en": "on the GPU host run: `{commands}`; then pass that folder (with the vLLM log) as --host-evidence DIR",
                     "zh": "在 GPU 主机上运行：`{commands}`；然后把该文件夹（连同 vLLM 日志）作为 --host-evidence DIR 传入"},
    "host.no_driver": {"en": "no NVIDIA driver on this machine (no NVML, no nvidia-smi): GPU count and links are unknown; if vLLM runs elsewhere, {hint}",
                       "zh": "本机没有 NVIDIA 驱动（没有 NVML，也没有 nvidia-smi）：GPU 数量和互联未知；如果 vLLM 在别处运行，{hint}"},
    "host.no_files": {"en": "{folder} holds no files; {hint}", "zh": "{folder} 中没有文件；{hint}"},
    "host.no_cores": {"en": "physical cores unknown; {hint}", "zh": "物理核心数未知；{hint}"},
    "host.unreadable": {"en": "{name}: cannot read ({why})", "zh": "{name}：无法读取（{why}）"},
    "host.unrecognised": {"en": "{name}: not recognised (expected lscpu, nvidia-smi, env or a vLLM log)",
                          "zh": "{name}：无法识别（应为 lscpu、nvidia-smi、env 的输出或 vLLM 日志）"},
    "host.nvml_failed": {"en": "NVML answered but failed: {why}", "zh": "NVML 有应答但失败了：{why}"},
    "host.smi_silent": {"en": "nvidia-smi did not answer within {seconds} s (a wedged driver?)",
                        "zh": "nvidia-smi 在 {seconds} 秒内没有应答（驱动卡住了？）"},
    "host.smi_failed": {"en": "nvidia-smi failed: {why}", "zh": "nvidia-smi 失败：{why}"},
    "host.no_links": {"en": "GPU links unknown: add the output of `nvidia-smi topo -m`",
                      "zh": "GPU 互联未知：请加上 `nvidia-smi topo -m` 的输出"},
    "host.elsewhere": {"en": "vLLM runs on another machine ({target}); {hint}", "zh": "vLLM 在另一台机器上运行（{target}）；{hint}"},
    "host.cpu_backend": {"en": "vLLM runs on this machine without a GPU (its CPU backend): the engine's busy loop and the measuring client share these cores",
                         "zh": "vLLM 在本机无 GPU 运行（CPU 后端）：引擎的忙循环与测量客户端共用这些核心"},
    # the operator's prompts (ui/interactive.py, InteractiveOperator.decide)
    "decide.prompt": {"en": "{code}: apply `{apply}` ({layer} {parameter})?",
                      "zh": "{code}：应用 `{apply}`（{layer} {parameter}）吗？"},
    "confirm.yes": {"en": "yes", "zh": "是"},
    "confirm.no": {"en": "no", "zh": "否"},
    # A yes/no question takes a whole word and Enter (prompts.py); its default is shown in capitals
    # (the English hint brings its own space, the Chinese none before a full-width bracket).
    "confirm.hint_yes": {"en": " (Y/n)", "zh": "（是/否，回车 = 是）"},
    "confirm.hint_no": {"en": " (y/N)", "zh": "（是/否，回车 = 否）"},
    "confirm.hint": {"en": " (y/n)", "zh": "（是/否）"},
    "confirm.refused": {"en": "  answer yes or no (y or n), then Enter",
                        "zh": "  请回答 是 或 否（也可输入 y 或 n），然后按回车"},
    "choose.refused": {"en": "  type the number of your choice ({numbers}), then Enter: a change is applied only on an explicit answer",
                       "zh": "  请输入所选项的编号（{numbers}），然后按回车：只有明确的回答才会应用改动"},
    "decide.arrows": {"en": "(Use arrow keys)", "zh": "（用方向键选择）"},
    "decide.for_me": {"en": "apply it for me", "zh": "替我应用"},
    "decide.skip": {"en": "not applied (skip)", "zh": "不应用（跳过）"},
    "decide.by_hand": {"en": "I applied it myself", "zh": "我已自行应用"},
    "decide.which": {"en": "Which ONE parameter did you change?", "zh": "你改了哪一个参数（只能一个）？"},
    "decide.before": {"en": "Its value before:", "zh": "之前的值："},
    "decide.after": {"en": "Its value now:", "zh": "现在的值："},
    "decide.restarted": {"en": "Did the server restart (the next requests are cold)?",
                         "zh": "服务重启了吗（接下来的请求是冷启动）？"},
    # the closing audit's details (audit.probe), quoted by LAT090-093's evidence
    "serving.dead_in_log": {"en": "the vLLM log reports the engine dead at line {line}, after the server had started; /health answers {health} now",
                            "zh": "vLLM 日志在第 {line} 行报告引擎已崩溃（服务启动之后）；/health 现在返回 {health}"},
    "serving.dead_by_requests": {"en": "every request of {rounds} failed after the server had answered /health 200 at the start; /health answers {health} now",
                                 "zh": "服务启动时 /health 返回 200，之后 {rounds} 的每个请求都失败了；/health 现在返回 {health}"},
    "audit.cold_steady_mixed": {"en": "measured right after a restart with no warm-up: {rounds}",
                                "zh": "重启后未预热就测量：{rounds}"},
    "audit.multiple_changes": {"en": "changed without a measurement in between: {changes}",
                               "zh": "两次变更之间没有测量：{changes}"},
    "audit.total_time_only": {"en": "no TTFT/TPOT in: {rounds}", "zh": "以下轮次没有 TTFT/TPOT：{rounds}"},
    "audit.cross_scenario": {"en": "comparisons across fingerprints: {n}", "zh": "跨越不同请求规格的比较：{n} 次"},
    "audit.budget_unjudged": {
        "en": "a token budget too large (LAT011) cannot be judged without the vLLM log here: the long round's {prompt}-token prompt shows a budget of at most {prompt}, and one is claimed only above twice this GPU class's default ({bar}); pass --vllm-log",
        "zh": "此处没有 vLLM 日志就无法判断 token 预算是否过大（LAT011）：长提示轮次的 {prompt} token 提示最多只能显示 {prompt} 的预算，而只有超过该 GPU 类别默认值的两倍（{bar}）才会判定；请提供 --vllm-log",
    },
    # the server's own word on a change (config_check.judge, engine)
    "check.not_taken": {"en": "the server still reports the same {name}: the change did not take",
                        "zh": "服务报告的 {name} 没有变：变更没有生效"},
    "check.not_observable": {"en": "the server's self-description does not include {name}; not checked",
                             "zh": "服务的自我描述中没有 {name}；未核对"},
    "check.confirmed": {"en": "confirmed by the server: {change}", "zh": "服务已确认：{change}"},
    "check.other": {"en": "the server reports {changes} (declared: {declared})",
                    "zh": "服务报告 {changes}（声明的是：{declared}）"},
    "check.different_server": {"en": "a different server answers at {target} ({fact} {was} -> {now}): its rounds are not compared with the earlier ones",
                               "zh": "{target} 上应答的是另一个服务（{fact} {was} -> {now}）：它的轮次不与之前的比较"},
    # one-line errors (errors.WizardError.said, cli.main)
    "error.line": {"en": "latency-wizard {command}: error: {message}", "zh": "latency-wizard {command}：错误：{message}"},
    "error.cannot_read": {"en": "cannot read {path}: {why}", "zh": "无法读取 {path}：{why}"},
    "error.not_http_url": {"en": "{url} is not an http(s) URL", "zh": "{url} 不是 http(s) URL"},
    "error.base_url": {"en": "{url}: give the server's base URL without /v1 ({base}); the wizard adds the paths",
                       "zh": "{url}：请给出不带 /v1 的服务基础 URL（{base}）；向导会自己加上路径"},
    "error.not_seconds": {"en": "{text} is not a number of seconds", "zh": "{text} 不是秒数"},
    "error.seconds_above_0": {"en": "{text}: give a number of seconds above 0", "zh": "{text}：请给出大于 0 的秒数"},
    "error.cannot_reach": {"en": "cannot reach {url}: {why}", "zh": "无法连接 {url}：{why}"},
    "error.log_hint": {"en": "{message} (if the server failed to start, {hint} tells why)",
                       "zh": "{message}（如果服务没能启动，{hint} 会说明原因）"},
    "error.cannot_list_models": {"en": "cannot list models at {url}: {why}", "zh": "无法在 {url} 列出模型：{why}"},
    # a command's flags checked before anything runs (cli/*.py)
    "error.no_terminal": {"en": "no terminal to ask questions on: pass --auto or --answers FILE",
                          "zh": "没有可以提问的终端：请加 --auto 或 --answers FILE"},
    "error.target_required": {"en": "--target is required (or --prometheus to find the replica to walk)",
                              "zh": "需要 --target（或用 --prometheus 找出要诊断的副本）"},
    "error.no_replica_differs": {"en": "no replica differs from the rest over the last {window}: pass --target to walk one (a replica or the service URL); 'latency-wizard probe fleet' shows them all",
                                 "zh": "最近 {window} 内没有副本与其他副本不同：请用 --target 指定一个来诊断（一个副本或服务的 URL）；'latency-wizard probe fleet' 会列出全部副本"},
    "error.replica_no_url": {"en": "replica {instance} differs, but Prometheus' targets give no URL for it: pass --target",
                             "zh": "副本 {instance} 与其他副本不同，但 Prometheus 的 targets 没有给出它的 URL：请用 --target 指定"},
    "error.host_evidence_file": {"en": "--host-evidence {path} is a file: give the folder it is in, or a folder of files collected on the GPU host (see 'latency-wizard probe host --help')",
                                 "zh": "--host-evidence {path} 是一个文件：请给出它所在的文件夹，或放着在 GPU 主机上收集的文件的文件夹（见 'latency-wizard probe host --help'）"},
    "error.flag_missing": {"en": "{flag} {path}: no such file or folder", "zh": "{flag} {path}：文件或文件夹不存在"},
    "error.flag_unreadable": {"en": "{flag} {path}: permission denied (it cannot be read)",
                              "zh": "{flag} {path}：没有权限（无法读取）"},
    "error.flag_said": {"en": "{flag} {message}", "zh": "{flag} {message}"},
    "error.cannot_write": {"en": "cannot write {path}: {why}", "zh": "无法写入 {path}：{why}"},
    "error.not_count": {"en": "{text} is not a whole number of 0 or more", "zh": "{text} 不是大于或等于 0 的整数"},
    "error.transcript_parent_file": {"en": "cannot write the transcript at {path}: {parent} is a file, not a folder",
                                     "zh": "无法在 {path} 写入记录：{parent} 是文件，不是文件夹"},
    "error.cannot_write_transcript": {"en": "cannot write the transcript at {path}: {why}",
                                      "zh": "无法在 {path} 写入记录：{why}"},
    "error.cannot_write_host_evidence": {"en": "cannot write host evidence to {path}: {why}",
                                         "zh": "无法把主机证据写入 {path}：{why}"},
    "error.cannot_open_log": {"en": "cannot open log file {path}: {why}", "zh": "无法打开日志文件 {path}：{why}"},
    "error.completed_session": {"en": "{path} is a completed session; see it with 'latency-wizard replay'",
                                "zh": "{path} 是一次已完成的会话；请用 'latency-wizard replay' 查看"},
    "error.playbook_changed": {"en": "the playbook changed since this session started; it cannot be resumed safely",
                               "zh": "这次会话开始后 playbook 改变了；无法安全地继续"},
    "error.not_sessions_url": {"en": "--{name} is not the session's {name} ({recorded})",
                               "zh": "--{name} 不是会话的 {name}（{recorded}）"},
    "error.masked_url": {"en": "the session's {name} {recorded} had credentials, masked in its transcript: give the URL again with --{name}",
                         "zh": "会话的 {name} {recorded} 带有凭据，在记录中已被遮盖：请用 --{name} 再次给出这个 URL"},
    "error.at_least_1": {"en": "{flag} must be at least 1", "zh": "{flag} 至少为 1"},
    "error.missing_extra": {"en": "{command} needs the optional '{extra}' part ({missing} not installed): "
                                   "pip install 'latency-wizard[{extra}]'",
                             "zh": "{command} 需要可选组件 '{extra}'（未安装 {missing}）："
                                   "pip install 'latency-wizard[{extra}]'"},
    "error.rounds_env": {"en": "LATENCY_WIZARD_ROUNDS must be {choices}, got {value!r}",
                         "zh": "LATENCY_WIZARD_ROUNDS 必须是 {choices}，收到的是 {value!r}"},
    "error.triage_scrapes": {"en": "--scrapes must be between 2 and 20, got {n}",
                             "zh": "--scrapes 必须在 2 到 20 之间，给出的是 {n}"},
    "error.target_not_http": {"en": "--target must be an http(s) URL, got {url}", "zh": "--target 必须是 http(s) URL，收到的是 {url}"},
    "error.flag_not_http": {"en": "{flag} {url} is not an http(s) URL", "zh": "{flag} {url} 不是 http(s) URL"},
    "error.warmup": {"en": "--warmup must be 0 or more", "zh": "--warmup 必须大于或等于 0"},
    "error.duration": {"en": "--duration must be positive", "zh": "--duration 必须大于 0"},
    "error.qps_duration": {"en": "--qps and --min-duration must be positive", "zh": "--qps 和 --min-duration 必须大于 0"},
    "error.unknown_preset": {"en": "unknown preset {preset}; choose one of: {presets}",
                             "zh": "未知的预设 {preset}；请从这些中选一个：{presets}"},
    "error.find_peak": {"en": "--find-peak applies to the Server scenario only", "zh": "--find-peak 只适用于 Server 场景"},
    "error.log_line_too_long": {"en": "{path}: more than {most} characters without a newline: not a text log (stopped reading)",
                                "zh": "{path}：超过 {most} 个字符没有换行：不是文本日志（已停止读取）"},
    "error.yaml_aliases": {"en": "YAML aliases that stand for more than {most} values (an alias bomb?): write the values out",
                           "zh": "YAML 别名展开后超过 {most} 个值（别名炸弹？）：请直接写出这些值"},
    "error.yaml_alias_loop": {"en": "a YAML alias inside the value it names (a loop): write the value out",
                              "zh": "YAML 别名出现在它所指的值内部（循环）：请直接写出该值"},
    "error.file_too_large": {"en": "{path}: more than {most}: too large for this input (is it the right file?)",
                             "zh": "{path}：超过 {most}：作为此输入过大（是这个文件吗？）"},
    "error.yaml_too_deep": {"en": "YAML nested deeper than {depth} levels: write it flatter",
                            "zh": "YAML 嵌套超过 {depth} 层：请写得扁平一些"},
    "error.empty_file": {"en": "{path} is empty", "zh": "{path} 是空的"},
    "error.no_answer_within": {"en": "{url} did not answer within {seconds} s", "zh": "{url} 在 {seconds} 秒内没有应答"},
    "error.answered_http": {"en": "{url} answered HTTP {status}", "zh": "{url} 应答了 HTTP {status}"},
    "error.too_few_replicas": {"en": "fewer than two replica URLs: give --replica URL (twice or more), --nginx-conf with an upstream block, or --prometheus",
                               "zh": "副本 URL 不足两个：请给出 --replica URL（两次或更多）、带 upstream 块的 --nginx-conf，或 --prometheus"},
    "error.engine_flag_form": {"en": "--engine-flag {item}: expected NAME=VALUE, e.g. max_num_seqs=4",
                               "zh": "--engine-flag {item}：应为 NAME=VALUE，例如 max_num_seqs=4"},
    "error.engine_flag_name": {"en": "--engine-flag {item}: the demo can set {names}", "zh": "--engine-flag {item}：演示可以设置的是 {names}"},
    "error.engine_flag_bool": {"en": "--engine-flag {item}: {name} is True or False", "zh": "--engine-flag {item}：{name} 只能是 True 或 False"},
    "error.unknown_scenario": {"en": "unknown scenario {name}; choose one of: {names}", "zh": "未知的场景 {name}；请从这些中选一个：{names}"},
    "interrupted.line": {"en": "latency-wizard {command}: interrupted", "zh": "latency-wizard {command}：已中断"},
    "oserror.ENOENT": {"en": "no such file or folder", "zh": "文件或文件夹不存在"},
    "oserror.EACCES": {"en": "permission denied", "zh": "没有权限"},
    "oserror.EISDIR": {"en": "it is a folder", "zh": "这是一个文件夹"},
    "oserror.ENOTDIR": {"en": "a part of the path is no folder", "zh": "路径中的某一段不是文件夹"},
    # why a request got no HTTP answer (probes.reach)
    "reach.not_tls": {"en": "the server does not speak TLS (https); if it serves plain HTTP, use {url}",
                      "zh": "服务不支持 TLS（https）；如果它提供的是普通 HTTP，请用 {url}"},
    "reach.tls_failed": {"en": "the TLS handshake failed: {reason}", "zh": "TLS 握手失败：{reason}"},
    "reach.no_name": {"en": "cannot resolve the host name {host} (a typo, or not in this DNS?)",
                      "zh": "无法解析主机名 {host}（拼写错误，或不在此 DNS 中？）"},
    "reach.connect_timeout": {"en": "no answer within the connect timeout (a firewall, or the wrong host?)",
                              "zh": "连接超时内没有应答（防火墙，或主机不对？）"},
    "reach.read_timeout": {"en": "it took the request and then sent nothing within the read timeout",
                           "zh": "它接受了请求，但在读取超时内什么也没有发送"},
    "reach.refused": {"en": "nothing listens there (connection refused): is the server running on this port?",
                      "zh": "该端口没有服务在监听（连接被拒绝）：服务是否在这个端口上运行？"},
    "reach.not_http": {"en": "it answered, but not in HTTP (it sent {preview}): is this the server's port?",
                       "zh": "它有应答，但不是 HTTP（发送了 {preview}）：这是服务的端口吗？"},
    "reach.closed": {"en": "it accepted the connection and closed it without an HTTP answer: not an HTTP server, or not this port",
                     "zh": "它接受了连接，但没有 HTTP 应答就关闭了：不是 HTTP 服务，或不是这个端口"},
    # the demo's own lines, before the walk
    "demo.starting": {"en": "starting the simulator (scenario {scenario}) ...", "zh": "正在启动模拟器（场景 {scenario}）……"},
    "demo.sim": {"en": "simulator: {url}  (vLLM log: {log})", "zh": "模拟器：{url}（vLLM 日志：{log}）"},
    "demo.nginx": {"en": "nginx:     {url}  (nginx's defaults: proxy_buffering on)",
                   "zh": "nginx：{url}（nginx 默认配置：proxy_buffering on）"},
    "demo.upstream": {"en": "upstream:  the simulator runs with --http h11: it answers nginx's HTTP/1.0 request close-delimited, which nginx's default proxy_buffering holds back in bursts; a stock vLLM (httptools) answers chunked and nginx passes its events through",
                      "zh": "上游：模拟器以 --http h11 运行，对 nginx 的 HTTP/1.0 请求以关闭连接界定正文作答，nginx 默认的 proxy_buffering 会把它成批攒住；标准 vLLM（httptools）以 chunked 作答，nginx 会逐个转发事件"},
    "demo.kept": {"en": "kept: {folder}", "zh": "已保留：{folder}"},
    "demo.resume_hint": {"en": "the demo's processes are stopped with it; start it again with: latency-wizard demo",
                         "zh": "演示的进程随之停止；要重新开始：latency-wizard demo"},
    "note.reading_log": {"en": "{message}; reading the server's log instead", "zh": "{message}；改为读取服务的日志"},
    "note.wrote": {"en": "wrote {path}", "zh": "已写入 {path}"},
    "note.sim_demo_key": {"en": "latency-wizard sim: no key given; using the public demo key '{demo_key}' (set VLLM_API_KEY to choose one)",
                          "zh": "latency-wizard sim：没有给出密钥；使用公开的演示密钥 '{demo_key}'（设置 VLLM_API_KEY 可自选一个）"},
    "demo.no_nginx": {"en": "nginx is not installed: walking without the proxy leg (Debian: apt-get install nginx)",
                      "zh": "没有安装 nginx：诊断不含代理这一段（Debian：apt-get install nginx）"},
    # the walk in the terminal (live, replay): render_events
    "walk.not_asked_earlier": {"en": "  {label}: {value}  (answered earlier; not asked)",
                               "zh": "  {label}：{value}（之前已回答；不再询问）"},
    "walk.not_asked": {"en": "  {label}: {value}  (from the evidence: {source}; not asked)",
                       "zh": "  {label}：{value}（来自证据：{source}；不再询问）"},
    "walk.answer": {"en": "  {label}: {value}", "zh": "  {label}：{value}"},
    "walk.default_from": {"en": " from the evidence ({source})", "zh": "，来自证据（{source}）"},
    "walk.question_default": {"en": "  {label}: default {default}{source}", "zh": "  {label}：默认值 {default}{source}"},
    "walk.replay_question": {"en": "? {text}  [default: {default}{source}]", "zh": "？{text}  [默认值：{default}{source}]"},
    "walk.shape_no_body": {"en": "  request shape: no incident body given (run --request-body): the prefix cache is not checked against it", "zh": "  请求形态：未提供故障请求体（run --request-body）：不针对它检查前缀缓存"},
    "walk.shape_fixed": {"en": "  request shape: nothing in the incident's body changes from one request to the next", "zh": "  请求形态：故障请求体中没有随请求变化的内容"},
    "walk.shape_varies": {"en": "  request shape: the body's {kind} '{text}' changes per request, after word {word}; {share} of the prompt follows it", "zh": "  请求形态：请求体中的{kind}“{text}”每个请求都不同，位于第 {word} 个词之后；提示中有 {share} 在它之后"},
    "walk.fleet_off": {"en": "  fleet: not read (no --prometheus URL given)", "zh": "  fleet：未读取（没有提供 --prometheus URL）"},
    "walk.fleet_failed": {"en": "  fleet: Prometheus gave no answer: {error}", "zh": "  fleet：Prometheus 没有应答：{error}"},
    "walk.replicas_off": {"en": "  replicas: not measured ({why})", "zh": "  副本：未测量（{why}）"},
    "replicas.too_few": {"en": "fewer than two replica URLs known (--replica, an nginx upstream in --nginx-conf, or Prometheus' targets with --prometheus)",
                         "zh": "已知的副本 URL 少于两个（--replica、--nginx-conf 中的 nginx upstream，或 --prometheus 的 Prometheus 目标）"},
    "replicas.from": {"en": "  replicas from {source}:", "zh": "  副本（来自 {source}）："},
    "replicas.line": {"en": "    {url}: TTFT p50 {ttft}, TPOT p50 {tpot}", "zh": "    {url}：TTFT p50 {ttft}，TPOT p50 {tpot}"},
    "replicas.share": {"en": ", {share} of the balancer's requests", "zh": "，负载均衡分到 {share} 的请求"},
    "replicas.slow": {"en": "; slow: {cause} ({why})", "zh": "；偏慢：{cause}（{why}）"},
    "log.replica": {"en": " (replica {replica} of {count})", "zh": "（副本 {replica}，共 {count} 个）"},
    "log.replica_line": {"en": "    {replica}: vLLM {version}, max_num_seqs {seqs}, KV cache {kv}, errors: {errors}",
                         "zh": "    {replica}：vLLM {version}，max_num_seqs {seqs}，KV 缓存 {kv}，错误：{errors}"},
    "log.differ": {"en": "    differ between replicas: {text}", "zh": "    副本之间的差异：{text}"},
    # a question's answer, named for a person (the question's id is the answers file's key)
    "answer.api": {"en": "API", "zh": "API"},
    "answer.run_loadgen": {"en": "validate with LoadGen", "zh": "用 LoadGen 验证"},
    "answer.gpus": {"en": "GPUs", "zh": "GPU 数量"},
    "answer.physical_cores": {"en": "physical cores", "zh": "物理核心数"},
    "answer.tensor_parallel_size": {"en": "--tensor-parallel-size", "zh": "--tensor-parallel-size"},
    "answer.pipeline_parallel_size": {"en": "--pipeline-parallel-size", "zh": "--pipeline-parallel-size"},
    "answer.interconnect": {"en": "GPU link", "zh": "GPU 互联"},
    "answer.nodes": {"en": "nodes", "zh": "节点数"},
    "answer.nginx_dump": {"en": "nginx -T output", "zh": "nginx -T 输出"},
    "answer.proxy_read_timeout_s": {"en": "proxy_read_timeout (s)", "zh": "proxy_read_timeout（秒）"},
    "answer.proxy_connect_timeout_s": {"en": "proxy_connect_timeout (s)", "zh": "proxy_connect_timeout（秒）"},
    "answer.continue_all": {"en": "walk the skipped stages", "zh": "继续被跳过的阶段"},
    "answer.restarted": {"en": "vLLM running again", "zh": "vLLM 已重新运行"},
    # where an answer from the evidence came from (a fact's first key)
    "source.session": {"en": "the walk's workload", "zh": "本次诊断的负载设置"},
    "source.endpoints": {"en": "the server's endpoints", "zh": "服务端点"},
    "source.vllmlog": {"en": "vLLM log", "zh": "vLLM 日志"},
    "source.host": {"en": "the GPU host's files", "zh": "GPU 主机的文件"},
    "source.nginxconf": {"en": "nginx config", "zh": "nginx 配置"},
    "source.location": {"en": "nginx config, location {path}", "zh": "nginx 配置，location {path}"},
    "source.answers": {"en": "an earlier answer", "zh": "之前的回答"},
    "source.install": {"en": "this machine's install", "zh": "本机安装的组件"},
    # values a probe records as words of its own
    "value.interconnect.single": {"en": "one GPU (no link)", "zh": "单 GPU（无互联）"},
    "value.interconnect.mixed": {"en": "mixed", "zh": "混合"},
    # English keeps the probe's own word (the walk's host line printed it so).
    "value.interconnect.nvlink": {"en": "nvlink", "zh": "NVLink"},
    "value.interconnect.pcie": {"en": "pcie", "zh": "PCIe"},
    "value.interconnect.unknown": {"en": "unknown", "zh": "未知"},
    "value.varying_kind.timestamp": {"en": "timestamp", "zh": "时间戳"},
    "value.varying_kind.uuid": {"en": "UUID", "zh": "UUID"},
    "value.varying_kind.request id": {"en": "request id", "zh": "请求 ID"},
    "value.varying_kind.epoch time": {"en": "epoch time", "zh": "Unix 时间"},
    "value.varying_kind.date": {"en": "date", "zh": "日期"},
    "value.varying_kind.time": {"en": "time of day", "zh": "时刻"},
    # The errors the vLLM log reader knows (probes.vllm_log.ERRORS), as the walk names them.
    "value.error_kind.oom": {"en": "CUDA out of memory", "zh": "CUDA 显存不足"},
    "value.error_kind.max_seq_len_exceeds_kv_cache": {"en": "max_model_len larger than the KV cache",
                                                      "zh": "max_model_len 超出 KV cache 容量"},
    "value.error_kind.no_kv_cache_memory": {"en": "no memory left for the KV cache", "zh": "没有留给 KV cache 的显存"},
    "value.error_kind.chat_template_missing": {"en": "no chat template", "zh": "没有 chat template"},
    "value.error_kind.batched_tokens_below_max_model_len": {
        "en": "max_num_batched_tokens below max_model_len", "zh": "max_num_batched_tokens 小于 max_model_len"},
    "value.error_kind.tp_heads_indivisible": {"en": "attention heads not divisible by the TP size",
                                              "zh": "注意力头数不能被 TP 大小整除"},
    "value.error_kind.engine_init_failed": {"en": "engine start-up failed", "zh": "引擎启动失败"},
    "value.error_kind.engine_dead": {"en": "engine died while serving", "zh": "引擎在服务中崩溃"},
    "value.auth.none": {"en": "none", "zh": "无"},
    "value.auth.ok": {"en": "key accepted", "zh": "密钥已接受"},
    "value.auth.required": {"en": "key required", "zh": "需要密钥"},
    "value.auth.rejected": {"en": "key rejected", "zh": "密钥被拒绝"},
    "value.auth.unknown": {"en": "unknown", "zh": "未知"},
    "value.against.baseline": {"en": "baseline", "zh": "基线"},
    "value.against.before the changes": {"en": "before the changes", "zh": "变更之前"},
    "walk.pass": {"en": "PASS {stage}: no cause found{info}", "zh": "通过 {stage}：未发现原因{info}"},
    "walk.pass_info": {"en": " (for information: {codes})", "zh": "（仅供参考：{codes}）"},
    "walk.change": {"en": "change ({layer}): {parameter}: {before} -> {after}{restarted}",
                    "zh": "变更（{layer}）：{parameter}：{before} -> {after}{restarted}"},
    "walk.restarted": {"en": "  [server restarted]", "zh": "  [服务已重启]"},
    "walk.resumed": {"en": "resumed at {at}: the server answers as {model} (vLLM {version}, max_model_len {max_model_len})",
                     "zh": "从 {at} 继续：服务以 {model} 应答（vLLM {version}，max_model_len {max_model_len}）"},
    "walk.server_check": {"en": "  server check: {text}", "zh": "  服务端核对：{text}"},
    "walk.noise": {"en": "  noise (A/A: {rounds}): {bands}; changes within these bands are reported as within noise",
                   "zh": "  噪声（A/A：{rounds}）：{bands}；落在这些范围内的变化视为噪声"},
    "walk.not_measurable": {"en": "not measurable", "zh": "无法测量"},
    "walk.note": {"en": "  note: {text}", "zh": "  说明：{text}"},
    # The load a walk sends (budget.py; render_budget.py) and its deadline.
    "budget.title": {"en": "The load this walk will send (at most: a round runs only where its step needs it):",
                     "zh": "本次诊断将发送的负载（上限：每轮只在其步骤需要时才运行）："},
    "budget.brief": {"en": "  (--rounds brief: half of each load round's requests; wider noise bands)",
                     "zh": "  （--rounds brief：每个负载轮次的请求数减半；噪声带更宽）"},
    "budget.stage": {"en": "  {stage}: {rounds} round(s), {requests} requests, {tokens} tokens, at most {concurrency} at once",
                     "zh": "  {stage}：{rounds} 轮，{requests} 个请求，{tokens} 个 token，最多同时 {concurrency} 个"},
    "budget.total": {"en": "  in all: {requests} requests, {tokens} tokens; each change applied measures its round again (up to 3 times){cap}",
                     "zh": "  合计：{requests} 个请求，{tokens} 个 token；每应用一个改动会重测其所在轮次（最多 3 次）{cap}"},
    "budget.cap": {"en": "; --max-requests {n}: a round that would pass it is skipped",
                   "zh": "；--max-requests {n}：会超出上限的轮次将被跳过"},
    "budget.deadline": {"en": "  deadline: {seconds} s (--deadline); past it the walk ends with what it has",
                        "zh": "  时限：{seconds} 秒（--deadline）；超时后诊断以已有结果结束"},
    "budget.consent": {"en": "Send this load to {target}?", "zh": "向 {target} 发送这些负载吗？"},
    "budget.declined": {"en": "no request sent, nothing written: run again with --max-requests N to send less",
                        "zh": "未发送任何请求，也未写入任何内容：可加 --max-requests N 减少负载后重新运行"},
    "budget.spent": {"en": "  sent: {requests} requests, {tokens} tokens in {rounds} round(s); skipped at --max-requests: {skipped}",
                     "zh": "  已发送：{rounds} 轮共 {requests} 个请求、{tokens} 个 token；因 --max-requests 跳过：{skipped}"},
    "note.deadline": {"en": "the walk's deadline ({seconds} s, --deadline) passed after {rounds} round(s): it ends with what it has",
                      "zh": "诊断时限（{seconds} 秒，--deadline）在 {rounds} 轮后已到：以已有结果结束"},
    "note.over_cap": {"en": "round {round} skipped: its {n} requests would pass --max-requests {most} ({spent} sent so far)",
                      "zh": "跳过轮次 {round}：它的 {n} 个请求会超出 --max-requests {most}（已发送 {spent} 个）"},
    "walk.complete": {"en": "walk complete: findings {codes}; {changes} change(s)",
                      "zh": "诊断完成：发现 {codes}；{changes} 项变更"},
    "walk.none": {"en": "none", "zh": "无"},
    "walk.probe_failed": {"en": "  {name} ({label}): failed: {error}", "zh": "  {name}（{label}）：失败：{error}"},
    "walk.no_answer": {"en": "  endpoints: the server does not answer", "zh": "  endpoints：服务没有应答"},
    "walk.endpoints_no_api": {"en": "  endpoints: the server answers HTTP but lists no models at /v1/models ({status}): no completion request sent",
                              "zh": "  endpoints：服务能响应 HTTP，但 /v1/models 没有列出模型（{status}）：未发送任何补全请求"},
    "walk.not_model_list": {"en": "HTTP 200, not an OpenAI model list", "zh": "HTTP 200，但不是 OpenAI 模型列表"},
    "walk.endpoints": {"en": "  endpoints: model {model}, version {version}, auth {auth}, completions {completions}, chat {chat}{suffix}",
                       "zh": "  endpoints：模型 {model}，版本 {version}，认证 {auth}，completions {completions}，chat {chat}{suffix}"},
    "walk.suffix": {"en": "; suffix {suffix}", "zh": "；suffix `{suffix}`"},
    "walk.nginx": {"en": "  nginx config: {n} proxied location(s); {found}", "zh": "  nginx 配置：{n} 个代理 location；{found}"},
    "walk.nginx_at": {"en": "{code} at {file}:{line} (fix: {directive})", "zh": "{code} 位于 {file}:{line}（改为：{directive}）"},
    "walk.no_static": {"en": "no static findings", "zh": "无静态发现"},
    "walk.audit": {"en": "  audit: {measurements} measurement(s), {changes} change(s); flags: {flags}",
                   "zh": "  审计：{measurements} 次测量，{changes} 项变更；标记：{flags}"},
    # What each of the audit's flags means (the audit probe's fact names).
    "audit_flag.cold_steady_mixed": {"en": "cold and steady requests mixed", "zh": "冷启动与稳态请求混在一起"},
    "audit_flag.multiple_changes_in_step": {"en": "several changes in one step", "zh": "一步中有多项变更"},
    "audit_flag.total_time_only": {"en": "only the total time recorded", "zh": "只记录了总时间"},
    "audit_flag.cross_scenario_comparison": {"en": "a comparison across scenarios", "zh": "跨场景的比较"},
    "audit_flag.budget_unjudged": {"en": "token budget not judged", "zh": "token 预算未能判断"},
    "audit_flag.offline_as_latency": {"en": "Offline throughput taken as latency", "zh": "把 Offline 吞吐当作延迟"},
    "walk.loadgen_p90": {"en": ", early-stopping p90 {p90} ms", "zh": "，early-stopping p90 {p90} ms"},
    "walk.no_reason": {"en": "no reason recorded", "zh": "未记录原因"},
    "walk.offline": {"en": "; throughput only, not latency evidence", "zh": "；只反映吞吐，不能作为延迟证据"},
    "walk.queries_failed": {"en": "{failed} of {queries} queries failed (recorded as LoadGen's {result})",
                            "zh": "{queries} 个查询中 {failed} 个失败（LoadGen 记为 {result}）"},
    "busy.body": {"en": "the incident's body", "zh": "故障时的请求正文"},
    "busy.tokens": {"en": "{input} + {output} tokens", "zh": "{input} + {output} token"},
    "busy.via": {"en": " via {endpoint}", "zh": "，经 {endpoint}"},
    "busy.measure": {"en": "measuring {label}: {streams} streams, {requests} requests of {shape}{via}",
                     "zh": "正在测量 {label}：{streams} 路并发，{requests} 个请求，{shape}{via}"},
    "busy.measure_until": {"en": "measuring {label}: {streams} streams, {shape}{via}, at most {requests} requests{seconds}; it stops once told apart from {about} or found within its noise",
                           "zh": "测量 {label}：{streams} 路并发，最多 {requests} 个 {shape} 的请求{seconds}{via}；一旦能判断它与 {about} 不同或在噪声之内就停止"},
    "busy.seconds": {"en": " or {s} s", "zh": "或 {s} 秒"},
    "busy.loadgen": {"en": "LoadGen {scenario} run ({label}): {shape}{via}", "zh": "LoadGen {scenario} 运行（{label}）：{shape}{via}"},
    "busy.probe": {"en": "probe {name} ({label})", "zh": "探测 {name}（{label}）"},
    "busy.progress": {"en": "{busy}: {done}{total}{failed}, {elapsed} s{left}", "zh": "{busy}：{done}{total}{failed}，{elapsed} s{left}"},
    "busy.failed": {"en": ", {failed} failed", "zh": "，{failed} 个失败"},
    "busy.left": {"en": ", about {eta} s left", "zh": "，约剩 {eta} s"},
    "host.line": {"en": "  host ({source}): {cores} physical cores, {gpus} GPU(s){names}, interconnect {interconnect}, CUDA_VISIBLE_DEVICES {visible}",
                  "zh": "  主机（{source}）：{cores} 个物理核心，{gpus} 张 GPU{names}，互联 {interconnect}，CUDA_VISIBLE_DEVICES {visible}"},
    "host.source.this machine": {"en": "this machine", "zh": "本机"},
    "host.source.evidence": {"en": "evidence", "zh": "证据"},
    "log.none": {"en": "  vLLM log: none given (--vllm-log FILE adds start-up config, timings and errors)",
                 "zh": "  vLLM 日志：未提供（--vllm-log FILE 可加入启动配置、耗时和错误）"},
    "log.note": {"en": "  vLLM log {file}: {note}", "zh": "  vLLM 日志 {file}：{note}"},
    "log.line": {"en": "  vLLM log {file}: engine {engine}, TP {tp} x PP {pp}, max_model_len {max_model_len}, max_num_batched_tokens {budget}, KV cache {kv}, start-up {startup}{errors}",
                 "zh": "  vLLM 日志 {file}：引擎 {engine}，TP {tp} x PP {pp}，max_model_len {max_model_len}，max_num_batched_tokens {budget}，KV 缓存 {kv}，启动耗时 {startup}{errors}"},
    "log.nothing": {"en": "nothing in this input looks like a vLLM log line", "zh": "输入中没有一行像 vLLM 日志"},
    "log.stdin": {"en": "standard input", "zh": "标准输入"},
    # The log reader's notes (probes.vllm_log, vllm_args, vllm_logs): what it skipped or could not read.
    "lognote.stats_unread": {"en": "line {line}: a stats line that does not read: skipped",
                             "zh": "第 {line} 行：一行读不懂的统计行，已跳过"},
    "lognote.more": {"en": "more notes were left out", "zh": "其余说明已省略"},
    "lognote.runs": {"en": "{total} runs in this input: the last (from line {line}) is reported, the first and the last are under 'runs'",
                     "zh": "输入中有 {total} 次运行：报告的是最后一次（从第 {line} 行起），第一次和最后一次列在 'runs' 下"},
    "lognote.args_after": {"en": "the {kind} at line {line} follows this run's log: read as its command",
                           "zh": "第 {line} 行的{kind}跟在本次运行的日志之后：按它的启动命令读取"},
    "lognote.args_default": {"en": "line {line}: {flag} {raw}: read the default {default} (${name} may set another)",
                             "zh": "第 {line} 行：{flag} {raw}：读取默认值 {default}（${name} 可能设成别的值）"},
    "lognote.args_variable": {"en": "line {line}: {flag} {raw} is a variable: its value is not in the paste",
                              "zh": "第 {line} 行：{flag} {raw} 是变量：粘贴内容中没有它的值"},
    "lognote.args_auto": {"en": "line {line}: {flag} {raw}: vLLM fits it to the memory at start (read it from the log)",
                          "zh": "第 {line} 行：{flag} {raw}：vLLM 启动时按显存确定它（请从日志读取）"},
    "lognote.args_bad": {"en": "line {line}: {flag} {raw} is not a value vLLM takes: ignored",
                         "zh": "第 {line} 行：{flag} {raw} 不是 vLLM 接受的值：已忽略"},
    "lognote.args_no_value": {"en": "line {line}: {flag} has no value", "zh": "第 {line} 行：{flag} 没有值"},
    "lognote.args_too_long": {"en": "line {line}: a command or manifest list longer than {most} characters (to line {to}): not read",
                              "zh": "第 {line} 行：命令或清单列表超过 {most} 个字符（到第 {to} 行）：未读取"},
    "lognote.args_quoting": {"en": "line {line}: the command's quoting does not close ({why}): read up to there",
                             "zh": "第 {line} 行：命令的引号没有闭合（{why}）：读到该处为止"},
    "lognote.args_open_list": {"en": "line {line}: {name}: a list that does not close: not read",
                               "zh": "第 {line} 行：{name}：列表没有闭合，未读取"},
    "lognote.args_unread": {"en": "line {line}: the non-default args do not read as a Python dict: skipped",
                            "zh": "第 {line} 行：non-default args 读不成 Python 字典：已跳过"},
    "lognote.long_line": {"en": "line {line}: longer than {most} characters: skipped",
                          "zh": "第 {line} 行：超过 {most} 个字符，已跳过"},
    "lognote.long_lines": {"en": "{lines} lines longer than {most} characters (no replica's, unread): skipped",
                           "zh": "{lines} 行超过 {most} 个字符（不知属于哪个副本，未读取）：已跳过"},
    "lognote.unattributed": {"en": "{lines} lines without a [pod/NAME/CONTAINER] prefix belong to no replica and were not read",
                             "zh": "{lines} 行没有 [pod/NAME/CONTAINER] 前缀，不属于任何副本，未读取"},
    "value.args_source.command line": {"en": "command line", "zh": "命令行"},
    "value.args_source.manifest": {"en": "manifest", "zh": "清单"},
    "value.args_source.Namespace dump": {"en": "Namespace dump", "zh": "Namespace 转储"},
    "log.not_a_log": {"en": "latency-wizard probe vllm-log: {name}: no vLLM log line in its {lines} lines (is this the server's log? vLLM writes it to standard error)",
                      "zh": "latency-wizard probe vllm-log：{name}：其 {lines} 行中没有 vLLM 日志行（这是服务的日志吗？vLLM 把日志写到标准错误）"},
    "log.errors": {"en": "; errors: {errors}", "zh": "；错误：{errors}"},
    "log.error_at": {"en": "{kind} (line {line})", "zh": "{kind}（第 {line} 行）"},
    "tokens": {"en": "{n} tokens", "zh": "{n} token"},
    "seconds": {"en": "{n} s", "zh": "{n} s"},
    "ms": {"en": "{n} ms", "zh": "{n} ms"},
    "table.server": {"en": "server: waiting max {waiting}, preemptions {preemptions}, KV peak {kv}",
                     "zh": "服务端：最大排队 {waiting}，抢占 {preemptions}，KV 峰值 {kv}"},
    "table.outside": {"en": "TTFT outside the engine (proxy, network, API server) {ms} ms",
                      "zh": "引擎外的 TTFT（代理、网络、API server）{ms} ms"},
    "table.answered": {"en": "answered after {n} of at most {budget} requests (set beside {about})",
                       "zh": "与 {about} 对比：{n} 个请求后即有结论（最多 {budget} 个）"},
    "table.out_of_time": {"en": "stopped at its time budget ({s} s, twice {about}'s) after {n} requests, not yet told apart from {about}",
                          "zh": "达到时间预算（{s} 秒，{about} 用时的两倍），已测 {n} 个请求，仍未能判断它与 {about} 的差异"},
    "table.unanswered": {"en": "all {budget} requests measured: no earlier look told it apart from {about}",
                         "zh": "测满 {budget} 个请求：此前每次查看都未能判断它与 {about} 的差异"},
    "table.bursts": {"en": "up to {n} events per read", "zh": "每次读取最多 {n} 个事件"},
    "table.saturated": {"en": "CLIENT SATURATED", "zh": "客户端已饱和"},
    "table.contended": {"en": "client contended: {reason}", "zh": "客户端受到争用：{reason}"},
    "cmp.title": {"en": "{after} vs {against} ({before})", "zh": "{after} 对比{against}（{before}）"},
    "cmp.segment": {"en": "segment", "zh": "阶段"},
    "cmp.before": {"en": "before p50", "zh": "之前 p50"},
    "cmp.after": {"en": "after p50", "zh": "之后 p50"},
    "cmp.change": {"en": "change", "zh": "变化"},
    "cmp.ci": {"en": "95% CI", "zh": "95% 置信区间"},
    "cmp.verdict": {"en": "verdict", "zh": "结论"},
    "cmp.expected": {"en": "expected (the finding predicted it)", "zh": "符合预期（发现已预测）"},
    "cmp.per_request": {"en": "{segment} per request", "zh": "{segment}（按请求）"},
    "finding.try": {"en": "the one change to try: {apply}", "zh": "唯一要尝试的变更：{apply}"},
    "run.fleet_walking": {"en": "fleet: walking {instance} ({target}): {why}", "zh": "集群：诊断 {instance}（{target}）：{why}"},
    "end.transcript": {"en": "transcript: {path}", "zh": "记录：{path}"},
    "end.summary": {"en": "summary:    {command}", "zh": "摘要：{command}"},
    "end.paste": {"en": "to paste:   {command}", "zh": "粘贴用：{command}"},
    "end.interrupted": {"en": "\ninterrupted. The transcript so far is kept in {path}", "zh": "\n已中断。目前的记录保存在 {path}"},
    "end.resume": {"en": "continue with: {command}", "zh": "继续：{command}"},
    "end.resuming": {"en": "resuming {path} at '{start}'", "zh": "从 '{start}' 继续 {path}"},
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
    "loadgen": ("MLPerf LoadGen installed", "已安装 MLPerf LoadGen", ""),
    "physical_cores": ("physical cores", "物理核心", ""),
    "gpus": ("GPUs", "GPU 数量", ""),
    "gpu_names": ("GPU", "GPU 型号", ""),
    "gpu_memory_gib": ("GPU memory", "显存", " GiB"),
    "interconnect": ("interconnect", "互联", ""),
    "cuda_visible_devices": ("CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", ""),
    # where a question's answer was found (words.evidence_source)
    "gpus_used": ("GPUs used", "使用的 GPU 数量", ""),
    "gpus_if_cpu_only": ("no GPU (CPU backend)", "无 GPU（CPU 后端）", ""),
    "nodes_spanned": ("nodes spanned", "跨越的节点数", ""),
    "endpoint": ("API", "API", ""),
    "api": ("API", "API", ""),
}


def say(key: str, lang: str, **values: Any) -> str:
    """The phrase ``key`` in ``lang`` (English when it has no translation), filled in."""
    phrase = WORDS[key]
    return (phrase.get(lang) or phrase["en"]).format(**values)


def texts(key: str, **values: Any) -> dict[str, str]:
    """The phrase in every language, for an event that a reader may show in either; a value may
    itself be ``{en, zh}`` (``recorded``), and each language takes its own."""
    return {lang: say(key, lang, **{k: v.get(lang, v["en"]) if isinstance(v, dict) else v
                                    for k, v in values.items()})
            for lang in WORDS[key]}  # fmt: skip


def recorded(kind: str, value: str) -> dict[str, str] | str:
    """A value the wizard records in English (a decision's note) in every language it has."""
    return WORDS.get(f"{kind}.{value}") or value


def value_word(kind: str, value: Any, lang: str) -> str:
    """A value a probe records as a word (``single``, ``none``) as a person reads it."""
    key = f"value.{kind}.{value}"
    return say(key, lang) if key in WORDS else plain(value, lang)


def answer_label(question_id: str, lang: str) -> str:
    """A question's answer named for a person: ``run_loadgen`` -> ``validate with LoadGen``."""
    key = f"answer.{question_id}"
    return say(key, lang) if key in WORDS else question_id.replace("_", " ")


def evidence_source(path: str, lang: str, location: str | None = None) -> str:
    """Where an answer came from, readably: ``nginxconf.locations.0.proxy_read_timeout_s`` ->
    ``nginx config, location /v1: proxy_read_timeout``; ``vllmlog.gpus_used`` -> ``vLLM log``."""
    parts = path.split(".")
    where = say(f"source.{parts[0]}", lang) if f"source.{parts[0]}" in WORDS else parts[0]
    if parts[0] == "nginxconf" and len(parts) > 3 and parts[1] == "locations":
        where = say("source.location", lang, path=location or f"#{int(parts[2]) + 1}")
    field = parts[-1].removesuffix("_s")
    if field in EVIDENCE_LABELS:
        field = EVIDENCE_LABELS[field][1 if lang == "zh" else 0]
    elif parts[0] != "nginxconf":  # an nginx directive keeps its name
        field = field.replace("_", " ")
    return say("labelled", lang, label=where, text=field)


def joined(parts: list[str], lang: str, separator: str = "sep") -> str:
    """Parts joined the way the language separates them."""
    return say(separator, lang).join(parts)


def paren(text: str, inner: str, lang: str) -> str:
    """``text (inner)``, or with full-width brackets in Chinese."""
    return say("paren", lang, text=text, inner=inner)


def segment_name(segment: str) -> str:
    """``ttft_ms`` -> ``TTFT``."""
    return SEGMENT_NAMES.get(segment, segment)


def path_name(path: str | None, lang: str) -> str:
    """A measured path (``direct``, ``proxy``) as a word; one not known is shown as recorded."""
    if path is None:
        return say("unknown", lang)
    key = f"path.{path}"
    return say(key, lang) if key in WORDS else path


def verdict_word(verdict: str, lang: str) -> str:
    """A verdict as a phrase; one the wizard does not know yet is shown as recorded."""
    key = f"verdict.{verdict}"
    return say(key, lang) if key in WORDS else verdict.replace("_", " ")


def ms(value: float | None) -> str:
    """Milliseconds: whole above 100 (``1,357``), one decimal below (``24.6``), ``-`` unknown."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else tenths(value)


def tenths(value: float) -> str:
    """One decimal, and never ``-0.0`` (a change of -0.04 ms is no change a reader should see
    signed)."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def outside_engine(value: float | None) -> float | None:
    """TTFT outside the engine (the client's mean less the server's), or None when the server's
    mean is the larger: the two count different requests then, and a negative time is no path's."""
    return None if value is None or value < 0 else value


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
    return f"{zh if lang == 'zh' else en} {value_word(key, value, lang)}{unit if known else ''}"
