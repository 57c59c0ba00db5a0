"""The JSON API's answers as their schemas: the shape of each operation's 200 and of its errors
(`api.py`). ninja names the OpenAPI components by these classes' names."""
from __future__ import annotations

from ninja import Field, Schema


class ItemOut(Schema):
    name: str
    gib: float
    bytes: int
    formula: str
    per_gpu: bool


class GgufFileOut(Schema):
    """The GGUF file an answer under llama.cpp or Ollama assumes: sized by llama.cpp's own rules, and where
    the catalog lists a published file in the type, its repository and listed size."""

    quantization: str
    file: str
    bytes: int
    gib: float
    bits_per_weight: float
    published: bool
    repository: str | None
    published_bytes: int | None


class MemoryOut(Schema):
    workload: str
    title: str
    precision: int | None
    total_gib: float
    total_bytes: int
    items: list[ItemOut]
    assumptions: list[str]
    gguf: GgufFileOut | None = None  # engine=llamacpp or ollama: the GGUF file assumed
    # engine=vllm or sglang: the release the answer assumed; engine=llamacpp: the build asked, engine=ollama:
    # the release asked (None: none)
    engine_version: str | None = None


class SpeedOut(Schema):
    model: str
    precision: int
    value: float
    unit: str
    gpus: int
    engine: str
    engine_version: str
    concurrency: int | None
    input_tokens: int | None
    output_tokens: int | None
    measured_at: str
    measured_by: str
    source: str


class RunnableAlternativeOut(Schema):
    """What runs on a machine's GPU and fits it where the asked weights or KV cache do not run there."""

    precision: int
    kv_cache_bits: int
    command: str | None
    max_requests_at_context: int
    max_context_at_requests: int


class MarketOut(Schema):
    """One market the machine is offered in (`on_demand`, `interruptible`, `reserved`), at the GPUs the
    answer uses: prices in USD as exact decimal strings, the terms, what the budget covers there."""

    market: str
    market_text: str
    price_per_gpu_hour: str
    price_per_hour: str
    notice_seconds: int | None
    frequency: str | None
    term_days: int | None
    terms_text: str | None
    budget_text: str | None


class MachineOut(Schema):
    id: int
    provider: str
    tier: str
    provider_machine_id: str
    gpu_type: str
    gpu_count: int
    free_gpus: int
    gpus_used: int
    memory_per_gpu_gib: float
    need_per_gpu_gib: float
    headroom_gib: float
    headroom_percent: float
    tight_margin: bool
    why_gpus: str
    memory_source: str
    memory_source_short: str
    memory_source_words: str
    memory_flag: str | None
    country: str | None
    country_name: str | None
    region: str
    price_per_gpu_hour: str = Field(description="The price used, in `market`: the listed price unless the "
                                    "`market` preference let a cheaper one in (every market's is under "
                                    "`markets`).")
    price_per_hour: str
    market: str = Field(description="The market of the price used: on_demand, interruptible (listed so, or "
                        "let in by the market preference) or reserved.")
    market_text: str
    budget_hours: float | None
    budget_days: float | None
    budget_text: str | None
    budget_capped_by_booking_limit: bool
    booking_limit_hours: int | None
    interruptible: bool
    markets: list[MarketOut]
    reliability: str | None
    reliability_measures: str | None
    reliability_text: str
    stock: str | None
    stock_text: str
    confidence: str
    confidence_reasons: list[str]
    why_it_fits: list[str]
    limits: list[str]
    measured_speeds: list[SpeedOut]
    # Where the answer keeps layers on the CPU: the speeds were measured with every layer on the GPUs and
    # price nothing here (null elsewhere).
    measured_speeds_note: str | None = None
    price_per_million_tokens: str | None
    price_per_million_tokens_text: str | None
    last_seen: str | None
    max_requests_at_context: int | None
    max_context_at_requests: int | None
    capacity_text: str | None
    command: str | None
    runs_on_gpu: bool | None
    gpu_support_text: str | None
    alternative: RunnableAlternativeOut | None
    # Under engine=llamacpp or ollama: the GGUF type and file the row assumes, and whether it is published.
    quantization: str | None = None
    gguf_file: str | None = None
    gguf_published: bool | None = None
    gpu_history_url: str | None = Field(None, description="The GPU type's price history page (its API: "
                                        "/api/v1/gpu-types/{slug}/history).")


class AlternativeOut(MachineOut):
    breaks: list[str]
    breaks_text: list[str]


class PrecisionAlternativeOut(Schema):
    precision: int
    total_gib: float
    machines_fitting: int
    more_machines: int
    cheapest_price_per_hour: str | None
    cheapest_machine_id: int | None
    text: str


class ConstraintOut(Schema):
    label: str
    value: str


class PlanMachineOut(Schema):
    id: int
    provider: str
    provider_machine_id: str
    tier: str
    gpu_type: str
    country: str | None
    region: str
    free_gpus: int
    gpus_per_copy: int
    productive_copies: int
    spare_copies: int
    gpus: int
    tokens_per_s_per_gpu: float
    tokens_per_s_per_gpu_text: str
    usable_tokens_per_s_per_copy: float
    price_per_gpu_hour: str = Field(description="Its price under the `market` preference, in `market`.")
    price_per_hour: str
    market: str = Field(description="The market of its price: on_demand, interruptible (listed so, or let in "
                        "by the `market` preference) or reserved.")
    market_text: str
    measured_speed: SpeedOut
    copies_text: str
    measured_with_text: str


class PlanOut(Schema):
    rank: int
    label: str
    gpu_types: list[str]
    price_per_hour: str
    price_per_hour_text: str
    price_per_million_tokens_at_target: str
    gpus: int
    productive_gpus: int
    spare_gpus: int
    usable_tokens_per_s: float
    budget_hours: float | None
    budget_text: str | None
    proven_cheapest: bool
    price_floor_per_hour: str | None
    search_text: str | None
    steps: list[str]
    machine_count: int
    interruptible_machines: int = Field(description="How many of its machines the provider may take back.")
    interruption_note: str | None = Field(description="Where a machine is interruptible, what happens when "
                                          "one is taken back: only its copies stop and the plan serves that "
                                          "much less until they are replaced.")
    machines: list[PlanMachineOut]


class ThroughputPlanOut(Schema):
    target_tokens_per_s: str
    target_text: str
    efficiency_percent: str
    redundancy: int
    machines_with_speed: int
    machines_without_speed: int
    without_speed_text: str
    plans: list[PlanOut]
    empty_reason: str | None


class GroupOut(Schema):
    gpu_type: str
    machines: int


class ListingOut(Schema):
    sort: str
    sort_label: str
    page: int
    pages: int
    per_page: int
    machines_matching: int
    sorted_among_cheapest: int | None
    groups: list[GroupOut]


class RelaxHintOut(Schema):
    """One change that opens machines where the answer is empty: its words, the query's fields it sets
    (countries, precision, tier, max_price, budget, min_reliability, market, context, requests,
    gpu_layers…, as the query string writes them), how many machines the changed query finds and its
    cheapest price per hour, and this query with the changes (null for a note that changes nothing)."""

    text: str
    changes: dict[str, str]
    machines: int
    cheapest_price_per_hour: str | None
    query: str | None


class ClusterAlternativeOut(Schema):
    """What runs on a cluster's GPUs and fits them where the asked weights or KV cache do not run there."""

    precision: int
    kv_cache_bits: int
    vllm_commands: list[str]
    sglang_commands: list[str]
    sglang_note: str | None


class ClusterOut(Schema):
    machine_ids: list[int]
    provider_machine_ids: list[str]
    provider: str
    site: str
    country: str | None
    region: str
    gpu_type: str
    gpus_per_machine: int
    machines: int
    interconnect: str
    interconnect_gbps: int
    tensor_parallel: int
    pipeline_parallel: int
    layers_per_stage: list[int]
    items: list[ItemOut]
    outside_budget: list[ItemOut]
    need_per_gpu_bytes: int
    need_per_gpu_gib: float
    budget_per_gpu_bytes: int
    budget_per_gpu_gib: float
    usable_memory_per_gpu_gib: float
    price_per_hour: str
    machine_prices_per_hour: list[str]
    machine_markets: list[str] = Field(description="The market of each machine's price, in the order of "
                                       "`machine_ids`: on_demand, interruptible (listed so, or let in by the "
                                       "`market` preference) or reserved.")
    machine_markets_text: list[str]
    interruptible_machines: int = Field(description="How many of its machines the provider may take back.")
    interruption_note: str | None = Field(description="Where a machine is interruptible, what happens when "
                                          "one is taken back: the model stops on the whole cluster and the "
                                          "others are billed until it is stopped.")
    hours_covered: float | None
    budget_text: str | None
    booking_limit_hours: int | None
    confidence: str
    confidence_reasons: list[str]
    assumptions: list[str]
    vllm_commands: list[str]
    sglang_commands: list[str]
    sglang_note: str | None
    runs_on_gpu: bool
    gpu_support_text: str | None
    alternative: ClusterAlternativeOut | None


class RecommendationsOut(Schema):
    memory: MemoryOut
    machines: list[MachineOut]
    machines_total: int
    alternatives: list[AlternativeOut]
    alternatives_total: int
    precision_alternatives: list[PrecisionAlternativeOut]
    constraints: list[ConstraintOut]
    excluded: dict[str, int]
    empty_reason: str | None
    relax: list[RelaxHintOut]
    fleet_silent: bool
    throughput_plan: ThroughputPlanOut | None
    clusters: list[ClusterOut]
    clusters_total: int
    clusters_over_price: int
    clusters_note: str | None
    listing: ListingOut
    data_as_of: str
    newest_report: str | None
    oldest_report: str | None


class CapacityAlternativeOut(Schema):
    """What runs on the named GPU type and starts where the asked weights or KV cache do not run there."""

    precision: int
    kv_cache_bits: int
    command: str | None


class VisionTowerOut(Schema):
    """A multimodal model's vision tower under vLLM: loaded unless every modality limit is 0."""

    loaded: bool
    parameters: int
    gib: float
    skip_flag: str | None  # None: the release loads the tower whatever the limits


class CapacityOut(Schema):
    model: str
    engine: str
    engine_version: str  # the vLLM release the answer assumed
    engine_version_rules: str  # which memory that release pays inside gpu_memory_utilization
    interconnect: str  # what the GPUs of a split were taken to be connected by: nvswitch, pcie_p2p or pcie
    interconnect_text: str  # the same in words, where it comes from and what the split costs each GPU
    model_runner: str  # the model runner sized: v1 or v2 (the one asked, else the release's for the model)
    gpu_memory_utilization: float  # the one asked, else the release's default
    fits: bool
    reason: str | None
    gpu: str | None
    gpu_memory_source: str | None
    gpu_architecture: str | None
    gpu_memory_gib: float
    budget_gib: float
    budget: str
    weights_gib: float
    activation_gib: float
    non_torch_gib: float
    kv_cache_gib: float
    kv_cache_tokens: int
    max_model_len: int
    max_concurrency: float
    requests_at_once: int
    items: list[ItemOut]
    outside_budget: list[ItemOut]
    vision_tower: VisionTowerOut | None
    command: str | None
    runs_on_gpu: bool | None
    gpu_support_text: str | None
    alternative: CapacityAlternativeOut | None


class TensorTypeOut(Schema):
    type: str
    gib: float
    bytes: int


class GpuShareOut(Schema):
    """One GPU of a split by layers (--split-mode layer), in llama.cpp's device order: the layers llama.cpp
    gives it (`first_layer`–`last_layer`, None where it holds none), their weights and KV cache, the output
    head's weights where it holds the head, its compute buffer (the pipeline's copies of its inputs
    counted) and CUDA context: `need_bytes`."""

    gpu: int  # 1 for the first (llama.cpp's CUDA0)
    first_layer: int | None
    last_layer: int | None
    output_head: bool
    weights_bytes: int
    kv_cache_bytes: int
    compute_bytes: int
    need_bytes: int
    need_gib: float


class PartialOffloadOut(Schema):
    """Where every layer does not fit: the most that do (-ngl), and what it takes."""

    gpu_layers: int
    # What -ngl gpu_layers puts on the GPUs as the build places them: decoder layers and the output head
    # (from ggml-org/llama.cpp#18148 the head comes first, so gpu_layers − 1 layers with it).
    layers_on_gpus: int
    output_head_on_gpus: bool
    gpu_gib: float
    host_gib: float
    command: str | None
    ollama: dict[str, str] | None
    words: str


class GgufCapacityOut(Schema):
    """The what-if under llama.cpp or Ollama (engine=llamacpp, engine=ollama)."""

    model: str
    engine: str
    engine_version: str | None  # engine=llamacpp: the build asked, engine=ollama: the release (None: none)
    # the logits the build reserves the compute buffer for (not given: the most); under Ollama, its cache too
    engine_version_rules: str
    fits: bool
    reason: str | None
    gpu: str | None
    gpu_memory_source: str | None
    gpu_memory_gib: float
    gpus: int
    quantization: str
    file: str
    # Where the catalog lists a published file in the type: its repository (None: sized from llama.cpp's
    # own rules, no published file).
    file_repository: str | None = None
    file_gib: float
    bits_per_weight: float
    tensor_types: list[TensorTypeOut]
    weights_bytes: int
    weights_gib: float
    host_bytes: int
    host_gib: float
    kv_cache_bytes: int
    kv_cache_gib: float
    kv_cache_tokens: int
    kv_cache_type: str
    flash_attention: bool
    max_model_len: int
    context_per_request: int
    parallel: int
    kv_unified: bool
    gpu_layers: int
    layers: int | None
    layers_that_fit: int
    gpu_gib: float
    # The largest of `per_gpu`'s needs: what each GPU must hold, what `fits` holds to `gpu_memory_gib`.
    need_per_gpu_bytes: int
    need_per_gpu_gib: float
    per_gpu: list[GpuShareOut]
    # The model's items on the GPUs: the weights and the KV cache of every GPU together, the compute buffer
    # of the GPU holding the output head (and the pipeline's copies of its inputs where several hold every
    # layer and the head); `per_gpu` says what each GPU holds of them.
    items: list[ItemOut]
    host_items: list[ItemOut]
    # Split by layers over several GPUs with the output head on them: the compute buffer of the GPUs without
    # it (the last GPU holds it and reserves the logits; the compute buffer of `items` is that GPU's); None
    # otherwise.
    other_gpus_compute: ItemOut | None = None
    command: str | None
    ollama: dict[str, str] | None
    partial_offload: PartialOffloadOut | None


class SglangAlternativeOut(Schema):
    precision: int
    kv_cache_bits: int
    command: str | None


class SglangCapacityOut(Schema):
    """The what-if under SGLang (engine=sglang): the static pool of `--mem-fraction-static`."""

    model: str
    engine: str
    engine_version: str
    fits: bool
    reason: str | None
    gpu: str | None
    gpu_memory_source: str | None
    gpu_architecture: str | None
    gpu_memory_gib: float
    tensor_parallel: int
    mem_fraction_static: float
    mem_fraction_static_words: str
    free_at_start_gib: float
    static_gib: float
    weights_bytes: int
    weights_gib: float
    kv_cache_bytes: int
    kv_cache_gib: float
    kv_cache_tokens: int
    kv_cache_dtype: str
    bytes_per_token: int
    rest_gib: float
    max_model_len: int
    max_running_requests: int | None
    requests_at_once: int
    items: list[ItemOut]
    command: str | None
    runs_on_gpu: bool | None
    gpu_support_text: str | None
    alternative: SglangAlternativeOut | None


class ErrorOut(Schema):
    errors: dict[str, str]


class GgufPublishedFileOut(Schema):
    quantization: str
    file: str
    bytes: int | None  # the exact size where a public catalog lists it; None: not listed to the byte


class GgufRepositoryOut(Schema):
    """A Hub repository of GGUF files published for the model, with the quant types it publishes."""

    repository: str
    quant_types: list[str]
    files: list[GgufPublishedFileOut]


class ModelOut(Schema):
    slug: str
    name: str
    kind: str
    workloads: list[str]
    group: str
    parameters: int | None
    active_parameters: int | None
    parameters_published: str
    precisions: list[dict]
    license: str
    config_url: str
    figures: dict
    missing: list[str]
    gguf_files: list[GgufRepositoryOut] = []


class HistoryHourOut(Schema):
    hour: str = Field(description="The hour's start, UTC (ISO 8601).")
    cheapest_per_gpu_hour: str = Field(description="The lowest price per GPU-hour a refresh in the hour saw.")
    median_per_gpu_hour: str = Field(
        description="The median price per GPU-hour of the hour's latest refresh.")
    offers: int = Field(description="Offers the hour's latest refresh saw.")
    offers_in_stock: int = Field(description="Of them, available with a free GPU.")
    refreshes: int = Field(description="Refreshes in the hour that saw the GPU type's offers.")
    refreshes_with_stock: int = Field(description="Of them, those that saw a free GPU.")


class GpuHistoryOut(Schema):
    gpu_type: str
    slug: str
    market: str
    country: str = Field(description='ISO 3166 alpha-2; "" for every country.')
    since: str = Field(description="The window's first hour (UTC); the window is the last 30 days.")
    until: str = Field(description="The window's last hour (UTC), the current one.")
    median_30d_per_gpu_hour: str | None = Field(
        description="The median of the window's hourly medians; null without history.")
    countries: list[str] = Field(description="The countries with history in the window and market.")
    hours: list[HistoryHourOut] = Field(description="Hour by hour, oldest first: at most 720.")
    page_url: str = Field(description="The GPU type's history page.")
