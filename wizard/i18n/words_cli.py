"""The command line's own words, in English and Chinese: every ``--help``'s descriptions and option
help (argparse's own words, its section titles and error lines, are in the gettext catalog:
``wizard.i18n.catalog``).

Kept apart from ``wizard.i18n.words`` (the walk's and the summaries' words) so that ``--help`` and a
bad flag import one small table and nothing else. The English is the text ``--help`` printed
before the Chinese existed, byte for byte. A phrase is filled in only when values are given: some
quote braces as they are typed (``${VAR}``, a JSON example). Help texts go through argparse's
``%`` formatting, so no phrase may hold a bare ``%``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

Words = Callable[..., str]

_DEFINITIONS_EN = """\
definitions:
  TTFT  send -> first SSE event carrying output (content, reasoning or tool call); the role-only
        first chat chunk and usage-only chunks never count
  TPOT  (last output event - first output event) / (output tokens - 1)
  ITL   each gap between consecutive output events (an event may carry several tokens; the
        per-token split uses vLLM's continuous usage counts when the server sends them)
  E2E   send -> last output event
  output tokens come from the server's usage (always requested); without it the probe counts output
  events and flags the count as an estimate. Requests ask for a fixed length: max_tokens plus vLLM's
  ignore_eos, temperature 0, a prompt of --input-tokens words.

The API key is read from $VLLM_API_KEY (then $OPENAI_API_KEY) or the variable --api-key-env names."""
_DEFINITIONS_ZH = """\
定义：
  TTFT  发出请求 -> 第一个带输出（内容、推理或工具调用）的 SSE 事件；聊天接口只带角色的
        首个分块和只带用量的分块都不算
  TPOT  （最后一个输出事件 - 第一个输出事件）/（输出 token 数 - 1）
  ITL   相邻两个输出事件之间的每个间隔（一个事件可能带多个 token；服务发送 vLLM 的
        持续用量计数时，按 token 拆分用的就是它）
  E2E   发出请求 -> 最后一个输出事件
  输出 token 数取自服务的用量统计（总会请求它）；没有时探针数输出事件，并标明这个数是估计值。
  请求固定长度：max_tokens 加上 vLLM 的 ignore_eos，temperature 0，提示词为 --input-tokens 个词。

API 密钥从 $VLLM_API_KEY（其次 $OPENAI_API_KEY）或 --api-key-env 指定的变量读取。"""

# --help: a command's keys begin with its name (``probe.stream.repeat``); what several commands
# share has a key of its own (``api_key_env``, ``json``).
HELP: dict[str, dict[str, str]] = {
    # --version's help: argparse words it only from Python 3.13 (before, a default no catalog sees)
    "version": {"en": "show program's version number and exit", "zh": "显示程序的版本号并退出"},
    # shared by several commands
    "api_key_env": {"en": "environment variable holding the API key", "zh": "存放 API 密钥的环境变量"},
    "json": {"en": "print one JSON object", "zh": "输出一个 JSON 对象"},
    "lang": {"en": "zh: {shown} in Chinese (default: from $LANG)",
             "zh": "zh：用中文输出{shown}（默认：取自 $LANG）"},
    "walk.lang": {"en": "language of the walk (default: from $LANG)", "zh": "诊断过程的语言（默认：取自 $LANG）"},
    "walk.auto": {"en": "never prompt: evidence and defaults", "zh": "从不提问：依据证据和默认值作答"},
    "walk.answers": {"en": "YAML file of answers keyed by question id / finding code",
                     "zh": "答案的 YAML 文件，以问题 id / 发现代码为键"},
    "timeout_per_request": {"en": "read timeout per request in seconds", "zh": "每个请求的读取超时（秒）"},
    "salvage": {"en": "keep the verified part of a damaged transcript (a last line cut mid-write, a torn tail after "
                      "a full disk): everything from the first line that does not verify is left out, and standard "
                      "error says what",
                "zh": "保留损坏记录中验证通过的部分（最后一行写到一半被截断、磁盘写满后残缺的尾部）：从第一条"
                      "验证不通过的行起全部略去，标准错误输出会说明略去了什么"},
    "playbook_path": {"en": "playbook YAML (default: the built-in one)", "zh": "playbook YAML（默认：内置的那个）"},
    "seconds_to_wait_10": {"en": "seconds to wait (default 10)", "zh": "等待的秒数（默认 10）"},
    # latency-wizard
    "main.description": {
        "en": "Guided troubleshooting for LLM inference latency on vLLM (optionally behind nginx): "
              "an ordered diagnosis with evidence at every step, one change at a time, a transcript "
              "you can replay and an incident summary you can paste. Try it with nothing deployed: "
              "'latency-wizard demo'. On a real server: 'latency-wizard run --target URL'.",
        "zh": "vLLM（可在 nginx 之后）上 LLM 推理延迟的引导式排查：按顺序诊断，每一步都有证据，一次只做一处"
              "变更，留下可回放的记录和可直接粘贴的故障摘要。无需部署任何东西即可试用："
              "'latency-wizard demo'。在真实服务上：'latency-wizard run --target URL'。"},
    # triage
    "triage.help": {"en": "when paged: the likely cause in seconds, read-only (sends no request)",
                    "zh": "被呼叫时：几秒内给出可能的原因，只读（不发送任何请求）"},
    "triage.description": {
        "en": """\
Read what the server already says, without sending it a single completion: /health, /version,
/v1/models, /metrics scraped a few times seconds apart (deltas: rates, not lifetime counters),
the vLLM log's tail, the nginx config, nginx's access log and Prometheus' history when given.
Print the likely cause class, what was checked, the strongest signal with its numbers, what is
ruled out and why, the next step (usually the exact 'latency-wizard run' command) and that
step's production risk; with --prometheus, when the latency changed and what changed on the
replicas at that moment. Exit 3 when a class is named, 0 when none is.""",
        "zh": "读取服务自己已经给出的信息，不向它发送任何补全请求：/health、/version、/v1/models，相隔几秒"
              "抓取数次的 /metrics（看增量：速率而不是累计计数），以及给出时的 vLLM 日志尾部、nginx 配置、nginx "
              "访问日志和 Prometheus 历史。输出可能的原因类别、检查了什么、最强的信号及其数值、排除了什么及理由、"
              "下一步（通常是确切的 'latency-wizard run' 命令）以及这一步对生产的风险；给出 --prometheus 时，还有"
              "延迟何时变化、当时副本上发生了什么变化。找到原因类别时退出码为 3，没有时为 0。"},
    "triage.access_log": {"en": "nginx access log whose format writes $request_time, $upstream_header_time, "
                                "$upstream_response_time as name=value (or rt=, uht=, urt=)",
                          "zh": "nginx 访问日志，其格式以 name=value（或 rt=、uht=、urt=）写出 $request_time、"
                                "$upstream_header_time、$upstream_response_time"},
    "triage.target": {"en": "base URL of vLLM, e.g. http://127.0.0.1:8000", "zh": "vLLM 的基础 URL，例如 http://127.0.0.1:8000"},
    "triage.scrapes": {"en": "how many times to read /metrics (default 3, 2 to 20)",
                       "zh": "读取 /metrics 的次数（默认 3，2 到 20）"},
    "triage.interval": {"en": "seconds between two /metrics reads (default 2)",
                        "zh": "两次读取 /metrics 之间的秒数（默认 2）"},
    "triage.timeout": {"en": "seconds to wait for each answer (default 5)", "zh": "每个应答的等待秒数（默认 5）"},
    "triage.format": {"en": "rich (default) or text: plain lines to paste into the incident channel",
                      "zh": "rich（默认）或 text：可直接贴到故障频道的纯文本行"},
    "triage.shown": {"en": "the triage", "zh": "分诊结果"},
    # demo
    "demo.help": {"en": "walk the diagnosis against the built-in simulator", "zh": "对内置模拟器走一遍诊断"},
    "demo.description": {
        "en": """\
Start the built-in vLLM simulator and, when nginx is installed, a throwaway nginx in front of it
with nginx's default buffering (the classic "the model is slow" that is not the model). Then walk
the whole diagnosis against both, apply the proposed changes to the demo's own processes, and
write the transcript. Every process the demo started is stopped at the end, on errors and on Ctrl-C.
Without nginx the walk runs without the proxy leg. On a terminal the walk asks its questions;
without one (or with --auto) it answers with evidence and defaults.

The simulator runs with --http h11, so it answers nginx's HTTP/1.0 upstream request with a
close-delimited body: that is where nginx's default proxy_buffering really batches a stream. A
stock vLLM (uvicorn with httptools) answers chunked, and a stock nginx then passes its events
through one by one.""",
        "zh": "启动内置的 vLLM 模拟器；装有 nginx 时，再在它前面起一个用完即弃、采用 nginx 默认缓冲的 nginx"
              "（经典的“模型很慢”，其实不是模型的问题）。然后对两者走完整个诊断，把建议的变更应用到演示自己的"
              "进程上，并写下记录。演示启动的每个进程都会在结束、出错和 Ctrl-C 时停掉。没有 nginx 时，诊断不走"
              "代理这一路。在终端上诊断会提问；没有终端（或用 --auto）时，依据证据和默认值作答。"
              "模拟器以 --http h11 运行，对 nginx 的 HTTP/1.0 上游请求以关闭连接界定正文作答：nginx 默认的 "
              "proxy_buffering 正是在这种情况下把流成批攒住。标准 vLLM（uvicorn 加 httptools）以 chunked "
              "作答，标准 nginx 就会逐个转发它的事件。"},
    "demo.scenario": {"en": "simulator scenario (see 'sim --list-scenarios')",
                      "zh": "模拟器场景（见 'sim --list-scenarios'）"},
    "demo.transcript": {"en": "where to write the transcript", "zh": "记录写到哪里"},
    "demo.no_nginx": {"en": "do not put nginx in front of the simulator", "zh": "不在模拟器前面放 nginx"},
    "demo.withhold": {
        "en": "walk without this evidence (the vLLM log, or the GPU host's files), as an engineer "
              "who has no access to it would; repeat for both. Shows what the walk finds from "
              "measurements and /metrics alone",
        "zh": "不用这项证据（vLLM 日志，或 GPU 主机上的文件）来诊断，就像拿不到它的工程师那样；两者都不用就"
              "重复给出。显示仅凭测量和 /metrics 能发现什么"},
    "demo.engine_flag": {
        "en": "start the simulator with this vLLM flag as well, on top of the scenario (a second "
              "fault): max_num_seqs=4, max_num_batched_tokens=16384, gpu_memory_utilization=0.73, "
              "max_model_len=...; the walk may change it like any other. disable_log_stats=True turns "
              "the server's /metrics statistics off (as vLLM's --disable-log-stats)",
        "zh": "在场景之上再给模拟器加这个 vLLM 参数（第二个故障）：max_num_seqs=4、"
              "max_num_batched_tokens=16384、gpu_memory_utilization=0.73、max_model_len=……；诊断可以像"
              "改别的参数一样改它。disable_log_stats=True 关闭服务的 /metrics 统计（同 vLLM 的 "
              "--disable-log-stats）"},
    "demo.keep_files": {
        "en": "keep the demo's temporary folders (the simulator's log, the GPU host's files, "
              "nginx's config) after it ends; by default they are removed on exit, on errors and on "
              "Ctrl-C (the transcript stays where it was written)",
        "zh": "结束后保留演示的临时文件夹（模拟器的日志、GPU 主机的文件、nginx 的配置）；默认在退出、出错和 "
              "Ctrl-C 时删除（记录仍留在写入的位置）"},
    # run and resume
    "run.help": {"en": "walk the diagnosis against a server", "zh": "对一个服务走一遍诊断"},
    "run.description": {
        "en": """\
Walk the diagnosis (baseline, entry point, resources/KV cache/scheduling, parallelism/start-up,
nginx, validation, closing audit) against a vLLM server, optionally behind a proxy. Every step says
why it matters, what was measured and what it means; a finding proposes ONE change, and after it is
applied the wizard measures again with the same spec and compares with the baseline.

Who answers: a person at the terminal (default), --answers FILE (YAML keyed by question id and
finding code), or --auto (evidence and defaults, never prompts, applies nothing it does not own).
The transcript (append-only, hash-chained, 0600) is written as the walk goes; Ctrl-C keeps it and
prints how to resume. The API key is read from $VLLM_API_KEY (then $OPENAI_API_KEY), never a flag.

Exit status (also the `end` event's "outcome" in the transcript, and `export --format json`):
  0  the walk completed and no cause remains (none found, or each fix proven by its own evidence)
  3  the walk completed and a cause remains (a warn or fail finding not shown gone)
  4  the walk completed but nothing could be measured (no round succeeded, nothing found)
  1  the walk could not complete (an error, or a different server when resuming)
  2  usage errors; 130 interrupted (the transcript is kept; resume it)""",
        "zh": """\
对一个 vLLM 服务（可在代理之后）走一遍诊断（基线、入口、资源/KV 缓存/调度、并行/启动、nginx、
验证、收尾审计）。每一步都说明为什么重要、测了什么、意味着什么；一项发现只建议一处变更，
变更应用后，向导用同样的规格重新测量，并与基线比较。

谁来作答：终端前的人（默认），--answers FILE（以问题 id 和发现代码为键的 YAML），
或 --auto（依据证据和默认值，从不提问，不属于它的东西一概不改）。
记录（只追加、哈希链、0600）随诊断逐步写入；Ctrl-C 会保留它，并显示如何继续。
API 密钥从 $VLLM_API_KEY（其次 $OPENAI_API_KEY）读取，从不通过参数给出。

退出状态（也是记录中 `end` 事件的 "outcome"，以及 `export --format json` 中的）：
  0  诊断完成，没有遗留的原因（没有发现，或每个修复都由它自己的证据证明）
  3  诊断完成，仍有原因（一项 warn 或 fail 发现未被证明已消失）
  4  诊断完成，但什么也没测到（没有一轮成功，也没有发现）
  1  诊断未能完成（出错，或继续时应答的是另一个服务）
  2  用法错误；130 被中断（记录已保留，可以继续）"""},
    "run.epilog": {
        "en": """\
examples:
  latency-wizard run --target http://127.0.0.1:8000
  latency-wizard run --target http://vllm:8000 --proxy https://llm.example.com --auto
  latency-wizard run --target http://vllm:8000 --vllm-log vllm.log --host-evidence gpu-host/
  latency-wizard run --prometheus http://prometheus:9090 --job vllm --window 15m --auto
  latency-wizard resume transcripts/20261202T101500Z-vllm-8000.ndjson --auto""",
        "zh": """\
示例：
  latency-wizard run --target http://127.0.0.1:8000
  latency-wizard run --target http://vllm:8000 --proxy https://llm.example.com --auto
  latency-wizard run --target http://vllm:8000 --vllm-log vllm.log --host-evidence gpu-host/
  latency-wizard run --prometheus http://prometheus:9090 --job vllm --window 15m --auto
  latency-wizard resume transcripts/20261202T101500Z-vllm-8000.ndjson --auto"""},
    "run.target": {
        "en": "base URL of vLLM, e.g. http://127.0.0.1:8000 (with --prometheus: default the replica "
              "that differs from the rest)",
        "zh": "vLLM 的基础 URL，例如 http://127.0.0.1:8000（与 --prometheus 同用时：默认取与其他副本不同的那个）"},
    "run.proxy": {"en": "base URL of the same service through the proxy (nginx)",
                  "zh": "经过代理（nginx）访问同一服务的基础 URL"},
    "run.nginx_conf": {"en": "the proxy's config: nginx.conf, a folder, or saved `nginx -T` output",
                       "zh": "代理的配置：nginx.conf、一个文件夹，或保存下来的 `nginx -T` 输出"},
    "run.replica": {
        "en": "a replica behind --proxy (repeat it): each is measured directly against the proxy's "
              "path (default: the nginx upstream in --nginx-conf, else Prometheus' targets)",
        "zh": "--proxy 之后的一个副本（可重复）：每个都直接测量，并与经过代理的路径对比（默认：--nginx-conf "
              "中的 nginx upstream，其次 Prometheus 的 targets）"},
    "run.vllm_log": {
        "en": "the server's log (any vLLM era): start-up config, KV cache, timings and errors. With "
              "it, a server that failed to start is diagnosed from its log. Several replicas: a folder "
              "of their logs, or `kubectl logs --prefix` of their pods in one file",
        "zh": "服务的日志（任一 vLLM 年代）：启动配置、KV 缓存、耗时和错误。有了它，没能启动的服务可以从日志"
              "诊断。多个副本：放它们日志的文件夹，或把各 pod 的 `kubectl logs --prefix` 放在一个文件里"},
    "run.host_evidence": {
        "en": "files collected on the GPU host (lscpu, nvidia-smi topo -m, GPU list, env, the log); "
              "see 'latency-wizard probe host --help'",
        "zh": "在 GPU 主机上收集的文件（lscpu、nvidia-smi topo -m、GPU 列表、env、日志）；"
              "见 'latency-wizard probe host --help'"},
    "run.fleet": {"en": "fleet", "zh": "副本群"},
    "run.fleet.description": {"en": "read every replica through Prometheus first (see 'probe fleet --help')",
                              "zh": "先通过 Prometheus 读取每个副本（见 'probe fleet --help'）"},
    "run.deadline": {"en": "end the walk with what it has after this many seconds (default: sized from the planned rounds, plus one --timeout; printed at the start)",
                     "zh": "超过这么多秒后以已有结果结束诊断（默认：按计划的轮次估算，再加一个 --timeout；开始时打印）"},
    "run.access_log": {"en": "nginx's access log, its format writing $request_time, $upstream_header_time and $upstream_response_time "
                             "(as for triage): the summary splits the first token through the proxy hop by hop",
                       "zh": "nginx 访问日志，其格式需写出 $request_time、$upstream_header_time 和 $upstream_response_time"
                             "（与 triage 相同）：摘要据此把经过代理的首 token 耗时逐跳拆开"},
    "run.rounds": {"en": "how much each round measures: full (the playbook's rounds) or brief (half of each load round's requests, "
                         "never below one look; LoadGen keeps the 64 queries its early stopping needs): a shorter walk with wider "
                         "noise bands and more verdicts inconclusive (the test suite's walks use it). Default: $LATENCY_WIZARD_ROUNDS, "
                         "else {default}",
                   "zh": "每个轮次测量多少：full（playbook 中的轮次）或 brief（每个负载轮次的请求数减半，但不少于一次判断所需；"
                         "LoadGen 保留其 early stopping 所需的 64 个查询）：诊断更短，噪声带更宽，更多结论为“无法判断”（测试套件中的诊断使用它）。"
                         "默认：$LATENCY_WIZARD_ROUNDS，否则 {default}"},
    "run.max_requests": {"en": "send at most N generation requests: a round that would pass the cap is skipped, and the walk says so",
                         "zh": "最多发送 N 个生成请求：会超出上限的轮次将被跳过，并说明跳过了什么"},
    "run.transcript": {"en": "where to write the transcript (default: transcripts/<time>-<target>.ndjson)",
                       "zh": "记录写到哪里（默认：transcripts/<time>-<target>.ndjson）"},
    "run.playbook": {"en": "playbook YAML (default: the built-in vllm-latency playbook)",
                     "zh": "playbook YAML（默认：内置的 vllm-latency playbook）"},
    "resume.help": {"en": "continue a walk that was interrupted", "zh": "继续一次被中断的诊断"},
    "resume.description": {
        "en": "Continue a session from its transcript (verified first) at the step it stopped in. The URLs "
              "it names are shown first: unless --target (--proxy, --replica) names them again, they are "
              "confirmed at the terminal (refused with --auto, --answers or without a terminal), and the "
              "API key is sent only to URLs given on the command line.",
        "zh": "从记录（先经过验证）继续一次会话，从它停下的那一步接着走。先显示记录中的 URL：除非用 --target"
              "（--proxy、--replica）再次给出，否则要在终端上确认（用 --auto、--answers 或没有终端时拒绝），"
              "API 密钥只发往命令行中给出的 URL。"},
    "resume.max_requests": {"en": "send at most N generation requests from here on (what the walk sent before it stopped is not counted)",
                            "zh": "从此处起最多发送 N 个生成请求（中断前已发送的不计入）"},
    "resume.transcript": {"en": "the transcript of the interrupted session", "zh": "被中断的会话的记录"},
    "resume.salvage": {
        "en": "{salvage}; the left-out bytes are moved to FILE.torn and the session continues after "
              "the verified part",
        "zh": "{salvage}；略去的字节移到 FILE.torn，会话从验证通过的部分之后继续"},
    "resume.url": {"en": "the session's {name} again, with the user:password its transcript masked",
                   "zh": "再次给出会话的 {name}，带上记录中被遮盖的 user:password"},
    "workload": {"en": "the incident's workload", "zh": "故障时的负载"},
    "workload.description": {
        "en": "the request shape the service really gets; every round uses it (the baselines, their "
              "repeats and LoadGen whole, the load round at twice its concurrency, the long-prompt and "
              "shared-prefix rounds its model and API). Without it: 64 words in, 64 tokens out, 4 "
              "streams, and the API the server answers (asked when it answers both)",
        "zh": "服务实际收到的请求形态；每一轮都用它（基线、基线的重复和 LoadGen 完整使用，负载轮用两倍并发，"
              "长提示词轮和共享前缀轮用它的模型和 API）。不给时：输入 64 个词，输出 64 个 token，4 个流，"
              "API 用服务应答的那种（两种都应答时会询问）"},
    "workload.model": {"en": "the model id requests name (default: the first served)",
                       "zh": "请求指定的模型 id（默认：服务提供的第一个）"},
    "workload.endpoint": {"en": "the API the service uses: /v1/completions or /v1/chat/completions",
                          "zh": "服务使用的 API：/v1/completions 或 /v1/chat/completions"},
    "workload.input_tokens": {"en": "prompt length in words", "zh": "提示词长度（词数）"},
    "workload.output_tokens": {"en": "output tokens per request (max_tokens, with vLLM's ignore_eos)",
                               "zh": "每个请求的输出 token 数（max_tokens，加上 vLLM 的 ignore_eos）"},
    "workload.concurrency": {"en": "requests in flight at once (streams)", "zh": "同时在途的请求数（流数）"},
    "workload.request_body": {
        "en": "a JSON body the service receives (a `prompt` or a `messages` list), replayed as is: "
              "streaming and usage are asked for so the stream can be timed and counted, and each "
              "request's prompt begins with a word of its own (no request is served from another's "
              "prefix cache)",
        "zh": "服务收到的 JSON 请求体（一个 `prompt` 或一个 `messages` 列表），原样重放：会要求流式和用量统计，"
              "以便给流计时和计数，每个请求的提示词以它自己的一个词开头（没有请求会命中别的请求的前缀缓存）"},
    # replay and export
    "replay.help": {"en": "show a saved session", "zh": "显示一次保存下来的会话"},
    "replay.description": {
        "en": """\
Verify a transcript's hash chain and show every step with the same renderers as the live walk.
The chain finds accidental damage (a cut write, a changed byte: reported with its line, exit 1),
not an edit made on purpose, since anyone can rebuild it; the signature with this machine's key
(in ~/.config/latency-wizard/) finds that too, so replay says whether this machine signed the
file as it is. Nothing touches the network, unless --rerun repeats the recorded measurements now
and shows how each segment moved since: against --target/--proxy, or against the recorded URLs
once you confirm them at the terminal (without a terminal: refused). The API key is sent only to
URLs given on the command line.""",
        "zh": """\
验证记录的哈希链，并用与实时诊断相同的渲染显示每一步。哈希链能发现意外损坏（写入中断、字节改变：
连同行号报告，退出码 1），不能发现故意的改动，因为任何人都能重建它；用本机密钥
（在 ~/.config/latency-wizard/ 中）做的签名也能发现后者，所以 replay 会说明文件是否由本机签名且未被改动。
不访问网络，除非 --rerun 现在重复记录下的测量并显示每个阶段此后的变化：对 --target/--proxy，
或在终端上确认之后对记录中的 URL（没有终端时：拒绝）。API 密钥只发往命令行中给出的 URL。"""},
    "replay.exit_status": {
        "en": """\
Exit status: 0 shown (with --salvage also when a damaged tail was left out); 1 the transcript
cannot be trusted or read (the line is named; --salvage may keep what precedes it); 2 usage
errors.""",
        "zh": """\
退出状态：0 已显示（用 --salvage 时，略去了损坏的尾部也是 0）；1 记录不可信或无法读取
（会指出是哪一行；--salvage 可以保留它之前的部分）；2 用法错误。"""},
    "replay.lang": {"en": "language (default: the session's)", "zh": "语言（默认：会话的语言）"},
    "replay.rerun": {"en": "repeat the recorded measurements now", "zh": "现在重复记录下的测量"},
    "replay.proxy": {"en": "with --rerun: measure through this proxy URL instead of the recorded one",
                     "zh": "与 --rerun 同用：经由这个代理 URL 测量，而不是记录中的那个"},
    "export.force": {"en": "replace an existing -o file (never the transcript itself, never through a symbolic link)",
                     "zh": "替换已存在的 -o 文件（绝不替换记录本身，也绝不经由符号链接）"},
    "replay.target": {"en": "with --rerun: measure this base URL instead of the recorded one",
                      "zh": "与 --rerun 同用：测量这个基础 URL，而不是记录中的那个"},
    "replay.api_key_env": {"en": "environment variable holding the API key (for --rerun)",
                           "zh": "存放 API 密钥的环境变量（用于 --rerun）"},
    "export.help": {"en": "write the incident summary (md, html, json, text)",
                    "zh": "写出故障摘要（md、html、json、text）"},
    "export.description": {
        "en": """\
Write the incident summary, the answer first: the root cause (finding id and title), the symptom
in numbers, the one change and its effect as the walk measured it; then the incident's first
rounds beside the final ones, every round (failed ones too), findings, evidence and the audit.
md pastes into a ticket, html is one self-contained page with charts, json is the model for
scripts, text is at most 15 plain lines for an incident channel.""",
        "zh": """\
写出故障摘要，答案在前：根因（发现 id 和标题）、用数字表示的症状、唯一的变更及诊断测得的效果；
然后是故障时的首轮与最终轮次对照、每一轮（包括失败的）、发现、证据和审计。
md 可粘贴进工单，html 是带图表的独立单页，json 是给脚本用的模型，
text 是最多 15 行的纯文本，供故障频道使用。"""},
    "export.output": {"en": "file to write (default: standard output)", "zh": "要写入的文件（默认：标准输出）"},
    # playbook
    "playbook.help": {"en": "check or show a playbook", "zh": "检查或显示一个 playbook"},
    "playbook.check.help": {"en": "validate a playbook", "zh": "验证一个 playbook"},
    "playbook.check.description": {
        "en": """\
Validate a playbook: schema (with file:line), start exists, every node reachable and able to reach
the end, stage order respected except declared re-measure loops, every cycle through a measurement
node, probe names registered, finding codes defined, en and zh texts present, and every procedure
item P0.1..P7.5 covered. Exit 0 when valid, 1 with one line per problem.""",
        "zh": "验证一个 playbook：模式（带 file:line）、start 存在、每个节点都可到达且能到达终点、除已声明的重测"
              "循环外遵守阶段顺序、每个环都经过一个测量节点、探针名已注册、发现代码已定义、en 和 zh 文本齐全，"
              "以及覆盖了每个流程条目 P0.1..P7.5。有效时退出码 0，否则为 1，每个问题一行。"},
    "playbook.show.help": {"en": "draw the decision graph", "zh": "画出决策图"},
    "playbook.findings.help": {"en": "list every finding code as Markdown (docs/findings.md)",
                               "zh": "以 Markdown 列出每个发现代码（docs/findings.md）"},
    # probe
    "probe.help": {"en": "run one probe on its own (see 'probe stream --help')",
                   "zh": "单独运行一个探针（见 'probe stream --help'）"},
    "probe.stream.help": {"en": "time streamed requests (TTFT, TPOT, ITL, E2E)",
                          "zh": "给流式请求计时（TTFT、TPOT、ITL、E2E）"},
    "probe.stream.description": {
        "en": """\
Send streamed generation requests one after another and time them event by event.

{definitions}
Exit status: 0 when at least one request succeeded, 1 when none did, 2 on usage errors.""",
        "zh": """\
一个接一个地发送流式生成请求，逐个事件计时。

{definitions}
退出状态：至少一个请求成功时为 0，一个都没成功时为 1，用法错误时为 2。"""},
    "probe.stream.repeat": {"en": "requests, one after another (default 5)", "zh": "请求数，一个接一个（默认 5）"},
    "probe.load.help": {"en": "closed-loop load at a fixed concurrency", "zh": "固定并发的闭环负载"},
    "probe.load.description": {
        "en": """\
Closed-loop load: keep --concurrency identical streams in flight for --requests requests (or for
--duration seconds), one connection per stream. Cold requests (each connection's first, and the
first --warmup sent) are reported apart from steady state; latencies start when a request's first
byte leaves, with pool wait, connect and TLS reported apart. The client checks itself (event-loop
lag, its own CPU, how long requests waited to leave); when it is saturated the result says so
(cause client_saturated) instead of blaming the server.

{definitions}
Exit status: 0 when at least one steady request succeeded, 1 when none did, 2 on usage errors.""",
        "zh": """\
闭环负载：让 --concurrency 个相同的流保持在途，共 --requests 个请求（或持续 --duration 秒），
每个流一个连接。冷请求（每个连接的第一个，以及最先发出的 --warmup 个）与稳态分开报告；
延迟从请求的第一个字节发出时算起，连接池等待、建立连接和 TLS 分开报告。客户端会检查自己
（事件循环延迟、自身的 CPU、请求等了多久才发出）；客户端饱和时结果会这样说
（原因 client_saturated），而不是归咎于服务。

{definitions}
退出状态：至少一个稳态请求成功时为 0，一个都没成功时为 1，用法错误时为 2。"""},
    "probe.load.concurrency": {"en": "streams in flight (default 8)", "zh": "在途的流数（默认 8）"},
    "probe.load.requests": {"en": "steady-state requests (default 32)", "zh": "稳态请求数（默认 32）"},
    "probe.load.duration": {"en": "seconds of steady-state load instead", "zh": "改为持续多少秒的稳态负载"},
    "probe.load.warmup": {"en": "cold requests beyond each connection's first (default 2)",
                          "zh": "每个连接第一个请求之外的冷请求数（默认 2）"},
    "probe.validate.help": {"en": "MLPerf LoadGen scenarios (SingleStream, Server, Offline)",
                            "zh": "MLPerf LoadGen 场景（SingleStream、Server、Offline）"},
    "probe.validate.description": {
        "en": """\
Validate under standardised load with the real MLPerf LoadGen (pip install mlcommons-loadgen):
  SingleStream  one query after another; reports the 90th-percentile early-stopping estimate
  Server        Poisson arrivals at --qps from a fixed seed (identical schedule before and after a
                change); VALID only if TTFT/TPOT p99 meet the bounds (--ttft-ms/--tpot-ms or
                --preset) and early stopping is satisfied; --find-peak bisects for the highest rate
  Offline       everything at once; throughput only, never evidence of online latency
Never compare results across scenarios. LoadGen's logs go to --outdir.

LoadGen judges timing only. A run is VALID when LoadGen said VALID and every query succeeded;
any failed query makes it INVALID (the reasons say how many and the first error), and a run in
which no query succeeded is ERROR: nothing was measured. LoadGen's own INVALID reasons follow.

{definitions}
Exit status: 0 VALID (with --find-peak: a VALID rate was found); 1 INVALID (or no VALID rate
found); 3 ERROR: nothing could be measured (every query failed, or the model list could not be
read); 2 on usage errors.""",
        "zh": """\
用真正的 MLPerf LoadGen（pip install mlcommons-loadgen）在标准化负载下验证：
  SingleStream  一个查询接一个查询；报告第 90 百分位的提前停止估计
  Server        以 --qps 的速率按固定种子泊松到达（变更前后调度完全相同）；只有 TTFT/TPOT p99
                满足界限（--ttft-ms/--tpot-ms 或 --preset）且满足提前停止条件时才是 VALID；
                --find-peak 二分查找最高速率
  Offline       全部同时发出；只看吞吐，绝不能作为在线延迟的证据
不要跨场景比较结果。LoadGen 的日志写到 --outdir。

LoadGen 只评判时延。LoadGen 判为 VALID 且每个查询都成功时，一次运行才是 VALID；
任一查询失败都会使它成为 INVALID（原因中写明失败了多少个以及第一个错误），
没有一个查询成功的运行是 ERROR：什么也没测到。之后列出 LoadGen 自己的 INVALID 原因。

{definitions}
退出状态：0 VALID（用 --find-peak 时：找到了一个 VALID 速率）；1 INVALID（或没找到 VALID 速率）；
3 ERROR：什么也没能测到（每个查询都失败，或无法读取模型列表）；2 用法错误。"""},
    "probe.validate.qps": {"en": "Server/Offline target rate (default 1)", "zh": "Server/Offline 的目标速率（默认 1）"},
    "probe.validate.preset": {"en": "MLPerf model preset for TTFT/TPOT bounds, e.g. llama3_1-8b",
                              "zh": "给出 TTFT/TPOT 界限的 MLPerf 模型预设，例如 llama3_1-8b"},
    "probe.validate.ttft_ms": {"en": "Server TTFT p99 bound (default 2000)", "zh": "Server 的 TTFT p99 界限（默认 2000）"},
    "probe.validate.tpot_ms": {"en": "Server TPOT p99 bound (default 100)", "zh": "Server 的 TPOT p99 界限（默认 100）"},
    "probe.validate.min_duration": {"en": "seconds (default 10)", "zh": "秒数（默认 10）"},
    "probe.validate.min_queries": {"en": "queries (default 64)", "zh": "查询数（默认 64）"},
    "probe.validate.max_in_flight": {"en": "concurrent requests cap", "zh": "并发请求数上限"},
    "probe.validate.find_peak": {"en": "Server: bisect for the peak rate", "zh": "Server：二分查找峰值速率"},
    "probe.validate.max_runs": {"en": "--find-peak: most runs (default 5)", "zh": "--find-peak：最多运行次数（默认 5）"},
    "probe.validate.outdir": {"en": "LoadGen log folder (default mlperf-logs)", "zh": "LoadGen 日志文件夹（默认 mlperf-logs）"},
    "probe.proxy.help": {"en": "direct vs proxy: the burst signature of a buffering proxy",
                         "zh": "直连与经过代理对比：缓冲代理的成批特征"},
    "probe.proxy.description": {
        "en": """\
Send the same streamed request to vLLM directly and through the proxy (nginx), --repeat times each,
and compare: TTFT inflation, events per network read, whether the response headers were held back
with the first burst, whether the whole stream was held (gzip with buffering), and streams cut
short (status 200 without [DONE]: a proxy_read_timeout shorter than a silence).
Exit status: 0 when the proxy passes events through, 1 when it buffers or cuts, 2 on usage errors.""",
        "zh": """\
把同一个流式请求直接发给 vLLM，并经过代理（nginx）发送，各 --repeat 次，然后比较：TTFT 的膨胀、
每次网络读取的事件数、响应头是否被扣到第一批一起发出、整个流是否被扣住（gzip 加缓冲），
以及被提前截断的流（状态 200 但没有 [DONE]：proxy_read_timeout 比一段静默还短）。
退出状态：代理逐个转发事件时为 0，缓冲或截断时为 1，用法错误时为 2。"""},
    "probe.proxy.proxy": {"en": "base URL of the same service through the proxy",
                          "zh": "经过代理访问同一服务的基础 URL"},
    "probe.proxy.repeat": {"en": "requests per path (default 3)", "zh": "每条路径的请求数（默认 3）"},
    "probe.nginx_config.help": {"en": "static analysis of an nginx config for token streaming",
                                "zh": "针对 token 流式输出对 nginx 配置做静态分析"},
    "probe.nginx_config.description": {
        "en": """\
Read an nginx config (a file with its includes, a folder, or saved `nginx -T` output; a pasted
location block or a template with ${VAR} placeholders works too) and report, for every location
that proxies, the effective proxy_buffering (and where it was set), X-Accel-Buffering handling,
timeouts, proxy_http_version, gzip on text/event-stream, proxy_cache and buffer sizes, with the
exact directive to change. Exit status: 0 without findings, 1 with findings or a syntax error.""",
        "zh": """\
读取 nginx 配置（一个文件连同它 include 的文件、一个文件夹，或保存下来的 `nginx -T` 输出；
粘贴的 location 块或带 ${VAR} 占位符的模板也可以），对每个做代理的 location 报告：实际生效的
proxy_buffering（及其设置位置）、X-Accel-Buffering 的处理、超时、proxy_http_version、
text/event-stream 上的 gzip、proxy_cache 和缓冲区大小，并给出要改的确切指令。
退出状态：没有发现时为 0，有发现或语法错误时为 1。"""},
    "probe.nginx_config.path": {"en": "nginx.conf, a folder of configs, or saved `nginx -T` output",
                                "zh": "nginx.conf、放配置的文件夹，或保存下来的 `nginx -T` 输出"},
    "probe.nginx_config.worst_gap_ms": {"en": "the longest silence seen (TTFT or gap) under load",
                                        "zh": "负载下见到的最长静默（TTFT 或间隔）"},
    "probe.nginx_config.shown": {"en": "the locations and findings", "zh": "各 location 和发现"},
    "probe.metrics.help": {"en": "vLLM's /metrics: KV cache, preemptions, queue, server-side TTFT/ITL",
                           "zh": "vLLM 的 /metrics：KV 缓存、抢占、排队、服务端 TTFT/ITL"},
    "probe.metrics.description": {
        "en": """\
Read vLLM's Prometheus metrics (prometheus_client's parser) in either naming generation: current
(kv_cache_usage_perc, inter_token_latency_seconds) or 2024-era (gpu_cache_usage_perc,
time_per_output_token_seconds). Reports KV-cache usage (0..1), preemptions, running and waiting
requests, engines, server-side TTFT/ITL/queue means from the histograms, and the KV capacity from
cache_config_info. A server started with --disable-log-stats has no vllm:* series: that is said,
not reported as zeros. Server-side TTFT counts from the API server's arrival: client TTFT minus it
is proxy + network + request parsing time. A paste works (--file): the shell prompt, curl's output
and headers around the exposition are skipped and said so in 'notes'.""",
        "zh": """\
读取 vLLM 的 Prometheus 指标（用 prometheus_client 的解析器），两代命名都认：当前的
（kv_cache_usage_perc、inter_token_latency_seconds）或 2024 年的（gpu_cache_usage_perc、
time_per_output_token_seconds）。报告 KV 缓存占用（0..1）、抢占、运行中和排队的请求、引擎、
由直方图算出的服务端 TTFT/ITL/排队均值，以及 cache_config_info 中的 KV 容量。
以 --disable-log-stats 启动的服务没有 vllm:* 序列：会这样说明，而不是报告为零。
服务端 TTFT 从 API 服务收到请求时算起：客户端 TTFT 减去它，就是代理 + 网络 + 请求解析的时间。
粘贴也可以（--file）：指标文本前后的 shell 提示符、curl 的输出和响应头会被跳过，并在 'notes' 中说明。"""},
    "probe.metrics.target": {"en": "base URL of the server (its /metrics is read) or the /metrics URL",
                             "zh": "服务的基础 URL（读取它的 /metrics）或 /metrics 的 URL"},
    "probe.metrics.file": {"en": "a saved /metrics text", "zh": "保存下来的 /metrics 文本"},
    "probe.metrics.save": {"en": "also write the raw /metrics text to FILE", "zh": "同时把原始 /metrics 文本写入 FILE"},
    "probe.metrics.since": {
        "en": "a /metrics text saved earlier (--save, or curl): report what changed since then "
              "(requests, preemptions and their rate, tokens, server-side TTFT/ITL/queue/prefill/decode "
              "means of that window)",
        "zh": "之前保存的 /metrics 文本（--save 或 curl）：报告此后的变化（请求、抢占及其速率、token，"
              "以及这段时间内服务端 TTFT/ITL/排队/prefill/decode 的均值）"},
    "probe.metrics.shown": {"en": "what was read, one fact a line", "zh": "读到的内容，每行一项"},
    "probe.endpoints.help": {"en": "health, version, models, auth, completions vs chat",
                             "zh": "健康、版本、模型、认证、completions 与 chat"},
    "probe.endpoints.description": {
        "en": "Check the entry point: /health, /version, /v1/models (model, max_model_len), "
              "whether the API key is needed and accepted (never printed), and whether /v1/completions "
              "and /v1/chat/completions answer (a missing chat template is recognised).",
        "zh": "检查入口：/health、/version、/v1/models（模型、max_model_len），是否需要 API 密钥、密钥是否被接受"
              "（从不打印），以及 /v1/completions 和 /v1/chat/completions 是否应答（能识别缺少聊天模板的情况）。"},
    "probe.endpoints.target": {"en": "base URL of the server", "zh": "服务的基础 URL"},
    "probe.endpoints.shown": {"en": "what was found, one fact a line", "zh": "发现的内容，每行一项"},
    "probe.vllm_log.help": {"en": "read a vLLM start-up/runtime log (any era, any prefix)",
                            "zh": "读取 vLLM 的启动/运行日志（任一年代、任意行前缀）"},
    "probe.vllm_log.description": {
        "en": "Read a vLLM log (a file, or standard input with '-'), or several replicas' "
              "logs at once (a folder of them, or several pods' `kubectl logs --prefix` in one file, "
              "told apart by their [pod/NAME/CONTAINER] prefixes: each replica is read on its own, "
              "listed under 'replicas', and the settings that differ between them under "
              "'differing_args'): KV cache size and "
              "concurrency, GPU blocks, TP/PP, max_model_len, batch limits, chunked prefill, enforce_eager, "
              "the periodic stats lines, preemptions, and known errors (OOM, KV cache smaller than "
              "max_model_len in all three wordings, chat template, chunked-prefill budget, TP heads). "
              "Every era from 2023 V0 to 0.34, any line prefix; the engine generation from each era's marks; "
              "arguments also from a pasted `vllm serve`/api_server command line, a Kubernetes manifest or "
              "a Namespace(...) dump; several runs in one paste are told apart, listed under 'runs', and "
              "the last one is reported. What is skipped or unreadable is in 'notes'. Reads line by "
              "line: a 1 GB log stays in bounded memory.",
        "zh": "读取一份 vLLM 日志（一个文件，或用 '-' 表示标准输入），或一次读取多个副本的日志（放它们的文件夹，"
              "或把多个 pod 的 `kubectl logs --prefix` 放在一个文件里，按 [pod/NAME/CONTAINER] 前缀区分：每个"
              "副本单独读取，列在 'replicas' 下，它们之间不同的设置列在 'differing_args' 下）：KV 缓存大小和"
              "并发、GPU 块、TP/PP、max_model_len、批处理上限、chunked prefill、enforce_eager、周期性的统计行、"
              "抢占，以及已知的错误（OOM、KV 缓存小于 max_model_len 的全部三种说法、聊天模板、chunked prefill "
              "预算、TP 头数）。从 2023 年的 V0 到 0.34 的每个年代，任意行前缀；引擎代际由各年代的标记判断；"
              "参数也可取自粘贴的 `vllm serve`/api_server 命令行、Kubernetes 清单或 Namespace(...) 转储；"
              "一次粘贴中的多次运行会被区分开，列在 'runs' 下，报告最后一次。跳过的或无法读取的内容写在 "
              "'notes' 中。逐行读取：1 GB 的日志也只占有限的内存。"},
    "probe.vllm_log.file": {"en": "the log file, a folder of replicas' logs, or - for standard input",
                            "zh": "日志文件、放副本日志的文件夹，或用 - 表示标准输入"},
    "probe.vllm_log.shown": {"en": "what was read as sentences", "zh": "读到的内容，写成句子"},
    "probe.request.target": {"en": "base URL of the server, e.g. http://127.0.0.1:8000",
                             "zh": "服务的基础 URL，例如 http://127.0.0.1:8000"},
    "probe.request.model": {"en": "model id (default: the first one /v1/models lists)",
                            "zh": "模型 id（默认：/v1/models 列出的第一个）"},
    "probe.request.input_tokens": {"en": "prompt length in words (default 32)", "zh": "提示词长度（词数，默认 32）"},
    "probe.request.max_tokens": {"en": "output length (default 64)", "zh": "输出长度（默认 64）"},
    "probe.request.timeout": {"en": "read timeout in seconds (default 60)", "zh": "读取超时（秒，默认 60）"},
    "probe.request.shown": {"en": "the report", "zh": "报告"},
    "probe.host.help": {"en": "GPU host: cores vs GPUs, NVLink, CUDA_VISIBLE_DEVICES",
                        "zh": "GPU 主机：核数与 GPU 数、NVLink、CUDA_VISIBLE_DEVICES"},
    "probe.host.description": {
        "en": """\
What the GPU host has: physical CPU cores against GPUs (vLLM wants at least 2 + N physical cores
for N GPUs), the GPUs and their memory (which sets vLLM's default token budget), whether they are
linked by NVLink (tensor parallelism over PCIe is slow), and CUDA_VISIBLE_DEVICES.

Without --host-evidence it looks at this machine (psutil; NVML through nvidia-ml-py, else nvidia-smi).
When the wizard runs elsewhere, collect the files on the GPU host and hand over the folder; each
file is recognised by its content, so any names do:

  lscpu > lscpu.txt
  nvidia-smi topo -m > topo.txt
  nvidia-smi --query-gpu=name,memory.total --format=csv > gpus.csv   (or nvidia-smi -L)
  env | grep CUDA_VISIBLE_DEVICES > env.txt                           (only this variable is read)
  cp /path/to/vllm.log .                                              (optional)

What cannot be known is reported as unknown with a hint, never as an error.""",
        "zh": """\
GPU 主机有什么：物理 CPU 核数与 GPU 数的对比（N 个 GPU 时 vLLM 至少需要 2 + N 个物理核）、
GPU 及其显存（它决定 vLLM 默认的 token 预算）、GPU 之间是否由 NVLink 相连（经 PCIe 做张量并行很慢），
以及 CUDA_VISIBLE_DEVICES。

不给 --host-evidence 时查看本机（psutil；NVML 经由 nvidia-ml-py，否则用 nvidia-smi）。
向导在别处运行时，在 GPU 主机上收集这些文件并交出文件夹；每个文件按内容识别，文件名随意：

  lscpu > lscpu.txt
  nvidia-smi topo -m > topo.txt
  nvidia-smi --query-gpu=name,memory.total --format=csv > gpus.csv   （或 nvidia-smi -L）
  env | grep CUDA_VISIBLE_DEVICES > env.txt                           （只读取这个变量）
  cp /path/to/vllm.log .                                              （可选）

无法得知的内容报告为未知并附上提示，从不当作错误。"""},
    "probe.host.host_evidence": {"en": "folder of files collected on the GPU host",
                                 "zh": "在 GPU 主机上收集的文件所在的文件夹"},
    "probe.host.shown": {"en": "what was found as sentences", "zh": "发现的内容，写成句子"},
    "probe.topology.help": {"en": "read `nvidia-smi topo -m` output: GPUs and NVLink pairs",
                            "zh": "读取 `nvidia-smi topo -m` 的输出：GPU 和 NVLink 相连的 GPU 对"},
    "probe.topology.description": {
        "en": "Read saved `nvidia-smi topo -m` output (a file, or - for standard input, so a "
              "paste works) and say which GPU pairs are linked by NVLink (NV#) and which go over PCIe "
              "(PIX, PXB, PHB, NODE, SYS). --visible 0,1 restricts the verdict to the GPUs vLLM sees. "
              "Indented, quoted, wrapped or twice-pasted tables are read; repairs are listed as notes.",
        "zh": "读取保存下来的 `nvidia-smi topo -m` 输出（一个文件，或用 - 表示标准输入，粘贴也可以），说明哪些 GPU "
              "对由 NVLink（NV#）相连，哪些经过 PCIe（PIX、PXB、PHB、NODE、SYS）。--visible 0,1 把结论限定在 "
              "vLLM 看得到的 GPU 上。缩进、引用、折行或粘贴了两遍的表格都能读取；所做的修复列为说明。"},
    "probe.topology.file": {"en": "the saved output, or - for stdin", "zh": "保存下来的输出，或用 - 表示标准输入"},
    "probe.topology.visible": {"en": "CUDA_VISIBLE_DEVICES of the server", "zh": "服务的 CUDA_VISIBLE_DEVICES"},
    "probe.topology.shown": {"en": "the GPUs and their links", "zh": "各 GPU 及其连接"},
    "probe.fleet.help": {"en": "every replica through Prometheus: who differs, and why",
                         "zh": "通过 Prometheus 查看每个副本：哪个不同，为什么"},
    "probe.fleet.description": {
        "en": """\
Read vLLM's metrics for every replica Prometheus scrapes (the instance label), over the incident
window: requests and their share, waiting requests (average and peak), preemptions (increase over
the window, never the lifetime counter), KV-cache peak, and server-side TTFT, ITL and queue-time
percentiles quoted with the bucket they fall in ("p95 between 10 and 25 ms": a histogram knows no
more; histogram_quantile's interpolation is shown only as a hint). Both vLLM metric generations are
read. A replica differs when it stands out from the others by more than three times their own
spread (never less than the signal's resolution: Poisson noise of a count, a gauge's fluctuation,
one whole bucket for a percentile); the one to look at is named with its URL from Prometheus'
targets. Exit status: 0 when no replica differs, 1 when one does, 2 on usage errors, and 1 with
one line when Prometheus cannot be read.""",
        "zh": """\
在故障时间窗内，读取 Prometheus 抓取的每个副本（instance 标签）的 vLLM 指标：请求数及其占比、
排队请求（平均和峰值）、抢占（时间窗内的增量，绝不用累计计数）、KV 缓存峰值，以及服务端
TTFT、ITL 和排队时间的百分位数，连同它们所在的桶一起给出（“p95 在 10 到 25 ms 之间”：直方图
只知道这么多；histogram_quantile 的插值只作为提示显示）。两代 vLLM 指标都能读取。
一个副本与其他副本的差距超过它们自身离散程度的三倍时（绝不小于信号的分辨率：计数的泊松噪声、
gauge 的波动、百分位数的一整个桶），就算作不同；要查看的那个会连同 Prometheus targets 中的 URL
一起指出。退出状态：没有副本不同时为 0，有一个不同时为 1，用法错误时为 2，
无法读取 Prometheus 时为 1 并给出一行说明。"""},
    "probe.fleet.timeout": {"en": "seconds to wait (default 30)", "zh": "等待的秒数（默认 30）"},
    "probe.fleet.shown": {"en": "the replicas and who differs", "zh": "各副本以及哪个不同"},
    "fleet.prometheus": {"en": "base URL of the Prometheus server that scrapes the replicas",
                         "zh": "抓取这些副本的 Prometheus 服务的基础 URL"},
    "fleet.window": {"en": "the incident window, a Prometheus duration (default 5m)",
                     "zh": "故障时间窗，一个 Prometheus 时长（默认 5m）"},
    "fleet.job": {"en": "only this scrape job (default: every job with vllm:* series)",
                  "zh": "只看这个抓取任务（默认：每个有 vllm:* 序列的任务）"},
    "probe.replicas.help": {"en": "measure every replica directly and through the balancer",
                            "zh": "直接测量每个副本，并经过负载均衡器测量"},
    "probe.replicas.description": {
        "en": """\
Measure every replica behind one endpoint directly, one after the other, with the same round (the
walk's measure round: TTFT and TPOT apart, the replica's /metrics watched), the first one twice
(an A/A pair: how far this fleet's numbers move on their own), then the same round through the
balancer (--proxy), reading every replica's request counter before and after it. Says which replica
is slower than the others pooled (and its cause from its own server's metrics: queue, preemption,
or neither), whether the balancer pins this client to one replica (sticky sessions), and whether
a replica gets an unequal share of the balancer's requests. The replicas come from --replica
(repeated), else the upstream block that --nginx-conf's proxying location passes to (its balancing
method and weights are reported), else the replicas Prometheus scrapes (--prometheus). Load: one
round per replica plus two; the replicas' own traffic during the balancer round counts in its
share. Exit status: 0 when nothing is found, 1 when a replica or the balancer is at fault, 2 on
usage errors, 1 with one line when the replicas cannot be read.""",
        "zh": """\
对一个入口之后的每个副本，一个接一个地直接测量，用同样的一轮（诊断的测量轮：TTFT 和 TPOT 分开，
同时观察副本的 /metrics），第一个测两次（A/A 对照：这组副本的数字自己会浮动多少），然后经过
负载均衡器（--proxy）测同样的一轮，并在前后读取每个副本的请求计数。说明哪个副本比其他副本合起来
更慢（以及从它自己服务的指标看出的原因：排队、抢占，或都不是），负载均衡器是否把本客户端固定在
一个副本上（粘性会话），以及是否有副本分到的请求份额不均。副本取自 --replica（可重复），
其次是 --nginx-conf 中做代理的 location 转发到的 upstream 块（会报告它的均衡方法和权重），
再其次是 Prometheus 抓取的副本（--prometheus）。负载：每个副本一轮，再加两轮；均衡器那一轮期间
副本自身的流量计入份额。退出状态：没有发现时为 0，副本或负载均衡器有问题时为 1，用法错误时为 2，
无法读取副本时为 1 并给出一行说明。"""},
    "probe.replicas.proxy": {"en": "base URL of the balancer (nginx, a service)",
                             "zh": "负载均衡器（nginx、一个 service）的基础 URL"},
    "probe.replicas.replica": {"en": "a replica's base URL (repeat it)", "zh": "一个副本的基础 URL（可重复）"},
    "probe.replicas.nginx_conf": {"en": "the balancer's nginx config (its upstream lists the replicas)",
                                  "zh": "负载均衡器的 nginx 配置（它的 upstream 列出了各副本）"},
    "probe.replicas.requests": {"en": "requests per round (default 16)", "zh": "每轮的请求数（默认 16）"},
    "probe.replicas.input_tokens": {"en": "prompt words (default 64)", "zh": "提示词的词数（默认 64）"},
    "probe.replicas.max_tokens": {"en": "output tokens (default 32)", "zh": "输出 token 数（默认 32）"},
    "probe.replicas.timeout": {"en": "read timeout per request", "zh": "每个请求的读取超时"},
    "probe.replicas.shown": {"en": "the replicas and what is wrong", "zh": "各副本以及哪里有问题"},
    # sim
    "sim.help": {"en": "serve the vLLM behaviour simulator (OpenAI API, /metrics, vLLM logs)",
                 "zh": "运行 vLLM 行为模拟器（OpenAI API、/metrics、vLLM 日志）"},
    "sim.description": {
        "en": """\
Serve a simulator that behaves like vLLM wherever a latency diagnosis looks: the OpenAI-compatible
API with vLLM's HTTP and SSE framing, /metrics with vLLM's names, vLLM's log lines, and an
engine-step scheduler (running requests first, chunked prefill, KV blocks, RECOMPUTE preemption)
so that queueing, preemption and TTFT/ITL trade-offs emerge from the configuration.

--device cuda (default) behaves like vLLM 0.34 on a GPU; --device cpu like the CPU build of
vLLM 0.32 as measured on a real server (128-token blocks, 'CPU KV cache' lines, its banner and its
start-up failures). Engine flags are spelled as on 'vllm serve'. A scenario presets a fault;
explicit flags override it. Ground truth (the emission time of every token) is served at
GET /sim/trace.""",
        "zh": """\
运行一个在延迟诊断所看之处都表现得像 vLLM 的模拟器：带 vLLM 的 HTTP 和 SSE 分帧的 OpenAI 兼容 API、
使用 vLLM 指标名的 /metrics、vLLM 的日志行，以及按引擎步调度的调度器（运行中的请求优先、
chunked prefill、KV 块、RECOMPUTE 抢占），使排队、抢占以及 TTFT/ITL 之间的取舍由配置自然产生。

--device cuda（默认）表现得像 GPU 上的 vLLM 0.34；--device cpu 像在真实服务器上测得的
vLLM 0.32 CPU 版（128 token 的块、'CPU KV cache' 日志行、它的横幅和它的启动失败）。
引擎参数的写法与 'vllm serve' 相同。场景预设一个故障；显式给出的参数会覆盖它。
真实值（每个 token 的发出时间）由 GET /sim/trace 提供。"""},
    "sim.epilog": {
        "en": """\
examples:
  latency-wizard sim                                  # healthy, on http://127.0.0.1:8000
  latency-wizard sim --scenario kv-pressure --port 8001
  latency-wizard sim --list-scenarios
  VLLM_API_KEY=secret latency-wizard sim --scenario auth-required""",
        "zh": """\
示例：
  latency-wizard sim                                  # 健康，在 http://127.0.0.1:8000
  latency-wizard sim --scenario kv-pressure --port 8001
  latency-wizard sim --list-scenarios
  VLLM_API_KEY=secret latency-wizard sim --scenario auth-required"""},
    "sim.host": {"en": "address to bind (default: loopback)", "zh": "绑定的地址（默认：回环地址）"},
    "sim.port": {"en": "port (0 picks a free one)", "zh": "端口（0 表示自动选一个空闲的）"},
    "sim.scenario": {"en": "named fault preset (see --list-scenarios)", "zh": "有名字的故障预设（见 --list-scenarios）"},
    "sim.list_scenarios": {"en": "print every scenario and what a correct diagnosis finds",
                           "zh": "列出每个场景以及正确的诊断会发现什么"},
    "sim.model": {"en": "the model (a name or path, as on 'vllm serve')", "zh": "模型（名字或路径，同 'vllm serve'）"},
    "sim.served_model_name": {"en": "the name clients use (default: the model)", "zh": "客户端使用的名字（默认：模型）"},
    "sim.api_key": {"en": "require this key on /v1 paths (default: $VLLM_API_KEY)",
                    "zh": "在 /v1 路径上要求这个密钥（默认：$VLLM_API_KEY）"},
    "sim.log_file": {"en": "also write vLLM-formatted log lines to this file", "zh": "同时把 vLLM 格式的日志行写入这个文件"},
    "sim.quiet": {"en": "do not copy log lines to stderr", "zh": "不把日志行复制到标准错误输出"},
    "sim.host_evidence": {
        "en": "write the simulated GPU host's lscpu, nvidia-smi topo -m, GPU list and env into DIR "
              "(for 'run --host-evidence DIR' and 'probe host --host-evidence DIR')",
        "zh": "把模拟的 GPU 主机的 lscpu、nvidia-smi topo -m、GPU 列表和 env 写入 DIR"
              "（供 'run --host-evidence DIR' 和 'probe host --host-evidence DIR' 使用）"},
    "sim.host_cores": {"en": "physical cores of the simulated host, in its lscpu (default 32)",
                       "zh": "模拟主机的物理核数，写在它的 lscpu 中（默认 32）"},
    "sim.host_visible_devices": {
        "en": "CUDA_VISIBLE_DEVICES in the simulated host's env (default: every GPU the layout uses)",
        "zh": "模拟主机 env 中的 CUDA_VISIBLE_DEVICES（默认：布局用到的每个 GPU）"},
    "sim.http": {
        "en": "uvicorn's HTTP implementation (default auto = httptools, as a stock vLLM installs "
              "it). It changes what nginx does: httptools answers an HTTP/1.0 proxy request with a "
              "chunked body, which nginx 1.22 passes on event by event even with proxy_buffering on; "
              "h11 answers it with a close-delimited body, which nginx 1.22 buffers",
        "zh": "uvicorn 的 HTTP 实现（默认 auto = httptools，与标准 vLLM 的安装相同）。它会改变 nginx 的行为："
              "httptools 以 chunked 正文应答 HTTP/1.0 代理请求，即使 proxy_buffering on，nginx 1.22 也会"
              "逐个事件转发；h11 以关闭连接界定的正文应答，nginx 1.22 会把它缓冲起来"},
    "sim.device": {"en": "cuda (default): vLLM 0.34 on a GPU; cpu: the CPU build of vLLM 0.32 as measured",
                   "zh": "cuda（默认）：GPU 上的 vLLM 0.34；cpu：实测的 vLLM 0.32 CPU 版"},
    "sim.engine": {"en": "engine flags (as on 'vllm serve')", "zh": "引擎参数（同 'vllm serve'）"},
    "sim.max_num_batched_tokens": {"en": "token budget per engine step", "zh": "每个引擎步的 token 预算"},
    "sim.max_num_seqs": {"en": "most requests running at once", "zh": "同时运行的最多请求数"},
    "sim.max_model_len": {"en": "longest prompt + output (default 8192)", "zh": "最长的提示词 + 输出（默认 8192）"},
    "sim.num_gpu_blocks": {"en": "KV-cache blocks (overrides the memory model)", "zh": "KV 缓存块数（覆盖显存模型）"},
    "sim.kv_cache_tokens": {"en": "KV-cache size in tokens (alternative to blocks)",
                            "zh": "以 token 计的 KV 缓存大小（代替块数）"},
    "sim.block_size": {"en": "tokens per KV block (default 64 as vLLM 0.34 on GPU, 128 with --device cpu)",
                       "zh": "每个 KV 块的 token 数（默认 64，同 GPU 上的 vLLM 0.34；--device cpu 时为 128）"},
    "sim.tensor_parallel_size": {"en": "tensor-parallel degree", "zh": "张量并行度"},
    "sim.pipeline_parallel_size": {"en": "pipeline-parallel degree", "zh": "流水线并行度"},
    "sim.gpu_memory_utilization": {"en": "fraction of GPU memory for the engine (unset: 0.92)",
                                   "zh": "给引擎用的 GPU 显存比例（不设时：0.92）"},
    "sim.sse_keep_alive_interval": {"en": "seconds between ': keep-alive' comments while a stream is idle (0 = off)",
                                    "zh": "流空闲时两条 ': keep-alive' 注释之间的秒数（0 = 关闭）"},
    "sim.step_drift": {"en": "a server that slows as it runs: each step takes (1 + F x steps done / 1000) times as long (default 0)",
                       "zh": "运行中逐渐变慢的服务器：每步耗时为 (1 + F × 已完成步数 / 1000) 倍（默认 0）"},
    "sim.gpu_memory_gib": {"en": "simulated device memory (default 80)", "zh": "模拟的设备显存（默认 80）"},
    "sim.gpu_memory_bandwidth_gbps": {
        "en": "simulated device memory bandwidth in GB/s, which decode steps read the KV cache at "
              "(default 3350, an H100 SXM)",
        "zh": "模拟的设备显存带宽（GB/s），decode 步以这个速度读取 KV 缓存（默认 3350，即 H100 SXM）"},
    "sim.nodes": {"en": "hosts the tp x pp GPUs are spread over, evenly (default 1; --host-evidence shows one)",
                  "zh": "tp x pp 个 GPU 平均分布到的主机数（默认 1；--host-evidence 显示其中一台）"},
    "sim.kv_bytes_per_token": {
        "en": "KV-cache bytes per token of the simulated model (default 131072, Llama-3.1-8B in bf16)",
        "zh": "模拟模型每个 token 的 KV 缓存字节数（默认 131072，即 bf16 的 Llama-3.1-8B）"},
    "sim.num_attention_heads": {
        "en": "attention heads of the simulated model (default 32, Llama-3.1-8B): vLLM refuses a "
              "--tensor-parallel-size that does not divide them",
        "zh": "模拟模型的注意力头数（默认 32，即 Llama-3.1-8B）：vLLM 拒绝不能整除它的 --tensor-parallel-size"},
    "sim.max_position_embeddings": {
        "en": "the simulated model's own context limit, its config.json's max_position_embeddings "
              "(default 131072, Llama-3.1-8B): vLLM refuses a --max-model-len above it",
        "zh": "模拟模型自身的上下文上限，即其 config.json 的 max_position_embeddings（默认 131072，即 Llama-3.1-8B）："
              "vLLM 拒绝超过它的 --max-model-len"},
    "sim.die_after_requests": {
        "en": "the engine core dies after admitting N requests, as vLLM's does on a fatal error "
              "while serving (EngineDeadError: HTTP 500, /health 503, its lines in the log)",
        "zh": "引擎核心在接收 N 个请求后崩溃，与 vLLM 服务中遇到致命错误时相同（EngineDeadError：HTTP 500、/health 返回 503、日志中有对应的行）"},
    "sim.cpu_kvcache_space_gib": {"en": "--device cpu: GiB of KV cache, vLLM's VLLM_CPU_KVCACHE_SPACE (default 4)",
                                  "zh": "--device cpu：KV 缓存的 GiB 数，即 vLLM 的 VLLM_CPU_KVCACHE_SPACE（默认 4）"},
    "sim.api_server_count": {
        "en": "API server processes, each one core of the CPU work per request and token (default 1)",
        "zh": "API 服务进程数，每个进程用一个核承担每个请求和每个 token 的 CPU 工作（默认 1）"},
    "sim.log_stats_interval_s": {
        "en": "seconds between 'Engine 000:' stats lines (VLLM_LOG_STATS_INTERVAL, default 10)",
        "zh": "两条 'Engine 000:' 统计行之间的秒数（VLLM_LOG_STATS_INTERVAL，默认 10）"},
    "sim.enable_chunked_prefill": {"en": "chunked prefill (default on)", "zh": "chunked prefill（默认开启）"},
    "sim.enable_prefix_caching": {"en": "reuse the KV blocks of a prompt's cached prefix (default on, as vLLM V1)",
                                  "zh": "复用提示词已缓存前缀的 KV 块（默认开启，同 vLLM V1）"},
    "sim.enforce_eager": {"en": "no CUDA graphs: faster start, slower steps, more KV memory",
                          "zh": "不用 CUDA graph：启动更快，每步更慢，KV 显存更多"},
    "sim.speculative_config": {
        "en": 'speculative decoding, e.g. \'{"method": "ngram", "num_speculative_tokens": 3}\'; '
              "the simulator-only key draft_acceptance_rate (default 0.7) says how often a draft is "
              "right",
        "zh": '投机解码，例如 \'{"method": "ngram", "num_speculative_tokens": 3}\'；'
              "模拟器专有的键 draft_acceptance_rate（默认 0.7）表示草稿猜对的频率"},
    "sim.chat_template": {"en": "whether the tokenizer has a chat template (default yes)",
                          "zh": "分词器是否有聊天模板（默认有）"},
    "sim.completions_api": {
        "en": "serve /v1/completions (default yes); --no-completions-api: a chat-only service, "
              "whose /v1/completions answers 404",
        "zh": "提供 /v1/completions（默认提供）；--no-completions-api：只有聊天接口的服务，"
              "它的 /v1/completions 应答 404"},
    "sim.interconnect": {"en": "GPU link for TP all-reduce", "zh": "TP all-reduce 用的 GPU 互连"},
    "sim.x_accel_buffering_no": {"en": "send 'X-Accel-Buffering: no' on streams (tells nginx not to buffer)",
                                 "zh": "在流上发送 'X-Accel-Buffering: no'（告诉 nginx 不要缓冲）"},
    "sim.metrics_generation": {"en": "metric names: v1 (current) or v0 (gpu_cache_usage_perc, ...)",
                               "zh": "指标名：v1（当前）或 v0（gpu_cache_usage_perc 等）"},
    "sim.disable_log_stats": {"en": "no vllm:* metrics and no stats line (as vLLM 0.34)",
                              "zh": "没有 vllm:* 指标，也没有统计行（同 vLLM 0.34）"},
    "sim.load_format": {"en": "accepted and logged as vLLM does (the simulator loads nothing)",
                        "zh": "像 vLLM 那样接受并记入日志（模拟器什么也不加载）"},
    "probe.definitions": {"en": _DEFINITIONS_EN, "zh": _DEFINITIONS_ZH},
}  # fmt: skip


def said(key: str, lang: str, **values: Any) -> str:
    """The help text ``key`` in ``lang`` (English when it has no translation),
    filled in when values are given."""
    phrase = HELP[key]
    text = phrase.get(lang) or phrase["en"]
    return text.format(**values) if values else text


def words_in(lang: str) -> Words:
    """``said`` for one language: what a command's ``register`` words its parser with."""
    return partial(said, lang=lang)
