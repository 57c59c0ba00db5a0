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
- Jan: github.com/janhq/model-catalog, model_catalog_v2.json (Qwen's own repositories, and unsloth's,
  bartowski's, ymcki's and Microsoft's files below) and model_catalog.json (ggml-org's gpt-oss-20b). The
  file lists the models its automation picks at the time, so some of these were read from its history
  (2025-2026 revisions); each file's size is the same in every revision that lists it. Files under 1 GiB,
  which it lists in MiB, are left out.

Only files published whole are listed (a quant type split into several files is not).
"""

LMSTUDIO = "https://github.com/lmstudio-ai/model-catalog"
JAN = "https://github.com/janhq/model-catalog"


def _files(pattern: str, sizes: dict[str, str | None], names: dict[str, str] | None = None) -> dict:
    """{quant type: {"file", "listed_gib"}} for files named by `pattern` ("{type}" replaced)."""
    names = names or {}
    return {quant: {"file": pattern.format(type=names.get(quant, quant)), "bytes": None, "listed_gib": size}
            for quant, size in sizes.items()}


# Qwen's own repositories publish the same five types for every Qwen3 size.
QWEN3_TYPES = ("Q4_K_M", "Q5_0", "Q5_K_M", "Q6_K", "Q8_0")


def _qwen3(size: str, listed: tuple[str, ...]) -> list[dict]:
    return [{
        "repository": f"Qwen/Qwen3-{size}-GGUF", "source": JAN,
        "files": _files(f"Qwen3-{size}-{{type}}.gguf", dict(zip(QWEN3_TYPES, listed, strict=True))),
    }]


def _q4_q8(repository: str, stem: str, q4_k_m: str, q8_0: str) -> list[dict]:
    """A repository's Q4_K_M and Q8_0 files, named "{stem}-{type}.gguf"."""
    return [{"repository": repository, "source": JAN,
             "files": _files(stem + "-{type}.gguf", {"Q4_K_M": q4_k_m, "Q8_0": q8_0})}]


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
    "qwen3-4b": _qwen3("4B", ("2.3", "2.6", "2.7", "3.1", "4.0")),
    "qwen3-8b": _qwen3("8B", ("4.7", "5.3", "5.4", "6.3", "8.1")),
    "qwen3-30b-a3b": _qwen3("30B-A3B", ("17.3", "19.6", "20.2", "23.4", "30.3")),
    # Qwen's own Qwen3-Next repository is not in Jan's catalog; unsloth's is.
    "qwen3-next-80b-a3b": [{
        "repository": "unsloth/Qwen3-Next-80B-A3B-Instruct-GGUF", "source": JAN,
        "files": _files("Qwen3-Next-80B-A3B-Instruct-{type}.gguf",
                        {"Q2_K": "27.2", "Q3_K_S": "32.2", "Q3_K_M": "35.7", "Q4_0": "42.2", "Q4_K_S": "42.4",
                         "Q4_K_M": "45.2", "IQ4_XS": "39.7", "IQ4_NL": "42.0"}),
    }],
    # ymcki wrote llama.cpp's kimi-linear support; its K- and I-quants carry an importance matrix from
    # Japanese text ("jp-imatrix"), which moves values, not sizes.
    "kimi-linear-48b-a3b": [{
        "repository": "ymcki/Kimi-Linear-48B-A3B-Instruct-GGUF", "source": JAN,
        "files": _files("Kimi-Linear-48B-A3B-Instruct{type}.gguf",
                        {"Q2_K": "16.8", "IQ3_M": "20.1", "IQ4_XS": "24.5", "Q4_K_M": "27.7",
                         "Q5_K_M": "32.5", "MXFP4_MOE": "25.3"},
                        names={"Q2_K": "-jp-imatrix.Q2_K", "IQ3_M": "-jp-imatrix.IQ3_M",
                               "IQ4_XS": "-jp-imatrix.IQ4_XS", "Q4_K_M": "-jp-imatrix.Q4_K_M",
                               "Q5_K_M": "-jp-imatrix.Q5_K_M", "MXFP4_MOE": ".MXFP4_MOE"}),
    }],
    "deepseek-r1-distill-qwen-14b": _q4_q8("unsloth/DeepSeek-R1-Distill-Qwen-14B-GGUF",
                                           "DeepSeek-R1-Distill-Qwen-14B", "8.4", "14.6"),
    "deepseek-r1-distill-qwen-32b": _q4_q8("bartowski/DeepSeek-R1-Distill-Qwen-32B-GGUF",
                                           "DeepSeek-R1-Distill-Qwen-32B", "18.5", "32.4"),
    "deepseek-r1-distill-llama-8b": _q4_q8("unsloth/DeepSeek-R1-Distill-Llama-8B-GGUF",
                                           "DeepSeek-R1-Distill-Llama-8B", "4.6", "8.0"),
    "mistral-small-3-2-24b": _q4_q8("unsloth/Mistral-Small-3.2-24B-Instruct-2506-GGUF",
                                    "Mistral-Small-3.2-24B-Instruct-2506", "13.3", "23.3"),
    "gemma-3-4b": _q4_q8("unsloth/gemma-3-4b-it-GGUF", "gemma-3-4b-it", "2.3", "3.8"),
    "gemma-3-12b": _q4_q8("unsloth/gemma-3-12b-it-GGUF", "gemma-3-12b-it", "6.8", "11.7"),
    "gemma-3-27b": _q4_q8("unsloth/gemma-3-27b-it-GGUF", "gemma-3-27b-it", "15.4", "26.7"),
    "gemma-2-2b": _q4_q8("bartowski/gemma-2-2b-it-GGUF", "gemma-2-2b-it", "1.6", "2.6"),
    "llama-3-2-3b": _q4_q8("bartowski/Llama-3.2-3B-Instruct-GGUF", "Llama-3.2-3B-Instruct", "1.9", "3.2"),
    # its Q4_K_M (770.3 MiB) is listed in MiB
    "llama-3-2-1b": [{
        "repository": "bartowski/Llama-3.2-1B-Instruct-GGUF", "source": JAN,
        "files": _files("Llama-3.2-1B-Instruct-{type}.gguf", {"Q8_0": "1.2"}),
    }],
    # Its Q4_K_M, phi-4-Q4_K.gguf (8.4 GiB), is left out: as in Phi-3's, Q, K and V are one fused tensor,
    # which llama.cpp's Q4_K_M types Q5_K and the engine types as three (not yet modelled).
    "phi-4": [{
        "repository": "microsoft/phi-4-gguf", "source": JAN,
        "files": _files("phi-4-{type}.gguf", {"Q8_0": "14.5"}),
    }],
    "gpt-oss-20b": [{
        "repository": "ggml-org/gpt-oss-20b-GGUF", "source": JAN,
        "files": _files("gpt-oss-20b-{type}.gguf", {"MXFP4_MOE": "11.3"}, names={"MXFP4_MOE": "mxfp4"}),
    }],
}
