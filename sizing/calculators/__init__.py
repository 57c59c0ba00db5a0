"""The calculators (SPEC §3 and §8): one module per workload, one function per breakdown item.

- `dispatch.estimate`: the one entry point; the workload's capabilities choose the calculator.
- `inference`, `finetune`, `image`, `speech`, `notebook`: a workload's items, each formula and its
  bytes together; `inference_words` and `finetune_words` hold what those breakdowns assume.
- `items`: the items several workloads share (weights, format overheads, margin, runtime, buffers),
  and the weights as a published checkpoint stores them (`weight_items`).
- `prefill`: prefill's working memory, which the inference breakdown and `sizing.capacity` both read.
- `vllm`: vLLM's budget on one GPU and its command; `vllm_inference`: the breakdown under vLLM.
- `checks`: the input checks every calculator shares. The limits are in `sizing.limits`.
- `gpu_count` and `rough_size`: the two simpler calculators of SPEC §8.

A new breakdown item is a function in its workload's module (or in `items` when shared), added to
that workload's `estimate_*`.
"""
from ..training import DEFAULT_LORA_RANK
from .dispatch import estimate
from .finetune import estimate_finetune, lora_trainable_parameters
from .gpu_count import ThroughputPlan, gpus_for_throughput
from .image import estimate_image
from .inference import estimate_inference, prefill_activation_bytes
from .notebook import estimate_notebook
from .rough_size import RuleOfThumb, rule_of_thumb
from .speech import DEFAULT_BEAMS, estimate_speech

__all__ = [
    "DEFAULT_BEAMS",
    "DEFAULT_LORA_RANK",
    "RuleOfThumb",
    "ThroughputPlan",
    "estimate",
    "estimate_finetune",
    "estimate_image",
    "estimate_inference",
    "estimate_notebook",
    "estimate_speech",
    "gpus_for_throughput",
    "lora_trainable_parameters",
    "prefill_activation_bytes",
    "rule_of_thumb",
]
