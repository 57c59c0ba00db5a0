"""GGUF files published for the catalog's language models: per model, the Hub repositories in the order
an answer prefers them, each with the quant types it publishes, the file of each and its size.

`bytes` is the file's exact size where a public catalog lists it to the byte (LM Studio's model
catalog, `sizeBytes`); `listed_gib` is the size as Jan's model catalog lists it (the Hub's size ÷ 1024³,
rounded to one decimal: `convert_bytes_to_human_readable` in its catalog_helpers.py, which labels it
"GB"). None: not listed. A model's other checkpoint of the same shape (the instruct release beside the
catalog's base, Phi-3.1 beside Phi-3) has the same tensors, so its files weigh the same.

Sources (read December 2026):
- LM Studio: github.com/lmstudio-ai/model-catalog, models/Llama-3.1-8B-Instruct.json,
  models/gemma-2-9b.json, models/phi-3.1-mini-4k.json.
- Jan: github.com/janhq/model-catalog, model_catalog_v2.json (Qwen's own repositories) and
  model_catalog.json (ggml-org's gpt-oss-20b).
"""

LMSTUDIO = "https://github.com/lmstudio-ai/model-catalog"
JAN = "https://github.com/janhq/model-catalog"


def _files(pattern: str, sizes: dict[str, str | None], names: dict[str, str] | None = None) -> dict:
    """{quant type: {"file", "listed_gib"}} for files named by `pattern` ("{type}" replaced)."""
    names = names or {}
    return {quant: {"file": pattern.format(type=names.get(quant, quant)), "bytes": None, "listed_gib": size}
            for quant, size in sizes.items()}


GGUF_FILES: dict[str, list[dict]] = {
    "llama-3-1-8b": [{
        "repository": "lmstudio-community/Meta-Llama-3.1-8B-Instruct-GGUF", "source": LMSTUDIO,
        "files": {"Q4_K_M": {"file": "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "bytes": 4_920_734_656,
                             "listed_gib": None}},
    }],
    "gemma-2-9b": [{
        "repository": "lmstudio-community/gemma-2-9b-it-GGUF", "source": LMSTUDIO,
        "files": {"Q4_K_M": {"file": "gemma-2-9b-it-Q4_K_M.gguf", "bytes": 5_761_057_728,
                             "listed_gib": None}},
    }],
    "phi-3-mini-4k": [{
        "repository": "lmstudio-community/Phi-3.1-mini-4k-instruct-GGUF", "source": LMSTUDIO,
        "files": {"Q4_K_M": {"file": "Phi-3.1-mini-4k-instruct-Q4_K_M.gguf", "bytes": 2_393_232_096,
                             "listed_gib": None}},
    }],
    "qwen2-5-coder-7b": [{
        "repository": "Qwen/Qwen2.5-Coder-7B-Instruct-GGUF", "source": JAN,
        "files": _files(
            "qwen2.5-coder-7b-instruct-{type}.gguf",
            {"F16": "14.2", "Q2_K": "2.8", "Q3_K_M": "3.5", "Q4_0": "4.1", "Q4_K_M": "4.4", "Q5_K_M": "5.1",
             "Q6_K": "5.8", "Q8_0": "7.5"},
            names={"F16": "fp16", "Q2_K": "q2_k", "Q3_K_M": "q3_k_m", "Q4_0": "q4_0", "Q4_K_M": "q4_k_m",
                   "Q5_K_M": "q5_k_m", "Q6_K": "q6_k", "Q8_0": "q8_0"}),
    }],
    "qwen3-14b": [{
        "repository": "Qwen/Qwen3-14B-GGUF", "source": JAN,
        "files": _files("Qwen3-14B-{type}.gguf",
                        {"Q4_K_M": "8.4", "Q5_0": "9.6", "Q5_K_M": "9.8", "Q6_K": "11.3", "Q8_0": "14.6"}),
    }],
    "gpt-oss-20b": [{
        "repository": "ggml-org/gpt-oss-20b-GGUF", "source": JAN,
        "files": _files("gpt-oss-20b-{type}.gguf", {"MXFP4_MOE": "11.3"}, names={"MXFP4_MOE": "mxfp4"}),
    }],
}
