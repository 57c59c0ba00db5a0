"""Options shared by `estimate` and `recommend`: the wizard's query-string names, as flags."""
from __future__ import annotations

import sys
from typing import NoReturn

from django.http import QueryDict

from nodelodge.recommendations.query import DEFAULTS, QueryError, WorkloadQuery, parse_query
from nodelodge.recommendations.sorts import SORTS
from sizing.training import CHOICES as TRAINING_CHOICES
from sizing.workloads import WIZARD_CODES

QUERY_OPTIONS = ("workload", "model", "precision", "kv_cache", "engine", "context", "requests", "memory_gib",
                 "gradient_checkpointing", "loss", "lora_rank", "lora_targets", "adapter", "optimizer",
                 "base_format")
PREFERENCE_OPTIONS = ("budget", "max_price", "tier", "countries", "sort", "gpu", "min_memory_gib",
                      "confidence", "group", "page", "target_tokens", "efficiency", "redundancy",
                      "gpu_plans", "clusters")


def _default(name: str) -> str:
    return f"default: {DEFAULTS[name]}"


def add_query_arguments(parser, preferences: bool) -> None:
    # Every option left out takes the workload query's default (`DEFAULTS`), as on the page and the API.
    parser.add_argument("--workload", choices=WIZARD_CODES, help=_default("workload"))
    parser.add_argument("--model", help="catalog slug, e.g. llama-3-1-8b (default: the workload's own)")
    parser.add_argument("--precision", help=f"16, 8 or 4 (bits per weight; {_default('precision')})")
    parser.add_argument(
        "--kv-cache", dest="kv_cache", help=f"16 or 8: bits per KV-cache value ({_default('kv_cache')})"
    )
    parser.add_argument(
        "--engine", choices=["transformers", "vllm"],
        help=f"inference: transformers or vllm (vLLM's budget; {_default('engine')})",
    )
    parser.add_argument(
        "--context", help=f"tokens per request; sequence length for fine-tuning ({_default('context')})"
    )
    parser.add_argument(
        "--requests",
        help=f"concurrent requests; batch size for fine-tuning; audio streams ({_default('requests')})",
    )
    parser.add_argument(
        "--memory-gib", dest="memory_gib", help=f"notebook: GPU memory needed, GiB ({_default('memory_gib')})"
    )
    training = parser.add_argument_group("fine-tuning: how it is run (--workload finetune only)")
    training.add_argument(
        "--gradient-checkpointing", dest="gradient_checkpointing",
        choices=list(TRAINING_CHOICES["gradient_checkpointing"]),
        help=f"offload: layer inputs in CPU memory ({_default('gradient_checkpointing')})",
    )
    training.add_argument(
        "--loss", choices=list(TRAINING_CHOICES["loss"]),
        help=f"fused: Unsloth/FOAK cross-entropy; chunked: Liger's fused linear cross-entropy "
        f"({_default('loss')})",
    )
    training.add_argument("--lora-rank", dest="lora_rank", help=f"1 to 1024 ({_default('lora_rank')})")
    training.add_argument(
        "--lora-targets", dest="lora_targets", choices=list(TRAINING_CHOICES["lora_targets"]),
        help=f"all: every linear layer ({_default('lora_targets')})",
    )
    training.add_argument("--adapter", choices=list(TRAINING_CHOICES["adapter"]), help=_default("adapter"))
    training.add_argument(
        "--optimizer", choices=list(TRAINING_CHOICES["optimizer"]), help=_default("optimizer")
    )
    training.add_argument(
        "--base-format", dest="base_format", choices=list(TRAINING_CHOICES["base_format"]),
        help=f"--precision 4 only: nf4 (bitsandbytes) or gptq (a GPTQ checkpoint) "
        f"({_default('base_format')})",
    )
    if preferences:
        parser.add_argument("--budget", help="USD")
        parser.add_argument("--max-price", dest="max_price", help="USD per hour")
        parser.add_argument("--tier", choices=["secure", "community", "both"], help=_default("tier"))
        parser.add_argument("--countries", help="comma-separated ISO codes; EU for its members")
        parser.add_argument("--sort", choices=list(SORTS), help="order of the machines (default: price)")
        parser.add_argument("--gpu", help="only this GPU model, e.g. 'H100 SXM 80GB'")
        parser.add_argument("--min-memory-gib", dest="min_memory_gib", help="memory per GPU at least, GiB")
        parser.add_argument("--confidence", choices=["high", "medium"], help="confidence at least")
        parser.add_argument("--group", choices=["gpu"], help="group the machines by GPU model")
        parser.add_argument("--page", help="page of the machine list (pages of 100)")
        parser.add_argument(
            "--target-tokens", dest="target_tokens", help="tokens/s to serve: adds the throughput plan"
        )
        parser.add_argument("--efficiency", help="usable efficiency of the measured speed, %% (default 75)")
        parser.add_argument("--redundancy", help="spare model copies of the plan (default 1)")
        parser.add_argument(
            "--gpu-plans", dest="gpu_plans", action="store_const", const="1",
            help="also the cheapest plan on each of the GPU types that serve tokens cheapest",
        )
        parser.add_argument(
            "--clusters", choices=["auto", "show"],
            help=f"clusters of machines for a model bigger than one machine: auto (when no single machine "
            f"fits) or show (always) ({_default('clusters')})",
        )
    parser.add_argument("--json", action="store_true", help="print the API's JSON")


def options_to_query(options: dict, names) -> QueryDict:
    query = QueryDict(mutable=True)
    for name in names:
        value = options.get(name)
        if value not in (None, ""):
            query[name] = str(value)
    return query


def query_from_options(command, options: dict, names) -> WorkloadQuery:
    """The workload query the options give, parsed as the page and the API parse theirs."""
    try:
        return parse_query(options_to_query(options, names))
    except QueryError as error:
        fail(command, error.errors)


def fail(command, errors: dict[str, str]) -> NoReturn:
    """Bad input: every error on stderr, exit status 2 (as argparse does)."""
    for field, message in errors.items():
        command.stderr.write(f"error: {field}: {message}")
    sys.exit(2)
