"""The words of ``latency-wizard triage`` in English and Chinese; part of ``WORDS``.

A check's sentence is keyed by its id and result (``triage.check.queue_saturation.fired``) and
filled from the numbers the check recorded, so the JSON (ids and numbers) and the text say the
same thing.
"""

from __future__ import annotations

TRIAGE_WORDS: dict[str, dict[str, str]] = {
    "triage.title": {"en": "Triage of {target}: passive, no completion request sent ({elapsed} s)",
                     "zh": "{target} 的分诊：只读，未发送任何补全请求（{elapsed} 秒）"},
    "triage.h.class": {"en": "Likely cause", "zh": "可能的原因"},
    "triage.h.checked": {"en": "What was checked", "zh": "检查了什么"},
    "triage.h.signal": {"en": "Strongest signal", "zh": "最强的信号"},
    "triage.h.ruled_out": {"en": "Ruled out", "zh": "已排除"},
    "triage.h.not_judged": {"en": "Not judged", "zh": "无法判断"},
    "triage.h.next": {"en": "Next step", "zh": "下一步"},
    "triage.h.risk": {"en": "Production risk of that step", "zh": "这一步对生产的风险"},
    "triage.h.waterfall": {"en": "First token, hop by hop (means)", "zh": "首 token 逐跳耗时（均值）"},
    "triage.h.history": {"en": "What changed when (Prometheus, last {window})",
                         "zh": "何时发生了什么变化（Prometheus，最近 {window}）"},
    "triage.line": {"en": "{label}: {text}", "zh": "{label}：{text}"},
    "triage.heading": {"en": "{heading}:", "zh": "{heading}："},
    # the classes
    "triage.cause.none": {"en": "none: nothing the server says points to a cause",
                          "zh": "无：服务端的证据没有指向任何原因"},
    "triage.cause.kv_cache_preemption": {"en": "KV-cache pressure (kv_cache_preemption)",
                                         "zh": "KV cache 压力（kv_cache_preemption）"},
    "triage.cause.queue_saturation": {"en": "queue saturation (queue_saturation)",
                                      "zh": "排队饱和（queue_saturation）"},
    "triage.cause.api_server_cpu_saturated": {"en": "API server CPU saturated (api_server_cpu_saturated)",
                                              "zh": "API server CPU 饱和（api_server_cpu_saturated）"},
    "triage.cause.proxy_buffering": {"en": "nginx buffers the stream (proxy_buffering)",
                                     "zh": "nginx 缓冲了流（proxy_buffering）"},
    "triage.cause.server_unreachable": {"en": "the server does not answer (server_unreachable)",
                                        "zh": "服务无应答（server_unreachable）"},
    "triage.cause.engine_died": {"en": "the engine died (engine_died)", "zh": "引擎已退出（engine_died）"},
    # what was read
    "triage.src.metrics": {"en": "/metrics: {n} scrapes over {window} s (deltas, not lifetime counters)",
                           "zh": "/metrics：{window} 秒内抓取 {n} 次（看增量，不看累计计数）"},
    "triage.src.metrics_missing": {"en": "/metrics: {why}", "zh": "/metrics：{why}"},
    "triage.src.endpoints": {"en": "/health {health}, /version {version}, /v1/models {models}",
                             "zh": "/health {health}，/version {version}，/v1/models {models}"},
    "triage.src.log": {"en": "vLLM log: {runs} start(s), {errors} error line(s)",
                       "zh": "vLLM 日志：启动 {runs} 次，错误行 {errors} 条"},
    "triage.src.log_unrecognised": {"en": "vLLM log: no line of it looks like vLLM's",
                                    "zh": "vLLM 日志：没有一行像 vLLM 的日志"},
    "triage.src.nginx": {"en": "nginx config: {n} proxied location(s)", "zh": "nginx 配置：{n} 个代理 location"},
    "triage.src.access": {"en": "nginx access log: {n} completion requests with timings",
                          "zh": "nginx 访问日志：{n} 个带计时的补全请求"},
    "triage.src.prometheus": {"en": "Prometheus: {n} replica(s) over the last {window}",
                              "zh": "Prometheus：最近 {window} 内 {n} 个副本"},
    "triage.src.prometheus_error": {"en": "Prometheus: not read ({error})", "zh": "Prometheus：未能读取（{error}）"},
    "triage.src.not_given": {"en": "not given: {flags}", "zh": "未提供：{flags}"},
    # every check, by result
    "triage.check.server_unreachable.fired": {"en": "the server does not answer /health: {error}",
                                              "zh": "服务不应答 /health：{error}"},
    "triage.check.server_unreachable.clear": {"en": "server unreachable: no, /health answered {status}",
                                              "zh": "服务不可达：否，/health 应答 {status}"},
    "triage.check.engine_died.fired": {"en": "the log shows the engine stopped serving: {kind} at line {line}",
                                       "zh": "日志显示引擎已停止服务：第 {line} 行 {kind}"},
    "triage.check.engine_died.clear": {"en": "engine death: no fatal engine error in the log",
                                       "zh": "引擎退出：日志中没有致命的引擎错误"},
    "triage.check.engine_died.unknown": {"en": "engine death: {why}", "zh": "引擎退出：{why}"},
    "triage.why.no_log": {"en": "no log given (--vllm-log)", "zh": "未提供日志（--vllm-log）"},
    "triage.why.log_unrecognised": {"en": "no line of the log given looks like vLLM's",
                                    "zh": "所给日志中没有一行像 vLLM 的日志"},
    "triage.check.kv_cache_preemption.fired": {
        "en": "{preemptions} preemptions in {window_s} s ({per_s}/s); KV-cache usage up to {kv_max} "
              "of {kv_tokens} tokens",
        "zh": "{window_s} 秒内抢占 {preemptions} 次（每秒 {per_s} 次）；KV cache 占用最高 {kv_max}"
              "（共 {kv_tokens} 个 token）"},
    "triage.check.kv_cache_preemption.clear": {
        "en": "KV-cache pressure: no preemption in {window_s} s (KV-cache usage up to {kv_max}); "
              "vLLM preempts only when a running request cannot get a KV block",
        "zh": "KV cache 压力：{window_s} 秒内没有抢占（KV cache 占用最高 {kv_max}）；vLLM 只在运行中的请求"
              "拿不到 KV 块时才抢占"},
    "triage.check.kv_cache_preemption.unknown": {"en": "KV-cache pressure: {why}", "zh": "KV cache 压力：{why}"},
    "triage.check.queue_saturation.fired": {
        "en": "up to {waiting_max} requests waiting, in {seen} of {scrapes} scrapes; {running_max} "
              "running{bound}; the engine's mean queue time {queue_ms} ms of its mean TTFT {ttft_ms} ms",
        "zh": "最多 {waiting_max} 个请求在排队，{scrapes} 次抓取中有 {seen} 次；运行中 {running_max} 个{bound}；"
              "引擎平均排队 {queue_ms} ms，平均 TTFT {ttft_ms} ms"},
    "triage.check.queue_saturation.clear": {
        "en": "queue saturation: requests waited in {seen} of {scrapes} scrapes (a queue shows in two "
              "or more: with a free slot a request waits one engine step, milliseconds)",
        "zh": "排队饱和：{scrapes} 次抓取中只有 {seen} 次有请求排队（真正的排队至少出现两次：有空位时请求"
              "只等一个引擎步，几毫秒）"},
    "triage.check.queue_saturation.unknown": {"en": "queue saturation: {why}", "zh": "排队饱和：{why}"},
    "triage.bound.slots": {"en": " = max_num_seqs {max_num_seqs}: no free slot (slot-bound)",
                           "zh": " = max_num_seqs {max_num_seqs}：没有空位（受槽位限制）"},
    "triage.bound.kv_or_budget": {
        "en": ", below max_num_seqs {max_num_seqs}: admission waits for KV blocks or the step's token budget",
        "zh": "，低于 max_num_seqs {max_num_seqs}：准入在等 KV 块或该步的 token 预算"},
    "triage.bound.unknown": {"en": " (max_num_seqs unknown without the log)",
                             "zh": "（没有日志，不知道 max_num_seqs）"},
    "triage.check.api_server_cpu_saturated.fired": {
        "en": "the API server process used {cores} cores (one process: saturated from {bar} of a core)",
        "zh": "API server 进程用了 {cores} 个核（单个进程：达到 {bar} 个核即饱和）"},
    "triage.check.api_server_cpu_saturated.clear": {
        "en": "API server CPU: {cores} cores, below {bar} of its one core",
        "zh": "API server CPU：{cores} 个核，低于单核的 {bar}"},
    "triage.check.api_server_cpu_saturated.unknown": {"en": "API server CPU: {why}", "zh": "API server CPU：{why}"},
    "triage.check.proxy_buffering.fired": {
        "en": "nginx buffers streams: proxy_buffering on at {file}:{line} (location {location})",
        "zh": "nginx 缓冲流：{file}:{line} 处 proxy_buffering 为 on（location {location}）"},
    "triage.check.proxy_buffering.clear": {
        "en": "nginx buffering: off on all {locations} proxied location(s)",
        "zh": "nginx 缓冲：全部 {locations} 个代理 location 都已关闭"},
    "triage.check.proxy_buffering.unknown": {"en": "nginx buffering: no config given (--nginx-conf)",
                                             "zh": "nginx 缓冲：未提供配置（--nginx-conf）"},
    "triage.check.no_traffic.fired": {
        "en": "no request finished in the {window_s} s window: the server is idle now, its deltas judge nothing",
        "zh": "{window_s} 秒窗口内没有请求完成：服务现在空闲，增量无从判断"},
    "triage.check.healthy.fired": {
        "en": "{requests} requests in {window_s} s; the engine's mean TTFT {ttft_ms} ms, of it {queue_ms} ms queued",
        "zh": "{window_s} 秒内 {requests} 个请求；引擎平均 TTFT {ttft_ms} ms，其中排队 {queue_ms} ms"},
    "triage.why.no_metrics": {"en": "no vLLM metrics (--disable-log-stats removes them)",
                              "zh": "没有 vLLM 指标（--disable-log-stats 会去掉它们）"},
    "triage.why.idle": {"en": "no request finished in the window, nothing to judge now",
                        "zh": "窗口内没有请求完成，现在无从判断"},
    "triage.why.unreachable": {"en": "the server does not answer", "zh": "服务无应答"},
    "triage.why.restarted": {"en": "the server restarted between two scrapes", "zh": "两次抓取之间服务重启了"},
    "triage.why.no_process_cpu": {
        "en": "no process_cpu_seconds_total (several API servers, or no process collector)",
        "zh": "没有 process_cpu_seconds_total（多个 API server，或没有进程采集器）"},
    # the next step and its risk
    "triage.next.run.kv_cache_preemption": {
        "en": "the walk loads the server at the incident's concurrency and proves KV pressure by the "
              "server's own preemption counter, then proposes one change",
        "zh": "诊断以故障时的并发加载服务，用服务自己的抢占计数证明 KV 压力，然后提出一处变更"},
    "triage.next.run.queue_saturation": {
        "en": "the walk's loaded round (twice the concurrency) shows TTFT growing with the queue while ITL does not",
        "zh": "诊断的加载轮次（两倍并发）会显示 TTFT 随排队增长而 ITL 不变"},
    "triage.next.run.api_server_cpu_saturated": {
        "en": "the walk's loaded round sets the API server's CPU against the engine's own token gaps (LAT035)",
        "zh": "诊断的加载轮次把 API server 的 CPU 与引擎自己的 token 间隔对照（LAT035）"},
    "triage.next.run.proxy_buffering": {
        "en": "the walk measures the same stream direct and through the proxy (pass --proxy)",
        "zh": "诊断直连和经代理各测同一个流（请给出 --proxy）"},
    "triage.next.run.engine_died": {"en": "the walk reads the log and explains the failure before measuring",
                                    "zh": "诊断先读日志、解释故障，再做测量"},
    "triage.next.run.server_unreachable": {"en": "the walk says why the server does not answer (give --vllm-log)",
                                           "zh": "诊断会说明服务为何无应答（请给出 --vllm-log）"},
    "triage.next.run.none": {
        "en": "triage cannot measure the client's TTFT; the walk measures it (direct and through the proxy)",
        "zh": "分诊无法测量客户端的 TTFT；诊断会测量它（直连和经代理）"},
    "triage.next.read_log": {"en": "the log says why the server does not answer", "zh": "日志会说明服务为何无应答"},
    "triage.next.compare_proxy": {"en": "the same stream direct and through nginx shows the burst signature",
                                  "zh": "同一个流直连和经 nginx 对比，可看出成批到达的特征"},
    "triage.risk.level.none": {"en": "none", "zh": "无"},
    "triage.risk.level.low": {"en": "low", "zh": "低"},
    "triage.risk.level.medium": {"en": "medium", "zh": "中"},
    "triage.risk.level.high": {"en": "high", "zh": "高"},
    "triage.risk.reads_file": {"en": "it reads a file and sends nothing", "zh": "只读文件，不发送任何请求"},
    "triage.risk.few_streams": {"en": "a few streamed requests each way", "zh": "每条路径只发几个流式请求"},
    "triage.risk.load_on_kv_cache_preemption": {
        "en": "the server already preempts: every stream the walk adds (up to twice {concurrency} at its "
              "loaded round) takes KV blocks from users' requests; run it off-peak or on a replica taken "
              "out of the balancer",
        "zh": "服务已经在抢占：诊断加入的每个流（加载轮次最多 {concurrency} 的两倍）都会从用户请求那里占用 KV 块；"
              "请在低峰期运行，或对一个从负载均衡中摘下的副本运行"},
    "triage.risk.load_on_queue_saturation": {
        "en": "the queue is full: every request the walk sends (up to twice {concurrency} at its loaded "
              "round) waits behind users' requests and lengthens their wait; run it off-peak or on a "
              "replica taken out of the balancer",
        "zh": "队列已满：诊断发出的每个请求（加载轮次最多 {concurrency} 的两倍）都排在用户请求后面，并加长"
              "他们的等待；请在低峰期运行，或对一个从负载均衡中摘下的副本运行"},
    "triage.risk.load_on_live": {
        "en": "the walk's rounds share the engine with live traffic (twice the concurrency at its loaded round)",
        "zh": "诊断的各轮与线上流量共用引擎（加载轮次为两倍并发）"},
    "triage.risk.load_on_idle": {"en": "the server is idle: the walk's load is the only load",
                                 "zh": "服务空闲：诊断的负载是唯一的负载"},
    "triage.unknown_concurrency": {"en": "the walk's", "zh": "诊断默认"},
    # the waterfall
    "triage.hop.proxy": {"en": "nginx, its own time ($request_time - $upstream_response_time)",
                         "zh": "nginx 自身耗时（$request_time - $upstream_response_time）"},
    "triage.hop.api_server": {"en": "API server before the engine ($upstream_header_time)",
                              "zh": "进入引擎前的 API server（$upstream_header_time）"},
    "triage.hop.queue": {"en": "engine queue", "zh": "引擎排队"},
    "triage.hop.prefill": {"en": "prefill", "zh": "预填充"},
    "triage.hop.engine_other": {"en": "engine, the rest of its TTFT", "zh": "引擎 TTFT 的其余部分"},
    "triage.hop.unexplained": {"en": "unexplained", "zh": "无法解释"},
    "triage.hop.row": {"en": "{hop}: {ms} ms ({requests} requests)", "zh": "{hop}：{ms} ms（{requests} 个请求）"},
    "triage.hop.row_bare": {"en": "{hop}: {ms} ms", "zh": "{hop}：{ms} ms"},
    "triage.hop.missing": {"en": "no evidence for: {hops}", "zh": "缺少证据：{hops}"},
    "triage.hop.client": {
        "en": "the client's TTFT is not measured passively: what it holds beyond these parts stays "
              "unexplained until `run` measures it",
        "zh": "只读分诊不测量客户端 TTFT：超出以上各部分的时间，要等 `run` 测量后才能解释"},
    # the walk's summary: the waterfall of its own rounds (walk_waterfall.py)
    "waterfall.path": {"en": "{path}: client TTFT {client} ms (mean of {n} steady requests; the engine's parts are means over the whole round)",
                       "zh": "{path}：客户端 TTFT {client} ms（{n} 个稳态请求的均值；引擎各部分为整轮的均值）"},
    "walk.access": {"en": "  nginx's access log over the round: {requests} completion requests; nginx's own time {proxy} ms, until the API server's headers {header} ms (means)",
                    "zh": "  该轮的 nginx 访问日志：{requests} 个补全请求；nginx 自身耗时 {proxy} ms，到 API server 返回响应头 {header} ms（均值）"},
    "waterfall.compact": {"en": "{path} first token", "zh": "{path}首 token"},
    "waterfall.compact_of": {"en": "TTFT {client} ms = {parts}", "zh": "TTFT {client} ms = {parts}"},
    "waterfall.short.proxy": {"en": "nginx", "zh": "nginx"},
    "waterfall.short.api_server": {"en": "API server", "zh": "API server"},
    "waterfall.short.queue": {"en": "queue", "zh": "排队"},
    "waterfall.short.prefill": {"en": "prefill", "zh": "预填充"},
    "waterfall.short.engine_other": {"en": "engine rest", "zh": "引擎其余"},
    "waterfall.short.unexplained": {"en": "unexplained", "zh": "无法解释"},
    "waterfall.path_bare": {"en": "{path}:", "zh": "{path}："},
    "waterfall.absent.no_metrics": {"en": "no waterfall: the server's /metrics were not read during the round, so no engine time splits it",
                                    "zh": "无逐跳拆分：该轮期间没有读到服务的 /metrics，没有引擎时间可用于拆分"},
    "waterfall.absent.recorded_before": {"en": "no waterfall: this transcript was recorded before the rounds kept the engine's prefill time",
                                         "zh": "无逐跳拆分：这份记录写于各轮开始保存引擎预填充时间之前"},
    "waterfall.absent.no_engine_ttft": {"en": "no waterfall: the server reported no TTFT over the round",
                                        "zh": "无逐跳拆分：该轮期间服务没有报告 TTFT"},
    "waterfall.overshoot": {"en": "none left (the hops' means, over every request of the round, exceed the client's mean by {ms} ms)",
                            "zh": "没有剩余（各跳的均值取自本轮所有请求，比客户端的均值多 {ms} ms）"},
    "waterfall.direct_rest": {"en": "straight to the server, the remainder is the API server's share and the network's (the TTFT outside the engine)",
                              "zh": "直连服务时，剩余部分是 API server 与网络的耗时（引擎之外的 TTFT）"},
    "waterfall.access.not_given": {"en": "nginx's hops: no access log was read (run --nginx-access-log FILE, its format writing $request_time, $upstream_header_time, $upstream_response_time)",
                                   "zh": "nginx 各跳：没有读取访问日志（run --nginx-access-log FILE，其格式需写出 $request_time、$upstream_header_time、$upstream_response_time）"},
    "waterfall.access.no_mark": {"en": "nginx's hops: the access log's end could not be marked before the round, or it was rotated meanwhile",
                                 "zh": "nginx 各跳：该轮之前未能标记访问日志的末尾，或期间日志被轮转"},
    "waterfall.access.unreadable": {"en": "nginx's hops: the access log could not be read", "zh": "nginx 各跳：无法读取访问日志"},
    "waterfall.access.no_timings": {"en": "nginx's hops: the access log's lines for the round carry no hop's time (its format writes none)",
                                    "zh": "nginx 各跳：该轮的访问日志行不含各跳耗时（其格式没有写出）"},
    # what changed when
    "triage.signal.ttft": {"en": "TTFT mean", "zh": "TTFT 均值"},
    "triage.signal.itl": {"en": "ITL mean", "zh": "ITL 均值"},
    "triage.signal.queue": {"en": "queue time mean", "zh": "排队时间均值"},
    "triage.signal.waiting": {"en": "waiting requests", "zh": "排队请求数"},
    "triage.signal.preemptions": {"en": "preemptions per scrape", "zh": "每次抓取的抢占数"},
    "triage.signal.prefix_hit_rate": {"en": "prefix-cache hit rate", "zh": "前缀缓存命中率"},
    "triage.dir.rose": {"en": "rose", "zh": "升高"},
    "triage.dir.fell": {"en": "fell", "zh": "降低"},
    "triage.change": {"en": "{instance}: {signal} {direction} from {before} to {after} at {at} UTC",
                      "zh": "{instance}：{signal} 于 UTC {at} 从 {before} {direction}到 {after}"},
    "triage.change_p50": {"en": " (p50 {before} before, {after} after)", "zh": "（p50 之前{before}，之后{after}）"},
    "triage.change_event": {"en": ", {seconds} s after {instance} {event}", "zh": "，在 {instance} {event}之后 {seconds} 秒"},
    "triage.event.restart": {"en": "restarted", "zh": "重启"},
    "triage.event.restart_with": {"en": "restarted with {changes}", "zh": "以 {changes}重启"},
    "triage.event.config_change": {"en": "reported a new configuration: {changes}", "zh": "报告了新配置：{changes}"},
    "triage.event.appeared": {"en": "appeared", "zh": "出现"},
    "triage.event.vanished": {"en": "vanished", "zh": "消失"},
    "triage.event.changed": {"en": "{name} {after} (was {before})", "zh": "{name} {after}（原为 {before}）"},
    "triage.event.default": {"en": "vLLM's default", "zh": "vLLM 的默认值"},
    "triage.event.line": {"en": "{at} UTC: {instance} {event}", "zh": "UTC {at}：{instance} {event}"},
    "triage.history.none": {"en": "no change of level in any series over the window",
                            "zh": "窗口内各序列的水平都没有变化"},
    "triage.history.log": {"en": "the log: {runs} starts, the last at {at}; it changed {changes}",
                           "zh": "日志：共启动 {runs} 次，最后一次在 {at}；改动了 {changes}"},
    "triage.history.log_same": {"en": "the log: {runs} starts, the last at {at}; no logged setting changed",
                                "zh": "日志：共启动 {runs} 次，最后一次在 {at}；记录的设置没有变化"},
}  # fmt: skip
