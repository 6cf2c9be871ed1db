"""The words of the ``probe`` commands' own views (``probe stream``, ``load``, ``proxy``,
``nginx-config``, ``endpoints``, ``metrics``, ...), in English and Chinese; part of ``WORDS``.

The English is what those views printed before they had a second language, word for word:
scripts and the tests that read them see no change. A verdict or a finding's message that the
probe records in English (``verdict``, ``message``) is shown as recorded in English and said
again from the report's fields in Chinese (``view.proxy_*``, ``view.nginx_msg.*``).
"""

from __future__ import annotations

VIEW_WORDS: dict[str, dict[str, str]] = {
    # stream, load and proxy: the percentile tables and their headings
    "view.segment": {"en": "segment", "zh": "阶段"},
    "view.point_ms": {"en": "{point} (ms)", "zh": "{point}（ms）"},
    "view.errors": {"en": "errors: {errors}", "zh": "错误：{errors}"},
    "view.error_count": {"en": "{kind} x{count}", "zh": "`{kind}` ×{count}"},
    "view.tokens_estimated": {
        "en": "output tokens estimated from events (the server sent no usage)",
        "zh": "输出 token 数按事件估算（服务端未发送用量）",
    },
    "view.succeeded": {
        "en": "{succeeded}/{requests} requests succeeded",
        "zh": "{requests} 个请求中 {succeeded} 个成功",
    },
    "view.heading": {"en": "{target}: {text}", "zh": "{target}：{text}"},
    "view.failure": {"en": "{kind}: {message}", "zh": "`{kind}`：`{message}`"},
    "view.nothing_measured": {
        "en": "nothing could be measured: every request failed (its first error below)",
        "zh": "无法测量：每个请求都失败了（首个错误见下）",
    },
    "view.proxy_nothing": {
        "en": "no verdict: nothing could be measured on {paths} (every request failed; first errors below)",
        "zh": "无结论：{paths} 上无法测量（每个请求都失败了；首个错误见下）",
    },
    "view.none_listed": {"en": "none listed", "zh": "未列出任何模型"},
    "view.served_models": {
        "en": "models this server serves: {served} (pass one with --model)",
        "zh": "该服务提供的模型：{served}（用 --model 指定其一）",
    },
    "view.load_heading": {
        "en": "{target}: concurrency {concurrency}, {succeeded}, {rate} output tokens/s",
        "zh": "{target}：并发 {concurrency}，{succeeded}，每秒输出 {rate} 个 token",
    },
    "view.steady": {"en": "steady state", "zh": "稳态"},
    "view.cold": {"en": "cold (warm-up, kept apart)", "zh": "冷启动（预热请求，单独统计）"},
    "view.saturated": {"en": "client_saturated: {reason}", "zh": "客户端已饱和：{reason}"},
    "view.contended": {"en": "client contended: {reason}", "zh": "客户端资源紧张：{reason}"},
    "view.client_ok": {
        "en": "client self-check ok: loop lag p90 {lag} ms, CPU {cpu} of a core",
        "zh": "客户端自检正常：事件循环延迟 p90 {lag} ms，CPU 占用单核的 {cpu}",
    },
    "view.progress": {
        "en": "{done}{total} requests, {failed} failed; TTFT p50 {ttft50} ms p99 {ttft99} ms; "
        "TPOT p50 {tpot50} ms",
        "zh": "已完成 {done}{total} 个请求，{failed} 个失败；TTFT p50 {ttft50} ms，p99 {ttft99} ms；"
        "TPOT p50 {tpot50} ms",
    },
    "view.direct": {"en": "direct", "zh": "直连"},
    "view.via": {"en": "through the proxy", "zh": "经过代理"},
    "view.proxy_cuts": {
        "en": "the proxy cuts streams (status 200, no [DONE]): a read timeout shorter than a silence",
        "zh": "代理截断了流（状态 200，没有 [DONE]）：读超时短于一次静默",
    },
    "view.proxy_gzip": {
        "en": "the proxy compresses the event stream (Content-Encoding: gzip) and delivers it in bursts",
        "zh": "代理压缩了事件流（Content-Encoding: gzip），分批送达",
    },
    "view.proxy_buffers": {
        "en": "the proxy buffers: up to {via} events per read where the direct path has {direct}{ttft}",
        "zh": "代理在缓冲：每次读取最多 {via} 个事件，直连时为 {direct} 个{ttft}",
    },
    "view.proxy_ttft": {"en": "; TTFT +{ms} ms", "zh": "；TTFT 增加 {ms} ms"},
    "view.proxy_passes": {
        "en": "the proxy passes events through as they come",
        "zh": "代理按到达顺序逐个转发事件",
    },
    # nginx-config
    "view.nginx_title": {"en": "proxied locations", "zh": "代理的 location"},
    "view.nginx_col.where": {"en": "where", "zh": "位置"},
    "view.nginx_col.location": {"en": "location", "zh": "location"},
    "view.nginx_col.buffering": {"en": "buffering", "zh": "缓冲"},
    "view.nginx_col.x_accel": {"en": "X-Accel", "zh": "X-Accel"},
    "view.nginx_col.timeouts": {"en": "read/connect s", "zh": "读/连接超时（秒）"},
    "view.nginx_col.http": {"en": "http ver", "zh": "HTTP 版本"},
    "view.nginx_col.gzip": {"en": "gzip SSE", "zh": "gzip SSE"},
    "view.x_accel_ignored": {"en": "ignored", "zh": "忽略"},
    "view.x_accel_honoured": {"en": "honoured", "zh": "遵从"},
    "view.nginx_default": {"en": "default", "zh": "nginx 默认值"},
    "view.nginx_finding": {
        "en": "{file}:{line} {code} {severity} ({cause}) {location}: {message}\n"
        "    change: {directive}",
        "zh": "{file}:{line} {code} {severity}（{cause}）{location}：{message}\n"
        "    变更：`{directive}`",
    },
    "view.nginx_msg.LAT001": {
        "en": "proxy_buffering is on (from {source}): tokens arrive in ~4 KB bursts{x_accel}",
        "zh": "proxy_buffering 为 on（来自 {source}）：token 以约 4 KB 为一批送达{x_accel}",
    },
    "view.nginx_x_accel_too": {
        "en": "; an upstream 'X-Accel-Buffering: no' would also turn it off",
        "zh": "；上游返回 'X-Accel-Buffering: no' 也能将其关闭",
    },
    "view.nginx_msg.LAT002": {
        "en": "gzip on text/event-stream with buffering on holds the whole stream",
        "zh": "缓冲开启时对 text/event-stream 做 gzip，会扣住整个流",
    },
    "view.nginx_msg.LAT003": {
        "en": "proxy_read_timeout {read}s is shorter than the worst observed silence ({worst} ms)",
        "zh": "proxy_read_timeout {read} 秒短于观察到的最长静默（{worst} ms）",
    },
    "view.nginx_msg.LAT004": {
        "en": "proxy_connect_timeout {connect}s: connection set-up usually cannot exceed 75 s",
        "zh": "proxy_connect_timeout {connect} 秒：建立连接通常不会超过 75 秒",
    },
    "view.nginx_msg.LAT005": {
        "en": "HTTP/1.0 upstream without keepalive: a new connection per request (not a streaming "
        "fault; proxy_buffering off works on HTTP/1.0)",
        "zh": "HTTP/1.0 上游且无 keepalive：每个请求新建一个连接（不是流式问题；"
        "HTTP/1.0 上 proxy_buffering off 同样有效）",
    },
    "view.no_findings": {"en": "no findings", "zh": "没有发现问题"},
    "view.nginx_error": {
        "en": "error: {error} (included from {included_from})",
        "zh": "错误：`{error}`（由 {included_from} 引入）",
    },
    "view.note": {"en": "note: {note}", "zh": "说明：{note}"},
    # probe endpoints / probe metrics in Chinese: a fact's label (English keeps its key lines)
    "fact.reachable": {"en": "reachable", "zh": "可连接"},
    "fact.error": {"en": "error", "zh": "错误"},
    "fact.health_status": {"en": "/health status", "zh": "/health 状态码"},
    "fact.version": {"en": "vLLM version", "zh": "vLLM 版本"},
    "fact.models_status": {"en": "/v1/models status", "zh": "/v1/models 状态码"},
    "fact.wrong_base_path": {"en": "base URL ends in the API path", "zh": "基础 URL 误含 API 路径"},
    "fact.auth": {"en": "API key", "zh": "API 密钥"},
    "fact.model": {"en": "model", "zh": "模型"},
    "fact.max_model_len": {"en": "max_model_len", "zh": "max_model_len"},
    "fact.openai_api": {"en": "OpenAI-compatible API", "zh": "OpenAI 兼容 API"},
    "fact.completions_status": {"en": "/v1/completions status", "zh": "/v1/completions 状态码"},
    "fact.completions_ok": {"en": "/v1/completions answers", "zh": "/v1/completions 可用"},
    "fact.completions_error": {"en": "/v1/completions error", "zh": "/v1/completions 错误"},
    "fact.chat_status": {"en": "/v1/chat/completions status", "zh": "/v1/chat/completions 状态码"},
    "fact.chat_ok": {"en": "/v1/chat/completions answers", "zh": "/v1/chat/completions 可用"},
    "fact.chat_error": {"en": "/v1/chat/completions error", "zh": "/v1/chat/completions 错误"},
    "fact.chat_template_missing": {"en": "chat template missing", "zh": "缺少 chat 模板"},
    "fact.api": {"en": "API the server answers", "zh": "服务端支持的 API"},
    "fact.suffix": {"en": "suffix", "zh": "suffix 参数"},
    "fact.generation_requests_sent": {"en": "generation requests sent", "zh": "已发送的生成请求"},
    "fact.generation": {"en": "metric names' generation", "zh": "指标命名代际"},
    "fact.stats_disabled": {
        "en": "statistics disabled (--disable-log-stats)",
        "zh": "统计已关闭（--disable-log-stats）",
    },
    "fact.engines": {"en": "engines", "zh": "引擎数"},
    "fact.kv_cache_usage": {"en": "KV cache usage", "zh": "KV 缓存占用"},
    "fact.preemptions_total": {"en": "preemptions since start", "zh": "启动以来的抢占次数"},
    "fact.running": {"en": "requests running", "zh": "运行中的请求"},
    "fact.waiting": {"en": "requests waiting", "zh": "排队中的请求"},
    "fact.prompt_tokens_total": {"en": "prompt tokens since start", "zh": "启动以来的输入 token"},
    "fact.generation_tokens_total": {
        "en": "generated tokens since start",
        "zh": "启动以来生成的 token",
    },
    "fact.prefix_cache_queries_total": {
        "en": "prefix cache queries (tokens)",
        "zh": "前缀缓存查询（token）",
    },
    "fact.prefix_cache_hits_total": {
        "en": "prefix cache hits (tokens)",
        "zh": "前缀缓存命中（token）",
    },
    "fact.spec_decode_drafts_total": {"en": "speculative drafts", "zh": "推测解码草稿数"},
    "fact.spec_decode_draft_tokens_total": {
        "en": "speculative draft tokens",
        "zh": "推测解码草稿 token",
    },
    "fact.spec_decode_accepted_tokens_total": {
        "en": "speculative accepted tokens",
        "zh": "推测解码接受的 token",
    },
    "fact.spec_decode_accepted_per_pos_total": {
        "en": "accepted tokens by draft position",
        "zh": "各草稿位置接受的 token",
    },
    "fact.process_cpu_seconds_total": {
        "en": "API server CPU (s)",
        "zh": "API 服务进程 CPU 时间（秒）",
    },
    "fact.ttft_s": {"en": "server-side TTFT", "zh": "服务端 TTFT"},
    "fact.itl_s": {"en": "server-side ITL", "zh": "服务端 ITL"},
    "fact.queue_s": {"en": "server-side queue time", "zh": "服务端排队时间"},
    "fact.prefill_s": {"en": "server-side prefill", "zh": "服务端 prefill"},
    "fact.decode_s": {"en": "server-side decode", "zh": "服务端 decode"},
    "fact.num_gpu_blocks": {"en": "KV blocks", "zh": "KV 块数"},
    "fact.block_size": {"en": "block size (tokens)", "zh": "块大小（token）"},
    "fact.num_gpu_blocks_override": {
        "en": "num_gpu_blocks_override",
        "zh": "num_gpu_blocks_override",
    },
    "fact.gpu_memory_utilization": {"en": "gpu_memory_utilization", "zh": "gpu_memory_utilization"},
    "fact.enable_prefix_caching": {"en": "enable_prefix_caching", "zh": "enable_prefix_caching"},
    "fact.enable_extensible_kv_cache": {"en": "extensible KV cache", "zh": "可扩展 KV 缓存"},
    "fact.itl_smallest_bucket_s": {
        "en": "ITL histogram's smallest bucket",
        "zh": "ITL 直方图最小桶",
    },
    "fact.kv_cache_tokens": {"en": "KV cache capacity (tokens)", "zh": "KV 缓存容量（token）"},
    "fact.restarted": {"en": "server restarted in between", "zh": "期间服务端重启过"},
    "fact.window_s": {"en": "window (s)", "zh": "时间窗口（秒）"},
    "fact.requests": {"en": "requests", "zh": "请求数"},
    "fact.preemptions": {"en": "preemptions", "zh": "抢占次数"},
    "fact.preemptions_per_s": {"en": "preemptions per second", "zh": "每秒抢占次数"},
    "fact.prompt_tokens": {"en": "prompt tokens", "zh": "输入 token"},
    "fact.generation_tokens": {"en": "generated tokens", "zh": "生成的 token"},
    "fact.prefix_cache_queries": {
        "en": "prefix cache queries (tokens)",
        "zh": "前缀缓存查询（token）",
    },
    "fact.prefix_cache_hits": {"en": "prefix cache hits (tokens)", "zh": "前缀缓存命中（token）"},
    "fact.spec_drafts": {"en": "speculative drafts", "zh": "推测解码草稿数"},
    "fact.spec_draft_tokens": {"en": "draft tokens", "zh": "草稿 token"},
    "fact.spec_accepted_tokens": {"en": "accepted tokens", "zh": "接受的 token"},
    "fact.spec_num_speculative_tokens": {
        "en": "num_speculative_tokens",
        "zh": "num_speculative_tokens",
    },
    "fact.spec_acceptance_rate": {"en": "acceptance rate", "zh": "接受率"},
    "fact.spec_mean_acceptance_length": {"en": "mean acceptance length", "zh": "平均接受长度"},
    "fact.spec_acceptance_per_pos": {
        "en": "acceptance by draft position",
        "zh": "各草稿位置接受率",
    },
    "fact.api_server_cpu_cores": {"en": "API server CPU (cores)", "zh": "API 服务进程 CPU（核）"},
    "fact.server_ttft_mean_s": {"en": "server-side TTFT mean", "zh": "服务端 TTFT 平均"},
    "fact.server_itl_mean_s": {"en": "server-side ITL mean", "zh": "服务端 ITL 平均"},
    "fact.server_queue_mean_s": {"en": "server-side queue time mean", "zh": "服务端排队时间平均"},
    "fact.server_prefill_mean_s": {"en": "server-side prefill mean", "zh": "服务端 prefill 平均"},
    "fact.server_decode_mean_s": {"en": "server-side decode mean", "zh": "服务端 decode 平均"},
    "fact.itl_note": {"en": "ITL", "zh": "ITL"},
    "fact.note": {"en": "note", "zh": "说明"},
    "fact.no_vllm_series": {
        "en": "no vllm:* series: the server runs with --disable-log-stats, which in current vLLM removes every engine metric; only http_* series remain",
        "zh": "没有 vllm:* 序列：服务器以 --disable-log-stats 运行，当前 vLLM 因此去掉了所有引擎指标，只剩 http_* 序列",
    },
    "fact.server_itl_p50_low_s": {"en": "server-side ITL p50 above", "zh": "服务端 ITL p50 下界"},
    "fact.server_itl_p50_high_s": {
        "en": "server-side ITL p50 at most",
        "zh": "服务端 ITL p50 上界",
    },
    "fact.server_itl_p50_observations": {"en": "ITL observations", "zh": "ITL 观测数"},
    "fact.since": {"en": "since then: ", "zh": "此后："},
    "fact.histogram": {
        "en": "mean {mean} ms over {count}",
        "zh": "平均 {mean} ms（共 {count} 次）",
    },
    "fact.itl_below_bucket": {
        "en": "mean ITL {mean} ms is below the smallest histogram bucket ({smallest} ms): use the client's ITL",
        "zh": "平均 ITL {mean} ms 低于直方图最小桶（{smallest} ms）：无法从该直方图读出服务端 ITL 百分位，请用客户端的 ITL",
    },
    # probe topology
    "topology.error": {
        "en": "{file}: {error} (expected the output of `nvidia-smi topo -m`)",
        "zh": "{file}：{error}（应为 `nvidia-smi topo -m` 的输出）",
    },
    "topology.no_matrix": {"en": "no GPU matrix found", "zh": "没有找到 GPU 矩阵"},
    "topology.p2p": {
        "en": "a peer-access matrix (nvidia-smi topo -p2p), not the link matrix of topo -m",
        "zh": "这是点对点访问矩阵（`nvidia-smi topo -p2p`），不是 `topo -m` 的互联矩阵",
    },
    "topology.line": {
        "en": "GPUs: {gpus}, interconnect: {interconnect}",
        "zh": "GPU：{gpus} 块，互联：{interconnect}",
    },
    "topology.pair": {"en": "  {a} - {b}: {link}", "zh": "  {a} - {b}：{link}"},
    # probe validate (LoadGen's own reasons are quoted as it wrote them)
    "view.loadgen_logs": {
        "en": "{target}: LoadGen logs in {outdir}",
        "zh": "{target}：LoadGen 日志在 {outdir}",
    },
    "view.at_qps": {"en": " at {qps} qps", "zh": "，{qps} qps"},
    "view.queries_ok": {
        "en": " ({succeeded} of {queries} queries succeeded)",
        "zh": "（{queries} 个查询中 {succeeded} 个成功）",
    },
    "view.run_result": {
        "en": "{scenario}{rate}: {result}{counts}",
        "zh": "{scenario}{rate}：{result}{counts}",
    },
    "view.not_evidence": {"en": "not latency evidence", "zh": "不能作为延迟证据"},
    "view.value": {"en": "value", "zh": "值"},
    "view.peak": {
        "en": "highest VALID Server rate found: {qps} qps",
        "zh": "找到的最高 VALID Server 速率：{qps} qps",
    },
    "view.no_query": {"en": "no query was issued", "zh": "没有发出任何查询"},
    "view.queries_failed": {
        "en": "{failed} of {queries} queries failed ({kinds}){nothing}{first}",
        "zh": "{queries} 个查询中 {failed} 个失败（{kinds}）{nothing}{first}",
    },
    "view.nothing_ok": {"en": ", nothing succeeded", "zh": "，没有一个成功"},
    "view.first_error": {"en": "; first error: {message}", "zh": "；第一个错误：`{message}`"},
    "view.loadgen_said": {"en": "{reason}", "zh": "LoadGen 原文：`{reason}`"},
    "view.offline_note": {
        "en": "Offline measures throughput only; it is not evidence of online latency (P6.6)",
        "zh": "Offline 只衡量吞吐，不能作为在线延迟的证据（P6.6）",
    },
    "view.error_note": {
        "en": "no query succeeded: nothing was measured, LoadGen's latencies are not shown",
        "zh": "没有查询成功：什么也没测到，不显示 LoadGen 的延迟",
    },
    "view.failed_note": {
        "en": "LoadGen's latencies include the failed queries' replies: not latency evidence",
        "zh": "LoadGen 的延迟包含了失败查询的回复：不能作为延迟证据",
    },
    "view.loadgen.query_count": {"en": "query_count", "zh": "查询数"},
    "view.loadgen.latency_p90_ms": {"en": "latency_p90_ms", "zh": "延迟 p90（ms）"},
    "view.loadgen.latency_p99_ms": {"en": "latency_p99_ms", "zh": "延迟 p99（ms）"},
    "view.loadgen.early_stopping_p90_ms": {
        "en": "early_stopping_p90_ms",
        "zh": "提前停止估计 p90（ms）",
    },
    "view.loadgen.ttft_p99_ms": {"en": "ttft_p99_ms", "zh": "TTFT p99（ms）"},
    "view.loadgen.tpot_p99_ms": {"en": "tpot_p99_ms", "zh": "TPOT p99（ms）"},
    "view.loadgen.completed_samples_per_s": {
        "en": "completed_samples_per_s",
        "zh": "每秒完成的样本",
    },
    "view.loadgen.tokens_per_s": {"en": "tokens_per_s", "zh": "每秒 token"},
    # probe fleet
    "view.fleet_title": {
        "en": "fleet over the last {window} ({n} replicas, {prometheus})",
        "zh": "最近 {window} 的集群（{n} 个副本，{prometheus}）",
    },
    "view.fleet_col.replica": {"en": "replica", "zh": "副本"},
    "view.fleet_col.share": {"en": "share", "zh": "请求占比"},
    "view.fleet_col.waiting": {"en": "waiting avg/max", "zh": "排队 平均/最大"},
    "view.fleet_col.preempt": {"en": "preempt", "zh": "抢占"},
    "view.fleet_col.kv": {"en": "KV peak", "zh": "KV 峰值"},
    "view.fleet_col.ttft": {"en": "TTFT p95", "zh": "TTFT p95"},
    "view.fleet_col.itl": {"en": "ITL p95", "zh": "ITL p95"},
    "view.fleet_col.queue": {"en": "queue p95", "zh": "排队时间 p95"},
    "view.between": {"en": "between {low} and {high} ms", "zh": "{low} 到 {high} ms 之间"},
    "view.above": {"en": "above {low} ms", "zh": "高于 {low} ms"},
    "view.fleet_causes": {"en": " -> {causes}", "zh": " -> {causes}"},
    "view.fleet_differs": {
        "en": "{instance} differs{causes}: {why}",
        "zh": "{instance} 与其他副本不同{causes}：{why}",
    },
    "view.fleet_no_url": {
        "en": "its URL is unknown to Prometheus' targets",
        "zh": "Prometheus 的 targets 中没有它的 URL",
    },
    "view.fleet_look_at": {
        "en": "look at {instance} ({where})",
        "zh": "请查看 {instance}（{where}）",
    },
    "view.fleet_none_differs": {
        "en": "no replica differs from the rest",
        "zh": "没有副本与其他副本不同",
    },
    "view.fleet_down": {
        "en": "target {target} is down in Prometheus",
        "zh": "Prometheus 中的 target {target} 已下线",
    },
    "view.fleet_no_series": {
        "en": "no vllm:* series in Prometheus over the last {window}: is it scraping the replicas "
        "(and are they run without --disable-log-stats)?",
        "zh": "最近 {window} 内 Prometheus 中没有 vllm:* 序列：它是否在抓取这些副本（副本是否未加 --disable-log-stats 运行）？",
    },
    "view.fleet_percentile": {
        "en": "{signal} p95 {value} (the other replicas: p95 {others})",
        "zh": "{signal} p95 {value}（其他副本：p95 {others}）",
    },
    "view.fleet_plain": {
        "en": "{signal} {value} ({way}; the other replicas' median {centre})",
        "zh": "{signal} {value}（{way}；其他副本的中位数 {centre}）",
    },
    "view.fleet_high": {"en": "high", "zh": "偏高"},
    "view.fleet_low": {"en": "low", "zh": "偏低"},
    "view.fleet_signal.requests": {"en": "requests", "zh": "请求数"},
    "view.fleet_signal.preemptions": {"en": "preemptions", "zh": "抢占次数"},
    "view.fleet_signal.waiting_avg": {"en": "waiting requests (average)", "zh": "平均排队请求"},
    "view.fleet_signal.kv_peak": {"en": "KV cache peak", "zh": "KV 缓存峰值"},
    "view.fleet_signal.ttft_p95": {"en": "TTFT", "zh": "TTFT"},
    "view.fleet_signal.itl_p95": {"en": "ITL", "zh": "ITL"},
    "view.fleet_signal.queue_p95": {"en": "queue time", "zh": "排队时间"},
    # probe replicas
    "view.replicas_title": {"en": "replicas from {source}", "zh": "副本（来自 {source}）"},
    "view.replicas_col.replica": {"en": "replica", "zh": "副本"},
    "view.replicas_col.ttft": {"en": "TTFT p50", "zh": "TTFT p50"},
    "view.replicas_col.tpot": {"en": "TPOT p50", "zh": "TPOT p50"},
    "view.replicas_col.waiting": {"en": "waiting max", "zh": "最大排队"},
    "view.replicas_col.preempt": {"en": "preempt", "zh": "抢占"},
    "view.replicas_col.share": {"en": "share via balancer", "zh": "经均衡器的占比"},
    "view.replica_error": {"en": "{url}: {error}", "zh": "{url}：`{error}`"},
    "view.replicas_via": {
        "en": "through the balancer {balancer}: TTFT p50 {ttft}, TPOT p50 {tpot}",
        "zh": "经过均衡器 {balancer}：TTFT p50 {ttft}，TPOT p50 {tpot}",
    },
    "view.replica_cause": {"en": "{cause}: {text}", "zh": "{cause}：{text}"},
    "view.replicas_fine": {
        "en": "no replica is slower than the others; the balancer spreads the load",
        "zh": "没有副本比其他副本慢；均衡器把负载分散开了",
    },
    "view.replicas_upstream": {
        "en": "nginx upstream {name} ({file}:{line})",
        "zh": "nginx 的 upstream {name}（{file}:{line}）",
    },
    "view.replicas_given": {"en": "--replica", "zh": "--replica 参数"},
    "view.replicas_sticky": {
        "en": "all {total} requests through the balancer went to {replica}, none to the other {others}{by}",
        "zh": "经过均衡器的 {total} 个请求全部到了 {replica}，其他 {others} 个副本一个也没有{by}",
    },
    # The same facts as the judgement's recorded English: the share, the equal share, the band
    # chance gives it, and the replica's weight when the upstream gives it one.
    "view.replicas_unbalanced": {
        "en": "{replica} served {served} of {total} requests through the balancer ({share}) against an equal share of {equal} (+-{band} by chance){weighted}",
        "zh": "{replica} 处理了经过均衡器的 {total} 个请求中的 {served} 个（{share}），而均等份额为 {equal}（随机波动 ±{band}）{weighted}",
    },
    "view.replicas_by": {
        "en": "; upstream {upstream} balances with {method}",
        "zh": "；upstream {upstream} 的均衡方式为 {method}",
    },
    "view.replicas_weight": {
        "en": " (its weight in the upstream: {weight})",
        "zh": "（它在 upstream 中的权重：{weight}）",
    },
    "view.replica_slower": {
        "en": "{segment} p50 {mine} ms against {theirs} ms on the other replicas",
        "zh": "{segment} p50 {mine} ms，其他副本为 {theirs} ms",
    },
    "view.replica_slow": {"en": "{url}: {slower}", "zh": "{url}：{slower}"},
    "view.why_preempted": {
        "en": "{n} preemptions during its round",
        "zh": "其测量轮次中发生 {n} 次抢占",
    },
    "view.why_queue": {
        "en": "up to {waiting} requests waiting; {share} of its engine's TTFT in the queue",
        "zh": "最多 {waiting} 个请求排队；其引擎 TTFT 中有 {share} 花在排队上",
    },
    "view.why_unread": {"en": "its /metrics could not be read", "zh": "无法读取它的 /metrics"},
    "view.why_elsewhere": {
        "en": "no preemption and no queue on its server: the difference is elsewhere",
        "zh": "其服务端既无抢占也无排队：差异另有原因",
    },
    "fact.not_model_list": {
        "en": "not an OpenAI model list",
        "zh": "200，但不是 OpenAI 格式的模型列表",
    },
    "fact.api_both": {"en": "both", "zh": "两者都支持"},
}
